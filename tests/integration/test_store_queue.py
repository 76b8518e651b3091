"""TaskStore queue and task primitives against moto: ordering, bounds, tokens, leases, CAS."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import time_machine

from bench.harness import pending_once
from local.meter import DynamoMeter
from nexttick.store import QueueEntry, TaskStore
from nexttick.store.keys import queue_sort_key, shard_of, split_queue_sort_key
from nexttick.store.records import EntryRef, Occurrence
from tests.support.aws import RecordedRuntime
from tests.support.oplog import all_entries

NOW = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)


def _entry(store: TaskStore, task_id: str, run_at: datetime) -> QueueEntry:
    """A pending task due at `run_at`, and its queue entry."""
    store.create_task(pending_once(task_id, run_at, NOW))
    [entry] = [e for e in all_entries(store) if e.task_id == task_id]
    return entry


def _same_shard_ids(store: TaskStore, n: int) -> list[str]:
    ids = [f"t{i}" for i in range(200)]
    shard0 = [i for i in ids if shard_of(i, store.shards) == 0]
    return shard0[:n]


def test_shard_entries_are_in_run_time_order_and_bounded_by_up_to(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    store = runtime.store
    ids = _same_shard_ids(store, 4)
    times = [NOW + timedelta(seconds=s) for s in (30, -10, 0, 0.000001)]
    for task_id, at in zip(ids, times, strict=True):
        _entry(store, task_id, at)
    # all, in order
    assert [e.run_at for e in store.shard_entries(0)] == sorted(times)
    # due by NOW: inclusive of an entry due exactly now, not of one a microsecond later
    assert [e.run_at for e in store.shard_entries(0, up_to=NOW)] == [NOW - timedelta(seconds=10), NOW]
    # after a key, and after a key and up to a time
    first = next(store.shard_entries(0))
    assert [e.run_at for e in store.shard_entries(0, after_key=first.key)] == sorted(times)[1:]
    assert [e.run_at for e in store.shard_entries(0, up_to=NOW, after_key=first.key)] == [NOW]
    # an after_key beyond up_to selects nothing, without sending the reversed BETWEEN that DynamoDB
    # rejects with a ValidationException (moto accepts it, so count the queries instead)
    last_key = queue_sort_key(NOW + timedelta(seconds=30), ids[0], "f" * 32)
    meter = DynamoMeter(store)
    assert list(store.shard_entries(0, up_to=NOW, after_key=last_key)) == []
    assert meter.calls["Query"] == 0
    assert "Scan" not in meter.calls


def test_discard_entry_only_with_its_own_token(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    store = runtime.store
    entry = _entry(store, "a", NOW)
    assert store.discard_entry(EntryRef(entry.shard, entry.key, "someone-else")) is False
    assert store.get_entry(entry.shard, entry.key) is not None
    assert store.discard_entry(entry.ref) is True
    assert store.get_entry(entry.shard, entry.key) is None
    assert store.discard_entry(entry.ref) is False


def test_an_entry_key_is_unique_even_for_the_same_instant_and_task(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    store = runtime.store
    # Given a task rescheduled to the very due time it already has
    task = pending_once("same", NOW + timedelta(hours=1), NOW)
    store.create_task(task)
    [first] = all_entries(store)
    assert task.due is not None
    moved = replace(task, version=2)
    assert store.swap_occurrence(task, moved, Occurrence(task.due, task.due), leaving=first.ref)
    # Then the new entry has a key of its own (instant, id, token): the old one was never overwritten
    [second] = all_entries(store)
    assert second.key == queue_sort_key(task.due, "same", second.token) != first.key
    assert (second.token, second.key) == (moved.queue_token, moved.queue_key)
    assert split_queue_sort_key(second.key) == (task.due, "same")


def test_a_lease_is_exclusive_until_it_expires_and_hides_the_entry_from_the_head(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    store = runtime.store
    a, b = _same_shard_ids(store, 2)
    first = _entry(store, a, NOW - timedelta(seconds=5))
    _entry(store, b, NOW + timedelta(minutes=10))
    assert store.head() == NOW - timedelta(seconds=5)
    # When worker 1 leases the due entry for a minute
    claimed = store.claim(first, NOW, NOW + timedelta(seconds=60), "w1")
    assert claimed is not None and claimed.lease_owner == "w1"
    # Then nobody else can claim it, and the head is the lease's end
    assert store.claim(first, NOW, NOW + timedelta(seconds=60), "w2") is None
    assert store.head() == NOW + timedelta(seconds=60)
    # The owner can extend its lease, others cannot
    assert store.defer_entry(claimed, "w2", NOW + timedelta(minutes=5)) is False
    assert store.defer_entry(claimed, "w1", NOW + timedelta(minutes=20)) is True
    assert store.head() == NOW + timedelta(minutes=10)  # the next entry is earlier than the lease end
    # After the lease expires another worker may take it over
    later = NOW + timedelta(minutes=21)
    assert store.claim(first, later, later + timedelta(seconds=60), "w2") is not None


def test_replace_task_is_a_compare_and_set_on_the_version(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    store = runtime.store
    record = pending_once("cas", NOW, NOW)
    store.create_task(record)
    record.version = 2
    record.payload = {"v": 2}
    assert store.replace_task(record, expected_version=1) is True
    record.version = 3
    record.payload = {"v": 3}
    assert store.replace_task(record, expected_version=1) is False  # a stale writer loses
    stored = store.get_task("cas")
    assert stored is not None
    assert (stored.version, stored.payload) == (2, {"v": 2})


def test_merged_entries_read_all_first_pages_at_once_and_merge_in_run_time_order(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    store = runtime.store
    # Given entries in every shard (some due, some not)
    times = {f"m{i}": NOW + timedelta(seconds=(i * 37) % 90 - 45) for i in range(8 * store.shards)}
    for task_id, at in times.items():
        _entry(store, task_id, at)
    assert {e.shard for e in all_entries(store)} == set(range(store.shards))
    # And a Query that spends 0.3 s waiting on the network (a sleep releases the GIL like a socket)
    lock, in_flight, most = threading.Lock(), [0], [0]

    def query_starts(**_: object) -> None:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.3)

    def query_ends(**_: object) -> None:
        with lock:
            in_flight[0] -= 1

    client = store.client
    client.meta.events.register("before-call.dynamodb.Query", query_starts)
    client.meta.events.register("after-call.dynamodb.Query", query_ends)
    # When the due entries are read merged across the shards
    merged = list(store.merged_entries(up_to=NOW, page_size=3))
    # Then every shard's first page was in flight at the same time (one round trip, not one per shard)
    assert most[0] == store.shards
    # And the entries come in run-time order, exactly the due ones
    assert [e.task_id for e in merged] == sorted(
        (i for i, at in times.items() if at <= NOW), key=lambda i: (times[i], i)
    )


def test_a_resent_write_is_recognised_as_ours_after_dynamodb_normalised_its_numbers(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    store = runtime.store
    client: Any = store.client
    key = {"pk": {"S": "T#norm"}, "sk": {"S": "T"}}
    record = pending_once("norm", NOW, NOW)
    record.retry_backoff_seconds = 30.0  # written as "30.0"
    store.create_task(record)
    record.version = 2
    assert store.replace_task(record, expected_version=1) is True
    # Given the item as DynamoDB stores it: numbers normalised ("30.0" reads back as "30"; moto keeps
    # the text it was sent, so the test writes the normalised form itself)
    item = client.get_item(TableName=store.table_name, Key=key, ConsistentRead=True)["Item"]
    assert item["retry_backoff_seconds"] == {"N": "30.0"}
    item["retry_backoff_seconds"] = {"N": "30"}
    client.put_item(TableName=store.table_name, Item=item)
    # When the SDK resends the compare-and-set whose answer was lost (its condition now fails on its
    # own first write), Then the store recognises that write as its own
    assert store.replace_task(record, expected_version=1) is True
    # And a different write at that version is still a lost race
    record.payload = {"other": True}
    assert store.replace_task(record, expected_version=1) is False
