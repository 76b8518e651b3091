"""bench/timeline.py: a window of load in simulated time runs every task once through the real
handlers, charges each function what its code spent, and waits without spending real time; a long
wait goes to the hand-over queue, whose message starts an invocation when its delay has passed, as
Lambda's event source mapping delivers it (bench/handover.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import timedelta
from unittest import mock

import boto3
import pytest
import time_machine

from bench.accounts import API, KEEPER, POLLER, WORKER
from bench.handover import HANDOVER, POLL_DELAY, HandoverQueue
from bench.harness import emulated_aws
from bench.monthly import LOADS
from bench.sparse import START, isolated_tasks
from bench.timeline import follow
from nexttick.aws import SqsWaitHandover
from nexttick.config import NextTickSettings, Precision
from nexttick.constants import WAKE_AHEAD_SECONDS
from nexttick.worker import WorkerEvent, classify_event, handover_wake_at

LEAD_SECONDS = NextTickSettings.model_fields["handover_lead_seconds"].default


@pytest.fixture(autouse=True)
def _environment() -> Iterator[None]:
    """The bench's emulator sets its own process environment: it stays in this test."""
    with mock.patch.dict(os.environ):
        yield


def test_an_isolated_task_runs_once_its_wait_handed_over_in_simulated_time() -> None:
    # Given one task created 10 minutes ahead, in `second` precision
    plan = isolated_tasks(Precision.SECOND, 1)
    [(_, due)] = plan.creates
    began = time.monotonic()
    measured = follow(plan)
    # Then it ran once: the rule started the worker 70 s or more before it, which handed the wait
    # over and ended after its requests' round trips; the message's invocation started when its
    # delay had passed, no sooner, slept the last seconds only, and ran it
    assert measured.finished == 1
    wake, handed = measured.worker
    assert wake.cause == "rule" and (due - wake.start).total_seconds() >= 70 and wake.span_s < 0.1
    wait = (due - timedelta(seconds=WAKE_AHEAD_SECONDS) - wake.end).total_seconds()  # at its send
    assert handed.cause == HANDOVER
    assert handed.start == wake.end + timedelta(seconds=int(wait - LEAD_SECONDS + 0.5)) + POLL_DELAY
    assert due < handed.end < due + timedelta(seconds=0.2)  # the run's requests after the instant
    assert 0 < handed.span_s <= LEAD_SECONDS + 1 + WAKE_AHEAD_SECONDS
    assert wake.cpu_s > 0 and handed.cpu_s > 0
    # And it took much less real time than the wait in simulated time
    assert time.monotonic() - began < (handed.end - wake.start).total_seconds() / 4
    # And the hand-over billed one message's requests: the worker's send, the mapping's receive and
    # delete (the poller's, not a function's)
    assert measured.sqs_requests == {"SendMessage": 1, "ReceiveMessage": 1, "DeleteMessage": 1}
    assert measured.handovers == 1
    assert measured.accounts[WORKER].requests["SendMessage"] == 1
    poller = measured.accounts[POLLER].requests
    assert (poller["ReceiveMessage"], poller["DeleteMessage"]) == (1, 1)
    # And each function was charged what its code spent: the API its create, the worker the claim
    # and the completion, the keeper its read of the rule record for the create's cover (its batches
    # of rule-record moves alone compare the rule with their last image: no read)
    api, worker, keeper = (measured.accounts[f] for f in (API, WORKER, KEEPER))
    assert api.requests["PutItem"] == 1 and api.wru >= 1
    assert worker.requests["UpdateItem"] >= 2 and "PutItem" not in worker.requests
    assert keeper.requests["GetItem"] == 1 < len(measured.keeper) and keeper.wru == 0
    # (a keeper batch of rule-record changes that moved nothing, such as the claim's release, makes
    # no request at all)
    # And each request's modelled round trip passed in simulated time: the create's five one after
    # another (its read of the rule record, its task write, the CAS, the PutRule, the confirmation),
    # a keeper batch's read of the rule record
    assert measured.api[0].span_s >= (4 + 6 + 6 + 30 + 6) / 1000
    assert any(r.span_s >= 4 / 1000 for r in measured.keeper)
    # And what the functions printed (log lines, EMF metrics) was counted, with the metrics named
    assert measured.printed_bytes[API] > 0 and measured.printed_bytes[WORKER] > 0
    assert measured.metric_marks["nexttick/Responses2xx {service=nexttick}"] == 1
    assert measured.stored_bytes_per_task > 100


def test_a_steady_window_measures_its_stretch_and_stops_at_its_end() -> None:
    # Given six minutes of 1/minute in `minute` precision (quick): three tasks queued before it
    window = next(load for load in LOADS if load.name == "1/minute").window(Precision.MINUTE, True)
    plan = window.plan
    assert plan.end is not None and plan.measured_from is not None and len(plan.queued) == 3
    # When it runs
    measured = follow(plan)
    # Then each task due in it ran, and it created the six due three minutes after them
    assert measured.finished == window.tasks == 6
    assert len(measured.api) == 6
    # And every invocation it counts lies within it, the minute's rule firing the worker each time
    # and the worker handing each task's wait (half a minute into its minute) over
    assert all(plan.measured_from <= r.start <= r.end <= plan.end for r in measured.worker)
    causes = [r.cause for r in measured.worker]
    assert causes.count("rule") == causes.count(HANDOVER) == 6, causes
    assert sum(r.span_s for r in measured.worker) <= (plan.end - plan.measured_from) / timedelta(seconds=1)


def test_the_mapping_delivers_a_message_when_its_delay_has_passed_and_not_before() -> None:
    # Given the hand-over queue, and a worker's two hand-overs: of 5 s and of 10 s
    with (
        time_machine.travel(START, tick=False) as traveller,
        emulated_aws(handover_visibility_s=900) as runtime,
    ):
        sender = runtime.handover
        assert isinstance(sender, SqsWaitHandover)
        queue = HandoverQueue(sender.client, sender.queue_url)
        sender.send(5, START + timedelta(seconds=7))
        sender.send(10, START + timedelta(seconds=12))
        # Then the first is polled for when it becomes visible, and comes as Lambda's SQS event
        assert queue.next_poll() == START + timedelta(seconds=5) + POLL_DELAY
        traveller.move_to(START + timedelta(seconds=5) + POLL_DELAY)
        event = queue.poll()
        assert event is not None and classify_event(event) is WorkerEvent.HANDOVER
        assert handover_wake_at(event) == START + timedelta(seconds=7)
        [record] = event["Records"]
        assert record["eventSource"] == "aws:sqs" and record["eventSourceARN"].endswith(":nexttick-handover")
        # And the second, polled for before its delay has passed, is not delivered
        assert queue.next_poll() == START + timedelta(seconds=10) + POLL_DELAY
        traveller.move_to(START + timedelta(seconds=9))
        assert queue.poll() is None
        # And the first, once its invocation returned, is deleted: no longer in the queue
        queue.delete(event)
        sqs = boto3.client("sqs", region_name="us-east-1")
        traveller.move_to(START + timedelta(hours=1))
        left = sqs.receive_message(QueueUrl=sender.queue_url, MaxNumberOfMessages=10)["Messages"]
        assert [
            handover_wake_at({"Records": [{"eventSource": "aws:sqs", "body": m["Body"]}]}) for m in left
        ] == [START + timedelta(seconds=12)]
        assert queue.requests == {"SendMessage": 2, "ReceiveMessage": 1, "DeleteMessage": 1}
        assert queue.delivered == 1
