"""The home item against moto: a task with a generated id lives in the queue entry of its first
occurrence (nexttick/store/writes.py; its in-place update in tasks.py). Counted by request: one
write to create, a claim that answers with the task (no task read), one write to complete (no
delete), and what moves and what stays when the task moves on."""

from __future__ import annotations

import math
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from bench.harness import pending_once
from local.meter import DynamoMeter, item_size
from nexttick.config import NextTickSettings
from nexttick.store import keys
from tests.support.oplog import OperationLog
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv

DYNAMO_WRITES = ("PutItem", "UpdateItem", "DeleteItem")


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4, max_invocations=1)


def _writes_to(log: OperationLog, pk_prefix: str) -> list[str]:
    """The task-table writes of the log whose item is in partitions starting with `pk_prefix`."""
    return [
        operation
        for operation in DYNAMO_WRITES
        for params in log.ops("dynamodb", operation)
        if (params.get("Item") or params["Key"])["pk"]["S"].startswith(pk_prefix)
    ]


def test_a_one_shot_with_a_generated_id_is_one_item_written_three_times(env: WorkerEnv) -> None:
    store = env.runtime.store
    log = OperationLog.attach(env.runtime)
    # When a one-shot task is created without an id
    task = env.editor.schedule_at("record", env.now() + timedelta(minutes=5), {"n": 1})
    # Then its id names its home item, written once: no `T#` item, one conditional put
    assert keys.is_home_id(task.id)
    assert _writes_to(log, "T#") == [] and _writes_to(log, "Q#") == ["PutItem"]
    [entry] = env.entries_of(task.id)
    assert entry.key == keys.home_sort_key(task.id) == store.get_task(task.id).queue_key
    # When the worker runs it
    env.travel_to(task.due)
    log.reset()
    env.run(remaining_seconds=30)
    # Then the claim answered with the task (no read of it) and one write finished it: no delete
    assert RECORDER.calls[task.id][0].envelope["payload"] == {"n": 1}
    home_pk = keys.task_key(task.id, store.shards)[0]
    assert [p["Key"] for p in log.ops("dynamodb", "GetItem") if p["Key"]["pk"]["S"] == home_pk] == []
    assert [op for op in _writes_to(log, home_pk)] == ["UpdateItem", "UpdateItem"]
    assert _writes_to(log, "T#") == []
    # And the item is the finished task, no longer an entry, its run kept on it, expiring with it
    done = store.get_task(task.id)
    assert (done.status, done.runs, done.queue_key) == ("succeeded", 1, None)
    assert done.expires_at is not None and env.entries_of(task.id) == []
    [run] = env.editor.runs(task.id).items
    assert (run.number, run.outcome) == (1, "succeeded")


def test_a_recurring_task_stays_in_its_home_item_as_its_occurrences_move_on(env: WorkerEnv) -> None:
    store = env.runtime.store
    task = env.editor.schedule_every("record", "1h", {"n": 2})
    assert keys.is_home_id(task.id)
    home = keys.task_key(task.id, store.shards)
    # When two occurrences run
    for _ in range(2):
        env.travel_to(store.get_task(task.id).due)
        env.run(remaining_seconds=30)
    # Then the task is still read from its home item, which is no entry any more (the queue holds
    # only the next occurrence's entry, a plain one), and both runs are kept
    record = store.get_task(task.id)
    assert (record.runs, record.status) == (2, "pending")
    item = store.table.get_item(*home, consistent_read=True)["Item"]
    assert "token" not in item and "lease_owner" not in item and item["payload"]
    [entry] = env.entries_of(task.id)
    assert entry.key == record.queue_key != home[1] and not keys.is_home_key(entry.key)
    assert [run.number for run in env.editor.runs(task.id).items] == [2, 1]
    assert len(RECORDER.calls[task.id]) == 2


def test_a_change_in_place_keeps_the_lease_and_a_move_ends_the_home_entry(env: WorkerEnv) -> None:
    store = env.runtime.store
    task = env.editor.schedule_at("record", env.now() + timedelta(hours=1), {"v": 1})
    [entry] = env.entries_of(task.id)
    # Given its home entry claimed by a worker (a lease in flight)
    now = env.now()
    claimed = store.claim(entry, now, now + timedelta(minutes=5), "worker-1")
    assert claimed is not None and claimed.task is not None and claimed.task.payload == {"v": 1}
    # When the payload changes (the task stays where it is)
    env.editor.update(task.id, payload={"v": 2})
    # Then the entry and its lease are untouched
    [kept] = env.entries_of(task.id)
    assert (kept.token, kept.lease_owner, kept.lease_until) == (entry.token, "worker-1", claimed.lease_until)
    # When it is rescheduled
    moved = env.editor.reschedule(task.id, delay_seconds=7200)
    # Then the home item is the task alone, and its one entry is a new plain one at the new time
    [new] = env.entries_of(task.id)
    assert new.run_at == moved.due and new.key != entry.key
    assert store.get_task(task.id).payload == {"v": 2}
    # And the worker's old claim can neither extend nor finish the ended home entry
    assert not store.extend_lease(claimed, "worker-1", now + timedelta(minutes=9))


def test_a_client_id_keeps_the_two_item_layout_and_is_read_in_one_request(env: WorkerEnv) -> None:
    log = OperationLog.attach(env.runtime)
    task = env.editor.schedule_in("record", 600, id="invoice-42")
    assert _writes_to(log, "T#") == ["PutItem"] and _writes_to(log, "Q#") == ["PutItem"]
    log.reset()
    assert env.editor.get("invoice-42").id == task.id
    assert [p["Key"]["pk"]["S"] for p in log.ops("dynamodb", "GetItem")][:1] == ["T#invoice-42"]


def test_a_bulk_load_of_generated_ids_writes_one_item_per_task_and_each_runs_once(env: WorkerEnv) -> None:
    store = env.runtime.store
    log = OperationLog.attach(env.runtime)
    # Given a backlog loaded in bulk, half under generated ids and half under client ids
    due = env.now() + timedelta(minutes=1)
    records = [
        pending_once(keys.new_home_id(due) if i % 2 else f"client-{i}", due, env.now(), action="record")
        for i in range(40)
    ]
    store.bulk_insert(records, env.now())
    # Then a generated id is one home item (written as such), a client id a task item and an entry
    table = env.runtime.settings.table_name
    batches = [p["RequestItems"][table] for p in log.ops("dynamodb", "BatchWriteItem")]
    written = Counter(request["PutRequest"]["Item"]["pk"]["S"][:2] for batch in batches for request in batch)
    assert written == {"Q#": 40, "T#": 20}
    for record in records:
        read = store.get_task(record.id)
        assert read is not None and read.queue_key == record.queue_key, record.id
        [entry] = env.entries_of(record.id)
        home = keys.is_home_id(record.id)
        assert entry.key == (keys.home_sort_key(record.id) if home else record.queue_key)
        assert keys.task_key(record.id, store.shards)[0].startswith("Q#" if home else "T#")
    # When the worker runs them (the shards' heads were lowered for them)
    env.travel_to(due + timedelta(seconds=1))
    env.run(remaining_seconds=60)
    # Then each ran once and the queue holds no entry of any
    assert all(len(RECORDER.calls[record.id]) == 1 for record in records)
    assert all(env.entries_of(record.id) == [] for record in records)


def test_a_shard_read_answers_with_entries_only_and_is_billed_the_whole_items(env: WorkerEnv) -> None:
    store = env.runtime.store
    # Given home items in one shard, each carrying its task (and a payload of some size), written
    # under the meter (which learns an item's size from the writes it sees, as the bench's does)
    meter = DynamoMeter(store)
    due = env.now() + timedelta(minutes=1)
    tasks = [env.editor.schedule_at("record", due, {"pad": "x" * 200}) for _ in range(40)]
    shard = keys.shard_of(tasks[0].id, store.shards)
    whole = [i for i in store.table.query(keys.queue_pk(shard), consistent_read=True)["Items"]]
    assert len(whole) >= 5 and all("action" in item for item in whole)
    answered: list[dict[str, Any]] = []
    client = store.client
    client.meta.events.register(
        "after-call.dynamodb.Query", lambda *, parsed, **_: answered.extend(parsed.get("Items", []))
    )
    meter.reset()
    # When the shard is read as a pass reads it
    entries = list(store.shard_entries(shard))
    # Then the answer holds the entries' attributes, not their tasks
    assert [e.task_id for e in entries] == [item["task_id"]["S"] for item in whole]
    assert answered and all("action" not in item and "payload" not in item for item in answered)
    # And the read is billed what the whole items cost (DynamoDB bills them before the projection)
    assert meter.read_units["Query"] == math.ceil(sum(item_size(item) for item in whole) / 4096)
    assert meter.read_units["Query"] > math.ceil(sum(item_size(item) for item in answered) / 4096)


def test_a_burst_reads_its_finished_home_items_a_bounded_number_of_times(env: WorkerEnv) -> None:
    # Given a burst of home items due at once (finished ones stay in their shard until their TTL)
    due = env.now() + timedelta(minutes=1)
    tasks = [env.editor.schedule_at("record", due + timedelta(milliseconds=i)) for i in range(BURST)]
    read: Counter[str] = Counter()

    def count(*, parsed: dict[str, Any], **_: Any) -> None:
        read["queries"] += 1
        read["items"] += parsed.get("ScannedCount", 0)

    client = env.runtime.store.client
    client.meta.events.register("after-call.dynamodb.Query", count)
    # When one worker runs them all
    env.travel_to(due + timedelta(seconds=1))
    env.run(remaining_seconds=60)
    assert all(len(RECORDER.calls[t.id]) == 1 for t in tasks)
    # Then each item is read about twice: by the passes, which go on past what the last one took, and
    # by the re-arm's second read from the old cursor (its first read starts past what the passes
    # took) — not once per pass, nor by each of the re-arm's reads; a head read walks past the
    # finished ones in pages that grow, not one request per item
    assert read["items"] <= 2.2 * BURST, read
    assert read["queries"] <= 45, read


BURST = 120
