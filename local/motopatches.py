"""What the local stack changes in moto, and why: a Query that reads only what it returns, item
answers and stream records as plain JSON, and a dispatcher that does not list moto's package per
request. The test suite's in-process moto is lightened the same way (tests/conftest.py), so the
suite runs against the emulator the local stack and the bench use.

Written for moto 5.2.5 (`MOTO_VERSION`). Each patch leans on how moto's own functions behave, so
`PATCHED` holds a fingerprint of the source of every moto function a patch replaces or relies on;
tests/unit/test_motopatches.py fails when a moto upgrade changes one of them, naming it, so the
patch is re-read before it is trusted again.
"""

from __future__ import annotations

import bisect
import copy
import functools
import hashlib
import inspect
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

import moto.core.responses as moto_core_responses
from moto import backends
from moto.core.serialize import TimestampSerializer
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import RESULT_SIZE_LIMIT, StreamRecord, Table
from moto.dynamodb.responses import DynamoResult
from moto.dynamodbstreams.models import ShardIterator
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

from local import moto_expressions

MOTO_VERSION = "5.2.5"

_moto_query = Table.query
_moto_execute_result = DynamoResult.execute_result
_moto_list_of_modules = backends.list_of_moto_modules
_moto_method_names = moto_core_responses.method_names_from_class
_moto_streams_serialized = DynamoDBStreamsHandler.serialized

# sha256 of each function's source as moto 5.2.5 ships it: `Table.query` is replaced for base-table
# queries; `put_item`, `get_item` and `delete_item` are how moto changes a partition, which
# SortedPartition keeps in order; `Item.project` is answered for top-level names by a copy built as
# `Item.__deepcopy__` builds one; `execute_result` and `list_of_moto_modules` are replaced outright;
# the three stream functions make the GetRecords answer that is answered in plain JSON, with its
# times converted by moto's own `_timestamp_unixtimestamp`.
PATCHED: dict[str, tuple[Callable[..., Any], str]] = {
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
    "moto.dynamodb.models.dynamo_type.Item.project": (
        Item.project,
        "f411e6d8b56886f45f401edc20c2fd6d4e671136d9cf7ff21c434479b1e84a79",
    ),
    "moto.dynamodb.models.dynamo_type.Item.__deepcopy__": (
        Item.__deepcopy__,
        "7621d16ad7ce49d93f1da0ff2a799ec0ca57b34d30249ef65bc2557c2acc5168",
    ),
    "moto.dynamodb.responses.DynamoResult.execute_result": (
        _moto_execute_result,
        "6333faa349b58671258985778d2aaf02d31e0617aae380442e4c683c36ab248d",
    ),
    "moto.dynamodbstreams.responses.DynamoDBStreamsHandler.get_records": (
        DynamoDBStreamsHandler.get_records,
        "eca5821a96bdd10d8ae32ccc432f7c7df424a484f388ab2a8ecb2e8c9a2026ce",
    ),
    "moto.dynamodbstreams.models.ShardIterator.get": (
        ShardIterator.get,
        "8932c0f7250e89963eef1e848bdd205a05c0f6ed94f526ed36ca9b7339442ace",
    ),
    "moto.dynamodb.models.table.StreamRecord.__init__": (
        StreamRecord.__init__,
        "511904c6352cfd9a0dc7eb26ebbff6ad007d734698d7097b194f7f56a85482be",
    ),
    "moto.core.serialize.TimestampSerializer._timestamp_unixtimestamp": (
        TimestampSerializer._timestamp_unixtimestamp,
        "9b00cea88c916ce0b09dc487c57c9b2a10df87fd1fdf5ca13b111c5682d90b82",
    ),
    "moto.backends.list_of_moto_modules": (
        _moto_list_of_modules,
        "4f741a10b06500e840c3aaa1b4f02706e6f2bfbababc0e8a2a7b9c9d0e8957dc",
    ),
    "moto.core.utils.method_names_from_class": (
        _moto_method_names,
        "9dbac89d082b655fee902c450e69de9dbadf9699ad06411298494984b55138c3",
    ),
    "moto.core.responses.BaseResponse.call_action": (
        moto_core_responses.BaseResponse.call_action,
        "26076963fd17fd1a40be642032b5a8d90f159c19d01b80a5f0b0c839770ee0d6",
    ),
    **moto_expressions.FINGERPRINTS,
}


def fingerprint(function: Callable[..., Any]) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()


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


def is_top_level(path: list[str]) -> bool:
    """A projection path that names one top-level attribute (no nesting, no list index)."""
    return len(path) == 1 and "[" not in path[0]


def project_top_level(item: Item, paths: list[list[str]]) -> Item:
    """A copy of `item` holding only the top-level attributes `paths` name, as stored: what
    moto's `Item.project` answers for such paths, without its round trip of the whole item through
    plain JSON once per path (most of a queue read's time when the items carry payloads)."""
    attrs = LimitedSizeDict.__new__(LimitedSizeDict)  # as Item.__deepcopy__ builds one: no size re-check
    dict.__init__(attrs)
    for (name,) in paths:
        if name in item.attrs:
            dict.__setitem__(attrs, name, copy.deepcopy(item.attrs[name]))
    projected = cast(Item, Item.__new__(Item))
    projected.hash_key, projected.range_key, projected.attrs = item.hash_key, item.range_key, attrs
    return projected


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
    those attributes only, where moto copies the whole item and then converts it to plain JSON and
    back once per name (about 1 ms per queue entry read; side by side, a list page at 1e5 pending
    took 102 ms with moto's projection and 78 ms with this one). Index queries, tables without a
    sort key and key conditions it cannot bound go to moto's own code, over the queried partition
    only. Idempotent."""
    Table.query = _query  # type: ignore[method-assign]


# DynamoDB's data-plane answers: attribute maps, counts and keys, already in their wire form.
_PLAIN_JSON_OPERATIONS = frozenset(
    {"GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem", "DeleteItem"}
)
_DYNAMODB_CONTENT_TYPE = "application/x-amz-json-1.0"


def _plain_json_result(self: DynamoResult, context: Any) -> Any:
    if context.operation_model.name in _PLAIN_JSON_OPERATIONS and isinstance(self.result, dict):
        members = context.operation_model.output_shape.members  # what moto's serializer keeps
        body = json.dumps({k: v for k, v in self.result.items() if k in members}, separators=(",", ":"))
        # Binary attributes are base64-encoded by moto's serializer: leave those answers to it.
        if '"B":' not in body and '"BS":' not in body:
            return 200, {"Content-Type": _DYNAMODB_CONTENT_TYPE}, body
    return _moto_execute_result(self, context)


def serialize_dynamodb_directly() -> None:
    """Answer DynamoDB's item operations with the result's JSON as it is, not through moto's
    generic serializer.

    moto 5 serializes every answer by walking the operation's output shape member by member,
    attribute value by attribute value: a third of the local stack's emulator CPU under load
    (bench/localload.py), most of it on Query pages of queue entries. For these operations the
    result is already DynamoDB's wire JSON (moto's DynamoResult converts its DynamoType values), so
    `json.dumps` gives the same document; an answer holding a binary attribute still goes through
    moto's serializer, which base64-encodes it. Errors never reach this (they are not
    DynamoResults). Idempotent."""
    DynamoResult.execute_result = _plain_json_result  # type: ignore[method-assign,assignment]


def _stream_timestamp(value: Any) -> Any:
    """A stream record's ApproximateCreationDateTime as moto's serializer writes it (its own
    conversion: epoch seconds to the millisecond)."""
    if not isinstance(value, datetime):
        raise TypeError(f"{type(value).__name__} in a stream record")
    return TimestampSerializer._timestamp_unixtimestamp(value)


def _plain_stream_records(self: DynamoDBStreamsHandler, action_result: Any) -> Any:
    result = action_result.result
    if self._get_action() == "GetRecords" and isinstance(result, dict):
        body = json.dumps(result, separators=(",", ":"), default=_stream_timestamp)
        if '"B":' not in body and '"BS":' not in body:
            return 200, {"Content-Type": _DYNAMODB_CONTENT_TYPE}, body
    return _moto_streams_serialized(self, action_result)


def serialize_stream_records_directly() -> None:
    """Answer DynamoDB Streams' GetRecords with the records' JSON as they are.

    moto's generic serializer walks every record's images attribute by attribute: about 14 ms per
    GetRecords call, the keeper's every poll. The records are already the stream's wire JSON
    (moto keeps the images as DynamoDB JSON) but for their creation time, a datetime written as
    epoch seconds as moto writes it. Answers holding a binary attribute still go through moto's
    serializer (base64). Idempotent."""
    DynamoDBStreamsHandler.serialized = _plain_stream_records  # type: ignore[method-assign,assignment]


def lighten_dynamodb() -> None:
    """moto's DynamoDB as the local stack serves it: sorted partitions for Query, item operations
    and stream records answered in plain JSON (all above), expressions parsed once
    (local/moto_expressions.py). Idempotent."""
    query_sorted_partitions()
    moto_expressions.evaluate_expressions_once()
    serialize_dynamodb_directly()
    serialize_stream_records_directly()


def route_without_listing_moto() -> None:
    """Resolve a request's service and action without listing moto's package or a handler's
    methods each time.

    moto's dispatcher (`get_backend_for_host`) calls `backends.list_of_moto_modules()` for every
    request: an `os.listdir` of moto's package and an `isdir` per entry (about 150 system calls),
    inside the server's request lock. Under the local stack's load that was more than half of a
    DynamoDB Query's time in the lock (3.4 ms -> 1.4 ms per Query with the list kept). The package
    does not change while the server runs. Then `BaseResponse.call_action` lists the handler
    class's functions (`inspect.getmembers`) to check the action is one: about 0.4 ms of every
    request; a handler class gains no action while the emulator runs. Idempotent."""
    if backends.list_of_moto_modules is _moto_list_of_modules:
        backends.list_of_moto_modules = functools.cache(lambda: tuple(_moto_list_of_modules()))
    if moto_core_responses.method_names_from_class is _moto_method_names:
        moto_core_responses.method_names_from_class = functools.cache(  # type: ignore[assignment]
            lambda handler: frozenset(_moto_method_names(handler))
        )
