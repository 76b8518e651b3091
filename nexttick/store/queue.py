"""Queue entries: writing and deleting them, workers' claims and leases, and reading the shards in
due order (strongly consistent queries of base-table items, never a Scan or a GSI)."""

from __future__ import annotations

import functools
import heapq
import itertools
import uuid
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from typing import Any

from pynamodb.attributes import Attribute
from pynamodb.constants import ALL_NEW, DELETE_ITEM, UPDATE_ITEM
from pynamodb.exceptions import DeleteError, PutError, UpdateError
from pynamodb.expressions.condition import Condition

from nexttick.store import keys, wire
from nexttick.store.base import StoreBase, condition_failed
from nexttick.store.mapping import queue_entry, queue_item
from nexttick.store.models import QueueItem
from nexttick.store.prebuilt import Prebuilt
from nexttick.store.records import EntryRef, Occurrence, QueueEntry, ShardFront, TaskRecord
from nexttick.timeutil import from_epoch, to_epoch

# Entries per request when looking for a shard's head: usually the first one decides. Each further
# request of the same read asks for twice as many, up to MAX_HEAD_PAGE_SIZE (a shard's front may hold
# the finished home items of a burst, which no longer count).
HEAD_PAGE_SIZE = 1
MAX_HEAD_PAGE_SIZE = 128
# What a read of a shard asks for: an entry's attributes, not the task a home item also holds (the
# claim's answer brings that). The units read are the same; the answer is a fraction of the bytes.
_ENTRY_ATTRIBUTES = tuple(attribute.attr_name for attribute in QueueItem.get_attributes().values())


class QueueStore(StoreBase):
    """The queue entries of TaskStore."""

    def _new_entry(
        self, task_id: str, run: Occurrence, created_at: datetime, *, parked: bool = False
    ) -> QueueEntry:
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
            parked=parked,
        )

    def _put_new_entry(
        self, task_id: str, run: Occurrence, created_at: datetime, *, parked: bool = False
    ) -> QueueEntry:
        entry = self._new_entry(task_id, run, created_at, parked=parked)
        try:
            queue_item(self.models.queue, entry).save(condition=self.models.queue.pk.does_not_exist())
        except PutError as exc:
            # The key holds our fresh token, so only our own first attempt can have taken it (the
            # SDK resent a put whose answer was lost).
            if not condition_failed(exc) or self.get_entry(entry.shard, entry.key, parked=parked) is None:
                raise
        return entry

    def entry_of(self, record: TaskRecord) -> EntryRef | None:
        """The queue entry the task's schedule points at (parked while it is paused), if any."""
        if record.queue_key is None or record.queue_token is None:
            return None
        shard = keys.shard_of(record.id, self.shards)
        return EntryRef(shard, record.queue_key, record.queue_token, record.queue_parked)

    def extra_of(self, record: TaskRecord) -> EntryRef | None:
        """The entry of the task's pending "run now" occurrence, if any."""
        if record.extra_key is None or record.extra_token is None:
            return None
        return EntryRef(keys.shard_of(record.id, self.shards), record.extra_key, record.extra_token)

    def discard_entry(self, ref: EntryRef) -> bool:
        """Delete an entry only if it is still the one with `ref.token` (never someone else's). Alone,
        for entries no task points at (a crash's leftovers); the write protocol uses it in order."""
        pk = keys.queue_pk(ref.shard, parked=ref.parked)
        try:
            if is_home_entry(ref):
                self._end_home_entry.send(pk, ref.key, token=ref.token)  # the item is its task's too
            else:
                self._delete_entry.send(pk, ref.key, token=ref.token)
        except (DeleteError, UpdateError) as exc:
            if condition_failed(exc):
                return False
            raise
        return True

    def get_entry(self, shard: int, key: str, *, parked: bool = False) -> QueueEntry | None:
        item = self._queue_item(keys.queue_pk(shard, parked=parked), key)
        return None if item is None else queue_entry(item, shard, parked=parked)

    def holds_entry(self, shard: int, key: str) -> bool:
        """Whether the shard still holds an unfinished entry under `key`: its token alone, read
        consistently (a home item whose task moved on keeps its key without one)."""
        item = self._queue_item(keys.queue_pk(shard), key, [self.models.queue.token.attr_name])
        return item is not None and item.token is not None

    def _queue_item(self, pk: str, key: str, attributes: list[str] | None = None) -> QueueItem | None:
        try:
            return self.models.queue.get(pk, key, consistent_read=True, attributes_to_get=attributes)
        except self.models.queue.DoesNotExist:
            return None

    def claim(self, entry: QueueEntry, now: datetime, lease_until: datetime, owner: str) -> QueueEntry | None:
        """Lease an entry for one worker: succeeds only if it is unchanged and not leased (or its lease
        expired). Returns the claimed entry, or None when another worker holds it or it is gone.

        Every claim counts as an attempt, in the same conditional write: the returned entry's
        `attempt` is this claim's, the stored one the next claim's, so an attempt that crashes or
        fails after its action still counts."""
        return self.try_claim(entry, now, lease_until, owner)[0]

    def try_claim(
        self, entry: QueueEntry, now: datetime, lease_until: datetime, owner: str
    ) -> tuple[QueueEntry | None, QueueEntry | None]:
        """`claim`, and on failure the entry as stored (None when it is gone): whether another
        worker holds it, or it changed under a task write."""
        try:
            claimed = self._claim_entry.send(
                keys.queue_pk(entry.shard),
                entry.key,
                token=entry.token,
                now=to_epoch(now),
                until=to_epoch(lease_until),
                owner=owner,
            )
        except UpdateError as exc:
            if not condition_failed(exc):
                raise
            # Ours if the SDK resent an applied claim whose answer was lost: same owner, same lease.
            stored = self.get_entry(entry.shard, entry.key)
            if stored is None or not (
                stored.token == entry.token
                and stored.lease_owner == owner
                and stored.lease_until == from_epoch(to_epoch(lease_until))
            ):
                return None, stored
            stored.attempt -= 1
            return stored, None
        ours = wire.queue_entry_of(claimed["Attributes"], entry.shard)
        ours.attempt -= 1
        return ours, None

    @functools.cached_property
    def _claim_entry(self) -> Prebuilt:
        """The claim's UpdateItem: unchanged (`token`), not leased or its lease ended by `now`; sets
        the lease (`until`, `owner`) and counts the attempt, answering the entry as it is now."""
        q = self.models.queue
        slots: dict[str, Attribute[Any]] = {
            "token": q.token,
            "now": q.lease_until,
            "until": q.lease_until,
            "owner": q.lease_owner,
        }
        return Prebuilt(
            self.table,
            UPDATE_ITEM,
            slots,
            lambda token, now, until, owner: {
                "actions": [q.lease_until.set(until), q.lease_owner.set(owner), q.attempt.add(1)],
                "condition": q.pk.exists()
                & (q.token == token)
                & (q.lease_until.does_not_exist() | (q.lease_until <= now)),
                "return_values": ALL_NEW,
            },
        )

    @functools.cached_property
    def _delete_entry(self) -> Prebuilt:
        """An entry's DeleteItem, only while it holds `token`."""
        q = self.models.queue
        return Prebuilt(
            self.table, DELETE_ITEM, {"token": q.token}, lambda token: {"condition": q.token == token}
        )

    @functools.cached_property
    def _end_home_entry(self) -> Prebuilt:
        """A home item's entry ended (its entry attributes removed, the task left), only while it
        holds `token`."""
        q = self.models.queue
        ended: list[Attribute[Any]] = [getattr(q, name) for name in wire.HOME_ENTRY_FIELDS]
        return Prebuilt(
            self.table,
            UPDATE_ITEM,
            {"token": q.token},
            lambda token: {"actions": [a.remove() for a in ended], "condition": q.token == token},
        )

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
            if condition_failed(exc):
                return False
            raise
        return True

    def shard_entries(
        self,
        shard: int,
        *,
        up_to: datetime | None = None,
        after_key: str | None = None,
        from_key: str | None = None,
        page_size: int = 100,
        grow_to: int | None = None,
        parked: bool = False,
    ) -> Iterator[QueueEntry]:
        """Entries of one shard in run-time order (consistent), optionally only those due by `up_to`,
        after the sort key `after_key` and from the sort key `from_key` on (a shard's cursor); with
        `parked`, of its paused tasks' twin partition. Lazily paged (`page_size` items a request,
        each next request twice as many up to `grow_to`): callers read only what they consume."""
        q = self.models.queue
        lower = max(filter(None, (after_key and after_key + "\x00", from_key)), default=None)
        condition: Condition | None = None
        if up_to is not None and lower is not None:
            upper = keys.upper_bound_for(up_to)
            if lower > upper:  # DynamoDB rejects a BETWEEN whose bounds are reversed
                return
            condition = q.sk.between(lower, upper)
        elif up_to is not None:
            condition = q.sk <= keys.upper_bound_for(up_to)
        elif lower is not None:
            condition = q.sk >= lower
        pk = keys.queue_pk(shard, parked=parked)
        start: dict[str, Any] | None = None
        while True:
            # The table's own Query and the wire codec: a model instance per item cost the worker's
            # pass more CPU than the entries it reads.
            page = self.table.query(
                pk,
                range_key_condition=condition,
                consistent_read=True,
                limit=page_size,
                exclusive_start_key=start,
                attributes_to_get=list(_ENTRY_ATTRIBUTES),  # PynamoDB wants a list
            )
            for item in page.get("Items", ()):
                entry = wire.queue_entry_of(item, shard, parked=parked)
                if entry.token is not None:  # else a home item whose task moved on: no entry any more
                    yield entry
            start = page.get("LastEvaluatedKey")
            if not start:
                return
            if grow_to:
                page_size = min(grow_to, page_size * 2)

    def merged_entries(
        self,
        *,
        up_to: datetime | None = None,
        after_key: str | None = None,
        page_size: int = 100,
        shards: Collection[int] | None = None,
        parked: bool = False,
        cursors: Mapping[int, str] | None = None,
    ) -> Iterator[QueueEntry]:
        """Entries of all shards (or of `shards`) in run-time order (as `shard_entries`; each shard
        from its cursor in `cursors`, if any), merged. The shards' first pages are read in parallel:
        one round trip of latency instead of one per shard."""
        streams = [
            self.shard_entries(
                shard,
                up_to=up_to,
                after_key=after_key,
                from_key=(cursors or {}).get(shard),
                page_size=page_size,
                parked=parked,
            )
            for shard in (range(self.shards) if shards is None else sorted(shards))
        ]
        firsts = list(self._pool.map(lambda stream: next(stream, None), streams))
        primed = [itertools.chain([f], s) for f, s in zip(firsts, streams, strict=True) if f is not None]
        return heapq.merge(*primed, key=lambda entry: entry.key)

    def shard_front(self, shard: int, cursor: str | None = None, now: datetime | None = None) -> ShardFront:
        """The front of `shard` read from `cursor`: the earliest time any entry becomes claimable, and
        the cursor it justifies (the first entry's key — the first unfinished one — or, if earlier,
        the key of `now`: a later entry is due after the read). Reads the leased entries at the front
        (in flight: bounded by the worker pool) and then one more."""
        best: datetime | None = None
        first: str | None = None
        for entry in self.shard_entries(
            shard, from_key=cursor, page_size=HEAD_PAGE_SIZE, grow_to=MAX_HEAD_PAGE_SIZE
        ):
            first = first or entry.key
            at = entry.effective_at()
            best = at if best is None or at < best else best
            if entry.lease_until is None or entry.lease_until <= entry.run_at:
                break  # every later entry runs at or after this one
        bound = keys.cursor_at(now) if now is not None else None
        return ShardFront(best, min(filter(None, (first, bound)), default=None))

    def shard_fronts(
        self,
        shards: Collection[int],
        cursors: Mapping[int, str] | None = None,
        *,
        now: datetime | None = None,
    ) -> dict[int, ShardFront]:
        """`shard_front` of each of `shards` (each from its cursor in `cursors`), read in parallel."""
        ordered = sorted(shards)
        starts = cursors or {}
        fronts = self._pool.map(lambda shard: self.shard_front(shard, starts.get(shard), now), ordered)
        return dict(zip(ordered, fronts, strict=True))

    def head(self) -> datetime | None:
        """Earliest claimable time over all shards, read from every shard (strongly consistent, no
        Scan): what the rule record's shard heads are lower bounds of."""
        fronts = self.shard_fronts(range(self.shards)).values()
        return min((front.head for front in fronts if front.head is not None), default=None)


def is_home_entry(ref: EntryRef) -> bool:
    """Whether an entry is a home item's (ended by removing its attributes, never deleted)."""
    return not ref.parked and keys.is_home_key(ref.key)
