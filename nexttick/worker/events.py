"""The events the worker accepts: the rule's scheduled event, a direct wake, a sync request, and a
helper's share of a burst."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from nexttick.constants import WORKER_EVENT_HELP, WORKER_EVENT_SOURCE, WORKER_EVENT_SYNC, WORKER_EVENT_WAKE


class WorkerEvent(StrEnum):
    SCHEDULED = "scheduled"  # EventBridge rule (source aws.events)
    WAKE = "wake"  # editors (due too soon to arm) and the worker itself ("continue")
    SYNC = "sync"  # deploy / `nexttick sync`: re-derive the rule from the table, then run
    HELP = "help"  # a worker in a burst: drain these shards first
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
        if action == WORKER_EVENT_HELP and isinstance(event.get("shards"), list) and event["shards"]:
            return WorkerEvent.HELP
    return WorkerEvent.UNKNOWN


def helper_shards(event: dict[str, Any], shard_count: int) -> frozenset[int]:
    """The shards a helper event assigns, those that exist (a layout change in flight drops the rest)."""
    return frozenset(s for s in event["shards"] if isinstance(s, int) and 0 <= s < shard_count)
