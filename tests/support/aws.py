"""The moto environment of tests: fake credentials and one region, and a recording worker trigger."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import boto3

from local.options import EMULATOR_CREDENTIALS
from nexttick.config import NextTickSettings
from nexttick.constants import PARTITION_KEY, SORT_KEY
from nexttick.runtime import Runtime

# The environment of every test that talks to moto: its credentials and one region.
FAKE_AWS_ENV = {**EMULATOR_CREDENTIALS, "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}


def streams_client(region: str = "us-east-1") -> Any:
    """A DynamoDB Streams client for in-process moto, which serves the streams API only on the
    regional streams host (recent botocore resolves another)."""
    return boto3.client(
        "dynamodbstreams", region_name=region, endpoint_url=f"https://streams.dynamodb.{region}.amazonaws.com"
    )


def create_keyed_table(dynamodb: Any, name: str, *, sort_key_type: str = "S", **options: Any) -> None:
    """An on-demand table keyed as nexttick's (string `pk`, `sk` of `sort_key_type`); `options` go
    to CreateTable as they are (a stream specification, ...)."""
    dynamodb.create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SORT_KEY, "AttributeType": sort_key_type},
        ],
        BillingMode="PAY_PER_REQUEST",
        **options,
    )


class RecordingTrigger:
    """Wraps the real worker trigger (a real Lambda invoke against moto) and records the wakes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reasons: list[str] = []
        self.helpers: list[list[int]] = []

    def wake(self, reason: str) -> None:
        self.inner.wake(reason)
        self.reasons.append(reason)

    def help(self, shards: Collection[int], leader: str) -> None:
        self.inner.help(shards, leader)
        self.helpers.append(sorted(shards))


class RecordedRuntime(Runtime):
    """The runtime of a test: its worker trigger (shared with rule sync) records every wake."""

    trigger: RecordingTrigger

    @classmethod
    def recording(cls, settings: NextTickSettings) -> RecordedRuntime:
        built = Runtime.build(settings)
        trigger = RecordingTrigger(built.trigger)
        built.rule_sync.trigger = trigger
        return cls(built.settings, built.store, built.rule, trigger, built.rule_sync, built.clock)


def task_write(operation: str, params: dict[str, Any]) -> bool:
    """Whether a DynamoDB request (as `provide-client-params` gives it) writes a task: a `T#<id>`
    item's PutItem, or the UpdateItem that writes a task into its home item (it sets every field,
    `action` among them; a claim or a lease change of the same item does not)."""
    if operation == "PutItem":
        return bool(params["Item"]["pk"]["S"].startswith("T#"))
    return operation == "UpdateItem" and "action" in params.get("ExpressionAttributeNames", {}).values()
