"""TaskStore: every DynamoDB read and write nexttick makes, none of them a Scan.

Reads that decide correctness (task by id, queue head, due page, rule state) are strongly
consistent: they all hit base-table items, never a GSI (docs/architecture.md).

The write protocol lives here and nowhere else: `create_task`, `swap_occurrence` (reschedule,
cancel, the worker's next occurrence / retry / finish) and `drop_entry_of`. Each writes a new queue
entry first (under a key no other entry has, and only if that key is free), then the task
(conditionally), then deletes the entry left behind (by token). No write can replace a live
entry, and a crash between writes leaves at most an entry no task points at.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from pynamodb.exceptions import DeleteError, PutError, UpdateError
from pynamodb.expressions.condition import Condition

from nexttick.config import NextTickSettings
from nexttick.constants import RULE_STATE_PK, RULE_STATE_SK, TASK_SK
from nexttick.store import keys
from nexttick.store.models import BoundModels, LastRunAttribute, QueueItem, TaskItem, bind_models
from nexttick.store.records import (
    EntryRef,
    LastRun,
    Occurrence,
    QueueEntry,
    RuleState,
    TaskRecord,
    TaskStatus,
)
from nexttick.timeutil import from_epoch, to_epoch

_CONDITION_FAILED = "ConditionalCheckFailedException"
# Entries per request when looking for a shard's head: usually the first one decides.
HEAD_PAGE_SIZE = 1

Step = Callable[[str], None]


def _no_step(_: str) -> None:
    return None


def _condition_failed(exc: PutError | UpdateError | DeleteError) -> bool:
    # Not `exc.cause_response_code`: it fails with AttributeError on a cause without a response
    # (a read timeout), which would hide the real error.
    response = getattr(exc.cause, "response", None) or {}
    return bool(response.get("Error", {}).get("Code") == _CONDITION_FAILED)


class TaskExistsError(Exception):
    """A task item with this id already exists (raised by `create_task`)."""


class TaskStore:
    """Data access for tasks, queue entries and the rule record in one table."""

    def __init__(
        self,
        table_name: str,
        *,
        region: str,
        endpoint_url: str | None = None,
        shards: int,
        credentials: tuple[str, str, str | None] | None = None,
    ) -> None:
        self.table_name = table_name
        self.shards = shards
        self.models: BoundModels = bind_models(
            table_name, region=region, endpoint_url=endpoint_url, credentials=credentials
        )
        # The three models share one table and one connection (one botocore client: a client costs
        # ~0.25 s to build, which every Lambda cold start would pay three times otherwise).
        connection = self.models.task._get_connection()
        self.models.queue._connection = connection
        self.models.rule._connection = connection
        self._pool = ThreadPoolExecutor(max_workers=min(16, shards), thread_name_prefix="nexttick-shard")

    @classmethod
    def from_settings(
        cls, settings: NextTickSettings, credentials: tuple[str, str, str | None] | None = None
    ) -> TaskStore:
        return cls(
            settings.table_name,
            region=settings.region,
            endpoint_url=settings.endpoint_url,
            shards=settings.queue_shards,
            credentials=credentials,
        )

    # ------------------------------------------------------------------ admin (tests, local stack)
    def create_table(self) -> None:
        """Create the table on-demand (the CDK construct is the production definition)."""
        model = self.models.task
        if not model.exists():
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)

    # ------------------------------------------------------------------ tasks
    def get_task(self, task_id: str) -> TaskRecord | None:
        try:
            item = self.models.task.get(keys.task_pk(task_id), TASK_SK, consistent_read=True)
        except self.models.task.DoesNotExist:
            return None
        return _task_record(item)

    def get_tasks(self, task_ids: Iterable[str]) -> dict[str, TaskRecord]:
        """The existing tasks among `task_ids`, by id: strongly consistent BatchGetItem calls (100
        keys each; pynamodb retries unprocessed keys), not one GetItem per task."""
        wanted = [(keys.task_pk(task_id), TASK_SK) for task_id in dict.fromkeys(task_ids)]
        found = (_task_record(item) for item in self.models.task.batch_get(wanted, consistent_read=True))
        return {record.id: record for record in found}

    def create_task(self, record: TaskRecord) -> None:
        """Write a new pending task with its first queue entry (at `record.due`) and point it there.

        Entry first, then the task (only if the id is free): the task is never visible without its
        entry. Raises TaskExistsError when the id is taken, after deleting the entry it wrote; any
        other failure leaves the entry alone (the task write may have committed)."""
        assert record.due is not None, "a pending task needs a due time"
        entry = self._put_new_entry(record.id, Occurrence(record.due, record.due), record.created_at)
        record.queue_key, record.queue_token = entry.key, entry.token
        item = self._task_item(record)
        try:
            item.save(condition=self.models.task.pk.does_not_exist())
        except PutError as exc:
            if not _condition_failed(exc):
                raise
            if self._stored_as_written(item):
                return
            self.discard_entry(entry.ref)
            raise TaskExistsError(record.id) from exc

    def swap_occurrence(
        self,
        current: TaskRecord,
        updated: TaskRecord,
        run: Occurrence | None,
        *,
        leaving: EntryRef | None,
        step: Step = _no_step,
    ) -> bool:
        """Write `updated` over `current` (compare-and-set on `current.version`) and move the task
        from the entry it is `leaving` to a new entry for `run` (none: cancelled or finished).

        1. with `run`: put a new entry under a fresh key, only if that key is free, and point
           `updated` at it (the entry is stamped with `updated.updated_at`);
        2. put the task (CAS). Lost: delete the new entry and return False (re-read, re-decide);
        3. delete `leaving`, by token: the task no longer points at it.
        A crash between steps leaves an entry no task points at, never a task without its entry.
        `step` names each completed write ("entry-put", "task-replaced", "entry-deleted")."""
        new: QueueEntry | None = None
        if run is not None:
            new = self._put_new_entry(updated.id, run, updated.updated_at)
            updated.queue_key, updated.queue_token = new.key, new.token
            step("entry-put")
        if not self.replace_task(updated, current.version):
            if new is not None:
                self.discard_entry(new.ref)
            return False
        step("task-replaced")
        if leaving is not None:
            self.discard_entry(leaving)
            step("entry-deleted")
        return True

    def drop_entry_of(self, record: TaskRecord) -> None:
        """Delete the entry a cancelled task still points at: a repeated cancel finishes what an
        interrupted one left (its entry delete)."""
        assert record.status != TaskStatus.PENDING, "a pending task's entry is live"
        ref = self.entry_of(record)
        if ref is not None:
            self.discard_entry(ref)

    def replace_task(self, record: TaskRecord, expected_version: int) -> bool:
        """Write the whole task if its stored version is still `expected_version` (compare-and-set).

        Every field is written each time, so no half-applied update can exist. The queue pointer is
        written as given: use `swap_occurrence` to move the task to another entry."""
        item = self._task_item(record)
        try:
            item.save(condition=self.models.task.version == expected_version)
        except PutError as exc:
            if not _condition_failed(exc):
                raise
            return self._stored_as_written(item)
        return True

    def _stored_as_written(self, item: TaskItem) -> bool:
        """Whether the stored task is exactly `item`, after its conditional put failed. The SDK
        resends a put whose answer was lost (a 500 or a timeout after DynamoDB applied it), and the
        resend fails its condition on the first attempt's own write: that write is ours, and
        treating it as lost would delete the entry the committed task points at."""
        try:
            stored = self.models.task.get(item.pk, TASK_SK, consistent_read=True)
        except self.models.task.DoesNotExist:
            return False
        return bool(stored.serialize() == item.serialize())

    def _task_item(self, r: TaskRecord) -> TaskItem:
        last_run = None
        if r.last_run is not None:
            last_run = LastRunAttribute(
                started_at=r.last_run.started_at,
                finished_at=r.last_run.finished_at,
                outcome=r.last_run.outcome,
                error=r.last_run.error,
                scheduled_for=r.last_run.scheduled_for,
                attempt=r.last_run.attempt,
            )
        item: TaskItem = self.models.task(
            keys.task_pk(r.id),
            TASK_SK,
            task_id=r.id,
            action=r.action,
            payload=r.payload,
            status=r.status,
            schedule_kind=r.schedule_kind,
            due=r.due,
            created_at=r.created_at,
            updated_at=r.updated_at,
            version=r.version,
            cron=r.cron,
            timezone=r.timezone,
            every_seconds=r.every_seconds,
            end=r.end,
            max_attempts=r.max_attempts,
            retry_backoff_seconds=r.retry_backoff_seconds,
            misfire_grace_seconds=r.misfire_grace_seconds,
            attempts=r.attempts,
            runs=r.runs,
            last_run=last_run,
            queue_key=r.queue_key,
            queue_token=r.queue_token,
            request_hash=r.request_hash,
            expires_at=r.expires_at,
        )
        return item

    def bulk_insert(self, records: list[TaskRecord], created_at: datetime) -> None:
        """Write many new pending tasks, each with a fresh queue entry at its `due`, with
        BatchWriteItem, unconditionally (loading a backlog for benchmarks and tests; never where an
        id could already exist). Sets each record's queue pointer."""
        with self.models.queue.batch_write() as entries, self.models.task.batch_write() as tasks:
            for record in records:
                assert record.due is not None, "a pending task needs a due time"
                entry = self._new_entry(record.id, Occurrence(record.due, record.due), created_at)
                record.queue_key, record.queue_token = entry.key, entry.token
                entries.save(self._queue_item(entry))
                tasks.save(self._task_item(record))

    # ------------------------------------------------------------------ queue entries
    def _new_entry(self, task_id: str, run: Occurrence, created_at: datetime) -> QueueEntry:
        """A fresh entry (not yet written): a new token, and so a sort key no entry has had."""
        token = uuid.uuid4().hex
        return QueueEntry(
            shard=keys.shard_of(task_id, self.shards),
            run_at=run.run_at,
            task_id=task_id,
            token=token,
            scheduled_for=run.scheduled_for,
            key=keys.queue_sort_key(run.run_at, task_id, token),
            attempt=run.attempt,
            created_at=created_at,
        )

    def _put_new_entry(self, task_id: str, run: Occurrence, created_at: datetime) -> QueueEntry:
        entry = self._new_entry(task_id, run, created_at)
        try:
            self._queue_item(entry).save(condition=self.models.queue.pk.does_not_exist())
        except PutError as exc:
            # The key holds our fresh token, so only our own first attempt can have taken it (the
            # SDK resent a put whose answer was lost).
            if not _condition_failed(exc) or self.get_entry(entry.shard, entry.key) is None:
                raise
        return entry

    def entry_of(self, record: TaskRecord) -> EntryRef | None:
        """The queue entry the task points at, if any."""
        if record.queue_key is None or record.queue_token is None:
            return None
        return EntryRef(keys.shard_of(record.id, self.shards), record.queue_key, record.queue_token)

    def _queue_item(self, entry: QueueEntry) -> QueueItem:
        item: QueueItem = self.models.queue(
            keys.queue_pk(entry.shard),
            entry.key,
            task_id=entry.task_id,
            token=entry.token,
            scheduled_for=entry.scheduled_for,
            attempt=entry.attempt,
            created_at=entry.created_at,
        )
        return item

    def discard_entry(self, ref: EntryRef) -> bool:
        """Delete an entry only if it is still the one with `ref.token` (never someone else's). Alone,
        for entries no task points at (a crash's leftovers); the protocol above uses it in order."""
        item = self.models.queue(keys.queue_pk(ref.shard), ref.key)
        try:
            item.delete(condition=self.models.queue.token == ref.token)
        except DeleteError as exc:
            if _condition_failed(exc):
                return False
            raise
        return True

    def get_entry(self, shard: int, key: str) -> QueueEntry | None:
        try:
            item = self.models.queue.get(keys.queue_pk(shard), key, consistent_read=True)
        except self.models.queue.DoesNotExist:
            return None
        return _queue_entry(item, shard)

    def claim(self, entry: QueueEntry, now: datetime, lease_until: datetime, owner: str) -> QueueEntry | None:
        """Lease an entry for one worker: succeeds only if it is unchanged and not leased (or its lease
        expired). Returns the claimed entry, or None when another worker holds it or it is gone.

        Every claim counts as an attempt, in the same conditional write: the returned entry's
        `attempt` is this claim's, the stored one the next claim's, so an attempt that crashes or
        fails after its action still counts."""
        q = self.models.queue
        item = q(keys.queue_pk(entry.shard), entry.key)
        condition: Condition = (
            q.pk.exists()
            & (q.token == entry.token)
            & (q.lease_until.does_not_exist() | (q.lease_until <= to_epoch(now)))
        )
        try:
            item.update(
                actions=[
                    q.lease_until.set(to_epoch(lease_until)),
                    q.lease_owner.set(owner),
                    q.attempt.add(1),
                ],
                condition=condition,
            )
        except UpdateError as exc:
            if not _condition_failed(exc):
                raise
            # Ours if the SDK resent an applied claim whose answer was lost: same owner, same lease.
            stored = self.get_entry(entry.shard, entry.key)
            if stored is None or not (
                stored.token == entry.token
                and stored.lease_owner == owner
                and stored.lease_until == from_epoch(to_epoch(lease_until))
            ):
                return None
            stored.attempt -= 1
            return stored
        claimed = _queue_entry(item, entry.shard)
        claimed.attempt -= 1
        return claimed

    def extend_lease(self, entry: QueueEntry, owner: str, until: datetime) -> bool:
        """Move our own lease's end to `until` (a heartbeat while the occurrence runs). False when
        the entry is no longer ours: completed, cancelled, or claimed by another after a lapse."""
        return self._update_own(entry, owner, [self.models.queue.lease_until.set(to_epoch(until))])

    def defer_entry(self, entry: QueueEntry, owner: str, until: datetime) -> bool:
        """Hide an entry we claimed but did not run until `until`; the claim ran nothing, so it does
        not count as an attempt (`entry` as `claim` returned it)."""
        q = self.models.queue
        return self._update_own(
            entry, owner, [q.lease_until.set(to_epoch(until)), q.attempt.set(entry.attempt)]
        )

    def abandon(self, entry: QueueEntry, owner: str, error: str) -> bool:
        """Leave our claim with the `error` that ended it: the entry runs again after its lease, and
        the claim that finds its attempts exhausted records this error as the occurrence's."""
        return self._update_own(entry, owner, [self.models.queue.last_error.set(error)])

    def _update_own(self, entry: QueueEntry, owner: str, actions: list[Any]) -> bool:
        q = self.models.queue
        item = q(keys.queue_pk(entry.shard), entry.key)
        try:
            item.update(
                actions=actions, condition=q.pk.exists() & (q.token == entry.token) & (q.lease_owner == owner)
            )
        except UpdateError as exc:
            if _condition_failed(exc):
                return False
            raise
        return True

    def shard_entries(
        self, shard: int, *, up_to: datetime | None = None, after_key: str | None = None, page_size: int = 100
    ) -> Iterator[QueueEntry]:
        """Entries of one shard in run-time order (consistent), optionally only those due by `up_to`
        and/or after the sort key `after_key`. Lazily paged: callers read only what they consume."""
        q = self.models.queue
        condition: Condition | None = None
        if up_to is not None and after_key is not None:
            lower, upper = after_key + "\x00", keys.upper_bound_for(up_to)
            if lower > upper:  # DynamoDB rejects a BETWEEN whose bounds are reversed
                return
            condition = q.sk.between(lower, upper)
        elif up_to is not None:
            condition = q.sk <= keys.upper_bound_for(up_to)
        elif after_key is not None:
            condition = q.sk > after_key
        for item in q.query(
            keys.queue_pk(shard),
            range_key_condition=condition,
            consistent_read=True,
            page_size=page_size,
        ):
            yield _queue_entry(item, shard)

    def merged_entries(
        self, *, up_to: datetime | None = None, after_key: str | None = None, page_size: int = 100
    ) -> Iterator[QueueEntry]:
        """Entries of all shards in run-time order (as `shard_entries`), merged. The shards' first
        pages are read in parallel: one round trip of latency instead of one per shard."""
        streams = [
            self.shard_entries(shard, up_to=up_to, after_key=after_key, page_size=page_size)
            for shard in range(self.shards)
        ]
        firsts = list(self._pool.map(lambda stream: next(stream, None), streams))
        primed = [
            itertools.chain([first], stream)
            for first, stream in zip(firsts, streams, strict=True)
            if first is not None
        ]
        return heapq.merge(*primed, key=lambda entry: entry.key)

    def shard_head(self, shard: int) -> datetime | None:
        """Earliest time any entry of `shard` becomes claimable. Reads the leased entries at the front
        of the shard (in flight: bounded by the worker pool) and then one more."""
        best: datetime | None = None
        for entry in self.shard_entries(shard, page_size=HEAD_PAGE_SIZE):
            at = entry.effective_at()
            best = at if best is None or at < best else best
            if entry.lease_until is None or entry.lease_until <= entry.run_at:
                break  # every later entry runs at or after this one
        return best

    def head(self) -> datetime | None:
        """Earliest claimable time over all shards (strongly consistent, no Scan)."""
        heads = [h for h in self._pool.map(self.shard_head, range(self.shards)) if h is not None]
        return min(heads) if heads else None

    # ------------------------------------------------------------------ rule state
    def read_rule_state(self) -> RuleState:
        try:
            item = self.models.rule.get(RULE_STATE_PK, RULE_STATE_SK, consistent_read=True)
        except self.models.rule.DoesNotExist:
            return RuleState(armed_minute=None, version=0)
        armed = int(item.armed_at or 0)
        return RuleState(
            armed_minute=from_epoch(armed) if armed else None,
            version=int(item.version or 0),
            published_version=int(item.published or 0),
            repair_version=int(item.repaired) if item.repaired is not None else None,
            kicked_at=from_epoch(item.kicked_at) if item.kicked_at else None,
            waiter_at=from_epoch(item.waiter_at) if item.waiter_at else None,
            waiter_until=from_epoch(item.waiter_until) if item.waiter_until else None,
            waiter_owner=item.waiter_owner,
        )

    def cas_rule_state(self, expected_version: int, armed_minute: datetime | None) -> int | None:
        """Set the armed minute if the record's version is `expected_version`; returns the new
        version, or None when someone else changed it first."""
        r = self.models.rule
        item = r(RULE_STATE_PK, RULE_STATE_SK)
        armed = int(to_epoch(armed_minute)) if armed_minute is not None else 0
        condition = r.version.does_not_exist() if expected_version == 0 else r.version == expected_version
        try:
            item.update(
                actions=[r.armed_at.set(armed), r.version.set(expected_version + 1)], condition=condition
            )
        except UpdateError as exc:
            if _condition_failed(exc):
                return None
            raise
        return expected_version + 1

    def confirm_published(self, version: int) -> bool:
        """Record that a PutRule of the value at `version` has returned, if the record is still at
        `version` (the publish loop's confirmation; False: it moved meanwhile, publish again)."""
        r = self.models.rule
        return self._update_rule([r.published.set(version)], r.version == version)

    def claim_repair(self, version: int) -> bool:
        """Take it upon the caller to publish the record at `version`, whose PutRule was never
        confirmed (its writer may have died before it). One caller per version wins."""
        r = self.models.rule
        condition = (
            (r.version == version)
            & (r.published.does_not_exist() | (r.published != version))
            & (r.repaired.does_not_exist() | (r.repaired != version))
        )
        return self._update_rule([r.repaired.set(version)], condition)

    def claim_waiter(
        self,
        at: datetime,
        owner: str,
        until: datetime,
        stale_before: datetime,
        *,
        expected_version: int | None = None,
    ) -> bool:
        """Become the one worker sleeping for a due-soon head at `at`, alive until `until`. Succeeds if
        there is no waiter, we are it, the current one wakes later than `at`, will be gone by `at`, or
        should have woken before `stale_before` (it died: waiters release their claim on waking).
        With `expected_version`: only while the record is still at that version, published."""
        r = self.models.rule
        condition: Condition = (
            r.waiter_at.does_not_exist()
            | (r.waiter_owner == owner)
            | (r.waiter_at > to_epoch(at))
            | (r.waiter_until < to_epoch(at))
            | (r.waiter_at < to_epoch(stale_before))
        )
        if expected_version is not None:
            condition = condition & (r.version == expected_version) & (r.published == expected_version)
        actions = [
            r.waiter_at.set(to_epoch(at)),
            r.waiter_until.set(to_epoch(until)),
            r.waiter_owner.set(owner),
        ]
        return self._update_rule(actions, condition)

    def release_waiter(self, owner: str, at: datetime) -> bool:
        """Remove the waiter claim of `owner` for `at` (and nothing newer)."""
        r = self.models.rule
        actions = [r.waiter_at.remove(), r.waiter_until.remove(), r.waiter_owner.remove()]
        return self._update_rule(actions, (r.waiter_owner == owner) & (r.waiter_at == to_epoch(at)))

    def _update_rule(self, actions: list[Any], condition: Condition) -> bool:
        """One conditional UpdateItem of the rule record; False when its condition failed."""
        item = self.models.rule(RULE_STATE_PK, RULE_STATE_SK)
        try:
            item.update(actions=actions, condition=condition)
        except UpdateError as exc:
            if _condition_failed(exc):
                return False
            raise
        return True

    def try_mark_kicked(self, now: datetime, not_since: datetime) -> bool:
        """Claim the right to kick a stalled worker (at most once per window, across editors)."""
        r = self.models.rule
        condition = r.kicked_at.does_not_exist() | (r.kicked_at < to_epoch(not_since))
        return self._update_rule([r.kicked_at.set(to_epoch(now))], condition)


def _task_record(item: Any) -> TaskRecord:
    last_run = None
    if item.last_run is not None:
        lr = item.last_run
        last_run = LastRun(
            started_at=lr.started_at,
            finished_at=lr.finished_at,
            outcome=lr.outcome,
            error=lr.error,
            scheduled_for=lr.scheduled_for,
            attempt=int(lr.attempt or 1),
        )
    return TaskRecord(
        id=item.task_id,
        action=item.action,
        payload=item.payload,
        status=item.status,
        schedule_kind=item.schedule_kind,
        due=item.due,
        created_at=item.created_at,
        updated_at=item.updated_at,
        version=int(item.version),
        cron=item.cron,
        timezone=item.timezone or "UTC",
        every_seconds=float(item.every_seconds) if item.every_seconds is not None else None,
        end=item.end,
        max_attempts=int(item.max_attempts),
        retry_backoff_seconds=float(item.retry_backoff_seconds),
        misfire_grace_seconds=(
            float(item.misfire_grace_seconds) if item.misfire_grace_seconds is not None else None
        ),
        attempts=int(item.attempts or 0),
        runs=int(item.runs or 0),
        last_run=last_run,
        queue_key=item.queue_key,
        queue_token=item.queue_token,
        request_hash=item.request_hash,
        expires_at=item.expires_at,
    )


def _queue_entry(item: QueueItem, shard: int) -> QueueEntry:
    run_at, task_id = keys.split_queue_sort_key(item.sk)
    return QueueEntry(
        shard=shard,
        run_at=run_at,
        task_id=task_id,
        token=item.token,
        scheduled_for=item.scheduled_for,
        key=item.sk,
        attempt=int(item.attempt or 1),
        lease_until=from_epoch(item.lease_until) if item.lease_until is not None else None,
        lease_owner=item.lease_owner,
        created_at=item.created_at,
        last_error=item.last_error,
    )
