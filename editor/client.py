"""The Editor: create, inspect, reschedule, update and cancel tasks; keeps the rule in sync.

Task and queue-entry writes go through the store's write protocol (`TaskStore.create_task`,
`swap_occurrence`): nothing is ever half-visible. The rule is synchronised after the task write
committed. A request repeated after an error (same client id, same If-Match, a second cancel)
finishes what the first attempt may have left undone instead of failing.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from editor.changes import (
    DEFAULT_MAX_CATCH_UP,
    Missed,
    already_applied,
    apply_changes,
    check_missed,
    new_record,
    paused,
    require_changeable,
    resumed,
    skipped,
    updatable,
    version_mismatch,
)
from editor.models import (
    CreateResult,
    Lateness,
    LatenessWindow,
    Page,
    Preview,
    Run,
    RunPage,
    Task,
    TaskChanges,
    TaskSpec,
    Upcoming,
    UpcomingRuns,
)
from editor.specs import (
    check_count,
    check_integer,
    check_page,
    check_runs_page,
    encode_cursor,
    encode_runs_cursor,
)
from nexttick.clock import SYSTEM_CLOCK, Clock
from nexttick.config import NextTickSettings
from nexttick.constants import CLAIM_AHEAD_SECONDS, MAX_CAS_ATTEMPTS, MAX_LATENESS_MINUTES
from nexttick.errors import ConflictError, TaskBusyError, TaskNotFoundError, ValidationError
from nexttick.rulesync import RuleSync
from nexttick.runtime import Runtime
from nexttick.schedules import ScheduleKind, UpcomingRun, load_zone
from nexttick.store import Pointer, QueueEntry, TaskExistsError, TaskRecord, TaskStatus
from nexttick.store.keys import shard_of, split_queue_sort_key
from nexttick.store.records import (
    RUNNABLE_NOW,
    SCHEDULED,
    Occurrence,
    RuleState,
    discardable,
    occurrence_of,
    recurrence_of,
)

if TYPE_CHECKING:
    import boto3

_Result = TypeVar("_Result")


class _HeadCover:
    """The store's hook between a new entry's write and the task write: lowers the entry's shard
    head and cursor there (`RuleSync.cover_shard`), so that a client that dies after its task write has still
    marked the shard for the next worker, and keeps the record as it was then for the rule sync."""

    def __init__(self, rule_sync: RuleSync | None) -> None:
        self.rule_sync = rule_sync  # None: the entry is parked (no worker reads it)
        self.entry: QueueEntry | None = None
        self.state: RuleState | None = None

    def __call__(self, entry: QueueEntry) -> None:
        self.entry = entry
        if self.rule_sync is not None:
            self.state = self.rule_sync.cover_shard(entry.shard, entry.run_at, key=entry.key)


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
        record = new_record(spec, self.actions, now)
        if spec.id is not None:
            existing = self.store.get_task(spec.id)
            if existing is not None:
                return self._existing_for_repeat(existing, record)
        cover = _HeadCover(self.runtime.rule_sync)
        try:
            self.store.create_task(record, after_entry=cover)
        except TaskExistsError:
            existing = self.store.get_task(record.id)
            if existing is None:  # pragma: no cover - it existed a moment ago; TTL cannot be this fast
                raise ConflictError("id: task id is being reused concurrently", field="id") from None
            return self._existing_for_repeat(existing, record)
        assert cover.entry is not None
        self._cover(record.id, cover.entry.run_at, cover.state)  # jitter included
        return CreateResult(self._view(record), created=True)

    def preview(self, spec: TaskSpec, *, count: int = 5) -> Preview:
        """Validate `spec` as `create` would and show the task and its next `count` occurrences,
        writing nothing (a dry run: the id, if given, is not looked up)."""
        check_count(count)
        record = new_record(spec, self.actions, self.clock.now())
        return Preview(self._view(record), self._upcoming(record, count))

    def _existing_for_repeat(self, existing: TaskRecord, wanted: TaskRecord) -> CreateResult:
        if existing.request_hash != wanted.request_hash:
            raise ConflictError(f"id: a different task already exists with id {existing.id!r}", field="id")
        self._resync(existing)
        return CreateResult(self._view(existing), created=False)

    def _cover(
        self, task_id: str, run_at: datetime, covered: RuleState | None = None, *, key: str | None = None
    ) -> None:
        """After a committed entry write: the rule covers `run_at` (and its shard's head and cursor,
        for the entry's sort key `key`, unless `covered` says they were lowered before the write)."""
        shard = shard_of(task_id, self.store.shards)
        self.runtime.rule_sync.on_task_due(run_at, shard, covered, key=key)

    def _resync(self, record: TaskRecord) -> None:
        """Run the rule sync for a pending task's next run again (one read when already covered)."""
        if record.status == TaskStatus.PENDING and record.queue_key is not None:
            self._cover(record.id, split_queue_sort_key(record.queue_key)[0], key=record.queue_key)

    # ------------------------------------------------------------------ read
    def get(self, task_id: str) -> Task:
        record = self.store.get_task(task_id)
        if record is None:
            raise TaskNotFoundError(f"id: no task {task_id!r}", field="id")
        return self._view(record, probe_lease=True)

    def list(self, *, status: str | None = None, limit: int = 50, cursor: str | None = None) -> Page:
        """Pending (and running) tasks in due order, `limit` per page; pass `next_cursor` back. With
        `status="paused"`, the paused tasks, in the order of their next due time (deleting the
        leftover entries of tasks no longer paused that it meets).

        Reads one page per queue shard (strongly consistent), never the whole table."""
        after_key = check_page(status, limit, cursor)
        now = self.clock.now()
        per_shard = max(2, limit // self.store.shards + 2)
        parked = status == TaskStatus.PAUSED
        wanted = TaskStatus.PAUSED if parked else TaskStatus.PENDING
        merged = self.store.merged_entries(after_key=after_key, page_size=per_shard, parked=parked)
        items: list[Task] = []
        last_key: str | None = None
        # Read the tasks behind the entries in batches of what the page still needs: one round trip
        # per batch, and never more task items than reading them one by one would.
        while batch := list(itertools.islice(merged, limit - len(items))):
            records = self.store.get_tasks(entry.task_id for entry in batch)
            for entry in batch:
                last_key = entry.key
                record = records.get(entry.task_id)
                if record is None or record.queue_token != entry.token or record.status != wanted:
                    # A stale pointer (crash mid-change). The worker deletes live ones when they fall
                    # due; it never reads parked ones, so this listing deletes those.
                    if parked and discardable(entry, record, now):
                        self.store.discard_entry(entry.ref)
                    continue
                view = self._view(record, entry=entry, now=now)
                if status is None or view.status == status:
                    items.append(view)
            if len(items) == limit:
                break
        else:
            last_key = None
        return Page(items=items, next_cursor=encode_cursor(last_key) if last_key else None)

    def runs(self, task_id: str, *, limit: int = 20, cursor: str | None = None) -> RunPage:
        """The task's run history, newest first, `limit` per page (pass `next_cursor` back), with
        its lateness over every kept run. One Query reads the whole kept history (the last
        `run_history` runs) and the task."""
        before = check_runs_page(limit, cursor)
        records = self.store.read_runs(task_id, slots=self.settings.run_history)
        if records is None:
            raise TaskNotFoundError(f"id: no task {task_id!r}", field="id")
        kept = [Run.of(record) for record in records]
        rest = [run for run in kept if before is None or run.number < before]
        page = rest[:limit]
        more = len(rest) > limit
        return RunPage(page, encode_runs_cursor(page[-1].number) if more else None, Lateness.of(kept))

    def lateness(self, *, minutes: int = 60) -> LatenessWindow:
        """How late the runs of the last `minutes` (1 to 1,440; all tasks) started: a histogram the
        workers keep per minute (one Query per hour of the window)."""
        check_integer("minutes", minutes, 1, MAX_LATENESS_MINUTES)
        until = self.clock.now()
        since = until - timedelta(minutes=minutes)
        return LatenessWindow(since, until, self.store.lateness_histogram(since, until))

    def upcoming(self, task_id: str, *, count: int = 10) -> UpcomingRuns:
        """The next `count` occurrences of a pending or paused task from its next due one (none once
        it is finished), each with its start (jitter included), wall time and DST mark."""
        check_count(count)
        record = self._read(task_id)
        zone = record.timezone if record.schedule_kind is ScheduleKind.CRON else "UTC"
        return UpcomingRuns(zone, self._upcoming(record, count))

    def _upcoming(self, record: TaskRecord, count: int) -> builtins.list[Upcoming]:
        if record.status not in SCHEDULED or record.due is None:
            return []  # finished (a paused task lists what would run after a resume with "skip")
        due, recurrence = record.due, recurrence_of(record)
        if record.schedule_kind is ScheduleKind.CRON:
            # The due occurrence itself (it has not run yet), with the wall times a DST gap skipped
            # between now and it.
            just_before = timedelta(microseconds=1)
            first = recurrence.upcoming(min(self.clock.now(), due) - just_before, 1)
            if not (first and first[0].at == due):  # not the next one from now: say what it is alone
                first = recurrence.upcoming(due - just_before, 1)
            head = (
                first[0]
                if first and first[0].at == due
                else UpcomingRun(due, due.astimezone(load_zone(record.timezone)))
            )
        else:
            head = UpcomingRun(due, due)
        runs = [head]
        if record.schedule_kind is not ScheduleKind.ONCE and count > 1:
            runs += recurrence.upcoming(due, count - 1)
        runs = [run for run in runs if record.end is None or run.at <= record.end]
        return [Upcoming.of(run, occurrence_of(record, run.at).run_at) for run in runs]

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
        times = {
            "due": due,
            "delay_seconds": delay_seconds,
            "cron": cron,
            "timezone": timezone,
            "every": every,
        }
        changes = TaskChanges(**{name: value for name, value in times.items() if value is not None})
        return self.modify(task_id, changes, expected_version=expected_version)

    def update(self, task_id: str, *, expected_version: int | None = None, **fields: Any) -> Task:
        """Change payload and/or policy (max_attempts, retry_backoff_seconds, misfire_grace_seconds, end)."""
        return self.modify(task_id, updatable(fields), expected_version=expected_version)

    def modify(self, task_id: str, changes: TaskChanges, *, expected_version: int | None = None) -> Task:
        """Apply a TaskChanges to a pending task, compare-and-set on its version.

        A repeat of a change that already committed (`expected_version` is the version it started
        from, the task is one version later and already as the change asks) returns the task and
        re-runs its rule sync instead of failing with VersionMismatchError."""
        given = changes.given()
        if not given:
            raise ValidationError("body: no field to change", field="body")

        def attempt(current: TaskRecord) -> Task | None:
            now = self.clock.now()
            if expected_version is not None and current.version != expected_version:
                if current.version == expected_version + 1 and already_applied(current, given, now):
                    self._resync(current)
                    return self._view(current)
                raise version_mismatch(current, expected_version)
            require_changeable(current)
            updated, due = apply_changes(current, given, now)
            parked = current.status == TaskStatus.PAUSED  # a paused task is changed and stays paused
            if due is None:
                return self._view(updated) if self.store.replace_task(updated, current.version) else None
            leaving = self.store.entry_of(current)
            run = occurrence_of(updated, due)
            cover = _HeadCover(None if parked else self.runtime.rule_sync)
            if not self.store.swap_occurrence(
                current, updated, run, leaving=leaving, parked=parked, after_entry=cover
            ):
                return None
            if not parked:
                self._cover(updated.id, run.run_at, cover.state)
            return self._view(updated)

        return self._compare_and_set(task_id, attempt)

    def cancel(self, task_id: str, *, expected_version: int | None = None) -> Task:
        """Cancel a pending or paused task (a recurring one stops for good). It stays readable as
        `cancelled`. The answer's `occurrence_may_run` says whether an occurrence may still run:
        one a worker could have claimed before the cancel committed (due, or within
        CLAIM_AHEAD_SECONDS of it) completes, and its outcome shows in `last_run`; nothing after
        it runs.

        Cancelling a cancelled task returns it (whatever `expected_version`), after deleting the
        queue entry an interrupted first cancel may have left."""

        def attempt(current: TaskRecord) -> Task | None:
            if current.status == TaskStatus.CANCELLED:
                self.store.drop_entry_of(current)
                return replace(self._view(current), occurrence_may_run=False)
            if expected_version is not None and current.version != expected_version:
                raise version_mismatch(current, expected_version)
            require_changeable(current)
            now = self.clock.now()
            updated = replace(
                current,
                status=TaskStatus.CANCELLED,
                due=None,
                version=current.version + 1,
                updated_at=now,
                expires_at=now + timedelta(days=self.settings.retention_days),
            )
            if not self.store.swap_occurrence(current, updated, None, leaving=self.store.entry_of(current)):
                return None
            extra = self.store.extra_of(current)
            if extra is not None:  # a waiting "run now" goes too (else the worker drops it as stale)
                self.store.discard_entry(extra)
            may_run = _claimable(current, self.clock.now())  # the clock read after the commit
            return replace(self._view(updated), occurrence_may_run=may_run)

        return self._compare_and_set(task_id, attempt)

    # ------------------------------------------------------------------ steer
    def pause(self, task_id: str, *, expected_version: int | None = None) -> Task:
        """Pause a pending task: nothing of its schedule runs until it is resumed; it keeps its next
        due time (its place) and its history. An occurrence already running completes.

        Pausing a paused task returns it (whatever `expected_version`): a repeated request whose
        first attempt committed and then failed."""

        def change(current: TaskRecord, now: datetime) -> tuple[TaskRecord, Occurrence | None, bool]:
            updated = paused(current, now)
            assert updated.due is not None
            return updated, Occurrence(updated.due, updated.due), True

        return self._steer(task_id, expected_version, change, applied=TaskStatus.PAUSED)

    def resume(
        self,
        task_id: str,
        *,
        missed: str | Missed = Missed.ONCE,
        max_catch_up: int = DEFAULT_MAX_CATCH_UP,
        expected_version: int | None = None,
    ) -> Task:
        """Resume a paused task. What fell due while it was paused: `skip` it, run the newest `once`
        now, or run `each` of the newest `max_catch_up` one after the other from now (each under its
        own idempotency key; the misfire grace still applies).

        Resuming a pending task returns it (whatever `expected_version`), as pausing a paused one
        does."""
        policy, catch_up = check_missed(missed, max_catch_up)
        retention = timedelta(days=self.settings.retention_days)

        def change(current: TaskRecord, now: datetime) -> tuple[TaskRecord, Occurrence | None, bool]:
            updated, run = resumed(current, now, policy, catch_up, retention)
            return updated, run, False

        return self._steer(task_id, expected_version, change, applied=TaskStatus.PENDING)

    def skip(self, task_id: str, *, count: int = 1, expected_version: int | None = None) -> Task:
        """Skip the next `count` occurrences of a pending or paused task (a one-shot's only one: it
        ends `skipped`). An occurrence already running completes."""
        retention = timedelta(days=self.settings.retention_days)

        def change(current: TaskRecord, now: datetime) -> tuple[TaskRecord, Occurrence | None, bool]:
            updated, run = skipped(current, count, now, retention)
            return updated, run, current.status == TaskStatus.PAUSED

        return self._steer(task_id, expected_version, change)

    def run_now(self, task_id: str, *, expected_version: int | None = None) -> Task:
        """Run one extra occurrence of a pending or paused task now, with its own idempotency key
        (its scheduled time is now); the schedule is unchanged. On a failed task it is a retry: if
        it succeeds, so has the task. One at a time: 409 while one waits."""

        def change(current: TaskRecord, now: datetime) -> tuple[TaskRecord, Occurrence | None, bool]:
            if current.status not in RUNNABLE_NOW:
                raise ConflictError(
                    f"status: task is {current.status}, not pending, paused or failed", field="status"
                )
            if current.extra_key is not None:
                raise ConflictError(
                    "status: a run-now occurrence of this task is already waiting", field="status"
                )
            return replace(current, version=current.version + 1, updated_at=now), Occurrence(now, now), False

        return self._steer(task_id, expected_version, change, pointer=Pointer.EXTRA)

    def _steer(
        self,
        task_id: str,
        expected_version: int | None,
        change: Callable[[TaskRecord, datetime], tuple[TaskRecord, Occurrence | None, bool]],
        *,
        pointer: Pointer = Pointer.SCHEDULE,
        applied: TaskStatus | None = None,
    ) -> Task:
        """Apply `change(current, now) -> (updated, occurrence or None, parked)` with compare-and-set,
        moving one of the task's pointers to the new occurrence's entry: its schedule's (from the
        entry it leaves; parked for a paused task), or its "run now" one (a new entry beside it).
        A task already in the `applied` status is returned as it is: the change is a repeat of one
        that committed. An entry the first attempt failed to delete is stale: the worker deletes a
        live one when it falls due, the paused listing a parked one."""

        def attempt(current: TaskRecord) -> Task | None:
            if current.status == applied:
                return self._view(current)
            if expected_version is not None and current.version != expected_version:
                raise version_mismatch(current, expected_version)
            updated, run, parked = change(current, self.clock.now())
            leaving = self.store.entry_of(current) if pointer is Pointer.SCHEDULE else None
            cover = _HeadCover(None if parked else self.runtime.rule_sync)
            if not self.store.swap_occurrence(
                current, updated, run, leaving=leaving, parked=parked, pointer=pointer, after_entry=cover
            ):
                return None
            if run is not None and not parked:
                self._cover(updated.id, run.run_at, cover.state)
            return self._view(updated)

        return self._compare_and_set(task_id, attempt)

    # ------------------------------------------------------------------ helpers
    def _compare_and_set(self, task_id: str, attempt: Callable[[TaskRecord], _Result | None]) -> _Result:
        """`attempt(current)` on a fresh read of the task until it answers (None: its conditional
        write lost to another writer), at most MAX_CAS_ATTEMPTS times."""
        for _ in range(MAX_CAS_ATTEMPTS):
            result = attempt(self._read(task_id))
            if result is not None:
                return result
        raise TaskBusyError()

    def _read(self, task_id: str) -> TaskRecord:
        current = self.store.get_task(task_id)
        if current is None:
            raise TaskNotFoundError(f"id: no task {task_id!r}", field="id")
        return current

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
        run_now_at = split_queue_sort_key(record.extra_key)[0] if record.extra_key else None
        return Task.of(record, status=status, next_attempt_at=next_attempt, run_now_at=run_now_at)


def _claimable(record: TaskRecord, now: datetime) -> bool:
    """Whether a worker could have claimed an occurrence of `record` by `now`: a worker claims one
    at the earliest CLAIM_AHEAD_SECONDS before its time (the schedule's, or a waiting "run now")."""
    if record.status not in (TaskStatus.PENDING, TaskStatus.PAUSED):
        return False
    # A paused task's schedule entry is parked: only its "run now" can run.
    keys = (record.extra_key, record.queue_key if record.status == TaskStatus.PENDING else None)
    horizon = now + timedelta(seconds=CLAIM_AHEAD_SECONDS)
    return any(split_queue_sort_key(key)[0] <= horizon for key in keys if key is not None)


__all__ = ["Editor"]
