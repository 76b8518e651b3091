"""The AWS target kinds: lambda, sqs, sns, eventbridge, each through a real boto3 client from
`nexttick.aws` whose every call is bounded."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
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


class _MessageAction(ABC):
    """SQS and SNS: one message per delivery carrying the envelope, the idempotency key as an
    attribute and, for a FIFO target (its name ends in `.fifo`), the group (default: the task) and
    a deduplication id from the key."""

    kind: ClassVar[str]
    service: ClassVar[str]
    target_key: ClassVar[str]

    def __init__(self, name: str, client: Any, target: str, group: str | None) -> None:
        self.name = name
        self.client = client
        self.target = target
        self.group = group
        self.fifo = target.endswith(".fifo")
        self.timeout_seconds = AWS_CALL_TIMEOUT_SECONDS

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> _MessageAction:
        return cls(
            d.name,
            ctx.client(cls.service),
            d.text(cls.target_key, required=True),
            d.optional_text("message_group_id"),
        )

    def deliver(self, delivery: Delivery) -> None:
        key = {"DataType": "String", "StringValue": delivery.idempotency_key}
        fields: dict[str, Any] = {"MessageAttributes": {"idempotency_key": key}}
        if self.fifo:
            fields["MessageGroupId"] = self.group or delivery.task_id
            fields["MessageDeduplicationId"] = _dedup_id(delivery.idempotency_key)
        self._send(envelope_json(delivery.envelope()), fields)

    @abstractmethod
    def _send(self, body: str, fields: dict[str, Any]) -> None: ...


class SqsAction(_MessageAction):
    kind = "sqs"
    service = "sqs"
    target_key = "queue_url"
    keys: ClassVar[tuple[str, ...]] = ("queue_url", "message_group_id")

    def _send(self, body: str, fields: dict[str, Any]) -> None:
        self.client.send_message(QueueUrl=self.target, MessageBody=body, **fields)


class SnsAction(_MessageAction):
    kind = "sns"
    service = "sns"
    target_key = "topic_arn"
    keys: ClassVar[tuple[str, ...]] = ("topic_arn", "message_group_id")

    def _send(self, body: str, fields: dict[str, Any]) -> None:
        self.client.publish(TopicArn=self.target, Message=body, **fields)


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
