"""Editor library, creating tasks: at / in / cron / every, idempotent client ids, validation, UTC,
nothing half-written, and the rule (or a direct worker invoke) for every new first task."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import boto3
import pytest
import time_machine

from editor import (
    ConflictError,
    Editor,
    PayloadTooLargeError,
    TaskSpec,
    UnknownActionError,
    ValidationError,
    as_json,
)
from nexttick.constants import EPOCH_EXPRESSION
from nexttick.ruletiming import Timing
from nexttick.store.keys import queue_sort_key
from tests.support.aws import RecordedRuntime
from tests.support.oplog import OperationLog, all_entries

NOW = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)  # frozen_now (a Monday)
LEAD = timedelta(seconds=70)  # second precision: one minute + 10 s delivery margin


def entries_of(store: Any, task_id: str) -> list[Any]:
    return [e for e in all_entries(store) if e.task_id == task_id]


def rule_expression_now(runtime: Any) -> str:
    return runtime.rule.client.describe_rule(Name=runtime.settings.rule_name)["ScheduleExpression"]


def expected_rule(due: datetime) -> str:
    return Timing().rule_expression((due - LEAD).replace(second=0, microsecond=0))


# ---------------------------------------------------------------- schedule at


AT_CASES: list[tuple[str | datetime, datetime]] = [
    ("2030-01-08T10:00:00Z", datetime(2030, 1, 8, 10, tzinfo=UTC)),
    ("2030-01-08T10:00:00.250+02:00", datetime(2030, 1, 8, 8, 0, 0, 250000, tzinfo=UTC)),
    ("2030-01-08T10:00:00.123456789-08:00", datetime(2030, 1, 8, 18, 0, 0, 123456, tzinfo=UTC)),
    ("2030-01-09T01:15:00+05:30", datetime(2030, 1, 8, 19, 45, tzinfo=UTC)),
    (datetime(2030, 7, 1, 9, tzinfo=ZoneInfo("Europe/Berlin")), datetime(2030, 7, 1, 7, tzinfo=UTC)),
    (datetime(2030, 1, 8, 10, tzinfo=ZoneInfo("America/New_York")), datetime(2030, 1, 8, 15, tzinfo=UTC)),
]


def test_schedule_at_stores_the_instant_in_utc_and_queues_it(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    for due, expected in AT_CASES:
        # When
        task = editor.schedule_at("log", due, {"to": "ada@example.com"})
        # Then the task reads back in UTC
        assert task.due == expected and task.due.tzinfo is UTC, due
        assert task.status == "pending" and task.schedule == "once"
        assert as_json(task)["due"] == expected.isoformat().replace("+00:00", "Z")
        stored = runtime.store.get_task(task.id)
        assert stored is not None and stored.queue_token is not None
        assert stored.due == expected and stored.due.utcoffset() == timedelta(0)
        # And exactly one queue entry, keyed by the UTC instant
        [entry] = entries_of(runtime.store, task.id)
        assert entry.key == queue_sort_key(expected, task.id, stored.queue_token)
        assert entry.key.startswith(expected.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        assert (entry.token, entry.key) == (stored.queue_token, stored.queue_key)
    # And the rule fires a whole lead before the earliest of them (UTC fields)
    assert rule_expression_now(runtime) == expected_rule(min(expected for _, expected in AT_CASES))


def test_the_raw_item_carries_utc_timestamps(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_at("log", "2030-01-08T10:00:00+09:00")
    pk, sk = runtime.store.task_key(task.id)  # its home item: a generated id
    raw = boto3.client("dynamodb", region_name="us-east-1").get_item(
        TableName=runtime.settings.table_name, Key={"pk": {"S": pk}, "sk": {"S": sk}}
    )["Item"]
    assert raw["due"]["S"] == "2030-01-08T01:00:00.000000+0000"
    assert raw["created_at"]["S"] == "2030-01-07T09:00:30.000000+0000"


# ---------------------------------------------------------------- schedule in / cron / every


def test_schedule_in_is_relative_to_now(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_in("log", 3 * 86400, {"to": "ada"})
    assert task.due == NOW + timedelta(days=3)
    again = editor.schedule_in("log", timedelta(minutes=5))
    assert again.due == NOW + timedelta(minutes=5)
    assert rule_expression_now(runtime) == expected_rule(NOW + timedelta(minutes=5))


def test_schedule_cron_in_an_iana_zone(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    # Fridays 09:00 Berlin (winter, +01:00) -> 08:00 UTC on Friday 11 January
    task = editor.schedule_cron("log", "0 9 * * 5", {"sku": 42}, timezone="Europe/Berlin")
    assert task.schedule == "cron"
    assert (task.cron, task.timezone) == ("0 9 * * 5", "Europe/Berlin")
    assert task.due == datetime(2030, 1, 11, 8, tzinfo=UTC)
    stored = runtime.store.get_task(task.id)
    assert stored is not None and stored.timezone == "Europe/Berlin"
    # armed for 07:58 UTC, with its backstop at 08:01
    assert rule_expression_now(runtime) == "cron(1,58 7,8 11 1 ? 2030)"


def test_schedule_cron_defaults_to_utc(editor: Editor, frozen_now: time_machine.Traveller) -> None:
    task = editor.schedule_cron("log", "*/15 * * * *")
    assert task.due == datetime(2030, 1, 7, 9, 15, tzinfo=UTC)
    assert task.timezone == "UTC"


def test_schedule_every_first_fires_one_interval_from_now(
    editor: Editor, frozen_now: time_machine.Traveller
) -> None:
    cases: list[tuple[Any, float]] = [
        ("90s", 90),
        ("1h30m", 5400),
        ("PT1H", 3600),
        ("P1D", 86400),
        (90, 90),
        (2.5, 2.5),
        (timedelta(hours=2), 7200),
    ]
    for every, seconds in cases:
        task = editor.schedule_every("log", every)
        assert task.schedule == "every"
        assert task.every_seconds == seconds, every
        assert task.due == NOW + timedelta(seconds=seconds)


def test_every_with_an_end(editor: Editor, frozen_now: time_machine.Traveller) -> None:
    task = editor.schedule_every("log", "1h", end="2030-02-01T00:00:00+01:00")
    assert task.end == datetime(2030, 1, 31, 23, tzinfo=UTC)


# ---------------------------------------------------------------- rule and direct invokes


def test_a_later_task_leaves_the_rule_alone(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    editor.schedule_in("log", 3600)
    log = OperationLog.attach(runtime)
    editor.schedule_in("log", 7200)
    assert not log.ops("events", "PutRule")
    assert rule_expression_now(runtime) == expected_rule(NOW + timedelta(hours=1))


def test_an_earlier_task_lowers_the_rule(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    editor.schedule_in("log", 7200)
    editor.schedule_in("log", 600)
    assert rule_expression_now(runtime) == expected_rule(NOW + timedelta(minutes=10))
    assert runtime.store.read_rule_state().armed_minute == datetime(2030, 1, 7, 9, 9, tzinfo=UTC)
    assert runtime.trigger.reasons == []


def test_a_past_due_is_accepted_and_runs_at_once(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    log = OperationLog.attach(runtime)
    for n, due in enumerate(["2030-01-07T09:00:00Z", "2029-06-01T00:00:00Z", "1970-01-01T00:00:00Z"], 1):
        # When
        task = editor.schedule_at("log", due)
        # Then it is pending, queued at its own (past) time, so it is at the head of the queue
        assert task.status == "pending"
        [entry] = entries_of(runtime.store, task.id)
        assert entry.run_at == task.due == datetime.fromisoformat(due)
        assert runtime.store.head() == task.due
        # And the worker was invoked directly (asynchronously); the rule was not touched
        assert runtime.trigger.reasons == ["due too soon to arm"] * n
        invokes = log.ops("lambda", "Invoke")
        assert len(invokes) == n
        assert invokes[-1]["InvocationType"] == "Event"
        assert invokes[-1]["FunctionName"] == runtime.settings.worker_function
    assert not log.ops("events", "PutRule")
    assert rule_expression_now(runtime) == EPOCH_EXPRESSION


def test_a_due_too_close_to_arm_invokes_the_worker(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    # The rule minute (due - 70 s) would be the current or a past minute, or start < 10 s from now
    delays = [0, 1, 30, 75, 99]
    for delay in delays:
        editor.schedule_in("log", delay)
    assert runtime.trigger.reasons == ["due too soon to arm"] * len(delays)
    assert rule_expression_now(runtime) == EPOCH_EXPRESSION


def test_a_due_far_enough_arms_the_rule_instead(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    for delay in [3600, 135, 100]:  # each one earlier than the last: each lowers the rule
        editor.schedule_in("log", delay)
        assert rule_expression_now(runtime) == expected_rule(NOW + timedelta(seconds=delay))
    assert runtime.trigger.reasons == []
    assert runtime.store.read_rule_state().armed_minute == datetime(2030, 1, 7, 9, 1, tzinfo=UTC)


# ---------------------------------------------------------------- idempotent creates


def test_repeating_an_identical_create_returns_the_existing_task(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    spec = TaskSpec(action="log", delay_seconds=600, payload={"order": 42}, id="order-42:reminder")
    first = editor.create(spec)
    assert first.created is True
    # When the client retries the same body later
    frozen_now.shift(5)
    log = OperationLog.attach(runtime)
    again = editor.create(
        TaskSpec(action="log", delay_seconds=600, payload={"order": 42}, id="order-42:reminder")
    )
    # Then the existing task comes back unchanged and nothing is written
    assert again.created is False
    assert again.task == first.task
    assert {op for _, op, _ in log.calls} == {"GetItem"}
    assert len(all_entries(runtime.store)) == 1


def test_a_different_body_under_the_same_id_is_a_conflict(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    body: dict[str, Any] = {"action": "log", "delay_seconds": 600, "payload": {"order": 42}, "id": "order-42"}
    original = editor.create(TaskSpec(**body)).task
    changes: list[dict[str, Any]] = [
        {"payload": {"order": 43}},
        {"delay_seconds": 601},
        {"max_attempts": 5},
        {"action": "hook"},
        {"delay_seconds": None, "every": "600s"},
    ]
    for change in changes:
        with pytest.raises(ConflictError) as caught:
            editor.create(TaskSpec(**{**body, **change}))
        assert caught.value.field == "id", change
    assert editor.get("order-42") == original
    assert len(all_entries(runtime.store)) == 1


# ---------------------------------------------------------------- validation: every error names its field


INVALID_CREATES: list[tuple[dict[str, Any], str, type[ValidationError]]] = [
    ({"due": "2030-01-08T10:00:00"}, "due", ValidationError),
    ({"due": datetime(2030, 1, 8, 10)}, "due", ValidationError),
    ({"due": "2200-01-01T00:00:00Z"}, "due", ValidationError),
    ({"due": "2199-12-31T23:30:00-01:00"}, "due", ValidationError),
    ({"due": "tomorrow"}, "due", ValidationError),
    ({}, "due", ValidationError),
    ({"due": "2030-01-08T10:00:00Z", "every": "1h"}, "every", ValidationError),
    ({"delay_seconds": 5, "cron": "* * * * *"}, "cron", ValidationError),
    ({"due": "2030-01-08T10:00:00Z", "timezone": "Europe/Berlin"}, "timezone", ValidationError),
    ({"every": "1h", "timezone": "Europe/Berlin"}, "timezone", ValidationError),
    ({"delay_seconds": -1}, "delay_seconds", ValidationError),
    ({"delay_seconds": float("nan")}, "delay_seconds", ValidationError),
    ({"delay_seconds": "60"}, "delay_seconds", ValidationError),
    ({"delay_seconds": 200 * 366 * 86400 + 1}, "delay_seconds", ValidationError),
    ({"cron": "0 9 * *"}, "cron", ValidationError),
    ({"cron": "0 0 30 2 *"}, "cron", ValidationError),  # never fires
    ({"cron": "0 9 * * 5", "timezone": "Europe/Atlantis"}, "timezone", ValidationError),
    ({"every": "0s"}, "every", ValidationError),
    ({"every": "500ms"}, "every", ValidationError),
    ({"every": "soon"}, "every", ValidationError),
    ({"every": float("inf")}, "every", ValidationError),
    ({"every": "3000000d"}, "every", ValidationError),
    ({"delay_seconds": 60, "action": "nope"}, "action", UnknownActionError),
    ({"delay_seconds": 60, "action": ""}, "action", ValidationError),
    ({"delay_seconds": 60, "payload": ["a"]}, "payload", ValidationError),
    ({"delay_seconds": 60, "payload": {"x": float("nan")}}, "payload", ValidationError),
    ({"delay_seconds": 60, "payload": {"x": object()}}, "payload", ValidationError),
    ({"delay_seconds": 60, "payload": {"x": "a" * (256 * 1024)}}, "payload", PayloadTooLargeError),
    ({"delay_seconds": 60, "id": "has space"}, "id", ValidationError),
    ({"delay_seconds": 60, "id": "x" * 129}, "id", ValidationError),
    ({"delay_seconds": 60, "id": ""}, "id", ValidationError),
    ({"delay_seconds": 60, "max_attempts": 0}, "max_attempts", ValidationError),
    ({"delay_seconds": 60, "max_attempts": 2.5}, "max_attempts", ValidationError),
    ({"delay_seconds": 60, "max_attempts": True}, "max_attempts", ValidationError),
    ({"delay_seconds": 60, "retry_backoff_seconds": -1}, "retry_backoff_seconds", ValidationError),
    ({"delay_seconds": 60, "misfire_grace_seconds": -5}, "misfire_grace_seconds", ValidationError),
    ({"delay_seconds": 60, "end": "2030-02-01T00:00:00Z"}, "end", ValidationError),  # one-shot
    ({"every": "1h", "end": "2030-01-07T09:30:00Z"}, "end", ValidationError),  # before the first
    ({"every": "1h", "end": "2030-02-01T00:00:00"}, "end", ValidationError),  # naive
]


def test_invalid_creates_name_the_field_and_write_nothing(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    log = OperationLog.attach(runtime)
    for spec, field, error in INVALID_CREATES:
        with pytest.raises(error) as caught:
            editor.create(TaskSpec(**{"action": "log", **spec}))
        assert caught.value.field == field, spec
        assert caught.value.message.startswith(f"{field}:"), spec
    writes = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "PutRule", "Invoke"}
    assert [op for _, op, _ in log.calls if op in writes] == []
    assert all_entries(runtime.store) == []
