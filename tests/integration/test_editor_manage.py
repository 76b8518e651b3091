"""Editor library, managing tasks: get, list (due order, cursor pagination across shards),
reschedule (rule lowered / untouched), update with expected versions, cancel, atomic failures."""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from editor import (
    ConflictError,
    Editor,
    TaskChanges,
    TaskNotFoundError,
    ValidationError,
    VersionMismatchError,
    as_json,
)
from local.meter import DynamoMeter
from nexttick.ruletiming import Timing
from tests.support.aws import RecordedRuntime, task_write
from tests.support.oplog import OperationLog, all_entries

NOW = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)  # frozen_now
LEAD = timedelta(seconds=70)


def armed(runtime: Any) -> str:
    return runtime.rule.client.describe_rule(Name=runtime.settings.rule_name)["ScheduleExpression"]


def expected_rule(due: datetime) -> str:
    return Timing().rule_expression((due - LEAD).replace(second=0, microsecond=0))


def snapshot(runtime: Any) -> tuple[Any, list[Any]]:
    """The stored task records and every queue entry: what a failed call must leave unchanged."""
    entries = all_entries(runtime.store)
    return entries, sorted((e.key, e.token) for e in entries)


# ---------------------------------------------------------------- get


def test_get_returns_the_task_and_unknown_ids_are_not_found(
    editor: Editor, frozen_now: time_machine.Traveller
) -> None:
    created = editor.schedule_at("log", "2030-01-08T10:00:00+01:00", {"to": "ada"}, max_attempts=5)
    task = editor.get(created.id)
    assert task == created
    body = as_json(task)
    assert body["due"] == "2030-01-08T09:00:00Z"
    assert body["created_at"] == "2030-01-07T09:00:30Z"
    assert (body["status"], body["version"], body["max_attempts"], body["attempts"]) == ("pending", 1, 5, 0)
    json.dumps(body)  # JSON-ready
    with pytest.raises(TaskNotFoundError) as caught:
        editor.get("no-such-task")
    assert caught.value.field == "id"


def test_get_reports_running_while_an_occurrence_holds_a_live_lease(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_at("log", "2030-01-07T09:00:00Z")  # already due
    [entry] = all_entries(runtime.store)
    assert runtime.store.claim(entry, NOW, NOW + timedelta(seconds=60), "worker-1") is not None
    assert editor.get(task.id).status == "running"
    assert [t.id for t in editor.list(status="running").items] == [task.id]
    assert editor.list(status="pending").items == []
    frozen_now.shift(61)  # the lease ran out (a crashed worker): pending again
    assert editor.get(task.id).status == "pending"


# ---------------------------------------------------------------- list


def test_list_pages_through_all_pending_tasks_in_due_order_across_shards(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    # Given at least 23 pending tasks at random times, added until every shard holds some (ids are
    # random, so the shard spread is too), and one cancelled
    rng = random.Random(23)
    ids_by_due: dict[str, datetime] = {}
    while len(ids_by_due) < 23 or len({e.shard for e in all_entries(runtime.store)}) < runtime.store.shards:
        due = NOW + timedelta(seconds=rng.randrange(60, 30 * 86400))
        ids_by_due[editor.schedule_at("log", due, {"i": len(ids_by_due)}).id] = due
        assert len(ids_by_due) < 200
    editor.cancel(editor.schedule_in("log", 3600).id)
    # When we page through with limit 5
    seen: list[Any] = []
    cursor = None
    pages = 0
    while True:
        page = editor.list(limit=5, cursor=cursor)
        pages += 1
        assert len(page.items) <= 5
        seen.extend(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
        assert pages <= 41
    # Then every pending task appears exactly once, in due order, and the cancelled one does not
    assert [t.id for t in seen] == sorted(ids_by_due, key=lambda i: (ids_by_due[i], i))
    assert [t.due for t in seen] == sorted(ids_by_due.values())
    full_pages = -(-len(ids_by_due) // 5)
    assert pages in (full_pages, full_pages + 1)  # a last, empty page is allowed


def test_list_reads_a_pages_tasks_in_one_consistent_batch(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    # Given seven pending tasks
    for i in range(7):
        editor.schedule_in("log", 3600 + i)
    meter = DynamoMeter(runtime.store)
    # When a page of five is listed
    page = editor.list(limit=5)
    # Then the five tasks were read in one strongly consistent BatchGetItem, not five GetItems
    assert len(page.items) == 5 and page.next_cursor is not None
    assert meter.calls["BatchGetItem"] == 1 and meter.calls["GetItem"] == 0
    assert meter.items_read["BatchGetItem"] == 5
    assert meter.read_units["BatchGetItem"] == 5.0  # one full unit each: consistent reads
    # And the next page holds the remaining two, again in one batch
    meter.reset()
    assert len(editor.list(limit=5, cursor=page.next_cursor).items) == 2
    assert meter.calls["BatchGetItem"] == 1


def test_list_skips_entries_of_changed_tasks(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_in("log", 3600)
    # A reschedule that dies between writing its new entry and replacing the task leaves an entry
    # no task points at
    client = runtime.store.client

    def die_on_task_write(*, params: dict[str, Any], model: Any, **_: Any) -> None:
        if task_write(model.name, params):
            raise RuntimeError("the process dies here")

    client.meta.events.register("provide-client-params.dynamodb", die_on_task_write)
    with pytest.raises(RuntimeError):
        editor.reschedule(task.id, delay_seconds=300)
    client.meta.events.unregister("provide-client-params.dynamodb", die_on_task_write)
    assert sorted(e.run_at for e in all_entries(runtime.store)) == [
        NOW + timedelta(minutes=5),
        NOW + timedelta(hours=1),
    ]
    assert [t.id for t in editor.list().items] == [task.id]
    assert editor.list().items[0].due == NOW + timedelta(hours=1)


def test_list_rejects_a_bad_cursor_naming_the_field(editor: Editor) -> None:
    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).decode()

    for cursor in [
        "not a cursor!",
        "e30",  # {}
        b64(b"not json"),
        b64(json.dumps({"after": 5}).encode()),
        b64(json.dumps({"after": "yesterday#x"}).encode()),
        b64(json.dumps(["after"]).encode()),
        b64(b"\xff\xfe"),
    ]:
        with pytest.raises(ValidationError) as caught:
            editor.list(cursor=cursor)
        assert caught.value.field == "cursor", cursor


def test_list_rejects_bad_limits_and_statuses(editor: Editor) -> None:
    limits: list[Any] = [0, 501, "5", 2.0]
    for limit in limits:
        with pytest.raises(ValidationError) as caught:
            editor.list(limit=limit)
        assert caught.value.field == "limit"
    for status in ("succeeded", "cancelled", "bogus"):
        with pytest.raises(ValidationError) as caught:
            editor.list(status=status)
        assert caught.value.field == "status"


# ---------------------------------------------------------------- reschedule


def test_rescheduling_earlier_lowers_the_rule(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_in("log", 7200)
    assert armed(runtime) == expected_rule(NOW + timedelta(hours=2))
    # When
    moved = editor.reschedule(task.id, due="2030-01-07T10:30:00+01:00")
    # Then the task, its single queue entry and the rule all follow
    assert moved.due == datetime(2030, 1, 7, 9, 30, tzinfo=UTC)
    assert moved.version == 2
    [entry] = all_entries(runtime.store)
    assert entry.run_at == moved.due
    assert armed(runtime) == expected_rule(moved.due)
    assert runtime.trigger.reasons == []


def test_rescheduling_later_does_not_call_putrule(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_in("log", 600)
    rule_before = armed(runtime)
    state_before = runtime.store.read_rule_state()
    log = OperationLog.attach(runtime)
    # When
    moved = editor.reschedule(task.id, delay_seconds=86400)
    # Then no PutRule: the rule still fires early (the worker raises it later), which is harmless
    assert not log.ops("events", "PutRule")
    assert not [op for op in log.ops("dynamodb", "UpdateItem") if op["Key"]["pk"]["S"] == "RULE"]
    assert armed(runtime) == rule_before
    assert runtime.store.read_rule_state() == state_before
    [entry] = all_entries(runtime.store)
    assert entry.run_at == moved.due == NOW + timedelta(days=1)


def test_rescheduling_into_the_past_invokes_the_worker(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_in("log", 7200)
    editor.reschedule(task.id, due=NOW - timedelta(minutes=1))
    assert runtime.trigger.reasons == ["due too soon to arm"]
    assert runtime.store.head() == NOW - timedelta(minutes=1)


def test_reschedule_can_switch_between_schedule_kinds(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_in("log", 7200)
    as_cron = editor.reschedule(task.id, cron="0 9 * * 5", timezone="America/New_York")
    assert (as_cron.schedule, as_cron.cron, as_cron.timezone) == ("cron", "0 9 * * 5", "America/New_York")
    assert as_cron.due == datetime(2030, 1, 11, 14, tzinfo=UTC)
    # only the zone: the same cron, re-evaluated in the new zone
    in_tokyo = editor.reschedule(task.id, timezone="Asia/Tokyo")
    assert (in_tokyo.cron, in_tokyo.due) == ("0 9 * * 5", datetime(2030, 1, 11, 0, tzinfo=UTC))
    as_every = editor.reschedule(task.id, every="1h30m")
    assert (as_every.schedule, as_every.every_seconds, as_every.timezone) == ("every", 5400, None)
    assert as_every.due == NOW + timedelta(minutes=90)
    assert as_every.version == 4
    assert len(all_entries(runtime.store)) == 1


def test_a_zone_only_applies_to_cron(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_in("log", 7200)
    before = snapshot(runtime)[1]
    for call in (
        lambda: editor.reschedule(task.id, timezone="Europe/Berlin"),
        lambda: editor.reschedule(task.id, due="2030-01-08T10:00:00Z", timezone="Europe/Berlin"),
    ):
        with pytest.raises(ValidationError) as caught:
            call()
        assert caught.value.field == "timezone"
    assert editor.get(task.id).version == 1
    assert snapshot(runtime)[1] == before


def test_a_new_recurrence_must_start_before_the_end_it_keeps(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_every("log", "1h", end="2030-01-07T12:00:00Z")
    before = snapshot(runtime)[1]
    with pytest.raises(ValidationError) as caught:
        editor.reschedule(task.id, every="1d")  # first occurrence 2030-01-08, after the end
    assert caught.value.field == "end"
    assert editor.get(task.id) == task
    assert snapshot(runtime)[1] == before
    moved = editor.reschedule(task.id, every="2h")  # still before the end: kept
    assert (moved.end, moved.due) == (datetime(2030, 1, 7, 12, tzinfo=UTC), NOW + timedelta(hours=2))


# ---------------------------------------------------------------- update


def test_update_payload_and_policy_with_expected_version(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_every("log", "1h", {"to": "ada"})
    frozen_now.shift(10)
    # When
    updated = editor.update(
        task.id,
        expected_version=1,
        payload={"to": "grace"},
        max_attempts=7,
        retry_backoff_seconds=5,
        misfire_grace_seconds=120,
        end="2030-02-01T00:00:00Z",
    )
    # Then
    assert updated.payload == {"to": "grace"}
    assert (updated.max_attempts, updated.retry_backoff_seconds, updated.misfire_grace_seconds) == (
        7,
        5.0,
        120.0,
    )
    assert updated.end == datetime(2030, 2, 1, tzinfo=UTC)
    assert updated.version == 2
    assert updated.due == task.due  # the time is untouched
    assert updated.updated_at == NOW + timedelta(seconds=10)
    assert editor.get(task.id) == updated
    # And the queue entry is the same one
    [entry] = all_entries(runtime.store)
    assert entry.run_at == task.due
    # A stale version is refused and changes nothing
    with pytest.raises(VersionMismatchError) as caught:
        editor.update(task.id, expected_version=1, payload={"to": "eve"})
    assert caught.value.field == "version"
    assert editor.get(task.id) == updated
    # Clearing the grace period
    assert (
        editor.update(task.id, expected_version=2, misfire_grace_seconds=None).misfire_grace_seconds is None
    )


def test_reschedule_honours_expected_version(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_in("log", 7200)
    editor.update(task.id, payload={"v": 2})
    before = snapshot(runtime)[1]
    with pytest.raises(VersionMismatchError):
        editor.reschedule(task.id, delay_seconds=60, expected_version=1)
    assert snapshot(runtime)[1] == before
    assert editor.reschedule(task.id, delay_seconds=600, expected_version=2).version == 3


def test_invalid_changes_leave_the_task_and_the_queue_untouched(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    # Given a pending task with its queue entry and the rule armed for it
    task = editor.schedule_every("log", "1h", {"to": "ada"})
    entries_before = snapshot(runtime)[1]
    rule_before = armed(runtime)
    log = OperationLog.attach(runtime)
    invalid: list[tuple[dict[str, Any], str]] = [
        ({"max_attempts": 0}, "max_attempts"),
        ({"payload": ["x"]}, "payload"),
        ({"payload": {"big": "x" * (256 * 1024)}}, "payload"),
        ({"retry_backoff_seconds": -1}, "retry_backoff_seconds"),
        ({"due": "2030-01-08T10:00:00"}, "due"),  # naive
        ({"due": "2200-01-01T00:00:00Z"}, "due"),
        ({"due": "2030-01-08T10:00:00Z", "every": "2h"}, "every"),
        ({"cron": "not a cron"}, "cron"),
        ({"every": "0s"}, "every"),
        ({"delay_seconds": -3}, "delay_seconds"),
        ({"every": "2h", "max_attempts": 0}, "max_attempts"),  # valid time, invalid policy
        ({"delay_seconds": 60, "payload": 5}, "payload"),
        ({"end": "2030-01-07T09:00:00Z"}, "end"),  # before the next occurrence
        ({"due": "2030-01-08T10:00:00Z", "end": "2030-02-01T00:00:00Z"}, "end"),  # a one-shot
    ]
    for fields, field in invalid:
        # When an invalid change is sent
        with pytest.raises(ValidationError) as caught:
            editor.modify(task.id, TaskChanges(**fields))
        # Then the error names the field
        assert caught.value.field == field, fields
    # And nothing changed: the task, its queue entries, the rule
    assert editor.get(task.id) == task
    assert snapshot(runtime)[1] == entries_before
    assert armed(runtime) == rule_before
    writes = {"PutItem", "UpdateItem", "DeleteItem", "PutRule", "Invoke"}
    assert [op for _, op, _ in log.calls if op in writes] == []
    with pytest.raises(ValidationError) as caught:
        editor.modify(task.id, TaskChanges())
    assert caught.value.field == "body"
    with pytest.raises(ValidationError) as caught:
        editor.update(task.id, action="hook")
    assert caught.value.field == "action"


# ---------------------------------------------------------------- cancel


def test_cancel_keeps_the_task_readable_and_removes_it_from_the_queue(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_cron("log", "0 9 * * 5", timezone="Europe/Berlin")
    frozen_now.shift(5)
    # When
    cancelled = editor.cancel(task.id)
    # Then it stays readable as cancelled, with no next due and no queue entry
    assert cancelled.status == "cancelled"
    assert cancelled.due is None
    assert cancelled.version == 2
    assert editor.get(task.id) == cancelled
    assert all_entries(runtime.store) == []
    assert editor.list().items == []
    # And it expires after the retention period (DynamoDB TTL)
    cancelled_record = runtime.store.get_task(task.id)
    assert cancelled_record is not None and cancelled_record.expires_at == NOW + timedelta(seconds=5, days=7)


def test_a_cancelled_task_cannot_change_cancels_again_and_unknown_is_not_found(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    task = editor.schedule_in("log", 600)
    cancelled = editor.cancel(task.id)
    for call in (
        lambda: editor.reschedule(task.id, delay_seconds=60),
        lambda: editor.update(task.id, payload={}),
    ):
        with pytest.raises(ConflictError) as caught:
            call()
        assert caught.value.field == "status"
    # A second cancel (a client repeating it) returns the cancelled task, whatever version it names
    assert editor.cancel(task.id) == cancelled
    assert editor.cancel(task.id, expected_version=1) == cancelled
    assert editor.get(task.id).status == "cancelled"
    with pytest.raises(TaskNotFoundError) as missing:
        editor.cancel("no-such-task")
    assert missing.value.field == "id"


def test_cancel_says_whether_an_occurrence_may_still_run(
    editor: Editor, frozen_now: time_machine.Traveller
) -> None:
    # Given a task due in an hour, one due within a worker's claim-ahead, and two paused ones, one
    # of them with a "run now" waiting
    later, soon = editor.schedule_in("log", 3600), editor.schedule_in("log", 0.8)
    parked, asked = editor.schedule_in("log", 3600), editor.schedule_in("log", 3600)
    editor.pause(parked.id)
    editor.pause(asked.id)
    editor.run_now(asked.id)
    # When each is cancelled, Then only those a worker could already hold may still run
    answers = {
        name: editor.cancel(task.id)
        for name, task in [("later", later), ("soon", soon), ("parked", parked), ("asked", asked)]
    }
    assert {name: task.occurrence_may_run for name, task in answers.items()} == {
        "later": False,
        "soon": True,
        "parked": False,
        "asked": True,
    }
    # And a repeated cancel finds nothing left to run; the answer is the task as it reads back
    assert editor.cancel(soon.id).occurrence_may_run is False
    assert editor.get(soon.id) == answers["soon"]
    assert as_json(editor.get(soon.id)) == as_json(answers["soon"])
    assert editor.get(soon.id).occurrence_may_run is None


def test_cancel_honours_expected_version(editor: Editor, frozen_now: time_machine.Traveller) -> None:
    task = editor.schedule_in("log", 600)
    with pytest.raises(VersionMismatchError):
        editor.cancel(task.id, expected_version=2)
    assert editor.get(task.id).status == "pending"
    assert editor.cancel(task.id, expected_version=1).status == "cancelled"


def test_a_cancelled_client_id_is_not_reused(editor: Editor, frozen_now: time_machine.Traveller) -> None:
    from editor import TaskSpec

    spec: dict[str, Any] = {"action": "log", "delay_seconds": 600, "id": "invoice-7"}
    editor.create(TaskSpec(**spec))
    editor.cancel("invoice-7")
    again = editor.create(TaskSpec(**spec))  # identical repeat: the (cancelled) task comes back
    assert (again.created, again.task.status) == (False, "cancelled")
