"""The worker domain: the invocation loop, shard sharing, one occurrence's claim/run/complete,
completion rules (retries, recurrence advance)."""

from nexttick.worker.completion import Attempt, Plan, RunOutcome, plan_completion, retry_delay
from nexttick.worker.events import (
    WorkerEvent,
    classify_event,
    handover_record,
    handover_wake_at,
    helper_shards,
)
from nexttick.worker.loop import RunReport, Worker
from nexttick.worker.occurrence import RunResult

__all__ = [
    "Attempt",
    "Plan",
    "RunOutcome",
    "RunReport",
    "RunResult",
    "Worker",
    "WorkerEvent",
    "classify_event",
    "handover_record",
    "handover_wake_at",
    "helper_shards",
    "plan_completion",
    "retry_delay",
]
