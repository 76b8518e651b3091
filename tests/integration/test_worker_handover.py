"""The wait hand-over against moto's SQS: a worker that would sleep through a long wait sends one
delayed message and ends; the invocation that message starts (Lambda's SQS event, as the queue's
event source mapping delivers it) sleeps the rest and runs the task at its instant. A wait too short
to be worth a message, or a send that fails, is slept through as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
import time_machine

from lambdas.worker import handler as worker_handler
from nexttick.aws import SqsWaitHandover, rule_firings
from nexttick.config import NextTickSettings, Precision
from nexttick.constants import RULE_STATE_PK, WAKE_AHEAD_SECONDS
from nexttick.worker import WorkerEvent, classify_event, handover_record, handover_wake_at
from tests.integration.test_worker_precision import SCHEDULED_EVENT, START, invoke
from tests.support.aws import RecordedRuntime
from tests.support.oplog import OperationLog
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv, make_env, make_moto_atomic

WAKE = {"source": "nexttick", "action": "wake", "reason": "due too soon to arm"}


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=8, precision=Precision.SECOND)


@pytest.fixture
def queue_url(resources: NextTickSettings) -> str:
    sqs = boto3.client("sqs", region_name=resources.region)
    return str(sqs.create_queue(QueueName="handover")["QueueUrl"])


@pytest.fixture
def env(runtime: RecordedRuntime, queue_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkerEnv]:
    make_moto_atomic(monkeypatch)
    with time_machine.travel(START, tick=False) as traveller:
        env = make_env(runtime, traveller)
        env.runtime.handover = SqsWaitHandover(boto3.client("sqs", region_name="us-east-1"), queue_url)
        worker_handler.use(env.runtime, env.registry)
        yield env
    monkeypatch.setattr(worker_handler, "_deps", None)


def receive(queue_url: str) -> list[dict[str, Any]]:
    """The messages visible now, as Lambda's SQS event carries them."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"])
    return [
        {
            "messageId": m["MessageId"],
            "body": m["Body"],
            "eventSource": "aws:sqs",
            "attributes": m["Attributes"],
        }
        for m in answer.get("Messages", [])
    ]


def test_a_long_wait_is_handed_to_a_message_whose_invocation_runs_the_task_on_time(
    env: WorkerEnv, queue_url: str
) -> None:
    # Given a task due in 60 s: too close to arm, so its editor invokes the worker
    task = env.editor.schedule_at("record", env.now() + timedelta(seconds=60))
    assert task.due is not None
    # When that worker runs
    report = invoke(env, WAKE)
    # Then it handed the wait over instead of sleeping: a message delayed to arrive the lead (give or
    # take the half second SQS's whole-second delays cost) before its wake, half a second before
    # the task
    assert report["outcome"] == "handed-over", report
    assert report["waited_seconds"] == 0
    lead = env.runtime.settings.handover_lead_seconds
    early = 60 - WAKE_AHEAD_SECONDS - report["handed_over_seconds"]  # visible this long before the wake
    assert lead - 0.5 <= early <= lead + 0.5, report
    assert RECORDER.calls.get(task.id) is None
    # And the message is not visible before its delay
    env.travel_to(START + timedelta(seconds=report["handed_over_seconds"] - 1))
    assert receive(queue_url) == []
    # When the queue delivers it, and its invocation runs
    env.travel_to(START + timedelta(seconds=report["handed_over_seconds"]))
    records = receive(queue_url)
    assert len(records) == 1
    event = {"Records": records}
    assert classify_event(event) is WorkerEvent.HANDOVER and handover_wake_at(event) == task.due
    continued = invoke(env, event)
    # Then the task ran once, at its instant, after a sleep of the last seconds only
    [call] = RECORDER.calls[task.id]
    assert call.at == task.due
    assert continued["event"] == "handover" and continued["succeeded"] == 1, continued
    assert 0 < continued["waited_seconds"] <= lead + 1
    # And the rule rests at the epoch with no claim left: nothing else is pending
    assert env.runtime.rule.current() is None
    assert env.runtime.store.read_rule_state().waiter_owner is None


def test_a_message_delivered_twice_runs_the_task_once(env: WorkerEnv, queue_url: str) -> None:
    task = env.editor.schedule_at("record", env.now() + timedelta(seconds=60))
    report = invoke(env, WAKE)
    env.travel_to(START + timedelta(seconds=report["handed_over_seconds"]))
    event = {"Records": receive(queue_url)}
    # When the same message starts two invocations, one after the other
    first, second = invoke(env, event), invoke(env, event)
    # Then the task ran once
    assert len(RECORDER.calls[task.id]) == 1
    assert first["succeeded"] == 1 and second.get("succeeded", 0) == 0, (first, second)


def test_a_message_delivered_late_still_runs_the_task_at_once(env: WorkerEnv, queue_url: str) -> None:
    task = env.editor.schedule_at("record", env.now() + timedelta(seconds=60))
    assert task.due is not None
    report = invoke(env, WAKE)
    assert report["outcome"] == "handed-over"
    # When the queue delivers 10 s after the task's instant
    env.travel_to(task.due + timedelta(seconds=10))
    continued = invoke(env, {"Records": receive(queue_url)})
    # Then the invocation does not sleep: it runs the task at once
    [call] = RECORDER.calls[task.id]
    assert call.at == task.due + timedelta(seconds=10)
    assert continued["waited_seconds"] == 0


def test_a_send_slow_enough_to_arrive_after_the_wake_is_slept_through_as_well(
    env: WorkerEnv, queue_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a send that returns 1.5 s after it started (retried, say): its message may come late
    handover = env.runtime.handover
    send = handover.send

    def slow_send(delay_seconds: int, wake_at: Any, record: Any = None) -> None:
        send(delay_seconds, wake_at, record)
        env.travel_to(env.now() + timedelta(seconds=1.5))

    monkeypatch.setattr(handover, "send", slow_send)
    task = env.editor.schedule_at("record", env.now() + timedelta(seconds=60))
    # When the worker waits for the task
    report = invoke(env, WAKE)
    # Then it did not rely on the message: it slept through the wait and ran the task on time
    [call] = RECORDER.calls[task.id]
    assert call.at == task.due
    assert report["succeeded"] == 1 and "handed_over_seconds" not in report, report
    # And the message, delivered later, starts an invocation that finds nothing left to run
    env.travel_to(START + timedelta(minutes=2))
    late = invoke(env, {"Records": receive(queue_url)})
    assert late["event"] == "handover" and late.get("succeeded", 0) == 0, late
    assert len(RECORDER.calls[task.id]) == 1


@pytest.mark.parametrize("seconds", [3, 6])
def test_a_wait_shorter_than_the_sends_worst_case_is_slept_through(
    env: WorkerEnv, queue_url: str, seconds: int
) -> None:
    # Given a task due in a few seconds: the send could take longer than the wait leaves
    task = env.editor.schedule_at("record", env.now() + timedelta(seconds=seconds))
    report = invoke(env, WAKE)
    # Then the worker slept and ran it, and sent nothing
    [call] = RECORDER.calls[task.id]
    assert call.at == task.due
    assert "handed_over_seconds" not in report and report["waited_seconds"] > 0
    env.travel_to(START + timedelta(minutes=20))
    assert receive(queue_url) == []


def test_a_send_that_fails_is_slept_through(env: WorkerEnv, queue_url: str) -> None:
    # Given a hand-over queue that no longer exists
    boto3.client("sqs", region_name="us-east-1").delete_queue(QueueUrl=queue_url)
    task = env.editor.schedule_at("record", env.now() + timedelta(seconds=60))
    # When the worker waits for the task
    report = invoke(env, WAKE)
    # Then it slept through the wait and ran it on time
    [call] = RECORDER.calls[task.id]
    assert call.at == task.due
    assert report["succeeded"] == 1 and "handed_over_seconds" not in report, report


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps({"source": "nexttick", "action": "wake"}),
        json.dumps({"source": "nexttick", "action": "handover", "at": "2030-01-07T09:01:00"}),  # naive
        json.dumps({"source": "nexttick", "action": "handover", "at": "soon"}),
        json.dumps({"source": "elsewhere", "action": "handover", "at": "2030-01-07T09:01:00+00:00"}),
        json.dumps(["handover"]),
    ],
)
def test_a_message_that_is_not_a_hand_over_is_not_taken_for_one(body: str) -> None:
    event = {"Records": [{"eventSource": "aws:sqs", "body": body}]}
    assert classify_event(event) is WorkerEvent.UNKNOWN


def test_a_batch_of_hand_overs_wakes_for_its_earliest() -> None:
    def record(at: str) -> dict[str, Any]:
        return {
            "eventSource": "aws:sqs",
            "body": json.dumps({"source": "nexttick", "action": "handover", "at": at}),
        }

    event = {"Records": [record("2030-01-07T09:01:30+00:00"), record("2030-01-07T09:01:00+00:00")]}
    assert handover_wake_at(event) == START + timedelta(seconds=30)


def test_a_wait_decided_after_the_heads_minute_fired_is_handed_over_writing_nothing(
    env: WorkerEnv, queue_url: str
) -> None:
    # Given a deployed stack (its sync recorded every shard's head) and a task created ten minutes
    # ahead: its create armed the rule for the task's minute, and that PutRule named the minute's
    # backstop too
    env.runtime.rule_sync.sync()
    task = env.editor.schedule_at("record", env.now() + timedelta(minutes=10))
    assert task.due is not None
    timing = env.runtime.rule_sync.timing
    minute = timing.fire_minute(task.due)
    backstop = timing.backstop_of(minute)
    assert backstop is not None and backstop >= task.due
    expression = env.runtime.rule.client.describe_rule(Name=env.runtime.settings.rule_name)[
        "ScheduleExpression"
    ]
    assert expression == timing.rule_expression(minute) and rule_firings(expression)[-2:] == [
        minute,
        backstop,
    ]
    armed = env.runtime.store.read_rule_state()
    log = OperationLog.attach(env.runtime)
    # When the rule fires at that minute, 70-130 s before the task
    env.travel_to(minute + timedelta(seconds=5))
    report = invoke(env, SCHEDULED_EVENT)
    # Then the worker hands the wait over and writes nothing: the rule as it stands is the wait's
    # backstop, so there is no CAS, no PutRule, no claim
    assert report["outcome"] == "handed-over", report
    writes = [op for service, op, _ in log.calls if op in ("PutItem", "UpdateItem", "DeleteItem")]
    assert writes == [] and log.ops("events", "PutRule") == [], log.count()
    assert env.runtime.store.read_rule_state() == armed
    # And its message, delivered the lead before the task, carries the record it decided on
    env.travel_to(env.now() + timedelta(seconds=report["handed_over_seconds"]))
    [message] = receive(queue_url)
    event = {"Records": [message]}
    assert handover_record(event) == armed
    # When its invocation runs
    log.reset()
    continued = invoke(env, event)
    # Then the task ran at its instant, the invocation starting from the carried record: it neither
    # read the record first nor released anything (its writes: the claim, the outcome, the lateness
    # histogram's minute, the re-arm and its confirmation)
    [call] = RECORDER.calls[task.id]
    assert call.at == task.due
    assert continued["succeeded"] == 1, continued
    record_reads = [p for p in log.ops("dynamodb", "GetItem") if p["Key"]["pk"] == {"S": RULE_STATE_PK}]
    assert record_reads == [], record_reads
    writes = [op for service, op, _ in log.calls if op in ("PutItem", "UpdateItem", "DeleteItem")]
    assert len(writes) == 5, log.calls
    # And the rule rests at the epoch
    assert env.runtime.rule.current() is None
