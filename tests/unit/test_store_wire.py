"""The hot path's wire codecs (nexttick/store/wire.py) write and read exactly the items the PynamoDB
models do (nexttick/store/mapping.py through a model instance)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pynamodb.exceptions import AttributeNullError

from nexttick.store import keys, wire
from nexttick.store.mapping import queue_entry, queue_item, run_item, task_item, task_record
from nexttick.store.models import QueueItem, RunItem, TaskItem
from nexttick.store.records import QueueEntry, RunRecord, TaskStatus
from tests.unit.test_task_model import T0, record

TASKS = [
    record(),
    record(schedule_kind="every", every_seconds=90.0, cron=None, last_run=None),
    record(
        status=TaskStatus.SUCCEEDED,
        schedule_kind="once",
        cron=None,
        due=None,
        queue_key=None,
        queue_token=None,
        extra_key="k",
        extra_token="x",
        queue_parked=True,
        catch_up_until=T0,
        expires_at=T0 + timedelta(days=7),
        jitter_seconds=1.5,
        run_seq=9,
        payload={},
    ),
]


def _without_key(item: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    return {name: value for name, value in item.items() if name not in ("pk", "sk")}


@pytest.mark.parametrize("original", TASKS)
def test_a_task_is_written_and_read_as_the_model_does(original: object) -> None:
    model_item = task_item(TaskItem, original).serialize()  # type: ignore[arg-type]
    encoded = wire.TASKS.encode(original)  # type: ignore[arg-type]
    assert encoded == _without_key(model_item)
    assert list(encoded) == list(_without_key(model_item))  # same order: the same request body
    assert wire.TASKS.decode(model_item) == task_record(TaskItem.from_raw_data(model_item))


def test_missing_attributes_read_as_the_model_reads_them() -> None:
    # An item written by an older release, without the attributes that have defaults
    full = task_item(TaskItem, record()).serialize()
    defaulted = {"timezone", "attempts", "runs", "queue_parked", "dst_skipped", "run_seq", "max_attempts"}
    sparse = {name: value for name, value in full.items() if name not in defaulted}
    sparse["last_run"] = {"M": {k: v for k, v in full["last_run"]["M"].items() if k != "attempt"}}
    assert wire.TASKS.decode(sparse) == task_record(TaskItem.from_raw_data(sparse))


def test_a_missing_required_value_fails_as_the_model_fails() -> None:
    broken = record(action=None)
    with pytest.raises(AttributeNullError):
        task_item(TaskItem, broken).serialize()
    with pytest.raises(AttributeNullError):
        wire.TASKS.encode(broken)


@pytest.mark.parametrize("error", ["boom", None])
def test_a_run_record_is_written_as_the_model_does(error: str | None) -> None:
    run = RunRecord("t1", 12, T0, T0, T0, T0, T0 + timedelta(seconds=1), 2, "failed", error)
    expires = T0 + timedelta(days=30)
    model_item = run_item(RunItem, run, 2, expires).serialize()
    encoded = wire.run_attributes(run, expires)
    assert encoded == _without_key(model_item)
    assert list(encoded) == list(_without_key(model_item))


@pytest.mark.parametrize("leased", [True, False])
def test_a_claimed_entry_is_read_as_the_model_reads_it(leased: bool) -> None:
    entry = QueueEntry(
        shard=3,
        run_at=T0,
        task_id="t1",
        token="tok",
        scheduled_for=T0 - timedelta(seconds=5),
        key=keys.queue_sort_key(T0, "t1", "tok"),
        attempt=2,
        created_at=datetime(2030, 1, 1, tzinfo=UTC),
    )
    item = queue_item(QueueItem, entry).serialize()
    if leased:
        item.update(lease_until={"N": "1893488400"}, lease_owner={"S": "w1"}, last_error={"S": "x"})
    assert wire.queue_entry_of(item, 3) == queue_entry(QueueItem.from_raw_data(item), 3)
