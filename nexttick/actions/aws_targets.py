"""The AWS target kinds: lambda, sqs, sns, eventbridge, each through a real boto3 client from
`nexttick.aws` whose every call is bounded."""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

from nexttick.actions.base import Delivery, DeliveryError
from nexttick.actions.definition import ERROR_BODY_CHARS, BuildContext, Definition, envelope_json
from nexttick.aws import ACTION_CALL_SECONDS

# One AWS call of an action, every attempt and backoff included (nexttick.aws).
AWS_CALL_TIMEOUT_SECONDS = float(ACTION_CALL_SECONDS)
_MAX_DEDUP_ID = 128


def _dedup_id(key: str) -> str:
    """SQS/SNS FIFO deduplication id: the idempotency key, hashed when longer than allowed."""
    return key if len(key) <= _MAX_DEDUP_ID else hashlib.sha256(key.encode()).hexdigest()


# ---------------------------------------------------------------------------------------- lambda
class LambdaAction:
    kind = "lambda"
    keys: ClassVar[tuple[str, ...]] = ("function", "invocation_type", "qualifier")

    def __init__(
        self, name: str, client: Any, function: str, invocation_type: str, qualifier: str | None
    ) -> None:
        self.name = name
        self.client = client
        self.function = function
        self.invocation_type = invocation_type
        self.qualifier = qualifier
        self.timeout_seconds = AWS_CALL_TIMEOUT_SECONDS

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> LambdaAction:
        return cls(
            d.name,
            ctx.client("lambda"),
            d.text("function", required=True),
            d.choice("invocation_type", "Event", ("Event", "RequestResponse")),
            d.optional_text("qualifier"),
        )

    def deliver(self, delivery: Delivery) -> None:
        params: dict[str, Any] = {
            "FunctionName": self.function,
            "InvocationType": self.invocation_type,
            "Payload": envelope_json(delivery.envelope()).encode(),
        }
        if self.qualifier:
            params["Qualifier"] = self.qualifier
        response = self.client.invoke(**params)
        if response.get("FunctionError"):
            detail = response["Payload"].read(ERROR_BODY_CHARS).decode(errors="replace")
            raise DeliveryError(f"function {self.function} failed ({response['FunctionError']}): {detail}")


def _message_fields(delivery: Delivery, group: str | None, *, fifo: bool) -> dict[str, Any]:
    """What an SQS and an SNS message carry besides the envelope: the idempotency key as an
    attribute and, for a FIFO target, the group (default: the task) and a deduplication id."""
    fields: dict[str, Any] = {
        "MessageAttributes": {
            "idempotency_key": {"DataType": "String", "StringValue": delivery.idempotency_key}
        }
    }
    if fifo:
        fields["MessageGroupId"] = group or delivery.task_id
        fields["MessageDeduplicationId"] = _dedup_id(delivery.idempotency_key)
    return fields


# ---------------------------------------------------------------------------------------- sqs
class SqsAction:
    kind = "sqs"
    keys: ClassVar[tuple[str, ...]] = ("queue_url", "message_group_id")

    def __init__(self, name: str, client: Any, queue_url: str, group: str | None) -> None:
        self.name = name
        self.client = client
        self.queue_url = queue_url
        self.group = group
        self.fifo = queue_url.endswith(".fifo")
        self.timeout_seconds = AWS_CALL_TIMEOUT_SECONDS

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> SqsAction:
        return cls(
            d.name, ctx.client("sqs"), d.text("queue_url", required=True), d.optional_text("message_group_id")
        )

    def deliver(self, delivery: Delivery) -> None:
        self.client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=envelope_json(delivery.envelope()),
            **_message_fields(delivery, self.group, fifo=self.fifo),
        )


# ---------------------------------------------------------------------------------------- sns
class SnsAction:
    kind = "sns"
    keys: ClassVar[tuple[str, ...]] = ("topic_arn", "message_group_id")

    def __init__(self, name: str, client: Any, topic_arn: str, group: str | None) -> None:
        self.name = name
        self.client = client
        self.topic_arn = topic_arn
        self.group = group
        self.fifo = topic_arn.endswith(".fifo")
        self.timeout_seconds = AWS_CALL_TIMEOUT_SECONDS

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> SnsAction:
        return cls(
            d.name, ctx.client("sns"), d.text("topic_arn", required=True), d.optional_text("message_group_id")
        )

    def deliver(self, delivery: Delivery) -> None:
        self.client.publish(
            TopicArn=self.topic_arn,
            Message=envelope_json(delivery.envelope()),
            **_message_fields(delivery, self.group, fifo=self.fifo),
        )


# ---------------------------------------------------------------------------------------- eventbridge
class EventBridgeAction:
    kind = "eventbridge"
    keys: ClassVar[tuple[str, ...]] = ("event_bus_name", "source", "detail_type")

    def __init__(self, name: str, client: Any, bus: str, source: str, detail_type: str) -> None:
        self.name = name
        self.client = client
        self.bus = bus
        self.source = source
        self.detail_type = detail_type
        self.timeout_seconds = AWS_CALL_TIMEOUT_SECONDS

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> EventBridgeAction:
        return cls(
            d.name,
            ctx.client("events"),
            d.text("event_bus_name", "default"),
            d.text("source", "nexttick"),
            d.text("detail_type", "nexttick.task"),
        )

    def deliver(self, delivery: Delivery) -> None:
        response = self.client.put_events(
            Entries=[
                {
                    "EventBusName": self.bus,
                    "Source": self.source,
                    "DetailType": self.detail_type,
                    "Detail": envelope_json(delivery.envelope()),
                }
            ]
        )
        if response.get("FailedEntryCount"):
            entry = response["Entries"][0]
            raise DeliveryError(f"PutEvents failed: {entry.get('ErrorCode')} {entry.get('ErrorMessage')}")
