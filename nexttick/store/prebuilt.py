"""Requests of the worker's hot path with their parameters rendered once by PynamoDB.

Why: PynamoDB builds a request's condition and update expressions from objects made per call
(paths, operands, placeholders), which costs a claim about a tenth of its CPU, although only the
values change between calls. `Prebuilt` has PynamoDB render the parameters once, with a marker in
place of each value, and each call then only puts its key and values in: the same parameters, sent
through the same connection (`dispatch`), failing with the same errors as PynamoDB's own methods
(tests/unit/test_store_prebuilt.py holds the two equal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pynamodb.attributes import Attribute
from pynamodb.connection import TableConnection
from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.constants import DELETE_ITEM, EXPRESSION_ATTRIBUTE_VALUES, ITEM, KEY, PUT_ITEM, UPDATE_ITEM
from pynamodb.exceptions import DeleteError, PutError, PynamoDBException, UpdateError

from nexttick.constants import PARTITION_KEY, SORT_KEY

# What PynamoDB's own method raises when the request fails, and how it words it.
_FAILS: dict[str, tuple[type[PynamoDBException], str]] = {
    PUT_ITEM: (PutError, "Failed to put item"),
    UPDATE_ITEM: (UpdateError, "Failed to update item"),
    DELETE_ITEM: (DeleteError, "Failed to delete item"),
}
_FIRST_MARKER = 7_000_000_001  # number markers: no real value is negative, so -(this + i) is free


class Prebuilt:
    """One request kind: `operation` with the parameters `render(**markers)` gives to PynamoDB's
    `get_operation_kwargs`, whose values are the named `slots` (each serialised by its attribute)."""

    def __init__(
        self,
        table: TableConnection,
        operation: str,
        slots: Mapping[str, Attribute[Any]],
        render: Callable[..., dict[str, Any]],
    ) -> None:
        self.table = table
        self.operation = operation
        self.key_name = ITEM if operation == PUT_ITEM else KEY
        markers = {name: _marker(attribute, i) for i, (name, attribute) in enumerate(slots.items())}
        self.params = table.connection.get_operation_kwargs(
            table.table_name, "", "", key=self.key_name, **render(**markers)
        )
        found: dict[tuple[str, Any] | None, str] = {
            _wire(attribute, markers[name]): name for name, attribute in slots.items()
        }
        # Each placeholder's value: a slot's (name, attribute), or the constant PynamoDB put there.
        self.values: list[tuple[str, tuple[str, Attribute[Any]] | None, Any]] = []
        for placeholder, value in self.params.get(EXPRESSION_ATTRIBUTE_VALUES, {}).items():
            name = found.get(_frozen(value))
            self.values.append((placeholder, None if name is None else (name, slots[name]), value))

    def send(
        self, hash_key: str, range_key: str, item: Mapping[str, Any] | None = None, **values: Any
    ) -> Any:
        """Make the request for the item at (`hash_key`, `range_key`) with these slot values (and, for
        a put, the item's other attributes in the wire format)."""
        params = dict(self.params)  # replacing an entry keeps its place: the same request body
        params[self.key_name] = {PARTITION_KEY: {"S": hash_key}, SORT_KEY: {"S": range_key}, **(item or {})}
        if self.values:
            params[EXPRESSION_ATTRIBUTE_VALUES] = {
                placeholder: constant if slot is None else _wire_value(slot[1], values[slot[0]])
                for placeholder, slot, constant in self.values
            }
        return dispatch(self.table, self.operation, params)


def dispatch(table: TableConnection, operation: str, params: dict[str, Any]) -> Any:
    """Send a write's rendered parameters through the table's connection, failing as PynamoDB's own
    method for `operation` fails."""
    try:
        return table.connection.dispatch(operation, params)
    except BOTOCORE_EXCEPTIONS as exc:
        error, words = _FAILS[operation]
        raise error(f"{words}: {exc}", exc) from exc


def _marker(attribute: Attribute[Any], index: int) -> Any:
    return -(_FIRST_MARKER + index) if attribute.attr_type == "N" else f"\x00marker{index}"


def _wire(attribute: Attribute[Any], marker: Any) -> tuple[str, Any]:
    return attribute.attr_type, attribute.serialize(marker)


def _wire_value(attribute: Attribute[Any], value: Any) -> dict[str, Any]:
    return {attribute.attr_type: attribute.serialize(value)}


def _frozen(value: dict[str, Any]) -> tuple[str, Any] | None:
    ((kind, inner),) = value.items()
    return (kind, inner) if isinstance(inner, str) else None
