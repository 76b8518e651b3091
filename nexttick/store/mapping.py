"""Items of the table to records and back. A task's attributes are its record's fields, by name
(`id` is stored as `task_id`), converted by each field's declared type: a field added to both
needs no code here (tests/unit/test_store_mapping.py holds the two in step)."""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, Field, fields, is_dataclass
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from nexttick.constants import TASK_SK
from nexttick.store import keys
from nexttick.store.models import LastRunAttribute, QueueItem, RuleStateItem, RunItem, TaskItem
from nexttick.store.records import LastRun, QueueEntry, RuleState, RunRecord, TaskRecord
from nexttick.timeutil import from_epoch

T = TypeVar("T")

# Record field -> item attribute, where they differ.
STORED_AS = {"id": "task_id"}


def task_item(model: type[TaskItem], record: TaskRecord, key: tuple[str, str] | None = None) -> TaskItem:
    """The task's item, at `key` (the store's `task_key` of its id; default `T#<id>`/`T`)."""
    attributes = {STORED_AS.get(f.name, f.name): _stored(getattr(record, f.name)) for f in fields(record)}
    return model(*(key or (keys.task_pk(record.id), TASK_SK)), **attributes)


def task_record(item: TaskItem) -> TaskRecord:
    return _read(TaskRecord, item, STORED_AS)


def run_item(model: type[RunItem], run: RunRecord, slot: int, expires_at: datetime) -> RunItem:
    attributes = {f.name: getattr(run, f.name) for f in fields(run)}
    return model(keys.task_pk(run.task_id), keys.run_sort_key(slot), expires_at=expires_at, **attributes)


def _stored(value: Any) -> Any:
    if isinstance(value, LastRun):
        return LastRunAttribute(**{f.name: _stored(getattr(value, f.name)) for f in fields(value)})
    return value.value if isinstance(value, Enum) else value


_HINTS: dict[type, dict[str, Any]] = {}


def field_hints(cls: type) -> dict[str, Any]:
    """A record class's resolved field types, resolved once (it costs more than the rest of a read)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _read(cls: type[T], source: Any, stored_as: dict[str, str]) -> T:
    """An instance of dataclass `cls` from the attributes of `source`, each converted to its field's
    type (DynamoDB numbers come back as int or float whatever was written; a missing attribute
    takes the field's default)."""
    hints = field_hints(cls)
    values = {
        f.name: field_value(hints[f.name], getattr(source, stored_as.get(f.name, f.name)), f)
        for f in fields(cls)  # type: ignore[arg-type]
    }
    return cls(**values)


def field_value(hint: Any, value: Any, field: Field[Any]) -> Any:
    return field_converter(hint, field)(value)


@functools.cache
def field_converter(hint: Any, field: Field[Any]) -> Callable[[Any], Any]:
    """A stored value -> the value of a field of type `hint` (its default for None), with the type
    resolved once per field: the wire codec converts every field of every item it reads."""
    default = None if field.default is MISSING else field.default
    if isinstance(hint, types.UnionType):  # `X | None`: the fields have one type besides None
        (hint,) = (arg for arg in typing.get_args(hint) if arg is not type(None))
    convert: Callable[[Any], Any] | None = None
    if is_dataclass(hint):
        convert = functools.partial(_read, hint, stored_as={})  # type: ignore[arg-type]
    elif hint in (int, float) or (isinstance(hint, type) and issubclass(hint, Enum)):
        convert = hint
    if convert is None:
        return lambda value: default if value is None else value
    return lambda value: default if value is None else convert(value)


def queue_item(model: type[QueueItem], entry: QueueEntry) -> QueueItem:
    return model(
        keys.queue_pk(entry.shard, parked=entry.parked),
        entry.key,
        task_id=entry.task_id,
        token=entry.token,
        scheduled_for=entry.scheduled_for,
        attempt=entry.attempt,
        created_at=entry.created_at,
    )


def queue_entry(item: QueueItem, shard: int, *, parked: bool = False) -> QueueEntry:
    run_at, task_id = keys.split_queue_sort_key(item.sk)
    return QueueEntry(
        shard=shard,
        run_at=run_at,
        task_id=task_id,
        token=item.token,
        scheduled_for=item.scheduled_for,
        key=item.sk,
        attempt=int(item.attempt or 1),
        lease_until=from_epoch(item.lease_until) if item.lease_until is not None else None,
        lease_owner=item.lease_owner,
        created_at=item.created_at,
        last_error=item.last_error,
        parked=parked,
    )


def rule_state(item: RuleStateItem) -> RuleState:
    armed = int(item.armed_at or 0)
    return RuleState(
        armed_minute=from_epoch(armed) if armed else None,
        version=int(item.version or 0),
        published_version=int(item.published or 0),
        repair_version=int(item.repaired) if item.repaired is not None else None,
        kicked_at=from_epoch(item.kicked_at) if item.kicked_at else None,
        waiter_at=from_epoch(item.waiter_at) if item.waiter_at else None,
        waiter_until=from_epoch(item.waiter_until) if item.waiter_until else None,
        waiter_owner=item.waiter_owner,
        heads=None if item.heads is None else shard_heads(item.heads.as_dict()),
        cursors=None if item.cursors is None else {int(s): str(k) for s, k in item.cursors.as_dict().items()},
    )


# An empty shard's head as stored: later than any entry, so that any entry's lowering applies.
EMPTY_SHARD_MS = 99_999_999_999_999


def head_ms(head: datetime | None) -> int:
    """A shard head as stored: epoch milliseconds rounded down (a lower bound stays one)."""
    return EMPTY_SHARD_MS if head is None else math.floor(head.timestamp() * 1000)


def shard_heads(stored: dict[str, Any]) -> dict[int, datetime | None]:
    return {
        int(shard): None if int(ms) >= EMPTY_SHARD_MS else from_epoch(int(ms) / 1000)
        for shard, ms in stored.items()
    }


def rule_state_message(state: RuleState) -> dict[str, Any]:
    """The record as a message carries it (JSON): the hand-over's, so that the invocation it starts
    decides on the record its sender read instead of reading it again."""
    return {
        "armed": _iso(state.armed_minute),
        "version": state.version,
        "published": state.published_version,
        "repaired": state.repair_version,
        "kicked": _iso(state.kicked_at),
        "waiter": [_iso(state.waiter_at), _iso(state.waiter_until), state.waiter_owner],
        "heads": None if state.heads is None else {str(s): _iso(h) for s, h in state.heads.items()},
        "cursors": None if state.cursors is None else {str(s): k for s, k in state.cursors.items()},
    }


def rule_state_of_message(body: dict[str, Any]) -> RuleState:
    """`rule_state_message`'s record back (ValueError, KeyError or TypeError if it is not one)."""
    waiter_at, waiter_until, owner = body["waiter"]
    heads, cursors = body["heads"], body["cursors"]
    return RuleState(
        armed_minute=_instant(body["armed"]),
        version=int(body["version"]),
        published_version=int(body["published"]),
        repair_version=None if body["repaired"] is None else int(body["repaired"]),
        kicked_at=_instant(body["kicked"]),
        waiter_at=_instant(waiter_at),
        waiter_until=_instant(waiter_until),
        waiter_owner=None if owner is None else str(owner),
        heads=None if heads is None else {int(s): _instant(h) for s, h in heads.items()},
        cursors=None if cursors is None else {int(s): k for s, k in cursors.items()},
    )


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _instant(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)
