"""The events the worker accepts: the rule's scheduled event, a direct wake, a sync request, a
helper's share of a burst, and a handed-over wait (the hand-over queue's messages)."""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Any

from nexttick.constants import (
    WORKER_EVENT_HANDOVER,
    WORKER_EVENT_HELP,
    WORKER_EVENT_SOURCE,
    WORKER_EVENT_SYNC,
    WORKER_EVENT_WAKE,
)
from nexttick.store import RuleState, rule_state_of_message


class WorkerEvent(StrEnum):
    SCHEDULED = "scheduled"  # EventBridge rule (source aws.events)
    WAKE = "wake"  # editors (due too soon to arm) and the worker itself ("continue")
    SYNC = "sync"  # deploy / `nexttick sync`: re-derive the rule from the table, then run
    HELP = "help"  # a worker in a burst: drain these shards first
    HANDOVER = "handover"  # SQS: a waiting worker's delayed message; sleep until its time, then run
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
    if handover_wake_at(event) is not None:
        return WorkerEvent.HANDOVER
    return WorkerEvent.UNKNOWN


def helper_shards(event: dict[str, Any], shard_count: int) -> frozenset[int]:
    """The shards a helper event assigns, those that exist (a layout change in flight drops the rest)."""
    return frozenset(s for s in event["shards"] if isinstance(s, int) and 0 <= s < shard_count)


def handover_wake_at(event: dict[str, Any]) -> datetime | None:
    """The earliest wake time among an SQS event's hand-over messages (None: not such an event).
    A batch holds one message as deployed; a larger one is woken for its earliest."""
    earliest = _earliest_handover(event)
    return None if earliest is None else earliest[0]


def handover_record(event: dict[str, Any]) -> RuleState | None:
    """The rule record the earliest hand-over message of `event` carries: the one its sender decided
    the wait on (None: none, or not one this version reads; the invocation then reads it)."""
    earliest = _earliest_handover(event)
    if earliest is None or earliest[1] is None:
        return None
    try:
        return rule_state_of_message(earliest[1])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _earliest_handover(event: dict[str, Any]) -> tuple[datetime, Any] | None:
    records = event.get("Records")
    if not isinstance(records, list):
        return None
    found = [h for r in records if isinstance(r, dict) and (h := _handover(r)) is not None]
    return min(found, key=lambda h: h[0], default=None)


def _handover(record: dict[str, Any]) -> tuple[datetime, Any] | None:
    """A hand-over message's wake time and the record it carries (None if it carries none)."""
    if record.get("eventSource") != "aws:sqs" or not isinstance(record.get("body"), str):
        return None
    try:
        body = json.loads(record["body"])
        if body.get("source") != WORKER_EVENT_SOURCE or body.get("action") != WORKER_EVENT_HANDOVER:
            return None
        at = datetime.fromisoformat(body["at"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return (at, body.get("record")) if at.tzinfo is not None else None
