"""The worker domain: run loop, claims, completion, retries, recurrence advance."""

from nexttick.worker.completion import Attempt, Plan, RunOutcome, plan_completion, retry_delay
from nexttick.worker.events import WorkerEvent, classify_event, helper_shards
from nexttick.worker.loop import RunReport, Worker

__all__ = [
    "Attempt",
    "Plan",
    "RunOutcome",
    "RunReport",
    "Worker",
    "WorkerEvent",
    "classify_event",
    "helper_shards",
    "plan_completion",
    "retry_delay",
]
