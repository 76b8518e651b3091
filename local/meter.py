"""Counts DynamoDB operations, items read and capacity units, by hooking the botocore client.

Units are computed with DynamoDB's sizing rules from the items actually read and written (a read
unit per 4 KB per strongly consistent read, half for eventually consistent; a write unit per
1 KB written), because emulators do not size them. Used by tests and `make bench`, which attach it
to the store they measure: a production client never carries it (developer tooling, not in the
Lambda asset).
"""

from __future__ import annotations

import math
import threading
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from nexttick.constants import PARTITION_KEY, SORT_KEY

if TYPE_CHECKING:
    from nexttick.store.repository import TaskStore

_WRITES = ("PutItem", "UpdateItem", "DeleteItem")


def attribute_size(value: dict[str, Any]) -> int:
    """Bytes DynamoDB counts for one typed attribute value (wire format, e.g. {"S": "x"})."""
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        digits = inner.lstrip("-").replace(".", "").lstrip("0")
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(inner) if isinstance(inner, bytes) else len(inner.encode())
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + attribute_size(v) for k, v in inner.items())
    if kind == "L":
        return 3 + sum(1 + attribute_size(v) for v in inner)
    return sum(len(str(v).encode()) for v in inner)  # sets


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def _key_of(item: dict[str, Any]) -> tuple[str, str] | None:
    pk, sk = item.get(PARTITION_KEY, {}).get("S"), item.get(SORT_KEY, {}).get("S")
    return (pk, sk) if pk is not None and sk is not None else None


class DynamoMeter:
    """Thread-safe tally of calls, items read and capacity units per operation of `store`'s client
    (its models share one), from construction on."""

    def __init__(self, store: TaskStore) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self._sizes: dict[tuple[str, str] | None, int] = {}  # item key -> its size when last seen
        self.calls: Counter[str] = Counter()
        self.items_read: Counter[str] = Counter()
        self.read_units: defaultdict[str, float] = defaultdict(float)
        self.write_units: defaultdict[str, float] = defaultdict(float)
        client = store.client
        client.meta.events.register("before-parameter-build.dynamodb", self._before)
        client.meta.events.register("after-call.dynamodb", self._after_call)

    def _seen(self, item: dict[str, Any], *, projected: bool = False) -> int:
        """The item's size, remembered by key for the writes that follow it. `projected`: only some
        of its attributes were returned (a ProjectionExpression), and DynamoDB bills the whole item:
        its size when last seen whole, if larger."""
        size = item_size(item)
        key = _key_of(item)
        if key is not None:
            with self._lock:
                if projected:
                    size = max(size, self._sizes.get(key, 0))
                else:
                    self._sizes[key] = size
        return size

    def reset(self) -> None:
        with self._lock:
            for counter in (self.calls, self.items_read, self.read_units, self.write_units):
                counter.clear()

    @property
    def total_items_read(self) -> int:
        with self._lock:
            return sum(self.items_read.values())

    @property
    def total_read_units(self) -> float:
        with self._lock:
            return sum(self.read_units.values())

    @property
    def total_write_units(self) -> float:
        with self._lock:
            return sum(self.write_units.values())

    def _before(self, *, params: dict[str, Any], **_: Any) -> None:
        self._local.request = params

    def _after_call(self, *, model: Any, parsed: dict[str, Any], **_: Any) -> None:
        name = model.name
        request: dict[str, Any] = getattr(self._local, "request", {}) or {}
        consistent = request.get("ConsistentRead")
        if name == "BatchGetItem":  # consistency is asked for per table there
            consistent = any(
                table.get("ConsistentRead") for table in request.get("RequestItems", {}).values()
            )
        factor = 1.0 if consistent else 0.5
        read = 0
        rru = wru = 0.0
        projected = "ProjectionExpression" in request
        if name in ("Query", "Scan"):
            read = int(parsed.get("ScannedCount", parsed.get("Count", 0)))
            size = sum(self._seen(i, projected=projected) for i in parsed.get("Items", []))
            rru = max(1, math.ceil(size / 4096)) * factor
        elif name == "GetItem":
            read = 1 if parsed.get("Item") else 0
            rru = max(1, math.ceil(self._seen(parsed.get("Item", {}), projected=projected) / 4096)) * factor
        elif name == "BatchGetItem":
            items = [i for items in parsed.get("Responses", {}).values() for i in items]
            read = len(items)
            rru = sum(max(1, math.ceil(self._seen(i) / 4096)) for i in items) * factor
        elif name in _WRITES:
            # Billed by the larger of the item before and after: an update or a delete without
            # returned attributes is charged the size the item had when last seen.
            written = request.get("Item") or parsed.get("Attributes") or {}
            before = self._sizes.get(_key_of(request.get("Key") or written), 0)
            after = self._seen(written) if written else item_size(request.get("Key") or {})
            wru = max(1, math.ceil(max(before, after) / 1024))
        elif name == "BatchWriteItem":
            for requests in request.get("RequestItems", {}).values():
                for req in requests:
                    if "PutRequest" in req:
                        size = self._seen(req["PutRequest"]["Item"])
                    else:
                        size = item_size(req.get("DeleteRequest", {}).get("Key", {}))
                    wru += max(1, math.ceil(size / 1024))
        with self._lock:
            self.calls[name] += 1
            self.items_read[name] += read
            self.read_units[name] += rru
            self.write_units[name] += wru
