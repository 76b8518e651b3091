"""One task model: the table's item, the store's record, the editor's Task and the API's TaskOut
hold the same fields, and the item maps to the record and back without loss."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta

from editor.models import Task
from lambdas.api.models import LastRun as LastRunOut
from lambdas.api.models import TaskOut
from nexttick.schedules import ScheduleKind
from nexttick.store.mapping import STORED_AS, task_item, task_record
from nexttick.store.models import LastRunAttribute, TaskItem
from nexttick.store.records import LastRun, TaskRecord, TaskStatus

T0 = datetime(2030, 1, 7, 9, 0, 0, 250_000, tzinfo=UTC)


def record(**overrides: object) -> TaskRecord:
    values: dict = dict(
        id="t1",
        action="log",
        payload={"to": "ada@example.com", "n": [1, {"deep": True}]},
        status="pending",
        schedule_kind="cron",
        due=T0,
        created_at=T0 - timedelta(days=1),
        updated_at=T0 - timedelta(hours=1),
        version=4,
        cron="0 9 * * 1",
        timezone="Europe/Berlin",
        end=T0 + timedelta(days=30),
        max_attempts=5,
        retry_backoff_seconds=2.5,
        misfire_grace_seconds=60.0,
        attempts=1,
        runs=3,
        last_run=LastRun(
            started_at=T0 - timedelta(days=7),
            finished_at=T0 - timedelta(days=7) + timedelta(seconds=2),
            outcome="failed",
            error="boom",
            scheduled_for=T0 - timedelta(days=7),
            attempt=2,
        ),
        queue_key="2030-01-07T09:00:00.250000Z#t1#tok",
        queue_token="tok",
        request_hash="abc",
    )
    values.update(overrides)
    return TaskRecord(**values)


def test_the_item_stores_exactly_the_records_fields() -> None:
    stored = {STORED_AS.get(f.name, f.name) for f in fields(TaskRecord)}
    assert set(TaskItem.get_attributes()) - {"pk", "sk"} == stored
    assert set(LastRunAttribute.get_attributes()) == {f.name for f in fields(LastRun)}


def test_a_record_survives_the_table_unchanged() -> None:
    for original in (record(), record(schedule_kind="every", every_seconds=90.0, cron=None, last_run=None)):
        item = task_item(TaskItem, original)
        read = task_record(TaskItem.from_raw_data(item.serialize()))
        assert read == original
        assert type(read.retry_backoff_seconds) is float and type(read.version) is int


def test_status_and_schedule_kind_are_enums_that_compare_as_strings() -> None:
    read = task_record(TaskItem.from_raw_data(task_item(TaskItem, record()).serialize()))
    assert read.status is TaskStatus.PENDING and read.status == "pending"
    assert read.schedule_kind is ScheduleKind.CRON and read.schedule_kind == "cron"


def test_task_out_has_the_tasks_fields_and_serialises_it_the_same() -> None:
    # Given the editor's view of a task (running, with a retry scheduled)
    task = Task.of(record(), status=TaskStatus.RUNNING, next_attempt_at=T0 + timedelta(minutes=1))
    # Then the API's response model reads it as is, and renders what the editor renders
    out = TaskOut.model_validate(task, from_attributes=True)
    assert out.model_dump(mode="json") == task.to_dict()
    assert set(TaskOut.model_fields) == set(task.to_dict())
    assert set(LastRunOut.model_fields) == {f.name for f in fields(LastRun)}


def test_the_view_shows_a_time_zone_for_cron_schedules_only() -> None:
    every = record(schedule_kind="every", every_seconds=90.0, cron=None, timezone="UTC")
    assert Task.of(every, status=TaskStatus.PENDING, next_attempt_at=None).timezone is None
    assert Task.of(record(), status=TaskStatus.PENDING, next_attempt_at=None).timezone == "Europe/Berlin"
