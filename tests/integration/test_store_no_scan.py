"""Store without scans: reads are independent of the backlog, no Scan on
any runtime path, and a create writes nothing that every create writes (no hot key).

Given 10,000 pending future tasks, the "what fires next" lookup (TaskStore.head) and the "what is
due now" page (shard_entries(up_to=now) over all shards) read at most a small constant + k items
for k due tasks. Items are counted by a meter on the store, which hooks the real botocore client.
"""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta

import pytest
import time_machine

from bench.harness import pending_once
from editor import Editor
from local.meter import DynamoMeter
from nexttick.store import QueueEntry, TaskStore
from nexttick.store.queue import HEAD_PAGE_SIZE
from tests.support.aws import RecordedRuntime
from tests.support.oplog import OperationLog

BACKLOG = 10_000


def _due_page(store: TaskStore, now: datetime) -> list[QueueEntry]:
    return [entry for shard in range(store.shards) for entry in store.shard_entries(shard, up_to=now)]


@pytest.mark.slow
def test_reads_are_independent_of_a_10000_task_backlog_and_nothing_scans(
    runtime: RecordedRuntime, editor: Editor, frozen_now: time_machine.Traveller
) -> None:
    """One backlog, loaded once (moto's Query cost grows with the table, ours must not)."""
    store: TaskStore = runtime.store
    shards = store.shards
    head_bound = shards * HEAD_PAGE_SIZE  # the "small constant": independent of the backlog
    now = runtime.clock.now()
    # Given 10,000 pending tasks due between 1 hour and 30 days from now (batched writes)
    rng = random.Random(10_000)
    started = time.perf_counter()
    dues = [now + timedelta(hours=1, seconds=rng.uniform(0, 30 * 86400)) for _ in range(BACKLOG)]
    store.bulk_insert(
        [
            pending_once(f"future-{i:05d}", due, now, payload={"n": f"future-{i:05d}"})
            for i, due in enumerate(dues)
        ],
        now,
    )
    print(f"\nloaded {BACKLOG} pending tasks in {time.perf_counter() - started:.1f}s")
    log = OperationLog.attach(runtime)
    meter = DynamoMeter(store)
    earliest_future = min(dues)

    due_ids: set[str] = set()
    measured = []
    for k in (0, 5, 50):
        # Given k tasks already due (created through the editor with a past `due`)
        while len(due_ids) < k:
            n = len(due_ids)
            due_ids.add(editor.schedule_at("log", now - timedelta(seconds=1 + n), {"due": n}).id)

        # When the worker asks "what fires next?"
        meter.reset()
        head = store.head()
        head_items, head_calls = meter.total_items_read, dict(meter.calls)
        # Then it reads at most one small page per shard, whatever the backlog
        assert head == (now - timedelta(seconds=k) if k else earliest_future)
        assert head_items <= head_bound
        assert head_calls == {"Query": shards}

        # When the worker asks "what is due now?"
        meter.reset()
        page = _due_page(store, now)
        page_items, page_calls = meter.total_items_read, dict(meter.calls)
        # Then it reads exactly the k due entries: nothing of the 10,000 future ones
        assert {e.task_id for e in page} == due_ids
        assert page_items <= k
        assert page_calls == {"Query": shards}
        measured.append((k, head_items, page_items))
    print(f"(k, items read by head(), items read by the due page) with {shards} shards:", measured)

    # And the editor's calls read bounded amounts and never scan either
    meter.reset()
    task = editor.schedule_in("log", 3 * 86400, {"to": "ada"})
    create_items = meter.total_items_read
    assert create_items <= 3  # the rule record (read, and twice around PutRule when it lowers)
    meter.reset()
    assert editor.get(task.id).id == task.id
    assert meter.total_items_read == 1
    cursor = None
    per_shard = max(2, 20 // shards + 2)
    list_items = []
    for _ in range(2):  # the first page and the one after it
        meter.reset()
        listed = editor.list(limit=20, cursor=cursor)
        cursor = listed.next_cursor
        assert len(listed.items) == 20
        assert meter.items_read["Query"] <= shards * per_shard + 20
        assert meter.items_read["BatchGetItem"] == 20  # the listed tasks, in one round trip
        assert meter.calls["BatchGetItem"] == 1 and meter.calls["GetItem"] == 0
        list_items.append(meter.total_items_read)
    meter.reset()
    editor.reschedule(task.id, due=now + timedelta(days=1))
    editor.update(task.id, payload={"to": "grace"}, max_attempts=5)
    editor.cancel(task.id)
    change_items = meter.total_items_read
    assert change_items <= 8
    print(
        f"items read: create {create_items}, get 1, list pages {list_items}, "
        f"reschedule+update+cancel {change_items}"
    )
    assert log.scans == 0
    assert not [op for op in log.calls if op[1] == "Scan"]


@pytest.mark.parametrize("task_id", [None, "given-id"], ids=["home-item", "client-id"])
def test_a_create_behind_the_armed_minute_writes_only_its_own_items(
    runtime: RecordedRuntime, editor: Editor, frozen_now: time_machine.Traveller, task_id: str | None
) -> None:
    # Given the rule is already armed for a task due in an hour
    editor.schedule_in("log", 3600)
    armed = runtime.store.read_rule_state()
    assert armed.armed_minute is not None
    log = OperationLog.attach(runtime)
    # When a far-future task is created
    task = editor.schedule_in("log", 30 * 86400, {"far": True}, id=task_id)
    # Then exactly: its home item (a generated id), or its queue entry and task item (a client's id),
    # and a GetItem of the rule record (a client's id is looked up first) - nothing else
    puts = 1 if task_id is None else 2
    assert log.count() == {"dynamodb.PutItem": puts, "dynamodb.GetItem": puts}
    put_keys = sorted((p["Item"]["pk"]["S"], p["Item"]["sk"]["S"]) for p in log.ops("dynamodb", "PutItem"))
    if task_id is None:
        assert put_keys == [runtime.store.task_key(task.id)]
    else:
        assert put_keys[1] == (f"T#{task.id}", "T")
        assert put_keys[0][0].startswith("Q#")
    get = log.ops("dynamodb", "GetItem")[-1]
    assert get["Key"] == {"pk": {"S": "RULE"}, "sk": {"S": "STATE"}}
    assert get["ConsistentRead"] is True
    # no UpdateItem (the rule record is untouched), no PutRule, no worker invoke
    assert runtime.store.read_rule_state() == armed


def test_creates_spread_over_shards_and_share_no_written_key(
    runtime: RecordedRuntime, editor: Editor, frozen_now: time_machine.Traveller
) -> None:
    # Given the rule is armed early
    editor.schedule_in("log", 3600)
    log = OperationLog.attach(runtime)
    # When 400 later tasks are created
    for i in range(400):
        editor.schedule_in("log", 7200 + i)
    # Then every written item key is distinct (no counter, no single queue item written per create):
    # one home item each
    written = [(p["Item"]["pk"]["S"], p["Item"]["sk"]["S"]) for p in log.ops("dynamodb", "PutItem")]
    assert len(written) == 400
    assert len(set(written)) == 400
    assert not log.ops("dynamodb", "UpdateItem")
    assert not log.ops("events", "PutRule")
    # And the queue partitions are used evenly (crc32 of random ids): no hot partition key
    per_shard: dict[str, int] = {}
    for pk, _ in written:
        if pk.startswith("Q#"):
            per_shard[pk] = per_shard.get(pk, 0) + 1
    shards = runtime.store.shards
    assert len(per_shard) == shards
    assert max(per_shard.values()) < 2.5 * (400 / shards)
    # The only item every create touches is the rule record, and only with a (cheap) read
    reads = {p["Key"]["pk"]["S"] for p in log.ops("dynamodb", "GetItem")}
    assert reads == {"RULE"}
