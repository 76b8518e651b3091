"""Items read per add and per worker run as the backlog grows, against the reference proof of
concept, which scans its whole table (one item per task) on every add and every run.

The backlog is loaded straight into the emulator's table (`direct_load`: the store's own task items
and queue entries), its load time reported. The proof of concept's Scan is measured up to
`POC_MAX_PENDING`: loading and scanning its table through moto takes minutes beyond, and a Scan
reads every item by definition (measured equal to the backlog at every size below it).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from bench.harness import direct_load, emulated_aws
from editor import Editor
from local.meter import DynamoMeter
from nexttick.actions import build_registry
from nexttick.worker import Worker

DUE_NOW = 10
POC_MAX_PENDING = 100_000


def poc_scan_items(count: int) -> int:
    """Build the PoC's table (hash key `id` only) with `count` tasks and do what it does on every
    add and run: Scan it all. Returns the items the Scan read."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.create_table(
        TableName="poc-tasks",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    # Loaded through moto's own put (its item checks included), not a BatchWriteItem per 25 items:
    # what is measured is the Scan.
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    for i in range(count):
        item = {"id": f"t{i}", "due": f"2031-01-01T00:{i % 60:02d}:00Z", "action": "log"}
        backend.put_item("poc-tasks", {name: {"S": value} for name, value in item.items()})
    return sum(page["ScannedCount"] for page in client.get_paginator("scan").paginate(TableName="poc-tasks"))


def measure(count: int) -> dict[str, Any]:
    with emulated_aws() as runtime:
        now = datetime.now(UTC)
        loading = time.perf_counter()
        direct_load(runtime, count, now + timedelta(days=1), timedelta(days=30), "backlog")
        load_s = time.perf_counter() - loading
        editor = Editor(runtime=runtime)
        for i in range(DUE_NOW):  # k tasks already due
            editor.schedule_at("log", now - timedelta(seconds=1), {"due_now": i})
        meter = DynamoMeter(runtime.store)
        editor.schedule_at("log", now + timedelta(days=3), {"one": "more"})
        add_items = meter.total_items_read
        meter.reset()
        registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
        report = Worker(runtime, registry, owner="bench", remaining_ms=300_000).run()
        run_items = meter.total_items_read
        assert report.results["succeeded"] == DUE_NOW, report
        assert "Scan" not in meter.calls
        poc = poc_scan_items(count) if count <= POC_MAX_PENDING else None
    return {
        "pending": count,
        "due_now": DUE_NOW,
        "load_s": round(load_s, 1),
        "items_per_add": add_items,
        "items_per_run": run_items,
        "poc_items_per_add": poc,
        "poc_items_per_run": poc,
        "reduction_add": None if poc is None else round(poc / max(add_items, 1), 1),
        "reduction_run": None if poc is None else round(poc / max(run_items, 1), 1),
    }


def run(sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    return [measure(n) for n in sizes]
