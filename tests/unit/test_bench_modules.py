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


def test_the_bench_runner_does_not_start_the_cdk() -> None:
    # The fan-out's sandboxes are spawned interpreters, and each imports the runner again (as
    # `__mp_main__`): a CDK import there starts a jsii node process per sandbox.
    script = "import sys, bench.run; assert 'aws_cdk' not in sys.modules and 'jsii' not in sys.modules"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
