"""What the store's parts share: the models bound to one table, its queue shards, and telling a
failed write condition from any other write error."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pynamodb.connection import TableConnection
from pynamodb.exceptions import DeleteError, PutError, UpdateError

from nexttick.store import keys
from nexttick.store.models import BoundModels, TaskItem
from nexttick.store.records import TaskRecord

_CONDITION_FAILED = "ConditionalCheckFailedException"


class StoreBase:
    """The state TaskStore sets up, declared for the parts it is assembled from."""

    models: BoundModels
    shards: int
    _pool: ThreadPoolExecutor

    @property
    def table(self) -> TableConnection:
        """The models' shared connection to the table: the hot path's requests go through it with
        items in the wire format (nexttick.store.wire), without building model instances."""
        return self.models.task._get_connection()

    @property
    def client(self) -> Any:
        """The one botocore client all of the store's requests go through: where meters, fault
        injection and tests register for its events."""
        return self.table.connection.client

    def with_payload(self, record: TaskRecord) -> TaskRecord:
        """`record` with its payload, read from the payload's own item when it has one (strongly
        consistent: the item is written before any task write that names it)."""
        if record.payload_ref is not None and record.payload is None:
            key = (keys.task_pk(record.id), keys.payload_sort_key(record.payload_ref))
            item = self.table.get_item(*key, consistent_read=True).get("Item")
            if item is None:
                raise PayloadMissingError(f"task {record.id}: payload item {key[1]} is gone")
            record.payload = TaskItem.payload.deserialize(item[TaskItem.payload.attr_name]["S"])
        return record


class PayloadMissingError(RuntimeError):
    """A task names a payload item that is gone (only ever removed after its task)."""


def condition_failed(exc: PutError | UpdateError | DeleteError) -> bool:
    # Not `exc.cause_response_code`: it fails with AttributeError on a cause without a response
    # (a read timeout), which would hide the real error.
    response = getattr(exc.cause, "response", None) or {}
    return bool(response.get("Error", {}).get("Code") == _CONDITION_FAILED)
