"""Records to items in DynamoDB's wire format and back, without PynamoDB model instances: what the
worker's hot path reads and writes (a claim, a task read and write, a run record).

Why: a model instance costs more CPU to build, serialise or read back than the values in it (each
attribute goes through descriptors, defaults and checks), a few hundred microseconds per fire. Each
value is still converted by its model attribute's own `serialize` / `deserialize`, and a missing
attribute reads as the model's default, so the items are the ones the models write and read
(tests/unit/test_store_wire.py holds the two paths equal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from typing import Any, Generic, TypeVar

from pynamodb.attributes import Attribute, AttributeContainer, MapAttribute
from pynamodb.constants import NULL
from pynamodb.exceptions import AttributeNullError

from nexttick.store import keys
from nexttick.store.mapping import STORED_AS, field_converter, field_hints
from nexttick.store.models import LastRunAttribute, QueueItem, RunItem, TaskItem
from nexttick.store.records import LastRun, QueueEntry, RunRecord, TaskRecord
from nexttick.timeutil import from_epoch

R = TypeVar("R")
Wire = dict[str, dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class _Slot:
    """One record field and the model attribute that stores it. `encode` / `decode` are None where
    the value goes through unchanged (a string field in a string attribute: no call per value)."""

    field: str
    attribute: Attribute[Any]
    encode: Callable[[Any], Any] | None  # the field's value -> the attribute's wire value
    decode: Callable[[Any], Any] | None  # the attribute's wire value -> the field's value
    missing: Any  # the field's value when the item lacks the attribute


class Codec(Generic[R]):
    """Dataclass `record` <-> the wire attributes of `container` (a model or a typed map), field by
    field as nexttick.store.mapping converts them through a model instance."""

    def __init__(
        self, container: type[AttributeContainer], record: type[R], stored_as: dict[str, str]
    ) -> None:
        self.record = record
        attributes = container.get_attributes()
        hints = field_hints(record)
        slots = [
            self._slot(f, attributes[stored_as.get(f.name, f.name)], hints[f.name])
            for f in dataclasses.fields(record)  # type: ignore[arg-type]
        ]
        # The model's own order, as it serialises (by identity: `==` on an attribute is a condition).
        order = {id(attribute): i for i, attribute in enumerate(attributes.values())}
        self.slots = sorted(slots, key=lambda slot: order[id(slot.attribute)])
        self._writes = [
            (s.field, s.attribute.attr_name, s.attribute.attr_type, s.attribute.null, s.encode)
            for s in self.slots
        ]
        self._reads = [
            (s.field, s.attribute.attr_name, s.attribute.get_value, s.decode, s.missing) for s in self.slots
        ]

    @staticmethod
    def _slot(field: dataclasses.Field[Any], attribute: Attribute[Any], hint: Any) -> _Slot:
        nested = _nested(attribute)
        convert = field_converter(hint, field)
        missing = convert(attribute.default)
        if nested is not None:
            return _Slot(
                field.name, attribute, nested.encode, lambda value: convert(nested.decode(value)), missing
            )
        if _plain(attribute) and hint in (str, str | None):  # a string stored as it is
            return _Slot(field.name, attribute, None, None, missing)

        def encode(value: Any) -> Any:
            return attribute.serialize(value.value if isinstance(value, Enum) else value)

        def decode(value: Any) -> Any:
            return convert(attribute.deserialize(value))

        return _Slot(field.name, attribute, encode, decode, missing)

    def encode(self, record: R) -> Wire:
        """The record's attributes as the model serialises them (a None value is left out)."""
        item: Wire = {}
        for field, name, kind, null, encode in self._writes:
            value = getattr(record, field)
            if value is None:
                if not null:
                    raise AttributeNullError(name)
                continue
            item[name] = {kind: value if encode is None else encode(value)}
        return item

    def decode(self, item: Wire) -> R:
        """The record an item's attributes hold (the model's default for a missing one)."""
        values = {}
        for field, name, get_value, decode, missing in self._reads:
            stored = item.get(name)
            if stored and NULL not in stored:
                value = get_value(stored)
                values[field] = value if decode is None else decode(value)
            else:
                values[field] = missing
        return self.record(**values)


def _plain(attribute: Attribute[Any]) -> bool:
    """Whether the attribute stores a value as it is (its class keeps Attribute's identity
    serialize and deserialize)."""
    kind = type(attribute)
    return kind.serialize is Attribute.serialize and kind.deserialize is Attribute.deserialize


def _nested(attribute: Attribute[Any]) -> Codec[LastRun] | None:
    """The codec of a map attribute's record (a task's last run), else None."""
    if isinstance(attribute, MapAttribute):
        assert isinstance(attribute, LastRunAttribute), "the only map attribute of a record field"
        return _LAST_RUN
    return None


_LAST_RUN: Codec[LastRun] = Codec(LastRunAttribute, LastRun, {})
TASKS: Codec[TaskRecord] = Codec(TaskItem, TaskRecord, STORED_AS)
RUNS: Codec[RunRecord] = Codec(RunItem, RunRecord, {})


def run_attributes(run: RunRecord, expires_at: datetime) -> Wire:
    """The run record's item without its key: its fields and when it expires."""
    item = RUNS.encode(run)
    ttl = RunItem.expires_at
    item[ttl.attr_name] = {ttl.attr_type: ttl.serialize(expires_at)}
    return {name: item[name] for name in _RUN_ORDER if name in item}


_RUN_ORDER = [attribute.attr_name for attribute in RunItem.get_attributes().values()]


_QUEUE = QueueItem.get_attributes()


def _queue_value(item: Wire, name: str) -> Any:
    attribute = _QUEUE[name]
    stored = item.get(attribute.attr_name)
    if not stored or NULL in stored:
        return attribute.default
    return attribute.deserialize(attribute.get_value(stored))


# A home item's entry attributes: what it holds besides its task while it is a live entry, removed
# when the task moves on (its creation time is the task's own `created_at`, the same attribute).
HOME_ENTRY_FIELDS = ("token", "scheduled_for", "attempt", "lease_until", "lease_owner", "last_error")
HOME_ENTRY_ATTRIBUTES = tuple(_QUEUE[name].attr_name for name in HOME_ENTRY_FIELDS)
_TASK_ONLY = TaskItem.action.attr_name  # an attribute of a task that no plain entry has


def entry_attributes(entry: QueueEntry) -> Wire:
    """A new entry's attributes without its key (as nexttick.store.mapping.queue_item writes them)."""
    values = {
        "task_id": entry.task_id,
        "token": entry.token,
        "scheduled_for": entry.scheduled_for,
        "attempt": entry.attempt,
        "created_at": entry.created_at,
    }
    return {
        _QUEUE[name].attr_name: {_QUEUE[name].attr_type: _QUEUE[name].serialize(value)}
        for name, value in values.items()
        if value is not None
    }


def queue_entry_of(item: Wire, shard: int, *, parked: bool = False) -> QueueEntry:
    """The entry an item in the wire format holds (as nexttick.store.mapping.queue_entry reads a
    model instance), with its task when it is a home item."""
    key = _queue_value(item, "sk")
    run_at, task_id = keys.split_queue_sort_key(key)
    lease_until = _queue_value(item, "lease_until")
    return QueueEntry(
        shard=shard,
        run_at=run_at,
        task_id=task_id,
        token=_queue_value(item, "token"),
        scheduled_for=_queue_value(item, "scheduled_for"),
        key=key,
        attempt=int(_queue_value(item, "attempt") or 1),
        lease_until=from_epoch(lease_until) if lease_until is not None else None,
        lease_owner=_queue_value(item, "lease_owner"),
        created_at=_queue_value(item, "created_at"),
        last_error=_queue_value(item, "last_error"),
        parked=parked,
        task=TASKS.decode(item) if _TASK_ONLY in item else None,
    )
