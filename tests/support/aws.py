"""Helpers to create nexttick's resources inside moto (in-process `mock_aws`)."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import boto3

from local.options import EMULATOR_CREDENTIALS
from nexttick.config import NextTickSettings
from nexttick.constants import EPOCH_EXPRESSION

# The environment of every test that talks to moto: its credentials and one region.
FAKE_AWS_ENV = {**EMULATOR_CREDENTIALS, "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}


def create_resources(settings: NextTickSettings) -> None:
    """Table, the epoch rule and a placeholder worker function, as the CDK stack would create them."""
    from nexttick.store import TaskStore

    TaskStore.from_settings(settings).create_table()
    events = boto3.client("events", region_name=settings.region)
    events.put_rule(Name=settings.rule_name, ScheduleExpression=EPOCH_EXPRESSION, State="ENABLED")
    iam = boto3.client("iam", region_name=settings.region)
    role = iam.create_role(
        RoleName="nexttick-worker-test",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return None\n")
    boto3.client("lambda", region_name=settings.region).create_function(
        FunctionName=settings.worker_function,
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": buffer.getvalue()},
    )


class RecordingTrigger:
    """Wraps the real worker trigger (a real Lambda invoke against moto) and records the wakes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reasons: list[str] = []

    def wake(self, reason: str) -> None:
        self.inner.wake(reason)
        self.reasons.append(reason)
