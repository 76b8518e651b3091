"""`make bench` can start: every benchmark module imports (they reuse the test harnesses, so a
change there must not break them)."""

from __future__ import annotations

import importlib
import pkgutil

import bench


def test_every_bench_module_imports() -> None:
    names = {module.name for module in pkgutil.iter_modules(bench.__path__)}
    assert {"run", "backlog", "burst", "lateness", "lifecycle", "report"} <= names
    for name in sorted(names):
        importlib.import_module(f"bench.{name}")
