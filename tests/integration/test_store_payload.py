"""A payload larger than INLINE_PAYLOAD_BYTES in an item of its own (nexttick/store/tasks.py):
written once, so the task's claim and completion cost what they cost with a small payload; a
change writes a new one and retires the old after a grace period; the keeper deletes it when the
task's TTL removes the task."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from local.meter import DynamoMeter
from nexttick.config import NextTickSettings
from nexttick.constants import INLINE_PAYLOAD_BYTES
from nexttick.keeper import Keeper
from nexttick.store import keys
from nexttick.store.records import QueueEntry
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv

LARGE = {"blob": "x" * 8192}


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=1, max_invocations=1)


def _payload_items(env: WorkerEnv, task_id: str) -> list[dict[str, Any]]:
    table = env.runtime.store.table
    items = table.query(keys.task_pk(task_id), consistent_read=True)["Items"]
    return [i for i in items if i["sk"]["S"].startswith("P#")]


def _units_of_one_run(env: WorkerEnv, payload: dict[str, Any]) -> dict[str, float]:
    """Write units of a one-shot's create, claim and completion (a pool of one: its steps delimit
    its requests)."""
    meter = DynamoMeter(env.runtime.store)
    task = env.editor.schedule_at("record", env.now() + timedelta(minutes=1), payload)
    units = {"create": meter.total_write_units}
    marks: dict[str, float] = {}

    def hook(step: str, entry: QueueEntry) -> None:
        if entry.task_id == task.id and step in ("claim", "claimed", "completed"):
            marks[step] = meter.total_write_units

    env.travel_to(task.due + timedelta(seconds=1))
    env.run(remaining_seconds=30, hook=hook)
    assert RECORDER.calls[task.id][0].envelope["payload"] == payload
    units["claim"] = marks["claimed"] - marks["claim"]
    units["completion"] = marks["completed"] - marks["claimed"]
    return units


def test_a_large_payload_is_written_once_and_claim_and_completion_cost_what_a_small_one_costs(
    env: WorkerEnv,
) -> None:
    small = _units_of_one_run(env, {"n": 1})
    large = _units_of_one_run(env, LARGE)
    # Then the claim and the completion cost the same; only the create pays for the payload
    assert (large["claim"], large["completion"]) == (small["claim"], small["completion"]) == (1, 1)
    assert large["create"] > small["create"] + 8


def test_the_task_item_names_its_payload_item_and_reads_return_the_payload(env: WorkerEnv) -> None:
    store = env.runtime.store
    task = env.editor.schedule_at("record", env.now() + timedelta(hours=1), LARGE)
    item = store.table.get_item(*store.task_key(task.id), consistent_read=True)["Item"]
    assert "payload" not in item and item["payload_ref"]["S"]
    [payload_item] = _payload_items(env, task.id)
    assert payload_item["sk"]["S"] == keys.payload_sort_key(item["payload_ref"]["S"])
    assert env.editor.get(task.id).payload == LARGE
    assert env.editor.list().items[0].payload == LARGE
    # A small payload stays inline
    small = env.editor.schedule_at("record", env.now() + timedelta(hours=2), {"x": "y" * 10})
    assert "payload" in store.table.get_item(*store.task_key(small.id), consistent_read=True)["Item"]
    assert _payload_items(env, small.id) == []
    assert len(str(LARGE)) > INLINE_PAYLOAD_BYTES


def test_a_payload_change_writes_a_new_item_and_retires_the_old_one(env: WorkerEnv) -> None:
    task = env.editor.schedule_at("record", env.now() + timedelta(hours=1), LARGE)
    [old] = _payload_items(env, task.id)
    # When the payload changes
    changed = {"blob": "y" * 8192}
    env.editor.update(task.id, payload=changed)
    # Then the task reads the new one; the old item expires after a grace period (a worker holding
    # the task as it was still finds it), the new one does not expire
    assert env.editor.get(task.id).payload == changed
    items = {i["sk"]["S"]: i for i in _payload_items(env, task.id)}
    assert len(items) == 2 and "expires_at" in items[old["sk"]["S"]]
    assert [sk for sk, i in items.items() if "expires_at" not in i] != [old["sk"]["S"]]
    # And an update that keeps the payload writes no payload item
    env.editor.update(task.id, max_attempts=5)
    assert len(_payload_items(env, task.id)) == 2


def test_the_keeper_deletes_the_payload_item_of_a_task_its_ttl_removed(env: WorkerEnv) -> None:
    store = env.runtime.store
    task = env.editor.schedule_at("record", env.now() + timedelta(hours=1), LARGE)
    pk, sk = store.task_key(task.id)
    image = store.table.get_item(pk, sk, consistent_read=True)["Item"]
    # When the stream reports the task's removal by its TTL
    store.table.delete_item(pk, sk)
    record = {
        "eventName": "REMOVE",
        "dynamodb": {"Keys": {"pk": image["pk"], "sk": image["sk"]}, "OldImage": image},
    }
    report = Keeper(env.runtime.rule_sync).handle([record])
    # Then its payload item is gone too
    assert report.payloads_dropped == 1 and _payload_items(env, task.id) == []
