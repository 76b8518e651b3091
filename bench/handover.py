"""The wait hand-over's queue in simulated time, served as Lambda's SQS event source mapping serves
it: each message the worker sends is received when its delay has passed (plus POLL_DELAY), one per
invocation of the worker handler with Lambda's SQS event, and deleted once that invocation succeeded.

Why: a worker in `second` mode that would sleep through a long wait sends a delayed message instead
(nexttick.aws.SqsWaitHandover) and ends; what the month is billed for is then that message's
requests, the mapping's polling, and the invocation it starts (its short sleep, its run). moto's SQS
keeps a delayed message invisible on the travelled clock, so the receive is the real check that the
delay has passed.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.accounts import POLLER, acting_for

HANDOVER = "handover"  # the cause of an invocation the mapping starts
# AWS documents no delay between a message becoming visible and the mapping's long poll returning
# it (a long poll returns as soon as a message is available): the bench takes a tenth of a second.
# The smaller it is, the longer the invocation sleeps before its head, and the dearer the bill.
POLL_DELAY = timedelta(seconds=0.1)
# The mapping at rest: Lambda long polls a standard queue until it becomes active and, at low
# traffic, keeps five concurrent batches, "and can optimize to as few as 2" (AWS Lambda developer
# guide, "Configuring scaling behavior for SQS event source mappings"): the bench counts five
# pollers, each in a long poll of SQS's longest wait, 20 s (Amazon SQS developer guide, "Setting-up
# long polling"), so one ReceiveMessage per poller every 20 s whether a message comes or not.
MAPPING_POLLERS = 5
LONG_POLL_SECONDS = 20
# SQS bills a request per 64 KB chunk of its payload.
CHUNK_BYTES = 64 * 1024


def idle_receives(seconds: float) -> float:
    """The ReceiveMessage requests the mapping's pollers make in `seconds`, messages or none."""
    return MAPPING_POLLERS * seconds / LONG_POLL_SECONDS


def chunks(body: str) -> int:
    return max(1, math.ceil(len(body.encode()) / CHUNK_BYTES))


class HandoverQueue:
    """The hand-over queue and its mapping (batch size 1): when each message sent becomes visible
    (`next_poll`), its receipt as Lambda's SQS event (`poll`), its deletion after its invocation
    (`delete`), the messages it delivered (`delivered`: invocations started), and the SQS requests
    they bill (`requests`, by operation, in 64 KB chunks) but the pollers' idle ones
    (`idle_receives`)."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self.client, self.url = client, queue_url
        attributes = client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
        self.arn = attributes["Attributes"]["QueueArn"]
        self.region = client.meta.region_name
        self.requests: Counter[str] = Counter()
        self.delivered = 0
        self._polls: list[datetime] = []
        self._lock = threading.Lock()
        client.meta.events.register("provide-client-params.sqs.SendMessage", self._sent)

    def restart(self) -> None:
        with self._lock:
            self.requests.clear()
            self.delivered = 0

    def _sent(self, *, params: dict[str, Any], **_: Any) -> None:
        visible = datetime.now(UTC) + timedelta(seconds=params.get("DelaySeconds", 0))
        with self._lock:
            heapq.heappush(self._polls, visible + POLL_DELAY)
            self.requests["SendMessage"] += chunks(params["MessageBody"])

    def next_poll(self) -> datetime | None:
        with self._lock:
            return self._polls[0] if self._polls else None

    def poll(self) -> dict[str, Any] | None:
        """The mapping's poll once a message has become visible: the event of the one it receives
        (an empty answer is one of the pollers' idle receives, counted by `idle_receives`)."""
        with self._lock:
            heapq.heappop(self._polls)
        with acting_for(POLLER):
            answer = self.client.receive_message(
                QueueUrl=self.url, MaxNumberOfMessages=1, AttributeNames=["All"]
            )
        messages = answer.get("Messages", [])
        if not messages:
            return None
        with self._lock:
            self.requests["ReceiveMessage"] += sum(chunks(m["Body"]) for m in messages)
            self.delivered += 1
        return {"Records": [self._record(m) for m in messages]}

    def delete(self, event: dict[str, Any]) -> None:
        """What the mapping does once an invocation returned: delete the batch's messages."""
        with acting_for(POLLER):
            for record in event["Records"]:
                self.client.delete_message(QueueUrl=self.url, ReceiptHandle=record["receiptHandle"])
                with self._lock:
                    self.requests["DeleteMessage"] += 1

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        """A message as Lambda's SQS event carries it."""
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": {},
            "md5OfBody": message["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": self.arn,
            "awsRegion": self.region,
        }
