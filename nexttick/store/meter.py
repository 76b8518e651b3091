"""Counts DynamoDB operations and items read, by hooking the botocore client (tests and bench)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any


class DynamoMeter:
    """Thread-safe tally of calls per operation and of items each read returned or examined."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.items_read: Counter[str] = Counter()

    def attach(self, client: Any) -> None:
        client.meta.events.register("after-call.dynamodb", self._after_call)

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.items_read.clear()

    @property
    def total_items_read(self) -> int:
        with self._lock:
            return sum(self.items_read.values())

    def _after_call(self, *, model: Any, parsed: dict[str, Any], **_: Any) -> None:
        name = model.name
        if name in ("Query", "Scan"):
            read = int(parsed.get("ScannedCount", parsed.get("Count", 0)))
        elif name == "GetItem":
            read = 1 if parsed.get("Item") else 0
        elif name == "BatchGetItem":
            read = sum(len(items) for items in parsed.get("Responses", {}).values())
        else:
            read = 0
        with self._lock:
            self.calls[name] += 1
            self.items_read[name] += read
