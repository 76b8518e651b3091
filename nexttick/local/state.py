"""The local stack's state across restarts: every table item and the rule, in `state.json`.

Saved on shutdown (a Scan is fine here: this is the emulator's snapshot, not a runtime path) and
written atomically (temp file + rename). Restored on start with BatchWriteItem + PutRule before the
emulated EventBridge starts. Items whose TTL has passed are dropped, as DynamoDB would have done.
The rule record's waiter claim is dropped too: no invocation of the stopped process is still
sleeping for the head, and a claim left in place would keep the next start's worker from waiting.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from nexttick.constants import (
    PARTITION_KEY,
    RULE_STATE_PK,
    RULE_STATE_SK,
    SORT_KEY,
    TASK_PK_PREFIX,
    TASK_SK,
    TTL_ATTRIBUTE,
)

STATE_FORMAT = 1
STATE_FILE = "state.json"
# The rule record's attributes naming the invocation sleeping for the head (nexttick.store.models).
WAITER_ATTRIBUTES = ("waiter_at", "waiter_until", "waiter_owner")


def scan_items(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items.extend(page["Items"])
    return sorted(items, key=lambda i: (i[PARTITION_KEY]["S"], i[SORT_KEY]["S"]))


def snapshot(dynamodb: Any, events: Any, table: str, rule: str) -> dict[str, Any]:
    """Table items and the rule (take it while nothing else writes: the stack freezes the server)."""
    items = scan_items(dynamodb, table)
    described = events.describe_rule(Name=rule)
    return {
        "format": STATE_FORMAT,
        "saved_at": time.time(),
        "items": items,
        "rule": {
            "expression": described.get("ScheduleExpression"),
            "description": described.get("Description", ""),
            "state": described.get("State", "ENABLED"),
        },
    }


def save(path: Path, state: dict[str, Any]) -> None:
    """Write `state` to `path` atomically: a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".state-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(state, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    if state.get("format") != STATE_FORMAT:
        raise SystemExit(f"error: {path} has an unknown format; move it away or start with --fresh")
    return state


def restore(dynamodb: Any, events: Any, table: str, rule: str, state: dict[str, Any], now: float) -> int:
    """Write the saved items (minus TTL-expired ones) and the saved rule; returns the tasks restored."""
    items = [_without_waiter(i) for i in state["items"] if not _expired(i, now)]
    for start in range(0, len(items), 25):
        pending: dict[str, Any] = {table: [{"PutRequest": {"Item": i}} for i in items[start : start + 25]]}
        while pending:
            pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
    saved = state["rule"]
    if saved.get("expression"):
        events.put_rule(
            Name=rule,
            ScheduleExpression=saved["expression"],
            State=saved.get("state") or "ENABLED",
            Description=saved.get("description") or "",
        )
    return sum(
        1 for i in items if i[PARTITION_KEY]["S"].startswith(TASK_PK_PREFIX) and i[SORT_KEY]["S"] == TASK_SK
    )


def _without_waiter(item: dict[str, Any]) -> dict[str, Any]:
    if (item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]) != (RULE_STATE_PK, RULE_STATE_SK):
        return item
    return {k: v for k, v in item.items() if k not in WAITER_ATTRIBUTES}


def _expired(item: dict[str, Any], now: float) -> bool:
    ttl = item.get(TTL_ATTRIBUTE, {}).get("N")
    return ttl is not None and float(ttl) < now
