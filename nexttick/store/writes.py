"""The write protocol, which lives here and nowhere else: `create_task`, `swap_occurrence`
(reschedule, cancel, pause, resume, skip, run now, the worker's next occurrence / retry / finish)
and `drop_entry_of`. Each writes a new queue entry first (under a key no other entry has, and only
if that key is free), then the task (conditionally, nexttick.store.tasks), then deletes the entry
left behind (by token).
No write can replace a live entry, and a crash between writes leaves at most an entry no task
points at.

A task with a generated id lives in its home item (nexttick.store.keys): the queue entry of its first
occurrence, carrying the task. Creating it is one conditional write of task and entry together;
while the task points at it, its task writes leave the entry's attributes (its lease) alone, and the
task write that points it elsewhere or ends it removes them in the same request — the home item's
entry is never deleted apart from its task, and stays the task's item after.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from enum import StrEnum
from typing import cast

from pynamodb.constants import PUT_ITEM
from pynamodb.exceptions import PutError

from nexttick.store import keys, wire
from nexttick.store.base import condition_failed
from nexttick.store.models import TaskItem
from nexttick.store.prebuilt import Prebuilt
from nexttick.store.queue import QueueStore, is_home_entry
from nexttick.store.records import EntryRef, Occurrence, QueueEntry, TaskRecord, TaskStatus, occurrence_of
from nexttick.store.rule import RuleStateStore
from nexttick.store.tasks import TaskItems, item_key

Step = Callable[[str], None]
# Called with a new entry right after it is written, before the task write that points at it.
EntryHook = Callable[[QueueEntry], None]


def _no_step(_: str) -> None:
    return None


def _no_entry_hook(_: QueueEntry) -> None:
    return None


class Pointer(StrEnum):
    """Which of a task's entry pointers a write moves."""

    SCHEDULE = "schedule"  # queue_key / queue_token / queue_parked: the schedule's next occurrence
    EXTRA = "extra"  # extra_key / extra_token: a "run now" occurrence


class TaskExistsError(Exception):
    """A task item with this id already exists (raised by `create_task`)."""


class TaskWrites(TaskItems, QueueStore, RuleStateStore):
    """The write protocol that moves TaskStore's tasks between queue entries."""

    def create_task(self, record: TaskRecord, *, after_entry: EntryHook = _no_entry_hook) -> None:
        """Write a new pending task with its first queue entry (at `record.due`, plus its jitter) and
        point it there.

        Entry first, then the task (only if the id is free): the task is never visible without its
        entry. Raises TaskExistsError when the id is taken, after deleting the entry it wrote; any
        other failure leaves the entry alone (the task write may have committed).
        A generated id's task and entry are its home item, one write (`after_entry` follows it)."""
        assert record.due is not None, "a pending task needs a due time"
        if keys.is_home_id(record.id):
            self._create_home(record, after_entry)
            return
        entry = self._put_new_entry(record.id, occurrence_of(record, record.due), record.created_at)
        after_entry(entry)
        record.queue_key, record.queue_token = entry.key, entry.token
        key = self.task_key(record.id)
        values = self._task_attributes(record)
        try:
            self._put_new.send(*key, values)
        except PutError as exc:
            if not condition_failed(exc):
                raise
            if self._stored_as_written(key, values):
                return
            self.discard_entry(entry.ref)
            raise TaskExistsError(record.id) from exc

    def _create_home(self, record: TaskRecord, after_entry: EntryHook) -> None:
        """One conditional put of the home item: the task, pointing at itself, and its first entry."""
        entry = self._home_entry(record)
        pk = keys.queue_pk(entry.shard)
        values = self._task_attributes(record)
        try:
            self._put_new.send(pk, entry.key, {**values, **wire.entry_attributes(entry)})
        except PutError as exc:
            if not condition_failed(exc):
                raise
            if not self._stored_as_written((pk, entry.key), values):
                raise TaskExistsError(record.id) from exc
        after_entry(entry)

    def _home_entry(self, record: TaskRecord) -> QueueEntry:
        """The first entry of a task with a generated id, which its id names (sets the record's
        queue pointer to it)."""
        assert record.due is not None and not record.queue_parked
        sk = keys.home_sort_key(record.id)
        run_at = keys.split_queue_sort_key(sk)[0]
        assert occurrence_of(record, record.due) == Occurrence(run_at, record.due), (
            "a home id names its first run"
        )
        entry = QueueEntry(
            shard=keys.shard_of(record.id, self.shards),
            run_at=run_at,
            task_id=record.id,
            token=keys.home_token(record.id),
            scheduled_for=record.due,
            key=sk,
            created_at=record.created_at,
        )
        record.queue_key, record.queue_token = entry.key, entry.token
        return entry

    @functools.cached_property
    def _put_new(self) -> Prebuilt:
        """A PutItem only where no item is."""
        return Prebuilt(self.table, PUT_ITEM, {}, lambda: {"condition": self.models.task.pk.does_not_exist()})

    def swap_occurrence(
        self,
        current: TaskRecord,
        updated: TaskRecord,
        run: Occurrence | None,
        *,
        leaving: EntryRef | None,
        step: Step = _no_step,
        pointer: Pointer = Pointer.SCHEDULE,
        parked: bool = False,
        after_entry: EntryHook = _no_entry_hook,
    ) -> bool:
        """Write `updated` over `current` (compare-and-set on `current.version`) and move one of the
        task's pointers (`pointer`: its schedule's, or its "run now" one) from the entry it is
        `leaving` to a new entry for `run` (none: cancelled, finished, or the extra run is done).

        1. with `run`: put a new entry under a fresh key (in the parked partitions with `parked`),
           only if that key is free, and point `updated` at it (the entry is stamped with
           `updated.updated_at`); `after_entry` is called with it (an editor lowers its shard's
           head there);
        2. put the task (CAS). Lost: delete the new entry and return False (re-read, re-decide);
        3. delete `leaving`, by token: the task no longer points at it.
        A crash between steps leaves an entry no task points at, never a task without its entry.
        `step` names each completed write ("entry-put", "task-replaced", "entry-deleted")."""
        new: QueueEntry | None = None
        if run is not None:
            new = self._put_new_entry(updated.id, run, updated.updated_at, parked=parked)
            after_entry(new)
            if pointer is Pointer.EXTRA:
                updated.extra_key, updated.extra_token = new.key, new.token
            else:
                updated.queue_key, updated.queue_token, updated.queue_parked = new.key, new.token, parked
            step("entry-put")
        if not self.replace_task(updated, current.version):
            if new is not None:
                self.discard_entry(new.ref)
            return False
        step("task-replaced")
        if leaving is not None and not is_home_entry(leaving):  # a home entry ended with the task write
            self.discard_entry(leaving)
            step("entry-deleted")
        return True

    def drop_entry_of(self, record: TaskRecord) -> None:
        """Delete the entry a cancelled task still points at: a repeated cancel finishes what an
        interrupted one left (its entry delete)."""
        assert record.status != TaskStatus.PENDING, "a pending task's entry is live"
        ref = self.entry_of(record)
        if ref is not None and not is_home_entry(ref):
            self.discard_entry(ref)

    def bulk_insert(self, records: list[TaskRecord], created_at: datetime) -> None:
        """Write many new pending tasks, each with its first queue entry at its `due`, with
        BatchWriteItem, unconditionally (loading a backlog for benchmarks and tests; never where an
        id could already exist), then lower each shard's recorded head and cursor to its earliest new
        entry. Sets each record's queue pointer."""
        earliest: dict[int, str] = {}  # by shard: the earliest new entry's key
        with self.models.task.batch_write() as batch:
            for entry, items in self.new_items(records, created_at):
                for item in items:
                    batch.save(cast(TaskItem, _Serialized(item)))
                earliest[entry.shard] = min(entry.key, earliest.get(entry.shard, entry.key))
        for shard, key in earliest.items():
            # Two writes: either value may already be at or before the entry.
            self.lower_shard(shard, keys.split_queue_sort_key(key)[0], None)
            self.lower_shard(shard, None, key)

    def new_items(
        self, records: Iterable[TaskRecord], created_at: datetime
    ) -> Iterator[tuple[QueueEntry, tuple[wire.Wire, ...]]]:
        """Each new pending task's first entry and the items that hold it, in the wire format, as
        `bulk_insert` writes them (a benchmark loads them into its emulator directly): the home item
        of a generated id, else the entry's item and the task's. Payloads stay inline. Sets each
        record's queue pointer."""
        for record in records:
            assert record.due is not None, "a pending task needs a due time"
            if keys.is_home_id(record.id):
                entry = self._home_entry(record)
                key = item_key(keys.queue_pk(entry.shard), entry.key)
                yield entry, ({**key, **wire.TASKS.encode(record), **wire.entry_attributes(entry)},)
                continue
            entry = self._new_entry(record.id, occurrence_of(record, record.due), created_at)
            record.queue_key, record.queue_token = entry.key, entry.token
            entry_item = {
                **item_key(keys.queue_pk(entry.shard, parked=entry.parked), entry.key),
                **wire.entry_attributes(entry),
            }
            yield entry, (entry_item, {**item_key(*self.task_key(record.id)), **wire.TASKS.encode(record)})


class _Serialized:
    """An item already in the wire format, in a PynamoDB batch write (which asks each item for its
    `serialize()`)."""

    def __init__(self, item: wire.Wire) -> None:
        self._item = item

    def serialize(self) -> wire.Wire:
        return self._item
