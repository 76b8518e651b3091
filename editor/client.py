"""The Editor: create, inspect, reschedule, update and cancel tasks; keeps the rule in sync.

Task and queue-entry writes go through the store's write protocol (`TaskStore.create_task`,
`swap_occurrence`): nothing is ever half-visible. The rule is synchronised after the task write
committed. A request repeated after an error (same client id, same If-Match, a second cancel)
finishes what the first attempt may have left undone instead of failing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import re
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import boto3

from editor.models import UNSET, CreateResult, Page, Task, TaskChanges, TaskSpec
from nexttick.clock import SYSTEM_CLOCK, Clock
from nexttick.config import NextTickSettings
from nexttick.constants import MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH, TASK_ID_PATTERN
from nexttick.errors import (
    ConflictError,
    PayloadTooLargeError,
    TaskNotFoundError,
    UnknownActionError,
    ValidationError,
    VersionMismatchError,
)
from nexttick.runtime import Runtime
from nexttick.schedules import Recurrence, ScheduleKind, load_zone, validate_cron
from nexttick.store import QueueEntry, TaskExistsError, TaskRecord, TaskStatus
from nexttick.store.keys import split_queue_sort_key
from nexttick.store.records import Occurrence
from nexttick.timeutil import parse_duration, parse_instant

LISTABLE_STATUSES = (TaskStatus.PENDING, TaskStatus.RUNNING)
_TASK_ID = re.compile(TASK_ID_PATTERN)
_MAX_CAS_RETRIES = 20
_MAX_SPAN = timedelta(days=200 * 366)  # any later instant is past 2199 anyway (and may overflow)
# What a change can set: a repeated change finds these as it asks when its first attempt committed.
_CHANGEABLE = (
    "schedule_kind",
    "cron",
    "timezone",
    "every_seconds",
    "due",
    "end",
    "payload",
    "max_attempts",
    "retry_backoff_seconds",
    "misfire_grace_seconds",
)


class Editor:
    """Schedule and manage tasks. Configured from the environment (`NEXTTICK_*`) or arguments.

    >>> ed = Editor.from_env()
    >>> ed.schedule_in("log", 3 * 86400, {"to": "ada@example.com"})
    >>> ed.schedule_cron("log", "0 9 * * 5", {"sku": 42}, timezone="Europe/Berlin")
    """

    def __init__(
        self,
        *,
        table_name: str | None = None,
        rule_name: str | None = None,
        worker_function: str | None = None,
        region: str | None = None,
        endpoint_url: str | None = None,
        session: boto3.Session | None = None,
        settings: NextTickSettings | None = None,
        clock: Clock = SYSTEM_CLOCK,
        runtime: Runtime | None = None,
    ) -> None:
        if runtime is None:
            base = settings or NextTickSettings()
            overrides = {
                k: v
                for k, v in {
                    "table_name": table_name,
                    "rule_name": rule_name,
                    "worker_function": worker_function,
                    "region": region or (session.region_name if session else None),
                    "endpoint_url": endpoint_url,
                }.items()
                if v is not None
            }
            runtime = Runtime.build(base.model_copy(update=overrides), session=session, clock=clock)
        self.runtime = runtime
        self.settings = runtime.settings
        self.store = runtime.store
        self.clock = runtime.clock
        self.actions = runtime.settings.action_definitions()

    @classmethod
    def from_env(cls) -> Editor:
        return cls()

    # ------------------------------------------------------------------ create
    def schedule_at(
        self, action: str, due: str | datetime, payload: dict[str, Any] | None = None, **opts: Any
    ) -> Task:
        """Run `action` once at `due` (RFC 3339 with offset, or an aware datetime)."""
        return self.create(TaskSpec(action=action, due=due, payload=payload or {}, **opts)).task

    def schedule_in(
        self, action: str, delay: float | timedelta, payload: dict[str, Any] | None = None, **opts: Any
    ) -> Task:
        """Run `action` once after `delay` seconds."""
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
        return self.create(TaskSpec(action=action, delay_seconds=seconds, payload=payload or {}, **opts)).task

    def schedule_cron(
        self,
        action: str,
        cron: str,
        payload: dict[str, Any] | None = None,
        *,
        timezone: str = "UTC",
        **opts: Any,
    ) -> Task:
        """Run `action` at every time of a 5-field cron expression in an IANA time zone."""
        spec = TaskSpec(action=action, cron=cron, timezone=timezone, payload=payload or {}, **opts)
        return self.create(spec).task

    def schedule_every(
        self, action: str, every: str | float | timedelta, payload: dict[str, Any] | None = None, **opts: Any
    ) -> Task:
        """Run `action` every interval (`90s`, `1h30m`, `PT1H`), first one interval from now."""
        return self.create(TaskSpec(action=action, every=every, payload=payload or {}, **opts)).task

    def create(self, spec: TaskSpec) -> CreateResult:
        """Create a task. With a client `id`, an identical repeat returns the existing task
        (`created=False`) and re-runs the rule sync of a pending one (the first attempt may have
        failed after writing the task); a different body under the same id raises ConflictError."""
        now = self.clock.now()
        record = self._new_record(spec, now)
        if spec.id is not None:
            existing = self.store.get_task(spec.id)
            if existing is not None:
                return self._existing_for_repeat(existing, record)
        try:
            self.store.create_task(record)
        except TaskExistsError:
            existing = self.store.get_task(record.id)
            if existing is None:  # pragma: no cover - it existed a moment ago; TTL cannot be this fast
                raise ConflictError("id: task id is being reused concurrently", field="id") from None
            return self._existing_for_repeat(existing, record)
        assert record.due is not None
        self.runtime.rule_sync.on_task_due(record.due)
        return CreateResult(self._view(record), created=True)

    def _existing_for_repeat(self, existing: TaskRecord, wanted: TaskRecord) -> CreateResult:
        if existing.request_hash != wanted.request_hash:
            raise ConflictError(f"id: a different task already exists with id {existing.id!r}", field="id")
        self._resync(existing)
        return CreateResult(self._view(existing), created=False)

    def _resync(self, record: TaskRecord) -> None:
        """Run the rule sync for a pending task's next run again (one read when already covered)."""
        if record.status == TaskStatus.PENDING and record.queue_key is not None:
            self.runtime.rule_sync.on_task_due(split_queue_sort_key(record.queue_key)[0])

    def _new_record(self, spec: TaskSpec, now: datetime) -> TaskRecord:
        task_id = spec.id if spec.id is not None else uuid.uuid4().hex
        if not isinstance(task_id, str) or not _TASK_ID.match(task_id):
            raise ValidationError("id: must match [A-Za-z0-9._:-]{1,128}", field="id")
        self._check_action(spec.action)
        payload = self._check_payload(spec.payload)
        kind, recurrence, due = self._resolve_time(
            {k: getattr(spec, k) for k in ("due", "delay_seconds", "cron", "timezone", "every")}, now
        )
        end = self._check_end(spec.end, kind, due)
        policy = self._check_policy(spec.max_attempts, spec.retry_backoff_seconds, spec.misfire_grace_seconds)
        digest = hashlib.sha256(
            json.dumps(spec.canonical(), sort_keys=True, default=str).encode()
        ).hexdigest()
        return TaskRecord(
            id=task_id,
            action=spec.action,
            payload=payload,
            status=TaskStatus.PENDING,
            schedule_kind=kind,
            due=due,
            created_at=now,
            updated_at=now,
            version=1,
            cron=recurrence.cron,
            timezone=recurrence.timezone,
            every_seconds=recurrence.every_seconds,
            end=end,
            request_hash=digest,
            **policy,
        )

    # ------------------------------------------------------------------ read
    def get(self, task_id: str) -> Task:
        record = self.store.get_task(task_id)
        if record is None:
            raise TaskNotFoundError(f"id: no task {task_id!r}", field="id")
        return self._view(record, probe_lease=True)

    def list(self, *, status: str | None = None, limit: int = 50, cursor: str | None = None) -> Page:
        """Pending (and running) tasks in due order, `limit` per page; pass `next_cursor` back.

        Reads one page per queue shard (strongly consistent), never the whole table."""
        if status is not None and status not in LISTABLE_STATUSES:
            raise ValidationError(
                f"status: can list {', '.join(LISTABLE_STATUSES)}; finished tasks are read by id",
                field="status",
            )
        if not isinstance(limit, int) or not 1 <= limit <= 500:
            raise ValidationError("limit: must be an integer between 1 and 500", field="limit")
        after_key = _decode_cursor(cursor) if cursor else None
        now = self.clock.now()
        per_shard = max(2, limit // self.store.shards + 2)
        merged = self.store.merged_entries(after_key=after_key, page_size=per_shard)
        items: list[Task] = []
        last_key: str | None = None
        # Read the tasks behind the entries in batches of what the page still needs: one round trip
        # per batch, and never more task items than reading them one by one would.
        while batch := list(itertools.islice(merged, limit - len(items))):
            records = self.store.get_tasks(entry.task_id for entry in batch)
            for entry in batch:
                last_key = entry.key
                record = records.get(entry.task_id)
                if record is None or record.queue_token != entry.token or record.status != TaskStatus.PENDING:
                    continue  # a stale pointer (crash mid-change); the worker cleans it up
                view = self._view(record, entry=entry, now=now)
                if status is None or view.status == status:
                    items.append(view)
            if len(items) == limit:
                break
        else:
            last_key = None
        return Page(items=items, next_cursor=_encode_cursor(last_key) if last_key else None)

    # ------------------------------------------------------------------ change
    def reschedule(
        self,
        task_id: str,
        *,
        due: str | datetime | None = None,
        delay_seconds: float | None = None,
        cron: str | None = None,
        timezone: str | None = None,
        every: str | float | timedelta | None = None,
        expected_version: int | None = None,
    ) -> Task:
        """Move a pending task to a new time (or a new recurrence)."""
        changes = TaskChanges()
        for name, value in (
            ("due", due),
            ("delay_seconds", delay_seconds),
            ("cron", cron),
            ("timezone", timezone),
            ("every", every),
        ):
            if value is not None:
                setattr(changes, name, value)
        return self.modify(task_id, changes, expected_version=expected_version)

    def update(self, task_id: str, *, expected_version: int | None = None, **fields: Any) -> Task:
        """Change payload and/or policy (max_attempts, retry_backoff_seconds, misfire_grace_seconds, end)."""
        allowed = {"payload", "max_attempts", "retry_backoff_seconds", "misfire_grace_seconds", "end"}
        unknown = set(fields) - allowed
        if unknown:
            name = sorted(unknown)[0]
            raise ValidationError(f"{name}: not an updatable field", field=name)
        return self.modify(task_id, TaskChanges(**fields), expected_version=expected_version)

    def modify(self, task_id: str, changes: TaskChanges, *, expected_version: int | None = None) -> Task:
        """Apply a TaskChanges to a pending task, compare-and-set on its version.

        A repeat of a change that already committed (`expected_version` is the version it started
        from, the task is one version later and already as the change asks) returns the task and
        re-runs its rule sync instead of failing with VersionMismatchError."""
        given = changes.given()
        if not given:
            raise ValidationError("body: no field to change", field="body")
        for _ in range(_MAX_CAS_RETRIES):
            current = self._read(task_id)
            now = self.clock.now()
            if expected_version is not None and current.version != expected_version:
                if current.version == expected_version + 1 and self._already_applied(current, given, now):
                    self._resync(current)
                    return self._view(current)
                raise _version_mismatch(current, expected_version)
            self._require_pending(current)
            updated, due = self._apply(current, given, now)
            if due is None:
                committed = self.store.replace_task(updated, current.version)
            else:
                leaving = self.store.entry_of(current)
                committed = self.store.swap_occurrence(
                    current, updated, Occurrence(due, due), leaving=leaving
                )
            if committed:
                if due is not None:
                    self.runtime.rule_sync.on_task_due(due)
                return self._view(updated)
        raise ConflictError("id: task is changing too often; retry", field="id")

    def cancel(self, task_id: str, *, expected_version: int | None = None) -> Task:
        """Cancel a pending task (a recurring one stops for good). It stays readable as `cancelled`.

        Cancelling a cancelled task returns it (whatever `expected_version`), after deleting the
        queue entry an interrupted first cancel may have left."""
        for _ in range(_MAX_CAS_RETRIES):
            current = self._read(task_id)
            if current.status == TaskStatus.CANCELLED:
                self.store.drop_entry_of(current)
                return self._view(current)
            if expected_version is not None and current.version != expected_version:
                raise _version_mismatch(current, expected_version)
            self._require_pending(current)
            now = self.clock.now()
            updated = replace(
                current,
                status=TaskStatus.CANCELLED,
                due=None,
                version=current.version + 1,
                updated_at=now,
                expires_at=now + timedelta(days=self.settings.retention_days),
            )
            if self.store.swap_occurrence(current, updated, None, leaving=self.store.entry_of(current)):
                return self._view(updated)
        raise ConflictError("id: task is changing too often; retry", field="id")

    # ------------------------------------------------------------------ helpers
    def _read(self, task_id: str) -> TaskRecord:
        current = self.store.get_task(task_id)
        if current is None:
            raise TaskNotFoundError(f"id: no task {task_id!r}", field="id")
        return current

    @staticmethod
    def _require_pending(current: TaskRecord) -> None:
        if current.status != TaskStatus.PENDING:
            raise ConflictError(f"status: task is {current.status}, not pending", field="status")

    def _already_applied(self, current: TaskRecord, given: dict[str, Any], now: datetime) -> bool:
        """Whether applying `given` now would leave every field a change can set as it is."""
        if current.status != TaskStatus.PENDING:
            return False
        try:
            updated, _ = self._apply(current, given, now)
        except ValidationError:
            return False
        return all(getattr(updated, name) == getattr(current, name) for name in _CHANGEABLE)

    def _apply(
        self, current: TaskRecord, given: dict[str, Any], now: datetime
    ) -> tuple[TaskRecord, datetime | None]:
        """The changed task, and its new due time when the change moves it (None: same entry)."""
        updated = replace(current, version=current.version + 1, updated_at=now)
        time_fields: dict[str, Any] = {
            k: given[k] for k in ("due", "delay_seconds", "cron", "every") if k in given
        }
        new_due: datetime | None = None
        if time_fields or "timezone" in given:
            if not time_fields:
                if current.schedule_kind != ScheduleKind.CRON.value:
                    raise ValidationError("timezone: only applies to a cron schedule", field="timezone")
                time_fields = {"cron": current.cron}
            if "cron" in time_fields:
                time_fields["timezone"] = given.get("timezone", current.timezone)
            elif "timezone" in given:  # with a due / delay / every: rejected by _resolve_time
                time_fields["timezone"] = given["timezone"]
            kind, recurrence, due = self._resolve_time(time_fields, now)
            updated.schedule_kind = kind
            updated.cron, updated.timezone = recurrence.cron, recurrence.timezone
            updated.every_seconds = recurrence.every_seconds
            updated.due = due
            updated.attempts = 0
            new_due = due
        if "payload" in given:
            updated.payload = self._check_payload(given["payload"])
        if "end" in given:
            assert updated.due is not None
            updated.end = self._check_end(given["end"], ScheduleKind(updated.schedule_kind), updated.due)
        elif updated.end is not None and updated.schedule_kind == ScheduleKind.ONCE.value:
            updated.end = None
        elif updated.end is not None and new_due is not None:
            # a new recurrence must still start before the end it keeps
            assert updated.due is not None
            self._check_end(updated.end, ScheduleKind(updated.schedule_kind), updated.due)
        policy = self._check_policy(
            given.get("max_attempts", current.max_attempts),
            given.get("retry_backoff_seconds", current.retry_backoff_seconds),
            given.get("misfire_grace_seconds", current.misfire_grace_seconds),
        )
        for name, value in policy.items():
            setattr(updated, name, value)
        return updated, new_due

    def _resolve_time(
        self, fields: dict[str, Any], now: datetime
    ) -> tuple[ScheduleKind, Recurrence, datetime]:
        chosen = [k for k in ("due", "delay_seconds", "cron", "every") if fields.get(k) is not None]
        if len(chosen) != 1:
            name = chosen[1] if chosen[1:] else "due"
            raise ValidationError(f"{name}: give exactly one of due, delay_seconds, cron, every", field=name)
        kind_field = chosen[0]
        if fields.get("timezone") is not None and kind_field != "cron":
            raise ValidationError("timezone: only applies to a cron schedule", field="timezone")
        if kind_field == "due":
            due = parse_instant(fields["due"], "due")
            return ScheduleKind.ONCE, Recurrence(ScheduleKind.ONCE), due
        if kind_field == "delay_seconds":
            delay = fields["delay_seconds"]
            if (
                isinstance(delay, bool)
                or not isinstance(delay, int | float)
                or not 0 <= delay <= _MAX_SPAN.total_seconds()
            ):
                raise ValidationError(
                    "delay_seconds: must be a number of seconds >= 0", field="delay_seconds"
                )
            due = parse_instant(now + timedelta(seconds=delay), "delay_seconds")
            return ScheduleKind.ONCE, Recurrence(ScheduleKind.ONCE), due
        if kind_field == "cron":
            expression = validate_cron(fields["cron"])
            zone = fields.get("timezone") or "UTC"
            load_zone(zone)
            recurrence = Recurrence(ScheduleKind.CRON, cron=expression, timezone=zone)
            cron_due = recurrence.next_after(now)
            if cron_due is None:
                raise ValidationError("cron: expression never fires before 2200", field="cron")
            return ScheduleKind.CRON, recurrence, cron_due
        interval = parse_duration(fields["every"], "every")
        if not timedelta(seconds=1) <= interval <= _MAX_SPAN:
            raise ValidationError("every: interval must be between 1s and 200 years", field="every")
        recurrence = Recurrence(ScheduleKind.EVERY, every_seconds=interval.total_seconds())
        return ScheduleKind.EVERY, recurrence, parse_instant(now + interval, "every")

    def _check_action(self, action: Any) -> None:
        if not isinstance(action, str) or not action:
            raise ValidationError("action: required, the name of a configured action", field="action")
        if action not in self.actions:
            known = ", ".join(sorted(self.actions)) or "none configured"
            raise UnknownActionError(f"action: unknown action {action!r} (known: {known})", field="action")

    @staticmethod
    def _check_payload(payload: Any) -> dict[str, Any]:
        if payload is None:
            return {}
        if not isinstance(payload, dict):
            raise ValidationError("payload: must be a JSON object", field="payload")
        if _nesting_exceeds(payload, MAX_PAYLOAD_DEPTH):  # before anything recurses over it
            raise ValidationError(f"payload: nested deeper than {MAX_PAYLOAD_DEPTH} levels", field="payload")
        try:
            size = len(json.dumps(payload, separators=(",", ":"), allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"payload: not serialisable as JSON ({exc})", field="payload") from exc
        if size > MAX_PAYLOAD_BYTES:
            raise PayloadTooLargeError(
                f"payload: {size} bytes serialised, limit is {MAX_PAYLOAD_BYTES}", field="payload"
            )
        return payload

    @staticmethod
    def _check_end(end: Any, kind: ScheduleKind, first_due: datetime) -> datetime | None:
        if end is None:
            return None
        if kind is ScheduleKind.ONCE:
            raise ValidationError("end: only applies to recurring (cron / every) tasks", field="end")
        parsed = parse_instant(end, "end")
        if parsed < first_due:
            raise ValidationError("end: is before the first occurrence", field="end")
        return parsed

    @staticmethod
    def _check_policy(max_attempts: Any, backoff: Any, grace: Any) -> dict[str, Any]:
        if (
            isinstance(max_attempts, bool)
            or not isinstance(max_attempts, int)
            or not 1 <= max_attempts <= 100
        ):
            raise ValidationError("max_attempts: must be an integer from 1 to 100", field="max_attempts")
        if isinstance(backoff, bool) or not isinstance(backoff, int | float) or not 0 <= backoff <= 86400:
            raise ValidationError(
                "retry_backoff_seconds: must be a number from 0 to 86400", field="retry_backoff_seconds"
            )
        if grace is not None and (
            isinstance(grace, bool) or not isinstance(grace, int | float) or not 0 <= grace <= 366 * 86400
        ):
            raise ValidationError(
                "misfire_grace_seconds: must be a number of seconds >= 0", field="misfire_grace_seconds"
            )
        return {
            "max_attempts": max_attempts,
            "retry_backoff_seconds": float(backoff),
            "misfire_grace_seconds": float(grace) if grace is not None else None,
        }

    def _view(
        self,
        record: TaskRecord,
        *,
        entry: QueueEntry | None = None,
        now: datetime | None = None,
        probe_lease: bool = False,
    ) -> Task:
        status = record.status
        next_attempt: datetime | None = None
        if status == TaskStatus.PENDING and record.queue_key is not None:
            run_at, _ = split_queue_sort_key(record.queue_key)
            if record.due is not None and run_at != record.due:
                next_attempt = run_at
            now = now or self.clock.now()
            if entry is None and probe_lease and run_at <= now:
                ref = self.store.entry_of(record)
                entry = self.store.get_entry(ref.shard, ref.key) if ref else None
            if entry is not None and entry.token == record.queue_token and entry.leased_at(now):
                status = TaskStatus.RUNNING
        return Task(
            id=record.id,
            action=record.action,
            payload=record.payload,
            status=status,
            schedule=record.schedule_kind,
            due=record.due,
            cron=record.cron,
            timezone=record.timezone if record.schedule_kind == ScheduleKind.CRON.value else None,
            every_seconds=record.every_seconds,
            end=record.end,
            next_attempt_at=next_attempt,
            max_attempts=record.max_attempts,
            retry_backoff_seconds=record.retry_backoff_seconds,
            misfire_grace_seconds=record.misfire_grace_seconds,
            attempts=record.attempts,
            runs=record.runs,
            last_run=record.last_run,
            version=record.version,
            created_at=record.created_at,
            updated_at=record.updated_at,
        )


def _nesting_exceeds(value: Any, limit: int) -> bool:
    """True when objects/arrays nest more than `limit` levels (`value` is level 1). Iterative: the
    depth is the client's, so it must not become ours on the call stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    return False


def _version_mismatch(current: TaskRecord, expected_version: int) -> VersionMismatchError:
    return VersionMismatchError(
        f"version: task is at version {current.version}, not {expected_version}", field="version"
    )


def _encode_cursor(key: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": key}).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        decoded = json.loads(base64.urlsafe_b64decode(padded.encode()))
        key = decoded["after"]
        if not isinstance(key, str):
            raise TypeError("cursor key is not a string")
        split_queue_sort_key(key)
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise ValidationError("cursor: not a cursor returned by this API", field="cursor") from exc
    return key


__all__ = ["UNSET", "Editor"]
