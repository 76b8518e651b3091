"""Actions used by the benchmarks (shipped as `python` actions: `bench.actions:io_50ms`)."""

from __future__ import annotations

import os
import time
from typing import Any


def io_50ms(envelope: dict[str, Any]) -> None:
    """An action that spends 50 ms waiting on I/O."""
    time.sleep(0.05)


def io_50ms_logged(envelope: dict[str, Any]) -> None:
    """`io_50ms`, then one line `<task id> <epoch seconds>` appended to this process's file in
    NEXTTICK_BENCH_FIRES (a directory): what ran, when, and how often, across processes."""
    time.sleep(0.05)
    path = os.path.join(os.environ["NEXTTICK_BENCH_FIRES"], f"{os.getpid()}.log")
    with open(path, "a") as log:
        log.write(f"{envelope['task_id']} {time.time():.6f}\n")
