"""A burst of tasks due at one instant, action with 50 ms of I/O: the worker's bounded pool
against sequential execution (pool of one), and the worker's memory against burst size."""

from __future__ import annotations

import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.harness import bulk_load, emulated_aws
from nexttick.actions import build_registry
from nexttick.worker import Worker


def burst(count: int, pool_size: int) -> dict[str, Any]:
    with emulated_aws(pool_size=pool_size, page_size=200) as runtime:
        now = datetime.now(UTC)
        bulk_load(runtime.store, count, now - timedelta(seconds=1), timedelta(0), "burst", action="io50")
        registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
        tracemalloc.start()
        began = time.perf_counter()
        report = Worker(runtime, registry, owner="burst", remaining_ms=900_000).run()
        elapsed = time.perf_counter() - began
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert report.results["succeeded"] == count, report
    return {
        "tasks": count,
        "pool_size": pool_size,
        "seconds": round(elapsed, 2),
        "tasks_per_second": round(count / elapsed, 1),
        "peak_traced_mib": round(peak / 2**20, 1),
    }


def run(quick: bool) -> dict[str, Any]:
    sequential = burst(200 if quick else 1000, 1)
    pooled = [burst(n, 32) for n in ((200, 1000) if quick else (1000, 5000))]
    speedup = pooled[-1]["tasks_per_second"] / sequential["tasks_per_second"]
    return {
        "sequential": sequential,
        "pooled": pooled,
        "speedup": round(speedup, 1),
        "memory_growth": round(pooled[-1]["peak_traced_mib"] / max(pooled[0]["peak_traced_mib"], 0.1), 2),
    }
