"""Decoding the table's stream records (the keeper's input): which item a record is about, and
what a task or rule-record image says. Item shapes stay in the data layer: images are read through
the PynamoDB models that wrote them; keys are the table's two string attributes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from nexttick.constants import (
    PARTITION_KEY,
    QUEUE_PK_PREFIX,
    RULE_STATE_PK,
    RULE_STATE_SK,
    SORT_KEY,
    TASK_PK_PREFIX,
    TASK_SK,
)
from nexttick.store.keys import is_home_key
from nexttick.store.models import QueueItem, RuleStateItem, TaskItem
from nexttick.timeutil import from_epoch


class ItemKind(StrEnum):
    TASK = "task"
    RULE = "rule"
    OTHER = "other"  # queue entries: the keeper ignores them


@dataclass(frozen=True)
class TaskImage:
    """What the keeper needs from a task item: is it pending, the sort key of its schedule's entry
    (which starts with when it runs: its due time plus jitter, or a retry's time), and of its "run
    now" occurrence's entry (if one waits)."""

    task_id: str
    status: str
    due: datetime | None
    entry_key: str | None = None
    run_now_key: str | None = None


@dataclass(frozen=True)
class RuleImage:
    armed_minute: datetime | None
    version: int


def item_kind(keys: Mapping[str, Any]) -> ItemKind:
    """The kind of item a stream record's `Keys` (DynamoDB JSON) name (a home item is a task's)."""
    pk, sk = (keys.get(name, {}).get("S") for name in (PARTITION_KEY, SORT_KEY))
    if isinstance(pk, str) and pk.startswith(TASK_PK_PREFIX) and sk == TASK_SK:
        return ItemKind.TASK
    if isinstance(pk, str) and pk.startswith(QUEUE_PK_PREFIX) and isinstance(sk, str) and is_home_key(sk):
        return ItemKind.TASK
    if (pk, sk) == (RULE_STATE_PK, RULE_STATE_SK):
        return ItemKind.RULE
    return ItemKind.OTHER


def reaches_keeper(record: Mapping[str, Any]) -> bool:
    """What the deployed trigger's filters pass (infra/keeper.py, `stream_filters`): inserts and
    modifications of task items and of the rule record — of a home item, only those that leave it
    without a lease or with a "run now" pointer: a claim or a lease change of its entry reschedules
    nothing, and would otherwise start the keeper for every run — and the removal (its TTL) of a
    task whose payload has an item of its own."""
    change = record.get("dynamodb", {})
    keys = change.get("Keys", {})
    if record.get("eventName") == "REMOVE":  # only a task item names a payload item
        return _PAYLOAD_REF in change.get("OldImage", {})
    if record.get("eventName") not in ("INSERT", "MODIFY") or item_kind(keys) is ItemKind.OTHER:
        return False
    if not keys.get(PARTITION_KEY, {}).get("S", "").startswith(QUEUE_PK_PREFIX):
        return True
    new = change.get("NewImage", {})
    return TaskItem.action.attr_name in new and (
        QueueItem.lease_owner.attr_name not in new or TaskItem.extra_key.attr_name in new
    )


def removed_payload(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """(task id, payload reference) of a removed task whose payload had an item of its own."""
    change = record.get("dynamodb", {})
    if record.get("eventName") != "REMOVE" or item_kind(change.get("Keys", {})) is not ItemKind.TASK:
        return None
    old = change.get("OldImage", {})
    if _PAYLOAD_REF not in old:
        return None
    return old[TaskItem.task_id.attr_name]["S"], old[_PAYLOAD_REF]["S"]


_PAYLOAD_REF = TaskItem.payload_ref.attr_name


def task_image(image: Mapping[str, Any]) -> TaskImage:
    """(task id, status, due, entry and run-now keys) of a task item's stream image (DynamoDB JSON)."""
    item = TaskItem.from_raw_data(dict(image))
    entry_key = item.queue_key if not item.queue_parked else None
    return TaskImage(item.task_id, item.status, item.due, entry_key=entry_key, run_now_key=item.extra_key)


def new_rule_image(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The rule record's image as a stream record's change wrote it (DynamoDB JSON, for
    `rule_image`), or None (another item, a removal)."""
    change = record.get("dynamodb", {})
    if "NewImage" not in change or item_kind(change.get("Keys", {})) is not ItemKind.RULE:
        return None
    image: Mapping[str, Any] = change["NewImage"]
    return image


def rule_image(image: Mapping[str, Any]) -> RuleImage:
    """The armed minute (None = epoch) and CAS version of a rule-record stream image."""
    item = RuleStateItem.from_raw_data(dict(image))
    armed = int(item.armed_at or 0)
    return RuleImage(armed_minute=from_epoch(armed) if armed else None, version=int(item.version or 0))
