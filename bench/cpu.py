"""Worker CPU per fire, and where it goes: inside DynamoDB requests (by operation) or outside them.

Why: Lambda gives the deployed worker a fraction of a vCPU, so its CPU per fire bounds the fires
per second of one invocation (bench/fanout.py's projection) and is part of its bill. The fan-out
section measures the total; this one splits it, to show what a lighter client or fewer requests
per fire would save.

How: the stand-in (bench/standin.py) without latency in a process of its own, 2,000 one-shot
`log` tasks due now (bulk-loaded), and the real worker handler run once in this process, as Lambda
runs it (its NEXTTICK_* environment as bench/fanout.py sets it; metrics on, as deployed, printed
to /dev/null). Process CPU (`time.process_time`, every thread) over the invocation, per fire.
A request's CPU is its thread's CPU (`time.thread_time`) from botocore's first event of the call
(`provide-client-params`: before validation and serialisation) to its `after-call` (the answer
parsed), on the store's client; the remainder is the rest of the invocation's CPU (PynamoDB's
models, the record mapping, the loop, threads, logging and metrics). Then the client's
floor, single-threaded: one GetItem of the same item through a stock botocore client, through the
store's client (its light path for data-plane requests) and as the store's `get_task`.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

from bench.harness import ACTIONS, bulk_load, served_runtime
from bench.standin import standin_process
from lambdas.worker import handler as worker_handler
from local.lambdas import LambdaContext
from nexttick.actions import build_registry
from nexttick.aws import make_client
from nexttick.config import DEFAULT_POOL_SIZE
from nexttick.constants import PARTITION_KEY, SORT_KEY
from nexttick.runtime import Runtime

SHARDS = 16
TIMEOUT_SECONDS = 900.0
FLOOR_REPEATS = 300
EVENT = {"source": "aws.events", "detail-type": "Scheduled Event"}


class RequestClock:
    """Thread CPU and count of each DynamoDB request of one botocore client, by operation."""

    def __init__(self, client: Any) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self.cpu: defaultdict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        client.meta.events.register("provide-client-params.dynamodb.*", self._start)
        client.meta.events.register("after-call.dynamodb.*", self._stop)

    def _start(self, **_: Any) -> None:
        self._local.started = time.thread_time()

    def _stop(self, *, model: Any, **_: Any) -> None:
        spent = time.thread_time() - self._local.started
        with self._lock:
            self.cpu[model.name] += spent
            self.calls[model.name] += 1


def worker_cpu(tasks: int, pool_size: int) -> dict[str, Any]:
    """One worker invocation draining `tasks` tasks due now, with a pool of `pool_size`."""
    with standin_process(latency=False) as url:
        runtime = served_runtime(url, pool_size=pool_size, queue_shards=SHARDS, max_invocations=1)
        os.environ.update(
            NEXTTICK_ENDPOINT_URL=url,
            NEXTTICK_POOL_SIZE=str(pool_size),
            NEXTTICK_QUEUE_SHARDS=str(SHARDS),
            NEXTTICK_MAX_INVOCATIONS="1",
            NEXTTICK_ACTIONS_CONFIG=json.dumps(ACTIONS),
        )
        worker_handler.use(runtime, build_registry(runtime.settings.action_definitions(), runtime.settings))
        ids = bulk_load(runtime.store, tasks, datetime.now(UTC) - timedelta(seconds=1), timedelta(0), None)
        requests = RequestClock(runtime.store.client)
        with (
            open(os.devnull, "w") as devnull,
            contextlib.redirect_stdout(devnull),
            mock.patch.dict(os.environ, POWERTOOLS_METRICS_DISABLED="false"),  # as deployed
        ):
            began = time.process_time()
            result = worker_handler.handler(
                EVENT, LambdaContext(runtime.settings.worker_function, TIMEOUT_SECONDS)
            )
            cpu_s = time.process_time() - began
        fired = result.get("succeeded", 0)
        assert fired == tasks, result
        cpu, calls = dict(requests.cpu), Counter(requests.calls)  # before the floor's own requests
        floor = client_floor(runtime, ids[0])
    in_requests = sum(cpu.values())
    return {
        "tasks": tasks,
        "pool_size": pool_size,
        "worker_cpu_ms_per_fire": round(1000 * cpu_s / fired, 2),
        "request_cpu_ms_per_fire": round(1000 * in_requests / fired, 2),
        "remainder_cpu_ms_per_fire": round(1000 * (cpu_s - in_requests) / fired, 2),
        "requests_per_fire": {op: round(n / fired, 3) for op, n in sorted(calls.items())},
        "ms_per_request": {op: round(1000 * cpu[op] / n, 3) for op, n in sorted(calls.items())},
        "request_cpu_ms_per_fire_by_op": {op: round(1000 * cpu[op] / fired, 2) for op in sorted(calls)},
        "floor": floor,
    }


def client_floor(runtime: Runtime, task_id: str) -> dict[str, float]:
    """CPU ms (median) of one GetItem of a task, single-threaded, same item: a stock botocore client
    (what any client pays), the store's client (the light path, nexttick/store/client.py) and the
    store's `get_task` (PynamoDB's model and the record mapping on top)."""
    light: Any = runtime.store.client  # typed without its API
    stock: Any = make_client("dynamodb", runtime.settings)
    pk, sk = runtime.store.task_key(task_id)
    key = {PARTITION_KEY: {"S": pk}, SORT_KEY: {"S": sk}}
    table = runtime.settings.table_name

    def through(client: Any) -> Callable[[], None]:
        return lambda: client.get_item(TableName=table, Key=key, ConsistentRead=True)

    def store() -> None:
        runtime.store.get_task(task_id)

    calls = {
        "stock_botocore_get_item_ms": through(stock),
        "light_get_item_ms": through(light),
        "store_get_task_ms": store,
    }
    spent: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():
        call()  # warm: the first call loads models and opens the connection
    for _ in range(FLOOR_REPEATS):  # alternated, so drift in the machine's speed hits all alike
        for name, call in calls.items():
            began = time.thread_time()
            call()
            spent[name].append(time.thread_time() - began)
    return {name: round(1000 * statistics.median(times), 3) for name, times in spent.items()}


def run(quick: bool) -> dict[str, Any]:
    """The deployed pool (32 threads: contention included) and a pool of one (requests alone)."""
    tasks = 200 if quick else 2000
    rows = [worker_cpu(tasks, size) for size in (1, DEFAULT_POOL_SIZE)]
    return {
        "backend": "DynamoDB/EventBridge stand-in without latency (own process); the worker handler "
        "in this process",
        "tasks": tasks,
        "worker_cpu_ms_per_fire": rows[-1]["worker_cpu_ms_per_fire"],
        "rows": rows,
    }
