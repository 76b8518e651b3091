"""One page of `Editor.list(limit=20)` (what `GET /tasks` runs) as the backlog grows: wall time and
items read, against moto in-process as the local stack serves it, with moto's own floor beside it.

Per backlog (pending one-shot tasks loaded straight into moto's table, due 1 to 31 days ahead):
the median wall time of a page, the items it read by the DynamoDB meter (queue entries and the
page's tasks), its Query calls and read units, the load time, and `moto_query_s`: the median
wall time of one raw boto3 Query with Limit=2 against one shard, moto's own floor. The emulator is
lightened as the local stack's (local/moto_query.py): partitions keep their keys sorted and a Query
stops at its Limit, so neither figure should grow with the backlog.
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from typing import Any

from bench.harness import direct_load, emulated_aws
from editor import Editor
from local.meter import DynamoMeter
from nexttick.store import keys

LIMIT = 20
SIZES = (0, 1_000, 100_000)
QUICK_SIZES = (0, 100, 1_000)
REPEATS = 7  # timed pages per backlog


def _raw_query_s(runtime: Any) -> float:
    """Seconds of one boto3 Query (Limit=2, consistent) against shard 0: moto's own floor."""
    client = runtime.store.client
    started = time.perf_counter()
    client.query(
        TableName=runtime.settings.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": keys.queue_pk(0)}},
        Limit=2,
        ConsistentRead=True,
    )
    return time.perf_counter() - started


def _page_s(editor: Editor) -> float:
    started = time.perf_counter()
    editor.list(limit=LIMIT)
    return time.perf_counter() - started


def measure(count: int) -> dict[str, Any]:
    with emulated_aws() as runtime:
        store = runtime.store
        started = time.perf_counter()
        if count:
            direct_load(runtime, count, datetime.now(UTC) + timedelta(days=1), timedelta(days=30), "listing")
        load_s = time.perf_counter() - started
        editor = Editor(runtime=runtime)
        meter = DynamoMeter(store)
        page = editor.list(limit=LIMIT)  # the metered page (and a warm-up: clients, connections)
        assert len(page.items) == min(LIMIT, count), (len(page.items), count)
        assert "Scan" not in meter.calls and meter.calls["GetItem"] == 0, dict(meter.calls)
        entries, tasks = meter.items_read["Query"], meter.items_read["BatchGetItem"]
        queries, read_units = meter.calls["Query"], meter.total_read_units
        # Pages and raw Queries alternate, so both see the same load on a shared machine.
        pages, raw = [], []
        for _ in range(REPEATS):
            pages.append(_page_s(editor))
            raw.append(_raw_query_s(runtime))
        return {
            "shards": store.shards,
            "load_s": round(load_s, 3),
            "list_page_s": round(statistics.median(pages), 4),
            "entries_read": entries,
            "tasks_read": tasks,
            "queries": queries,
            "read_units": read_units,
            "moto_query_s": round(statistics.median(raw), 4),
        }


def run(quick: bool) -> dict[str, Any]:
    sizes = QUICK_SIZES if quick else SIZES
    figures = {str(n): measure(n) for n in sizes}

    def column(name: str) -> dict[str, Any]:
        return {n: f[name] for n, f in figures.items()}

    shards = next(iter(figures.values()))["shards"]
    return {
        "backend": f"moto {version('moto')} in-process (mock_aws), lightened as the local stack's, "
        f"{shards} queue shards",
        "limit": LIMIT,
        "list_page_s": column("list_page_s"),
        "items_read_per_page": {n: f["entries_read"] + f["tasks_read"] for n, f in figures.items()},
        "entries_read_per_page": column("entries_read"),
        "tasks_read_per_page": column("tasks_read"),
        # The bound: the page's entries, one boundary entry per shard, the page's tasks.
        "items_read_bound": 2 * LIMIT + shards,
        "queries_per_page": column("queries"),
        "read_units_per_page": column("read_units"),
        "load_s": column("load_s"),
        "moto_query_s": column("moto_query_s"),
        # What moto's Query alone accounts for: queries x one raw Query's time.
        "moto_share": {
            n: round(min(1.0, f["queries"] * f["moto_query_s"] / f["list_page_s"]), 2)
            for n, f in figures.items()
            if f["list_page_s"] > 0
        },
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run("--quick" in sys.argv), indent=2))
