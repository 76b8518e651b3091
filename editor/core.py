"""The editor's ground, shared by its creating, reading and changing parts: the runtime it works
on, a task's read and its public view, the compare-and-set loop every change runs in, and the rule
sync after a committed entry write."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from editor.models import Task
from nexttick.clock import SYSTEM_CLOCK, Clock
from nexttick.config import NextTickSettings
from nexttick.constants import MAX_CAS_ATTEMPTS
from nexttick.errors import TaskBusyError, TaskNotFoundError
from nexttick.rulesync import RuleSync
from nexttick.runtime import Runtime
from nexttick.store import QueueEntry, TaskRecord, TaskStatus
from nexttick.store.keys import shard_of, split_queue_sort_key
from nexttick.store.records import RuleState

if TYPE_CHECKING:
    import boto3

_Result = TypeVar("_Result")


class HeadCover:
    """The store's hook between a new entry's write and the task write: lowers the entry's shard
    head and cursor there (`RuleSync.cover_shard`), so that a client that dies after its task write has still
    marked the shard for the next worker, and keeps the record as it was then for the rule sync."""

    def __init__(self, rule_sync: RuleSync | None) -> None:
        self.rule_sync = rule_sync  # None: the entry is parked, or covered after its write by the rule sync
        self.entry: QueueEntry | None = None
        self.state: RuleState | None = None

    def __call__(self, entry: QueueEntry) -> None:
        self.entry = entry
        if self.rule_sync is not None:
            self.state = self.rule_sync.cover_shard(entry.shard, entry.run_at, key=entry.key)


class EditorCore:
    """What every part of the Editor stands on (the Editor's own docstring says how to use it)."""

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
