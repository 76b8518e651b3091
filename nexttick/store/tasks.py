"""The task items: strongly consistent reads of tasks by id, and the compare-and-set write of a
whole task (its own `T#<id>` item, or the task's attributes in its home item), with a payload larger
than INLINE_PAYLOAD_BYTES kept in an item of its own. Moving a task between queue entries is the
write protocol's (nexttick.store.writes), built on these.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from pynamodb.constants import PUT_ITEM, UPDATE_ITEM
from pynamodb.exceptions import PutError, UpdateError

from nexttick.constants import INLINE_PAYLOAD_BYTES
from nexttick.store import keys, wire
from nexttick.store.base import StoreBase, condition_failed
from nexttick.store.mapping import task_record
from nexttick.store.models import TaskItem
from nexttick.store.prebuilt import Prebuilt, dispatch
from nexttick.store.records import TaskRecord, TaskStatus


class TaskItems(StoreBase):
    """The tasks of TaskStore, read and written whole (a base of TaskWrites)."""

    def task_key(self, task_id: str) -> tuple[str, str]:
        """(partition, sort key) of the item holding the task: its home item, or `T#<id>`."""
        return keys.task_key(task_id, self.shards)

    def get_task(self, task_id: str) -> TaskRecord | None:
        item = self.table.get_item(*self.task_key(task_id), consistent_read=True).get("Item")
        return self.with_payload(wire.TASKS.decode(item)) if item else None

    def get_tasks(self, task_ids: Iterable[str]) -> dict[str, TaskRecord]:
        """The existing tasks among `task_ids`, by id: strongly consistent BatchGetItem calls (100
        keys each; pynamodb retries unprocessed keys), not one GetItem per task."""
        wanted = [self.task_key(task_id) for task_id in dict.fromkeys(task_ids)]
        found = (task_record(item) for item in self.models.task.batch_get(wanted, consistent_read=True))
        return {record.id: self.with_payload(record) for record in found}

    def replace_task(self, record: TaskRecord, expected_version: int) -> bool:
        """Write the whole task if its stored version is still `expected_version` (compare-and-set).

        Every field is written each time, so no half-applied update can exist. The queue pointer is
        written as given: use `swap_occurrence` to move the task to another entry."""
        key = self.task_key(record.id)
        replaced = record.payload_ref
        values = self._task_attributes(record)
        try:
            if keys.is_home_id(record.id):
                self._update_home(key, record, values, expected_version)
            else:
                self._put_task.send(*key, values, version=expected_version)
        except (PutError, UpdateError) as exc:
            if not condition_failed(exc):
                raise
            if not self._stored_as_written(key, values):
                return False
        if replaced is not None and replaced != record.payload_ref:
            self._retire_payload(record.id, replaced)
        return True

    def _task_attributes(self, record: TaskRecord) -> wire.Wire:
        """The task's attributes as written: a payload larger than INLINE_PAYLOAD_BYTES is replaced
        by the reference of its own item, written first when it is new (named by its digest, so
        a write with the payload unchanged writes no payload; sets `record.payload_ref`)."""
        values = wire.TASKS.encode(record)
        values.pop(_PAYLOAD_REF, None)
        payload = values[_PAYLOAD]["S"]
        if len(payload) <= INLINE_PAYLOAD_BYTES:
            record.payload_ref = None
            return values
        ref = hashlib.sha256(payload.encode()).hexdigest()[:32]
        if ref != record.payload_ref:
            self.table.put_item(
                keys.task_pk(record.id), keys.payload_sort_key(ref), attributes={_PAYLOAD: values[_PAYLOAD]}
            )
        record.payload_ref = ref
        del values[_PAYLOAD]
        values[_PAYLOAD_REF] = {"S": ref}
        return values

    def drop_payload(self, task_id: str, ref: str) -> None:
        """Delete a payload item whose task is gone (the keeper, on the task's removal)."""
        self.table.delete_item(keys.task_pk(task_id), keys.payload_sort_key(ref))

    def _retire_payload(self, task_id: str, ref: str) -> None:
        """A payload item its task no longer names expires after a grace period, not at once: a
        reader holding the task as it was (a worker's claim) still finds it."""
        expires = self.models.task.expires_at
        self.table.update_item(
            keys.task_pk(task_id),
            keys.payload_sort_key(ref),
            actions=[expires.set(datetime.now(UTC) + RETIRED_PAYLOAD_GRACE)],
        )

    def _update_home(
        self, key: tuple[str, str], record: TaskRecord, values: wire.Wire, expected_version: int
    ) -> None:
        """Write the task's attributes into its home item (compare-and-set), and unless the task is
        pending there still, end the item's entry: its attributes go in the same request."""
        removed = [name for name in _TASK_ATTRIBUTES if name not in values]
        at_home = (
            record.status == TaskStatus.PENDING and not record.queue_parked and record.queue_key == key[1]
        )
        if not at_home:
            removed += wire.HOME_ENTRY_ATTRIBUTES
        names = {f"#a{i}": name for i, name in enumerate(dict.fromkeys([*values, *removed, _VERSION]))}
        placeholder = {name: ph for ph, name in names.items()}
        update = "SET " + ", ".join(f"{placeholder[name]} = :v{i}" for i, name in enumerate(values))
        if removed:
            update += " REMOVE " + ", ".join(placeholder[name] for name in removed)
        params = {
            "TableName": self.table.table_name,
            "Key": item_key(*key),
            "UpdateExpression": update,
            "ConditionExpression": f"{placeholder[_VERSION]} = :expected",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {
                **{f":v{i}": value for i, value in enumerate(values.values())},
                ":expected": {"N": str(expected_version)},
            },
        }
        dispatch(self.table, UPDATE_ITEM, params)

    @functools.cached_property
    def _put_task(self) -> Prebuilt:
        """The task's PutItem, only while its stored version is `version` (compare-and-set)."""
        stored = self.models.task.version
        return Prebuilt(
            self.table, PUT_ITEM, {"version": stored}, lambda version: {"condition": stored == version}
        )

    def _stored_as_written(self, key: tuple[str, str], values: wire.Wire) -> bool:
        """Whether the stored task is exactly the one we wrote (`values`), after its conditional
        write failed. The SDK resends a write whose answer was lost (a 500 or a timeout after
        DynamoDB applied it), and the resend fails its condition on the first attempt's own write:
        that write is ours, and treating it as lost would delete the entry the committed task
        points at."""
        stored = self.table.get_item(*key, consistent_read=True).get("Item")
        if stored is None:
            return False
        task = {name: stored[name] for name in _TASK_ATTRIBUTES if name in stored}
        return bool(_canonical(task) == _canonical(values))


_TASK_ATTRIBUTES = tuple(slot.attribute.attr_name for slot in wire.TASKS.slots)
_VERSION = TaskItem.version.attr_name
_PAYLOAD = TaskItem.payload.attr_name
_PAYLOAD_REF = TaskItem.payload_ref.attr_name
# How long a payload item its task no longer names is kept for readers of the task as it was.
RETIRED_PAYLOAD_GRACE = timedelta(days=1)


def item_key(pk: str, sk: str) -> wire.Wire:
    """The key attributes of the item at (`pk`, `sk`), in the wire format."""
    return {TaskItem.pk.attr_name: {"S": pk}, TaskItem.sk.attr_name: {"S": sk}}


def _canonical(value: Any) -> Any:
    """A serialised item with every number in one form: DynamoDB stores numbers normalised (a
    written "30.0" reads back as "30"), so our own write must compare equal to what it reads."""
    if isinstance(value, dict):
        return {k: Decimal(v).normalize() if k == "N" else _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value
