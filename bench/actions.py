"""Actions used by the benchmarks (shipped as `python` actions: `bench.actions:io_50ms`)."""

from __future__ import annotations

import time
from typing import Any


def io_50ms(envelope: dict[str, Any]) -> None:
    """An action that spends 50 ms waiting on I/O."""
    time.sleep(0.05)
