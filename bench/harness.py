"""Shared setup for the benchmarks: an in-process AWS (moto) with nexttick's resources."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import datetime, timedelta

from moto import mock_aws

from local.resources import create_resources
from nexttick.config import NextTickSettings
from nexttick.runtime import Runtime
from nexttick.store import TaskStore
from nexttick.store.records import TaskRecord

ACTIONS = {"log": {"type": "log"}, "io50": {"type": "python", "target": "bench.actions:io_50ms"}}


@contextlib.contextmanager
def emulated_aws(**overrides: object) -> Iterator[Runtime]:
    """moto in-process with the table, the rule and a worker function; yields a Runtime."""
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        POWERTOOLS_METRICS_NAMESPACE="nexttick",
        POWERTOOLS_LOG_LEVEL="WARNING",
    )
    with mock_aws(config={"lambda": {"use_docker": False}}):
        settings = NextTickSettings(actions_config=ACTIONS, **overrides)  # type: ignore[arg-type]
        create_resources(settings)
        yield Runtime.build(settings)


def bulk_load(
    store: TaskStore, count: int, start: datetime, spread: timedelta, prefix: str, action: str = "log"
) -> None:
    """Load `count` pending one-shot tasks due between `start` and `start + spread` (the backlog)."""
    step = spread / max(count, 1)
    records = [
        TaskRecord(
            id=f"{prefix}{i:07d}",
            action=action,
            payload={"n": i},
            status="pending",
            schedule_kind="once",
            due=start + step * i,
            created_at=start,
            updated_at=start,
        )
        for i in range(count)
    ]
    store.bulk_insert(records, start)
