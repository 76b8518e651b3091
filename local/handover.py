"""The worker's hand-over trigger, locally: what Lambda's SQS event source mapping does for the
deployed worker (infra/handover.py), done against the emulator's hand-over queue (the template's
moto variant leaves the mapping out: moto cannot run it).

One thread long-polls the queue and hands each message to the worker function as Lambda's SQS event
of one record (the deployed batch size), then polls again at once: the invocation runs on the
function's own threads (those its asynchronous invocations run on, so its concurrency bounds both,
as reserved concurrency does in Lambda), where a continuation sleeps its last seconds while the next
message may come due. A message whose invocation returned is deleted; one whose invocation raised is
left, received again after its visibility timeout (the worker's timeout) and moved to the
dead-letter queue after the queue's maxReceiveCount, as with Lambda.

On time: the stack's emulator answers a long poll as soon as a message becomes visible
(local/moto_sqs.py) and serves SQS outside its request lock (local/motoserver.py), so a message
reaches the worker milliseconds after its delay ends. A poll waits up to 20 s, as Lambda's pollers
do (shorter polls cost the idle stack CPU: 1 s polls added about 1 % of a core in the stack's
process and as much in the emulator's); a stop does not cut one short but lets the emulator's stop
end it.

Messages are not kept across a restart (the state is the table and the rule): the start's sync
invocation takes over every wait, as for an invocation that slept.
"""

from __future__ import annotations

import base64
import functools
import logging
import threading
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from local.lambdas import LocalFunction
from nexttick.config import get_settings
from nexttick.worker import drain as worker_drain

logger = logging.getLogger("local-stack")

WAIT_SECONDS = 20  # each long poll's WaitTimeSeconds (SQS's longest)
RETRY_SECONDS = 1.0  # after a failed poll (the emulator busy or gone)
MAX_MESSAGES = 10  # per poll; each is an invocation of its own


def lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """A ReceiveMessage message as Lambda's SQS event carries it."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {
            name: _lambda_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def _lambda_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """A message attribute as Lambda spells it: camel case, binary in base64, empty list fields."""
    spelled: dict[str, Any] = {"stringListValues": [], "binaryListValues": [], "dataType": value["DataType"]}
    if "StringValue" in value:
        spelled["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        spelled["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
    return spelled


class LocalHandover:
    """Feeds one queue to one function; `start()`, `stop()`, then `join()` (the poll in progress
    ends when it returns or when the emulator stops)."""

    def __init__(
        self,
        sqs_client: Any,
        queue_url: str,
        function: LocalFunction,
        *,
        region: str,
        wait_seconds: int = WAIT_SECONDS,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self.client = sqs_client
        self.queue_url = queue_url
        self.function = function
        self.region = region
        self.wait_seconds = wait_seconds
        self.retry_seconds = retry_seconds
        self.queue_arn = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="handover-queue", daemon=True)

    @classmethod
    def for_stack(cls, moto_url: str, region: str, worker: LocalFunction) -> LocalHandover | None:
        """The local stack's feeder of the queue its worker hands waits to: the one the worker's
        environment names (NEXTTICK_HANDOVER_QUEUE_URL, from the deployed function's), read from the
        emulator. None when there is none: the worker then sleeps through its waits."""
        queue_url = get_settings().handover_queue_url
        if not queue_url:
            return None
        # No retries inside a poll: a failed one is retried by the loop, and a stop is not held up.
        config = Config(retries={"total_max_attempts": 1})
        client = boto3.session.Session(region_name=region).client("sqs", endpoint_url=moto_url, config=config)
        return cls(client, queue_url, worker, region=region)

    # ------------------------------------------------------------------ control
    def start(self) -> LocalHandover:
        attributes = self.client.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])
        self.queue_arn = attributes["Attributes"]["QueueArn"]
        self._thread.start()
        return self

    def stop(self) -> None:
        """Deliver nothing more: what the poll in progress returns is left in the queue."""
        self._stop.set()

    def join(self, timeout: float) -> bool:
        """Wait for the poll in progress to end; whether the thread has."""
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        failing = False
        while not self._stop.is_set():
            try:
                messages = self.client.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=MAX_MESSAGES,
                    WaitTimeSeconds=self.wait_seconds,
                    MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"],
                ).get("Messages", [])
            except (BotoCoreError, ClientError):
                if self._stop.is_set():
                    return  # the emulator stopped under the poll
                if not failing:  # once per outage, not once per retry
                    logger.exception("hand-over queue: receiving failed; retrying")
                failing = True
                self._stop.wait(self.retry_seconds)
                continue
            if failing:
                logger.info("hand-over queue: receiving again")
                failing = False
            for message in messages:
                if self._stop.is_set():
                    break  # left in the queue
                self._deliver(message)

    # ------------------------------------------------------------------ one message
    def _deliver(self, message: dict[str, Any]) -> None:
        event = {"Records": [lambda_record(message, self.queue_arn, self.region)]}
        settle = functools.partial(self._settle, message["ReceiptHandle"])
        if not self.function.invoke_polled(event, settle):
            logger.debug("hand-over queue: the worker is stopping; message %s left", message["MessageId"])

    def _settle(self, receipt_handle: str, returned: bool) -> None:
        """After the invocation (on its thread): delete the message it returned for; leave one it
        raised for, to be received again after its visibility timeout, and one whose invocation
        returned because the process is stopping (the stop woke it from its sleep: it ran nothing,
        and the stop is taking the emulator down; messages are not kept across a restart)."""
        if not returned or worker_drain.stopping():
            return
        try:
            self.client.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt_handle)
        except (BotoCoreError, ClientError):
            logger.warning(
                "hand-over queue: could not delete a delivered message; it is delivered again after "
                "its visibility timeout (the worker finds its wait done)",
                exc_info=True,
            )
