"""`nexttick local` in the foreground: start the stack, print where it is, run until Ctrl-C or
SIGTERM (or until the emulator process ends), then stop cleanly; the exit code says which."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from local import endpoints, logs, preflight
from local.botocore_data import share_botocore_data
from local.options import LocalOptions
from local.stack import LocalStack

# How often the idle main thread checks that the emulator process still runs. A stop request wakes
# it at once (the signal's wake-up byte), so an idle stack's main thread wakes this seldom.
EMULATOR_CHECK_SECONDS = 2.0


def run(options: LocalOptions) -> int:
    """Start the stack, print where it is, run until Ctrl-C / SIGTERM, then stop cleanly."""
    share_botocore_data()
    logs.configure(options.log_format)
    # moto names every template resource type it does not emulate (alarms, ...); the stack is fine.
    # Connection-pool warnings come from many threads sharing one client, harmless here.
    for noisy in ("botocore", "pynamodb"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    for noisy in ("moto", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)
    warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)
    stack = LocalStack(options)
    # The signal handler touches no lock (an Event or a buffered print there can deadlock with the
    # main thread holding the same lock): it sets a flag, and writes its status line straight to
    # the file descriptor. The idle wait is a select on the signal module's wake-up pipe, which the
    # interpreter writes a byte to whenever a signal arrives, so a signal that lands just before the
    # wait begins (or on another thread) still ends it at once.
    signals = {"stop": False}

    def on_signal(*_: Any) -> None:
        if signals["stop"]:
            os.write(sys.stdout.fileno(), f"still stopping: {stack.stopping_status()}\n".encode())
            return
        signals["stop"] = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)

    def progress(message: str) -> None:
        print(f"nexttick local: {message}", flush=True)

    emulator_lost = False
    try:
        try:
            stack.start(progress)
        except preflight.StartupError as exc:
            print(f"error: {exc.message}", file=sys.stderr, flush=True)
            return exc.code
        print(banner(stack), flush=True)
        with _signal_wakeups() as woken:
            while not signals["stop"] and stack.emulator_running():
                select.select([woken], [], [], EMULATOR_CHECK_SECONDS)
                with contextlib.suppress(BlockingIOError):
                    os.read(woken, 512)
        if not signals["stop"]:
            print("error: the emulator process ended; stopping", file=sys.stderr, flush=True)
            emulator_lost = True
        print("stopping (Ctrl-C again to see what it waits for) ...", flush=True)
    finally:
        saved = stack.stop()
    if saved:
        print(f"stopped; state saved to {stack.state_file}", flush=True)
    return 1 if emulator_lost else 0


@contextlib.contextmanager
def _signal_wakeups() -> Iterator[int]:
    """A file descriptor that becomes readable when a signal arrives (`signal.set_wakeup_fd`)."""
    readable, writable = os.pipe()
    for fd in (readable, writable):
        os.set_blocking(fd, False)
    previous = signal.set_wakeup_fd(writable, warn_on_full_buffer=False)
    try:
        yield readable
    finally:
        signal.set_wakeup_fd(previous)
        os.close(readable)
        os.close(writable)


def banner(stack: LocalStack) -> str:
    """Where everything is, and how to try it (printed once the stack is up)."""
    assert stack.moto and stack.endpoint and stack.names
    api = stack.api_url
    restored = (
        f"restored {stack.restored_tasks} task{'s' * (stack.restored_tasks != 1)} from {stack.state_file}"
        if stack.restored_tasks
        else "started empty"
    )
    return f"""
nexttick local stack is running ({restored})
  API          {api}   (GET /health, GET /openapi.json, Swagger UI {api}/docs)
  AWS (moto)   {stack.moto.url}   table {stack.names.table}, rule {stack.names.rule} (own process)
  worker       {stack.names.worker_function} in-process, Lambda Invoke at {stack.endpoint.url}
  actions      {", ".join(stack.actions)}   (add your own with NEXTTICK_ACTIONS)
  resources    {stack.names.source}
  state        {stack.state_file} (every change journaled beside it; survives kill -9)
  endpoints    {stack.options.state_dir / endpoints.LOCAL_FILE} (the nexttick CLI uses them)

Try it:
  curl -s -X POST {api}/tasks -H 'content-type: application/json' \\
       -d '{{"action": "log", "delay_seconds": 10, "payload": {{"hello": "world"}}}}'
  nexttick add --action log --in 30s --payload '{{"hello": "again"}}'
  nexttick ls
Stop with Ctrl-C.
"""
