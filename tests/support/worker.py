"""Worker test helpers: a clock that travels when slept on, a Lambda context on that clock, and
python actions (`tests.support.worker:<name>`) that record every delivery."""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import time_machine

from nexttick.clock import Clock

ACTIONS: dict[str, dict[str, Any]] = {
    "log": {"type": "log"},
    "record": {"type": "python", "target": "tests.support.worker:record"},
    "fail": {"type": "python", "target": "tests.support.worker:fail"},
    "io": {"type": "python", "target": "tests.support.worker:io_50ms"},
    "gauge": {"type": "python", "target": "tests.support.worker:gauge_1s"},
}


class TravelClock:
    """Time from time-machine; `sleep` moves the traveller instead of waiting: to the sleeper's wake
    time, unless another sleeper already moved it past that (threads sleeping at once share one
    clock, so their sleeps overlap rather than add up)."""

    def __init__(self, traveller: time_machine.Traveller) -> None:
        self.traveller = traveller
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if seconds <= 0:
            return
        wake = self.now() + timedelta(seconds=seconds)
        with self._lock:
            behind = wake - self.now()
            if behind > timedelta(0):
                self.traveller.shift(behind)


@dataclass
class FakeContext:
    """The part of the Lambda context the worker and Powertools use; remaining time on `clock`."""

    clock: Clock
    remaining_seconds: float
    function_name: str = "nexttick-worker"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:nexttick-worker"
    aws_request_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __post_init__(self) -> None:
        self.deadline = self.clock.now() + timedelta(seconds=self.remaining_seconds)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - self.clock.now()).total_seconds() * 1000))


@dataclass(frozen=True)
class Call:
    envelope: dict[str, Any]
    at: datetime  # when the action ran (the travelled "now")


class Recorder:
    """Deliveries per task id; optional per-task callbacks run inside the action."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[str, list[Call]] = defaultdict(list)
        self.during: dict[str, Callable[[dict[str, Any]], None]] = {}

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
            self.during.clear()

    def add(self, envelope: dict[str, Any]) -> None:
        with self.lock:
            self.calls[envelope["task_id"]].append(Call(envelope, datetime.now(UTC)))
        callback = self.during.get(envelope["task_id"])
        if callback is not None:
            callback(envelope)

    def keys(self, task_id: str) -> list[str]:
        return [c.envelope["idempotency_key"] for c in self.calls[task_id]]

    def total(self) -> int:
        return sum(len(v) for v in self.calls.values())


RECORDER = Recorder()


def record(envelope: dict[str, Any]) -> None:
    RECORDER.add(envelope)


def fail(envelope: dict[str, Any]) -> None:
    RECORDER.add(envelope)
    raise RuntimeError("poison: this action always fails")


def io_50ms(envelope: dict[str, Any]) -> None:
    """Stands for an action doing 50 ms of I/O (a real sleep: the GIL is released)."""
    time.sleep(0.05)
    with IO_CALLS.lock:
        IO_CALLS.count += 1


class _Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0


IO_CALLS = _Counter()  # a counter, not a list: the burst test measures memory


class Gauge:
    """How many actions run at the same time (now and at most)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.max = 0
        self.done = 0


GAUGE = Gauge()


def gauge_1s(envelope: dict[str, Any]) -> None:
    with GAUGE.lock:
        GAUGE.now += 1
        GAUGE.max = max(GAUGE.max, GAUGE.now)
    time.sleep(1.0)  # long enough that the pool fills even when claims are slow (a loaded machine)
    with GAUGE.lock:
        GAUGE.now -= 1
        GAUGE.done += 1


@dataclass
class WorkerEnv:
    """A moto-backed runtime on a travelling clock, an editor on it, and the action registry."""

    runtime: Any
    editor: Any
    clock: TravelClock
    registry: Any

    def worker(self, remaining_seconds: float = 300.0, **kwargs: Any) -> Any:
        from nexttick.worker import Worker

        kwargs.setdefault("owner", uuid.uuid4().hex)
        return Worker(self.runtime, self.registry, remaining_ms=remaining_seconds * 1000, **kwargs)

    def run(self, remaining_seconds: float = 300.0, **kwargs: Any) -> Any:
        return self.worker(remaining_seconds, **kwargs).run()

    def now(self) -> datetime:
        return self.clock.now()

    def travel_to(self, when: datetime) -> None:
        self.clock.traveller.move_to(when)

    def ids_in_shard(self, shard: int, n: int) -> list[str]:
        """`n` client task ids whose entries fall in queue shard `shard`."""
        from nexttick.store.keys import shard_of

        shards = self.runtime.store.shards
        return [i for i in (f"task-{k}" for k in range(400)) if shard_of(i, shards) == shard][:n]

    def entries_of(self, task_id: str) -> list[Any]:
        """Every queue entry of one task (test inspection; reads its whole shard)."""
        from nexttick.store.keys import shard_of

        store = self.runtime.store
        return [e for e in store.shard_entries(shard_of(task_id, store.shards)) if e.task_id == task_id]


def make_env(runtime: Any, traveller: time_machine.Traveller) -> WorkerEnv:
    from editor import Editor
    from nexttick.actions import build_registry

    clock = TravelClock(traveller)
    runtime.clock = clock
    runtime.rule_sync.clock = clock
    RECORDER.reset()
    registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
    return WorkerEnv(runtime, Editor(runtime=runtime), clock, registry)


_MOTO_LOCK = threading.RLock()


def make_moto_atomic(monkeypatch: Any) -> None:
    """In-process moto checks a write's condition and applies it without a lock, so two threads can
    both pass the same condition — real DynamoDB applies each conditional write atomically. Serialise
    moto's request processing to restore that property (moto is CPU-bound: this costs nothing)."""
    from moto.core.botocore_stubber import BotocoreStubber

    original = BotocoreStubber.process_request

    def process_request(self: Any, request: Any) -> Any:
        with _MOTO_LOCK:
            return original(self, request)

    monkeypatch.setattr(BotocoreStubber, "process_request", process_request)


class MotoServer:
    """`moto_server` in its own process on a free loopback port (its memory and CPU are not ours)."""

    def __init__(self) -> None:
        import socket
        import subprocess
        import sys

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("moto_server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
