"""One task model: the table's item, the store's record and the editor's Task hold the same fields,
the item maps to the record and back without loss, and the Task renders itself as the API and the
CLI answer it."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta

from editor.models import Task, as_json
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


def test_a_task_renders_its_fields_under_their_public_names_as_json() -> None:
    # Given the editor's view of a task (running, with a retry scheduled), answering a cancel
    task = Task.of(record(), status=TaskStatus.RUNNING, next_attempt_at=T0 + timedelta(minutes=1))
    task.occurrence_may_run = True
    # When it is rendered as the API and the CLI answer it
    body = as_json(task)
    # Then every field is there under its public name, the cancel's side answer is not
    public = {f.name for f in fields(Task)} - {"occurrence_may_run", "schedule_kind"} | {"schedule"}
    assert set(body) == public
    # And times are RFC 3339 in UTC, enums their values, the payload and the last run as they are
    assert (
        body["due"] == "2030-01-07T09:00:00.250000Z"
        and body["next_attempt_at"] == "2030-01-07T09:01:00.250000Z"
    )
    assert body["status"] == "running" and body["schedule"] == "cron" and body["dst_skipped"] == "skip"
    assert body["payload"] == {"to": "ada@example.com", "n": [1, {"deep": True}]}
    assert set(body["last_run"]) == {f.name for f in fields(LastRun)}
    assert body["last_run"]["outcome"] == "failed" and body["last_run"]["run_at"] is None


def test_the_view_shows_a_time_zone_for_cron_schedules_only() -> None:
    every = record(schedule_kind="every", every_seconds=90.0, cron=None, timezone="UTC")
    assert Task.of(every, status=TaskStatus.PENDING, next_attempt_at=None).timezone is None
    assert Task.of(record(), status=TaskStatus.PENDING, next_attempt_at=None).timezone == "Europe/Berlin"
