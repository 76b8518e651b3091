"""Every claim is a delivery attempt (I1, I4): an occurrence whose processing keeps failing after its
action ran, or keeps killing its worker, ends `failed` after `max_attempts` instead of being
delivered again every lease for ever."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from nexttick.config import NextTickSettings
from nexttick.store.records import QueueEntry
from tests.support.aws import task_write
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv

LEASE = timedelta(seconds=60)


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4, lease_seconds=60)


class Crash(BaseException):
    """The invocation dies here (Lambda timeout / kill): nothing after this line runs."""


def fail_task_writes(env: WorkerEnv, task_id: str, unless_status: str) -> list[str]:
    """Make every write of one task fail (a throttled or poisoned completion write: a `T#` item's
    PutItem, or the compare-and-set UpdateItem of a home item), except writes of status
    `unless_status`. Returns the statuses of the refused writes."""
    refused: list[str] = []
    home_key = env.runtime.store.task_key(task_id)

    def before(params: dict[str, Any], model: Any, **_: Any) -> None:
        if not task_write(model.name, params):
            return
        if model.name == "PutItem":
            item = params["Item"]
            mine, status = item["task_id"]["S"] == task_id, item["status"]["S"]
        else:
            key = (params["Key"]["pk"]["S"], params["Key"]["sk"]["S"])
            names = {name: placeholder for placeholder, name in params["ExpressionAttributeNames"].items()}
            values = dict(re.findall(r"(#a\d+) = (:v\d+)", params["UpdateExpression"]))
            mine, status = key == home_key, params["ExpressionAttributeValues"][values[names["status"]]]["S"]
        if mine and status != unless_status:
            refused.append(status)
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "injected task write failure"}},
                model.name,
            )

    client = env.runtime.store.client
    client.meta.events.register("provide-client-params.dynamodb", before)
    return refused


def test_a_completion_that_keeps_failing_after_the_action_ends_failed_after_max_attempts(
    env: WorkerEnv,
) -> None:
    # Given a task (3 attempts) whose action succeeds but whose completion write always fails
    due = env.now() + timedelta(minutes=2)
    task = env.editor.schedule_at("record", due, max_attempts=3)
    refused = fail_task_writes(env, task.id, unless_status="failed")
    # When workers run it again and again, each after the previous claim's lease
    at = due
    for _ in range(6):
        env.travel_to(at)
        env.run(remaining_seconds=20)
        at += LEASE + timedelta(seconds=1)
    # Then it was delivered exactly max_attempts times, as attempts 1, 2, 3 with one key
    calls = RECORDER.calls[task.id]
    assert [c.envelope["attempt"] for c in calls] == [1, 2, 3]
    assert len({c.envelope["idempotency_key"] for c in calls}) == 1
    assert refused == ["succeeded"] * 3
    # And the occurrence ended failed, with the completion's error recorded
    record = env.runtime.store.get_task(task.id)
    assert record.status == "failed" and record.due is None and record.queue_key is None
    assert record.last_run.outcome == "failed" and record.last_run.attempt == 3
    assert "InternalServerError" in record.last_run.error
    assert "injected task write failure" in record.last_run.error
    assert env.entries_of(task.id) == []


def test_a_worker_crash_during_the_action_counts_as_an_attempt(env: WorkerEnv) -> None:
    # Given a task (2 attempts) whose worker dies while its action runs, every time
    due = env.now() + timedelta(minutes=2)
    task = env.editor.schedule_at("record", due, max_attempts=2)

    def die_after_run(step: str, entry: QueueEntry) -> None:
        if step == "ran" and entry.task_id == task.id and entry.attempt <= 2:  # the action ran
            raise Crash

    # When the worker dies twice, each claim after the previous one's lease
    for attempt in range(2):
        env.travel_to(due + attempt * (LEASE + timedelta(seconds=1)))
        with pytest.raises(Crash):
            env.run(remaining_seconds=20, hook=die_after_run)
    # And a worker comes after the second lease
    env.travel_to(due + 2 * (LEASE + timedelta(seconds=1)))
    env.run(remaining_seconds=20, hook=die_after_run)
    # Then the action was attempted twice (attempts 1 and 2) and never again
    assert [c.envelope["attempt"] for c in RECORDER.calls[task.id]] == [1, 2]
    # And the occurrence ended failed, saying why
    record = env.runtime.store.get_task(task.id)
    assert record.status == "failed" and record.last_run.attempt == 2
    assert "did not finish" in record.last_run.error
    assert env.entries_of(task.id) == []


def test_a_recurring_task_whose_occurrence_keeps_crashing_moves_on_to_the_next(env: WorkerEnv) -> None:
    # Given a recurring task (1 attempt) whose worker dies during its first occurrence
    task = env.editor.schedule_every("record", "10m", max_attempts=1)
    first = task.due

    def die_after_run(step: str, entry: QueueEntry) -> None:
        if step == "ran" and entry.scheduled_for == first:
            raise Crash

    env.travel_to(first)
    with pytest.raises(Crash):
        env.run(remaining_seconds=20, hook=die_after_run)
    # When a worker comes after the lease
    env.travel_to(first + LEASE + timedelta(seconds=1))
    env.run(remaining_seconds=20)
    # Then the crashed occurrence is recorded as failed (not run again) and the next one is queued
    assert len(RECORDER.calls[task.id]) == 1
    record = env.runtime.store.get_task(task.id)
    assert record.status == "pending" and record.due == first + timedelta(minutes=10)
    assert record.last_run.outcome == "failed" and record.last_run.scheduled_for == first
    # And the next occurrence runs normally, as its own first attempt
    env.travel_to(record.due)
    env.run(remaining_seconds=20)
    assert [c.envelope["attempt"] for c in RECORDER.calls[task.id]] == [1, 1]
