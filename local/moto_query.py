"""How the local stack's moto answers a base-table Query: reading only what it returns, as DynamoDB
does (`query_sorted_partitions`).

Written for moto 5.2.5 (`MOTO_VERSION`); `FINGERPRINTS` records the moto functions the patch
replaces or relies on, checked by tests/unit/test_motopatches.py.
"""

from __future__ import annotations

import bisect
import copy
import inspect
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import RESULT_SIZE_LIMIT, Table

from local.moto_projection import is_top_level, project_top_level

MOTO_VERSION = "5.2.5"

_moto_query = Table.query

# sha256 of each function's source as moto 5.2.5 ships it: `Table.query` is replaced for base-table
# queries; `put_item`, `get_item` and `delete_item` are how moto changes a partition, which
# SortedPartition keeps in order.
FINGERPRINTS: dict[str, tuple[Callable[..., Any], str]] = {
    "moto.dynamodb.models.table.Table.query": (
        _moto_query,
        "002b4d00be6df07cf37f6cbe0132e5eb89455ae12a8e79b23db3fb492450f21e",
    ),
    "moto.dynamodb.models.table.Table.put_item": (
        Table.put_item,
        "de23933013ef842639046c19bcf7e418bce0474d810f6719368be4cedce11d47",
    ),
    "moto.dynamodb.models.table.Table.get_item": (
        Table.get_item,
        "b08e98fe37b7e5836afe03b010d637ef50df5dea6cbecd9cf8816eef326a21cd",
    ),
    "moto.dynamodb.models.table.Table.delete_item": (
        Table.delete_item,
        "1594f7b07616c8cb8cdf0fbf58d6f54eeac83f25d7ac7b14e832a08e10efd8f9",
    ),
}


class SortedPartition(dict[DynamoType, Item]):
    """One partition of a moto table (range key -> item) that keeps its range keys in order, so a
    Query finds its first item by bisection and stops at its Limit, as DynamoDB does. moto changes
    a partition only by `partition[key] = item` and `partition.pop(key)` (put_item, delete_item)."""

    def __init__(self, items: dict[DynamoType, Item] | None = None) -> None:
        super().__init__(items or {})
        self._keys = {key.cast_value: key for key in self}
        self.ordered = sorted(self._keys)  # the range keys' values, ascending

    def __reduce__(self) -> Any:  # copies and pickles rebuild the order from the items
        return (SortedPartition, (dict(self),))

    def __setitem__(self, key: DynamoType, item: Item) -> None:
        if key not in self:
            value = key.cast_value
            bisect.insort(self.ordered, value)
            self._keys[value] = key
        super().__setitem__(key, item)

    def __delitem__(self, key: DynamoType) -> None:
        super().__delitem__(key)
        self._forget(key)

    def pop(self, key: DynamoType, *default: Any) -> Any:
        if key in self:
            self._forget(key)
        return super().pop(key, *default)

    def _forget(self, key: DynamoType) -> None:
        value = key.cast_value
        del self.ordered[bisect.bisect_left(self.ordered, value)]
        del self._keys[value]

    def item_at(self, index: int) -> Item:
        return self[self._keys[self.ordered[index]]]

    def bounds(self, comparison: str | None, values: list[Any]) -> tuple[int, int] | None:
        """The index range of the keys that meet the key condition; None for one it cannot bound."""
        ordered, low, high = self.ordered, 0, len(self.ordered)
        if comparison is None:
            return low, high
        first = values[0] if values else None
        if comparison in ("EQ", "="):
            return bisect.bisect_left(ordered, first), bisect.bisect_right(ordered, first)
        if comparison in ("LT", "<"):
            return low, bisect.bisect_left(ordered, first)
        if comparison in ("LE", "<="):
            return low, bisect.bisect_right(ordered, first)
        if comparison in ("GT", ">"):
            return bisect.bisect_right(ordered, first), high
        if comparison in ("GE", ">="):
            return bisect.bisect_left(ordered, first), high
        if comparison == "BETWEEN":
            return bisect.bisect_left(ordered, first), bisect.bisect_right(ordered, values[1])
        if comparison == "BEGINS_WITH" and isinstance(first, str):
            start = bisect.bisect_left(ordered, first)
            end = start
            while end < high and ordered[end].startswith(first):
                end += 1
            return start, end
        return None


def _sorted_partition(table: Table, hash_key: DynamoType) -> SortedPartition | None:
    """The partition of a table with a sort key as a SortedPartition (converted on first use; new
    ones are born so); None when it has no items yet."""
    items = table.items
    if getattr(items, "default_factory", None) is dict:
        items.default_factory = SortedPartition
    partition = items.get(hash_key)
    if partition is None or isinstance(partition, SortedPartition):
        return partition
    items[hash_key] = sorted_partition = SortedPartition(partition)
    return sorted_partition


def _indices(low: int, high: int, forward: bool) -> range:
    return range(low, high) if forward else range(high - 1, low - 1, -1)


def _sorted_query(
    table: Table,
    hash_key: DynamoType,
    range_comparison: str | None,
    range_objs: list[DynamoType],
    limit: int,
    exclusive_start_key: dict[str, Any] | None,
    scan_index_forward: bool,
    projection_expressions: list[list[str]] | None,
    filter_expression: Any,
) -> tuple[list[Item], int, dict[str, Any] | None] | None:
    """moto's base-table Query answer (items, scanned count, last evaluated key) read from a sorted
    partition: bisect to the first key, stop at the Limit or the 1 MB page. None: leave it to moto."""
    partition = _sorted_partition(table, hash_key)
    if partition is None:
        return [], 0, None
    bounds = partition.bounds(range_comparison, [obj.cast_value for obj in range_objs])
    if bounds is None:
        return None
    low, high = bounds
    if exclusive_start_key is not None and table.range_key_attr in exclusive_start_key:
        after = DynamoType(exclusive_start_key[table.range_key_attr]).cast_value
        if scan_index_forward:
            low = max(low, bisect.bisect_right(partition.ordered, after))
        else:
            high = min(high, bisect.bisect_left(partition.ordered, after))
    results: list[Item] = []
    size, last_evaluated_key, last_index = 0, None, -1
    for index in _indices(low, high, scan_index_forward):
        item = partition.item_at(index)
        item_size = item.size()
        if len(results) == limit or size + item_size > RESULT_SIZE_LIMIT:
            last_evaluated_key = table._get_last_evaluated_key(results[-1], None)
            break
        results.append(item)
        size += item_size
        last_index = index
    else:
        # moto's rule: a page that reached its Limit has a last evaluated key when the partition
        # holds any item after it in the direction read, whether or not that item meets the condition
        beyond = last_index < len(partition.ordered) - 1 if scan_index_forward else last_index > 0
        if results and len(results) == limit and beyond:
            last_evaluated_key = table._get_last_evaluated_key(results[-1], None)
    scanned = len(results)
    if filter_expression is not None:  # a condition reads the item and never changes it
        results = [item for item in results if filter_expression.expr(item)]
    if projection_expressions and all(map(is_top_level, projection_expressions)):
        projected = [project_top_level(item, projection_expressions) for item in results]
        return projected, scanned, last_evaluated_key
    results = copy.deepcopy(results)
    if projection_expressions:
        results = [item.project(projection_expressions) for item in results]
    return results, scanned, last_evaluated_key


class _Partition:
    """A moto table as its base-table Query sees it: only the items of one partition (for the
    queries the sorted path leaves to moto)."""

    def __init__(self, table: Table, hash_key: DynamoType) -> None:
        self._table = table
        self._hash_key = hash_key

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def all_items(self) -> list[Item]:
        partition = self._table.items.get(self._hash_key)
        if partition is None:
            return []
        return list(partition.values()) if self._table.range_key_attr else [partition]  # type: ignore[list-item]


_QUERY_PARAMETERS = list(inspect.signature(_moto_query).parameters)[1:]  # after self


def _query(self: Table, *args: Any, **kwargs: Any) -> Any:
    call = dict(zip(_QUERY_PARAMETERS, args, strict=False)) | kwargs
    hash_key = call["hash_key"]
    if call.get("index_name") is not None or hash_key is None:
        return _moto_query(self, *args, **kwargs)
    simple = (
        self.range_key_attr is not None
        and len(call.get("range_key_conditions") or ()) <= 1
        and not (set(call) - set(_QUERY_PARAMETERS))  # no legacy per-attribute filters
    )
    if simple:
        answer = _sorted_query(
            self,
            hash_key,
            call["range_comparison"],
            call["range_objs"],
            call["limit"],
            call["exclusive_start_key"],
            call["scan_index_forward"],
            call["projection_expressions"],
            call.get("filter_expression"),
        )
        if answer is not None:
            return answer
    return _moto_query(_Partition(self, hash_key), *args, **kwargs)  # type: ignore[arg-type]


def query_sorted_partitions() -> None:
    """Make moto's base-table Query read only what it returns, as DynamoDB does.

    moto 5 answers every Query by sorting the whole table (`Table.all_items`), keeping the items of
    one partition and walking them from the first, whatever the Limit: the local stack's queue
    shards hold thousands of entries, and a page of 20 cost a sort of all of them (0.69 s per
    `GET /tasks` page at 1e5 pending). Here a partition keeps its keys sorted (SortedPartition), a
    Query bisects to its first key and stops at its Limit. A projection of top-level names copies
    those attributes only (local/moto_projection.py), where moto copies the whole item and then
    converts it to plain JSON and back once per name (about 1 ms per queue entry read; side by
    side, a list page at 1e5 pending took 102 ms with moto's projection and 78 ms with this one).
    Index queries, tables without a sort key and key conditions it cannot bound go to moto's own
    code, over the queried partition only. Idempotent."""
    Table.query = _query  # type: ignore[method-assign]
