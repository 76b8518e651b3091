"""Who spent what in a simulated window of load (bench/timeline.py): each AWS request, its DynamoDB
units and the CPU the in-process emulator spent answering it, charged to the function whose code
made it; and what each function printed (its log lines and its metrics, EMF), by function.

Why: one process plays the API, the keeper and the worker, while AWS bills each function on its
own. A thread says which function it runs for (`acting_for`); a thread that says nothing runs the
worker's code (the worker's pool threads are the worker's own).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import threading
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from local.meter import DynamoMeter
from nexttick.observability import logger
from nexttick.store import TaskStore

WORKER, KEEPER, API = "worker", "keeper", "api"
POLLER = "poller"  # Lambda's stream poller: what it reads is not billed
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_acting = threading.local()


def acting() -> str:
    return getattr(_acting, "function", WORKER)


@contextlib.contextmanager
def acting_for(function: str) -> Iterator[None]:
    previous = acting()
    _acting.function = function
    try:
        yield
    finally:
        _acting.function = previous


@dataclass
class Account:
    """One function's AWS requests by operation, its DynamoDB units, and the CPU this process spent
    for it that Lambda would not bill it for: the emulator answering it, the bench counting."""

    requests: Counter[str] = field(default_factory=Counter)
    rru: float = 0.0
    wru: float = 0.0
    emulator_cpu_s: float = 0.0
    bench_cpu_s: float = 0.0

    @property
    def not_its_cpu_s(self) -> float:
        return self.emulator_cpu_s + self.bench_cpu_s


class Accounts(DynamoMeter):
    """The DynamoDB meter of the store's client, with its units charged to the acting function; the
    other clients' requests counted by operation; the CPU spent inside each client's `before-send`
    (where in-process moto answers) charged as the emulator's. `on_write` hears of every table write
    (the stream has something for the keeper)."""

    def __init__(self, store: TaskStore, others: Iterable[Any], on_write: Callable[[], None]) -> None:
        self.by_function: defaultdict[str, Account] = defaultdict(Account)
        self.on_write = on_write
        self._charging = threading.Lock()
        self._emulating = threading.local()
        super().__init__(store)
        table_client = store.client
        for client in (table_client, *others):
            client.meta.events.register_first("before-send", self._emulator_starts)
            client.meta.events.register_last("before-send", self._emulator_ends)
        for client in others:
            client.meta.events.register("after-call", self._counted)

    def restart(self) -> None:
        """Forget what was charged so far (the measured part of a window starts)."""
        with self._charging:
            self.by_function.clear()

    def charge_bench(self, cpu_s: float) -> None:
        with self._charging:
            self.by_function[acting()].bench_cpu_s += cpu_s

    def _after_call(self, *, model: Any, parsed: dict[str, Any], **rest: Any) -> None:
        began = time.thread_time()
        name = model.name
        with self._charging:
            rru, wru = self.read_units[name], self.write_units[name]
            super()._after_call(model=model, parsed=parsed, **rest)
            account = self.by_function[acting()]
            account.requests[name] += 1
            account.rru += self.read_units[name] - rru
            account.wru += self.write_units[name] - wru
        if name in _WRITES:
            self.on_write()
        self.charge_bench(time.thread_time() - began)

    def _counted(self, *, model: Any, **_: Any) -> None:
        with self._charging:
            self.by_function[acting()].requests[model.name] += 1

    def _emulator_starts(self, **_: Any) -> None:
        self._emulating.began = time.thread_time()

    def _emulator_ends(self, **_: Any) -> None:
        spent = time.thread_time() - self._emulating.began
        with self._charging:
            self.by_function[acting()].emulator_cpu_s += spent


class Printed(io.TextIOBase):
    """The functions' stdout, where Lambda's log capture takes their log lines and their EMF
    metrics: bytes by function, and each custom metric (namespace, name and dimension values) with
    the (period, hour) marks it was published in, from `mark()`."""

    def __init__(self, accounts: Accounts, mark: Callable[[], tuple[int, int]]) -> None:
        super().__init__()
        self.accounts = accounts
        self.mark = mark
        self.bytes: Counter[str] = Counter()
        self.published: defaultdict[str, set[tuple[int, int]]] = defaultdict(set)
        self._lock = threading.Lock()
        self._partial = threading.local()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        began = time.thread_time()
        *lines, rest = (getattr(self._partial, "text", "") + text).split("\n")
        self._partial.text = rest
        for line in lines:
            self._line(line)
        self.accounts.charge_bench(time.thread_time() - began)
        return len(text)

    def restart(self) -> None:
        with self._lock:
            self.bytes.clear()
            self.published.clear()

    def _line(self, line: str) -> None:
        metrics = _emf_metrics(line)
        with self._lock:
            self.bytes[acting()] += len(line.encode()) + 1
            for metric in metrics:
                self.published[metric].add(self.mark())


def _emf_metrics(line: str) -> list[str]:
    """The custom metrics an EMF line publishes: `namespace/name {dimension=value, ...}` each."""
    if not line.startswith("{") or '"_aws"' not in line:
        return []
    document = json.loads(line)
    found = []
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for dimensions in directive["Dimensions"]:
            labels = ", ".join(f"{name}={document.get(name)}" for name in dimensions)
            found += [f"{directive['Namespace']}/{m['Name']} {{{labels}}}" for m in directive["Metrics"]]
    return found


@contextlib.contextmanager
def capturing(printed: Printed, level: str) -> Iterator[None]:
    """The functions print into `printed` as deployed: log lines from `level` up, metrics on."""
    handler: Any = logger.registered_handler
    stream, was_level = handler.setStream(printed), logger.log_level
    was_disabled = os.environ.get("POWERTOOLS_METRICS_DISABLED")
    logger.setLevel(level)
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "false"
    try:
        with contextlib.redirect_stdout(printed), warnings.catch_warnings():
            # Powertools warns (on stderr) when a handler flushes no metrics: another function's
            # handler in this process may have printed them with its own.
            warnings.filterwarnings("ignore", message="No application metrics to publish")
            yield
    finally:
        handler.setStream(stream)
        logger.setLevel(was_level)
        if was_disabled is None:
            os.environ.pop("POWERTOOLS_METRICS_DISABLED", None)
        else:
            os.environ["POWERTOOLS_METRICS_DISABLED"] = was_disabled
