"""The Editor: create, inspect, reschedule, update and cancel tasks; keeps the rule in sync.
Creating and reading live here; changing in `editor/changing.py`, the ground both stand on in
`editor/core.py`.

Task and queue-entry writes go through the store's write protocol (`TaskStore.create_task`,
`swap_occurrence`): nothing is ever half-visible. The rule is synchronised after the task write
committed. A request repeated after an error (same client id, same If-Match, a second cancel)
finishes what the first attempt may have left undone instead of failing.
"""

from __future__ import annotations

import builtins
import itertools
from datetime import datetime, timedelta
from typing import Any

from editor.changes import new_record
from editor.changing import EditorChanges
from editor.core import HeadCover
from editor.inputs import TaskSpec
from editor.models import (
    CreateResult,
    Lateness,
    LatenessWindow,
    Page,
    Preview,
    Run,
    RunPage,
    Task,
    Upcoming,
    UpcomingRuns,
)
from editor.specs import (
    QUEUED_STATUSES,
    check_count,
    check_integer,
    check_page,
    check_runs_page,
    encode_cursor,
    encode_runs_cursor,
)
from nexttick.constants import MAX_LATENESS_MINUTES
from nexttick.errors import ConflictError, TaskNotFoundError
from nexttick.schedules import ScheduleKind, UpcomingRun, load_zone
from nexttick.store import TaskExistsError, TaskRecord, TaskStatus
from nexttick.store.keys import is_home_id
from nexttick.store.records import SCHEDULED, discardable, occurrence_of, recurrence_of


class Editor(EditorChanges):
    """Schedule and manage tasks. Configured from the environment (`NEXTTICK_*`) or arguments.

    >>> ed = Editor.from_env()
    >>> ed.schedule_in("log", 3 * 86400, {"to": "ada@example.com"})
    >>> ed.schedule_cron("log", "0 9 * * 5", {"sku": 42}, timezone="Europe/Berlin")
    """

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
        # A home item (a generated id) is its task and its entry in one write: its shard is covered
        # after that write, by the rule sync itself (one record write when it arms the rule too).
        cover = HeadCover(None if is_home_id(record.id) else self.runtime.rule_sync)
        try:
            self.store.create_task(record, after_entry=cover)
        except TaskExistsError:
            existing = self.store.get_task(record.id)
            if existing is None:  # pragma: no cover - it existed a moment ago; TTL cannot be this fast
                raise ConflictError("id: task id is being reused concurrently", field="id") from None
            return self._existing_for_repeat(existing, record)
        assert cover.entry is not None
        self._cover(record.id, cover.entry.run_at, cover.state, key=cover.entry.key)  # jitter included
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
                if view.status in (QUEUED_STATUSES if status is None else (status,)):
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
        return LatenessWindow.of(since, until, self.store.lateness_histogram(since, until))

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

    # ------------------------------------------------------------------ helpers


__all__ = ["Editor"]
