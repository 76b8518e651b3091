"""Shared setup for the benchmarks: an in-process AWS (moto) with nexttick's resources."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws

from local.motopatches import lighten_dynamodb
from local.motoserver import EmulatedState
from local.options import EMULATOR_CREDENTIALS
from local.resources import create_resources
from nexttick.clock import SYSTEM_CLOCK, Clock
from nexttick.config import NextTickSettings
from nexttick.runtime import Runtime
from nexttick.schedules import ScheduleKind
from nexttick.store import TaskStore
from nexttick.store.keys import new_home_id
from nexttick.store.records import TaskRecord, TaskStatus

ACTIONS = {
    "log": {"type": "log"},
    "io50": {"type": "python", "target": "bench.actions:io_50ms"},
    # A delivery that prints nothing at the deployed log level: a bill counts nexttick's own lines.
    "silent": {"type": "log", "level": "DEBUG"},
}
HANDOVER_QUEUE = "nexttick-handover"


@contextlib.contextmanager
def emulated_aws(
    *, clock: Clock = SYSTEM_CLOCK, handover_visibility_s: int | None = None, **overrides: Any
) -> Iterator[Runtime]:
    """moto in-process with the table, the rule and a worker function; yields a Runtime on `clock`
    (settings from `overrides`). One
    invocation per measurement (no fan-out: its helpers would need the function to run). moto's
    DynamoDB is lightened as the local stack's is (`lighten_dynamodb`: a Query reads only its
    partition, item answers skip moto's generic serializer), so a figure is the local stack's.
    `handover_visibility_s`: the visibility timeout of a wait hand-over queue to create, whose URL
    the settings carry (NEXTTICK_HANDOVER_QUEUE_URL), so the Runtime hands its waits to it."""
    lighten_dynamodb()
    os.environ.update(
        EMULATOR_CREDENTIALS,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        POWERTOOLS_METRICS_NAMESPACE="nexttick",
        POWERTOOLS_LOG_LEVEL="WARNING",
        POWERTOOLS_METRICS_DISABLED="true",  # counts and units are measured here, not metrics
    )
    with mock_aws(config={"lambda": {"use_docker": False}}):
        settings = NextTickSettings(actions_config=ACTIONS, **{"max_invocations": 1, **overrides})
        create_resources(settings)
        if handover_visibility_s is not None:
            sqs = boto3.client("sqs", region_name=settings.region)
            url = sqs.create_queue(
                QueueName=HANDOVER_QUEUE, Attributes={"VisibilityTimeout": str(handover_visibility_s)}
            )["QueueUrl"]
            settings = settings.model_copy(update={"handover_queue_url": url})
        yield Runtime.build(settings, clock=clock)


# The process environment of a bench run against an emulator (fake credentials, one region, quiet logs).
EMULATOR_ENV = {
    **EMULATOR_CREDENTIALS,
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_METRICS_NAMESPACE": "nexttick",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}


def served_runtime(endpoint_url: str, **overrides: Any) -> Runtime:
    """A Runtime on an emulator served at `endpoint_url` by another process (the bench's DynamoDB
    stand-in, bench/standin.py), with the table and the epoch rule created as `create_resources`
    creates them. No worker function: the stand-in answers Lambda invokes itself."""
    os.environ.update(EMULATOR_ENV)
    settings = NextTickSettings(actions_config=ACTIONS, endpoint_url=endpoint_url, **overrides)
    runtime = Runtime.build(settings)
    runtime.store.create_table()
    runtime.rule.put(None)
    return runtime


def pending_once(
    task_id: str,
    due: datetime,
    now: datetime,
    *,
    action: str = "log",
    payload: dict[str, object] | None = None,
) -> TaskRecord:
    """A pending one-shot task record, as the store's bulk and direct writes take it."""
    return TaskRecord(
        id=task_id,
        action=action,
        payload={} if payload is None else payload,
        status=TaskStatus.PENDING,
        schedule_kind=ScheduleKind.ONCE,
        due=due,
        created_at=now,
        updated_at=now,
    )


def bulk_load(
    store: TaskStore,
    count: int,
    start: datetime,
    spread: timedelta,
    prefix: str | None,
    action: str = "log",
) -> list[str]:
    """Load `count` pending one-shot tasks due between `start` and `start + spread` (the backlog):
    under generated ids (one home item each, as the API creates a task without a client id), or
    with a `prefix` under client ids `<prefix><n>` (a task item and an entry each). Their ids."""
    records = list(_backlog(count, start, spread, prefix, action))
    store.bulk_insert(records, start)
    return [record.id for record in records]


def _backlog(
    count: int, start: datetime, spread: timedelta, prefix: str | None, action: str
) -> Iterator[TaskRecord]:
    step = spread / max(count, 1)
    for i in range(count):
        due = start + step * i
        task_id = new_home_id(due) if prefix is None else f"{prefix}{i:07d}"
        yield pending_once(task_id, due, start, action=action, payload={"n": i})


def direct_load(runtime: Runtime, count: int, start: datetime, spread: timedelta, prefix: str) -> None:
    """`bulk_load` straight into in-process moto's table (as the local stack restores its state):
    the same task items and queue entries, without a BatchWriteItem per 25 of them, so a backlog
    of a million loads in a bench's time. Only under `emulated_aws`."""
    records = _backlog(count, start, spread, prefix, action="log")
    state = EmulatedState(runtime.settings.region, runtime.settings.table_name, runtime.settings.rule_name)
    state.put(item for _, items in runtime.store.new_items(records, start) for item in items)
