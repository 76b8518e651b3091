"""Stopping the worker invocations of one process without losing what they delivered.

A host that stops the process (the local stack on Ctrl-C or SIGTERM) calls `stop_claiming()`:
every worker invocation in the process claims nothing more, finishes the occurrences it holds and
returns. `wait_for_completions()` then waits until no occurrence is between the end of its action
and its recorded completion: a delivery that happened is recorded before the host freezes the
store. An action still running when the host gives up is abandoned as at a Lambda timeout (it runs
again after its lease, same idempotency key). `resume()` undoes `stop_claiming()` for whatever runs
in the process next.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Enough for the few writes of a completion, even on a loaded machine.
COMPLETION_GRACE_SECONDS = 15.0

_state = threading.Condition()
_stopping = False
_completing = 0


def stop_claiming() -> None:
    global _stopping
    with _state:
        _stopping = True


def resume() -> None:
    global _stopping
    with _state:
        _stopping = False


def stopping() -> bool:
    with _state:
        return _stopping


@contextmanager
def completing() -> Iterator[None]:
    """Marks an occurrence whose action has finished until its completion is written (or fails)."""
    global _completing
    with _state:
        _completing += 1
    try:
        yield
    finally:
        with _state:
            _completing -= 1
            _state.notify_all()


def wait_for_completions(timeout: float) -> bool:
    """Wait until no completion is being written; False if one still is after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    with _state:
        while _completing:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _state.wait(left)
        return True
