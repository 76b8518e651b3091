"""What a create or a change makes of a task record (no I/O: the Editor reads and writes)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import deque
from collections.abc import Collection, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from editor.inputs import TaskChanges, TaskSpec
from editor.specs import (
    CRON_FIELDS,
    TIME_FIELDS,
    check_action,
    check_end,
    check_integer,
    check_jitter,
    check_payload,
    check_policy,
    check_task_id,
    resolve_time,
)
from nexttick.errors import ConflictError, ValidationError, VersionMismatchError
from nexttick.schedules import Recurrence, ScheduleKind
from nexttick.store import TaskRecord, TaskStatus
from nexttick.store.keys import new_home_id
from nexttick.store.records import SCHEDULED, Occurrence, occurrence_of, recurrence_of

_UPDATABLE = ("payload", "max_attempts", "retry_backoff_seconds", "misfire_grace_seconds", "end")
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
    "dst_skipped",
    "dst_repeated",
    "jitter_seconds",
)


def new_record(spec: TaskSpec, actions: Collection[str], now: datetime) -> TaskRecord:
    """The pending task `spec` asks for, with the hash a repeated create under its id is told by."""
    if spec.id is not None:
        check_task_id(spec.id)
    check_action(spec.action, actions)
    payload = check_payload(spec.payload)
    kind, recurrence, due = resolve_time({k: getattr(spec, k) for k in (*TIME_FIELDS, *CRON_FIELDS)}, now)
    jitter = check_jitter(spec.jitter_seconds)
    # A generated id names the task's home item, keyed by its first run (which jitter would move).
    task_id = spec.id if spec.id is not None else new_home_id(due) if jitter is None else uuid.uuid4().hex
    end = check_end(spec.end, kind, due)
    policy = check_policy(spec.max_attempts, spec.retry_backoff_seconds, spec.misfire_grace_seconds)
    digest = hashlib.sha256(json.dumps(spec.canonical(), sort_keys=True, default=str).encode()).hexdigest()
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
        dst_skipped=recurrence.dst_skipped,
        dst_repeated=recurrence.dst_repeated,
        jitter_seconds=jitter,
        end=end,
        request_hash=digest,
        **policy,
    )


def apply_changes(
    current: TaskRecord, given: dict[str, Any], now: datetime
) -> tuple[TaskRecord, datetime | None]:
    """The changed task, and its new due time when the change moves it (None: same entry)."""
    updated = replace(current, version=current.version + 1, updated_at=now)
    time_fields: dict[str, Any] = {k: given[k] for k in TIME_FIELDS if k in given}
    cron_fields = {k: given[k] for k in CRON_FIELDS if k in given}
    new_due: datetime | None = None
    if time_fields or cron_fields:
        if not time_fields:
            if current.schedule_kind is not ScheduleKind.CRON:
                name = next(iter(cron_fields))
                raise ValidationError(f"{name}: only applies to a cron schedule", field=name)
            time_fields = {"cron": current.cron}
        if "cron" in time_fields:  # a new expression keeps the zone and policies it does not change
            kept = {"timezone": current.timezone, "dst_skipped": current.dst_skipped}
            kept["dst_repeated"] = current.dst_repeated
            time_fields.update({**kept, **cron_fields})
        else:  # with a due / delay / every: rejected by resolve_time
            time_fields.update(cron_fields)
        kind, recurrence, due = resolve_time(time_fields, now)
        updated.schedule_kind = kind
        updated.cron, updated.timezone = recurrence.cron, recurrence.timezone
        updated.dst_skipped, updated.dst_repeated = recurrence.dst_skipped, recurrence.dst_repeated
        updated.every_seconds = recurrence.every_seconds
        updated.due = due
        updated.attempts = 0
        new_due = due
    if "jitter_seconds" in given:
        updated.jitter_seconds = check_jitter(given["jitter_seconds"])
        if new_due is None and current.attempts == 0 and updated.jitter_seconds != current.jitter_seconds:
            new_due = updated.due  # not attempted yet: queue it again at its new jittered start
    if "payload" in given:
        updated.payload = check_payload(given["payload"])
    if "end" in given:
        assert updated.due is not None
        updated.end = check_end(given["end"], updated.schedule_kind, updated.due)
    elif updated.end is not None and updated.schedule_kind is ScheduleKind.ONCE:
        updated.end = None
    elif updated.end is not None and new_due is not None:
        # a new recurrence must still start before the end it keeps
        assert updated.due is not None
        check_end(updated.end, updated.schedule_kind, updated.due)
    policy = check_policy(
        given.get("max_attempts", current.max_attempts),
        given.get("retry_backoff_seconds", current.retry_backoff_seconds),
        given.get("misfire_grace_seconds", current.misfire_grace_seconds),
    )
    return replace(updated, **policy), new_due


def updatable(fields: dict[str, Any]) -> TaskChanges:
    """The changes `Editor.update` may make: payload and policy, not the time."""
    unknown = set(fields) - set(_UPDATABLE)
    if unknown:
        name = sorted(unknown)[0]
        raise ValidationError(f"{name}: not an updatable field", field=name)
    return TaskChanges(**fields)


def require_changeable(current: TaskRecord) -> None:
    """Changes and cancels apply to a task that is still scheduled: pending, or paused."""
    if current.status not in SCHEDULED:
        raise ConflictError(f"status: task is {current.status}, not pending or paused", field="status")


def version_mismatch(current: TaskRecord, expected_version: int) -> VersionMismatchError:
    return VersionMismatchError(
        f"version: task is at version {current.version}, not {expected_version}", field="version"
    )


def already_applied(current: TaskRecord, given: dict[str, Any], now: datetime) -> bool:
    """Whether applying `given` now would leave every field a change can set as it is."""
    if current.status not in SCHEDULED:
        return False
    try:
        updated, _ = apply_changes(current, given, now)
    except ValidationError:
        return False
    return all(getattr(updated, name) == getattr(current, name) for name in _CHANGEABLE)


class Missed(StrEnum):
    """What resuming a paused task does with the occurrences that fell due while it was paused."""

    SKIP = "skip"  # none of them runs: on to the first one after now
    ONCE = "once"  # the newest one runs now, then the schedule goes on
    EACH = "each"  # the newest `max_catch_up` run one after the other, oldest first, starting now


DEFAULT_MAX_CATCH_UP = 10
MAX_CATCH_UP = 100
MAX_SKIP = 1000
# Cron occurrences walked one by one from the paused due time before jumping to the last day.
_MISSED_WALK = 5_000


def check_missed(missed: Any, max_catch_up: Any) -> tuple[Missed, int]:
    try:
        policy = Missed(missed)
    except ValueError:
        choices = ", ".join(m.value for m in Missed)
        raise ValidationError(f"missed: must be one of {choices}", field="missed") from None
    return policy, check_integer("max_catch_up", max_catch_up, 1, MAX_CATCH_UP)


def paused(current: TaskRecord, now: datetime) -> TaskRecord:
    """`current` paused: its place (`due`) and history kept; a pending retry starts over at `due`."""
    if current.status != TaskStatus.PENDING:
        raise ConflictError(
            f"status: task is {current.status}, only a pending task can be paused", field="status"
        )
    return replace(current, status=TaskStatus.PAUSED, attempts=0, version=current.version + 1, updated_at=now)


def resumed(
    current: TaskRecord, now: datetime, missed: Missed, max_catch_up: int, retention: timedelta
) -> tuple[TaskRecord, Occurrence | None]:
    """`current` resumed, and the occurrence to queue (None: the task ended, nothing left to run).
    Occurrences missed while paused follow `missed`; the misfire grace still applies to each."""
    if current.status != TaskStatus.PAUSED:
        raise ConflictError(f"status: task is {current.status}, not paused", field="status")
    assert current.due is not None, "a paused task keeps its due time"
    updated = replace(
        current, status=TaskStatus.PENDING, version=current.version + 1, updated_at=now, catch_up_until=None
    )
    due = current.due
    if due > now:
        return updated, occurrence_of(updated, due)
    if current.schedule_kind is ScheduleKind.ONCE:
        if missed is Missed.SKIP:
            return _ended(updated, TaskStatus.SKIPPED, now, retention), None
        return updated, Occurrence(now, due)
    recurrence = recurrence_of(current)
    newest: deque[datetime] = deque(maxlen=max_catch_up if missed is Missed.EACH else 1)
    after: datetime | None = None
    for at in _occurrences_from(recurrence, due, now):
        if at > now or (current.end is not None and at > current.end):
            after = at if current.end is None or at <= current.end else None
            break
        newest.append(at)
    if missed is Missed.SKIP or not newest:
        if after is None:
            return _ended(updated, TaskStatus.SUCCEEDED, now, retention), None
        updated.due = after
        return updated, occurrence_of(updated, after)
    updated.due = newest[0]
    if len(newest) > 1:
        updated.catch_up_until = newest[-1]
    return updated, Occurrence(now, newest[0])  # claimable now, under its own occurrence's key


def _occurrences_from(recurrence: Recurrence, first: datetime, now: datetime) -> Iterator[datetime]:
    """`first` and the occurrences after it, until one past `now` (then None ends the walk). An
    interval's are computed; a cron's are walked, jumping to the last day when there are too many."""
    if recurrence.kind is ScheduleKind.EVERY:
        assert recurrence.every_seconds is not None
        step = timedelta(seconds=recurrence.every_seconds)
        last = max(0, int((now - first) / step))
        start = max(0, last - MAX_CATCH_UP)
        yield from (first + step * k for k in range(start, last + 2))
        return
    at: datetime | None = first
    for walked in range(2 * _MISSED_WALK):
        if at is None:
            return
        yield at
        if walked == _MISSED_WALK and at <= now - timedelta(days=1):
            at = recurrence.next_after(now - timedelta(days=1))  # keep only the last day's
        else:
            at = recurrence.next_after(at)


def _ended(updated: TaskRecord, status: TaskStatus, now: datetime, retention: timedelta) -> TaskRecord:
    return replace(updated, status=status, due=None, expires_at=now + retention)


def skipped(
    current: TaskRecord, count: int, now: datetime, retention: timedelta
) -> tuple[TaskRecord, Occurrence | None]:
    """`current` with its next `count` occurrences skipped (a one-shot: its only one, so it ends
    `skipped`), and the occurrence to queue instead (None: nothing left)."""
    require_changeable(current)
    check_integer("count", count, 1, MAX_SKIP)
    assert current.due is not None
    updated = replace(current, attempts=0, version=current.version + 1, updated_at=now, catch_up_until=None)
    if current.schedule_kind is ScheduleKind.ONCE:
        if count != 1:
            raise ValidationError("count: a one-shot task has one occurrence to skip", field="count")
        return _ended(updated, TaskStatus.SKIPPED, now, retention), None
    recurrence = recurrence_of(current)
    at: datetime | None = current.due
    for _ in range(count):
        assert at is not None
        at = recurrence.next_after(at)
        if at is None or (current.end is not None and at > current.end):
            return _ended(updated, TaskStatus.SUCCEEDED, now, retention), None
    assert at is not None
    updated.due = at
    return updated, occurrence_of(updated, at)
