"""The events the worker accepts: the rule's scheduled event, a direct wake, and a sync request."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from nexttick.constants import WORKER_EVENT_SOURCE, WORKER_EVENT_SYNC, WORKER_EVENT_WAKE


class WorkerEvent(StrEnum):
    SCHEDULED = "scheduled"  # EventBridge rule (source aws.events)
    WAKE = "wake"  # editors (due too soon to arm) and the worker itself ("continue")
    SYNC = "sync"  # deploy / `nexttick sync`: re-derive the rule from the table, then run
    UNKNOWN = "unknown"


def classify_event(event: Any) -> WorkerEvent:
    if not isinstance(event, dict):
        return WorkerEvent.UNKNOWN
    source = event.get("source")
    if source == "aws.events":
        return WorkerEvent.SCHEDULED
    if source == WORKER_EVENT_SOURCE:
        action = event.get("action")
        if action == WORKER_EVENT_WAKE:
            return WorkerEvent.WAKE
        if action == WORKER_EVENT_SYNC:
            return WorkerEvent.SYNC
    return WorkerEvent.UNKNOWN
