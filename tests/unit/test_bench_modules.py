"""`make bench` can start: every benchmark module imports (they reuse the test harnesses, so a
change there must not break them). In a subprocess: importing `bench` configures Powertools
through the environment (metrics off), which must not leak into the tests."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_bench_module_imports() -> None:
    names = {module.name for module in pkgutil.iter_modules([str(REPO / "bench")])}
    assert {"run", "backlog", "burst", "lateness", "lifecycle", "report"} <= names
    script = "; ".join(f"import bench.{name}" for name in sorted(names))
    command = [sys.executable, "-c", script]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
