"""The local stack's hand-over trigger (local.handover) on the stack's moto server over HTTP: a
message the worker's sender (nexttick.aws.SqsWaitHandover) delays reaches the function as Lambda's
SQS event, which the worker takes for a hand-over, within VISIBLE_TO_INVOKED of becoming visible
(moto itself re-scans a long-polled queue once a second); a message whose invocation raised comes
back after its visibility timeout and is deleted once one returns; a long poll holds up no other
request; a stopped feeder leaves what its poll returns, and its poll ends with the emulator,
quietly; no queue configured, no feeder."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from local.handover import LocalHandover
from local.lambdas import LocalFunction
from local.motoserver import MotoServer
from nexttick.aws import SqsWaitHandover
from nexttick.config import get_settings
from nexttick.worker import WorkerEvent, classify_event, handover_wake_at
from tests.support.local import client, moto_server
from tests.support.worker import MotoServer as MotoServerProcess

# From the message's visibility to the handler's call; measured ~15 ms on an idle machine. Far below
# the up to one second of moto's own re-scan, above what a loaded machine adds.
VISIBLE_TO_INVOKED = 0.3
DELAYS = (1, 2, 3)  # seconds; the messages are sent a third of a second apart (moto re-scans on the second)
RECORD_KEYS = {
    "messageId",
    "receiptHandle",
    "body",
    "attributes",
    "messageAttributes",
    "md5OfBody",
    "eventSource",
    "eventSourceARN",
    "awsRegion",
}


@dataclass
class Handler:
    """Records each invocation's record and when it started; raises for the first `fail_times`."""

    fail_times: int = 0
    calls: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    called: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self, event: dict[str, Any], context: Any) -> None:
        with self.called:
            self.calls.append((time.time(), event))
            self.called.notify_all()
            if len(self.calls) <= self.fail_times:
                raise RuntimeError("the invocation failed")

    def wait_for(self, count: int, timeout: float) -> bool:
        with self.called:
            return self.called.wait_for(lambda: len(self.calls) >= count, timeout)


@dataclass
class Queue:
    server: MotoServer
    url: str
    arn: str

    def sqs(self) -> Any:
        return client("sqs", self.server)

    def held(self) -> int:
        """Messages in the queue, visible or not."""
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        attributes = self.sqs().get_queue_attributes(QueueUrl=self.url, AttributeNames=names)["Attributes"]
        return sum(int(attributes[name]) for name in names)

    def emptied(self, timeout: float) -> bool:
        """Wait until the queue holds no message; False on timeout."""
        deadline = time.monotonic() + timeout
        while self.held():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    @contextmanager
    def feeding(self, handler: Handler, wait_seconds: int = 1) -> Iterator[LocalHandover]:
        """A feeder of this queue to `handler`, stopped (and its thread ended) on exit."""
        feeder = LocalHandover(
            self.sqs(), self.url, function(handler), region="us-east-1", wait_seconds=wait_seconds
        )
        feeder.start()
        try:
            yield feeder
        finally:
            feeder.stop()
            assert feeder.join(wait_seconds + 5)


def function(handler: Handler) -> LocalFunction:
    return LocalFunction("nexttick-worker", handler, timeout_seconds=30, region="us-east-1", concurrency=2)


@pytest.fixture
def queue(aws_credentials: None) -> Iterator[Queue]:
    with moto_server() as server:
        sqs = client("sqs", server)
        url = sqs.create_queue(QueueName="nexttick-worker-handover", Attributes={"VisibilityTimeout": "1"})[
            "QueueUrl"
        ]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        yield Queue(server, url, arn)


def test_a_delayed_message_reaches_the_function_as_lambdas_sqs_event_when_it_becomes_visible(
    queue: Queue,
) -> None:
    handler = Handler()
    with queue.feeding(handler):
        # Given hand-overs sent as the worker sends them, delayed 1, 2 and 3 s, a third of a second apart
        sender = SqsWaitHandover(queue.sqs(), queue.url)
        visible: dict[str, float] = {}  # wake time -> the earliest instant its message can be visible
        for delay in DELAYS:
            wake_at = datetime.now(UTC) + timedelta(seconds=delay + 2)
            visible[wake_at.isoformat()] = time.time() + delay
            sender.send(delay, wake_at)
            time.sleep(1 / 3)
        # When they become visible
        assert handler.wait_for(len(DELAYS), timeout=max(DELAYS) + 5)
    # Then each started an invocation of its own at once: Lambda's SQS event of one record, which
    # the worker takes for a hand-over of the wake its message names
    latencies = []
    for called_at, event in handler.calls:
        [record] = event["Records"]
        assert set(record) == RECORD_KEYS
        assert classify_event(event) is WorkerEvent.HANDOVER
        woken = handover_wake_at(event)
        assert woken is not None and woken.isoformat() in visible
        latencies.append(called_at - visible[woken.isoformat()])
        assert record["eventSource"] == "aws:sqs" and record["eventSourceARN"] == queue.arn
        assert record["awsRegion"] == "us-east-1" and record["messageAttributes"] == {}
        assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
        assert record["attributes"]["ApproximateReceiveCount"] == "1"
    print(f"\nvisible -> invoked (s): {[round(s, 3) for s in latencies]}")
    assert all(0 <= s <= VISIBLE_TO_INVOKED for s in latencies), latencies
    # And each message was deleted once its invocation returned
    assert queue.emptied(timeout=5)


def test_message_attributes_are_spelled_as_lambda_spells_them(queue: Queue) -> None:
    handler = Handler()
    with queue.feeding(handler):
        queue.sqs().send_message(
            QueueUrl=queue.url,
            MessageBody="{}",
            MessageAttributes={
                "text": {"DataType": "String", "StringValue": "hello"},
                "raw": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
            },
        )
        assert handler.wait_for(1, timeout=5)
    [record] = handler.calls[0][1]["Records"]
    lists: dict[str, Any] = {"stringListValues": [], "binaryListValues": []}
    assert record["messageAttributes"] == {
        "text": {"stringValue": "hello", **lists, "dataType": "String"},
        "raw": {"binaryValue": "AAE=", **lists, "dataType": "Binary"},
    }


def test_a_message_whose_invocation_raised_comes_back_after_its_visibility_timeout(queue: Queue) -> None:
    # Given a function whose first invocation raises (the queue's visibility timeout is 1 s)
    handler = Handler(fail_times=1)
    with queue.feeding(handler):
        queue.sqs().send_message(QueueUrl=queue.url, MessageBody="{}")
        # Then the message is received again after its visibility timeout, into a second invocation
        assert handler.wait_for(2, timeout=10)
        (_, first), (second_at, second) = handler.calls
        [again] = second["Records"]
        assert again["messageId"] == first["Records"][0]["messageId"]
        assert again["attributes"]["ApproximateReceiveCount"] == "2"
        first_received = int(again["attributes"]["ApproximateFirstReceiveTimestamp"]) / 1000
        assert 1.0 <= second_at - first_received <= 1.0 + VISIBLE_TO_INVOKED
        # And it is deleted once that one returned: it comes back no more
        assert queue.emptied(timeout=5)
        time.sleep(1.5)
    assert len(handler.calls) == 2


def test_a_long_poll_holds_up_no_other_request(queue: Queue) -> None:
    # Given the feeder in a long poll of 3 s on an empty queue
    dynamodb = client("dynamodb", queue.server)  # built before: only the request is timed
    with queue.feeding(Handler(), wait_seconds=3):
        time.sleep(0.5)
        # When another client calls the emulator meanwhile, then it is answered at once (moto's
        # requests are served one at a time, SQS's apart)
        started = time.monotonic()
        dynamodb.list_tables()
        assert time.monotonic() - started < 1.0


def test_a_stopped_feeder_leaves_what_its_poll_returns(queue: Queue) -> None:
    # Given a feeder in a 20 s poll
    handler = Handler()
    feeder = LocalHandover(queue.sqs(), queue.url, function(handler), region="us-east-1").start()
    time.sleep(0.5)
    # When it is stopped, and a message then ends its poll
    feeder.stop()
    queue.sqs().send_message(QueueUrl=queue.url, MessageBody="{}")
    # Then its thread ends at once without delivering it: the message stays in the queue, received
    # again once the poll's receipt has timed out (its visibility timeout, 1 s)
    assert feeder.join(1)
    again = queue.sqs().receive_message(QueueUrl=queue.url, WaitTimeSeconds=5).get("Messages", [])
    assert handler.calls == [] and len(again) == 1


def test_a_stopped_feeders_poll_ends_with_the_emulator_quietly(
    aws_credentials: None, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a stopped feeder still in a 20 s poll of a queue on an emulator process
    emulator = MotoServerProcess()
    try:
        sqs = boto3.session.Session(region_name="us-east-1").client("sqs", endpoint_url=emulator.url)
        url = sqs.create_queue(QueueName="nexttick-worker-handover")["QueueUrl"]
        feeder = LocalHandover(sqs, url, function(Handler()), region="us-east-1").start()
        time.sleep(0.5)
        feeder.stop()
        # When the emulator stops (as the stack's stop does last)
        with caplog.at_level(logging.DEBUG, logger="local-stack"):
            emulator.stop()
            started = time.monotonic()
            # Then the poll ends with it: the thread ends at once, logging nothing
            assert feeder.join(5)
        assert time.monotonic() - started < 2
    finally:
        emulator.stop()
    assert [t for t in threading.enumerate() if t.name == "handover-queue"] == []
    assert caplog.records == []


def test_the_stack_feeds_the_queue_its_worker_is_configured_with_and_none_without_one(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = function(Handler())
    get_settings.cache_clear()
    assert LocalHandover.for_stack(queue.server.url, "us-east-1", worker) is None
    monkeypatch.setenv("NEXTTICK_HANDOVER_QUEUE_URL", queue.url)
    get_settings.cache_clear()
    try:
        feeder = LocalHandover.for_stack(queue.server.url, "us-east-1", worker)
        assert feeder is not None and feeder.queue_url == queue.url and feeder.function is worker
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()
