"""A burst spread over concurrent worker invocations: drain time of N tasks due at one instant with
1, 2 and 4 invocations, and a projection of fires per second on AWS.

How it runs, as Lambda would: DynamoDB, EventBridge (and the latency model) are the bench's
stand-in in a process of its own (bench/standin.py); the worker function sits behind a local Lambda
invoke endpoint (local/lambdas.py, the local stack's) whose invocations each run in one of
`invocations` warm *sandbox* processes (own interpreter, own clients, the real handler), at most
`invocations` at once — the reserved concurrency. The rule's firing starts the first invocation; it
finds the burst and starts its helpers with real asynchronous invokes (`max_invocations` =
invocations). A wait a worker would hand over goes to the stand-in's SQS, as deployed; the
message is not delivered. Every run of the action appends `<task id> <time>` to its process's
file, so what ran, how often and when is counted across processes.
"""

from __future__ import annotations

import collections
import json
import math
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import requests

from bench.harness import HANDOVER_QUEUE, bulk_load
from bench.latency import LATENCY_MS
from bench.standin import standin_process
from bench.standin_table import ACCOUNT
from local.lambdas import InvokeEndpoint, LambdaContext, LocalFunction
from local.options import EMULATOR_CREDENTIALS
from nexttick.config import NextTickSettings
from nexttick.constants import EPOCH_EXPRESSION
from nexttick.runtime import Runtime

ACTIONS = {"io50": {"type": "python", "target": "bench.actions:io_50ms_logged"}}
POOL_SIZE = 32
SHARDS = 16
TIMEOUT_SECONDS = 900.0
# Lambda gives a function CPU in proportion to its memory: one vCPU at 1,769 MB.
DEPLOYED_MEMORY_MB = 512
MB_PER_VCPU = 1769
# DynamoDB: each partition serves at most 1,000 write units and 3,000 read units per second; a
# queue shard is one partition key, so its writes (a claim and the entry's delete per fire) are
# bounded per shard.
PARTITION_WCU_PER_S = 1000
# The full run's burst (was 10,000 drained by up to 8 invocations: 17 minutes of `make bench`). At
# 2,000 one invocation still drains for ~25 s at its steady rate, which is what fires per second
# and the projection take; beyond 4 invocations this 2-core machine has no CPU to scale into.
FULL_TASKS = 2_000
QUEUE_WRITES_PER_FIRE = 2
# The headline projection: fires per second with at most this many invocations (the stack's
# `max_invocations`; its default is lower), and how many the measured CPU per fire needs for
# EventBridge Scheduler's 1,000 targets a second.
INVOCATION_BOUND = 10
SCHEDULER_FIRES_PER_S = 1000


def _sandbox(environment: dict[str, str]) -> None:
    """A Lambda sandbox: the function's environment; its logs and metrics are not the bench's."""
    os.environ.update(environment)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the sandbox's stdout for its lifetime


def _invoke(event: dict[str, Any]) -> dict[str, Any]:
    from lambdas.worker.handler import handler

    cpu = time.process_time()
    result: dict[str, Any] = handler(event, LambdaContext("nexttick-worker", TIMEOUT_SECONDS))
    return {**result, "cpu_seconds": time.process_time() - cpu}


def _warm(_: int) -> None:
    import lambdas.worker.handler  # noqa: F401 - the import a cold start pays, before the clock starts

    time.sleep(0.5)  # held, so that every sandbox of the pool starts


def drain(tasks: int, invocations: int, pool_size: int = POOL_SIZE) -> dict[str, Any]:
    """One burst of `tasks` drained by at most `invocations` concurrent invocations."""
    fires = Path(tempfile.mkdtemp(prefix="nexttick-fires-"))
    try:
        with standin_process() as url:
            settings = NextTickSettings(
                endpoint_url=url,
                actions_config=ACTIONS,
                pool_size=pool_size,
                queue_shards=SHARDS,
                max_invocations=invocations,
            )
            os.environ.update(EMULATOR_CREDENTIALS, AWS_REGION=settings.region)
            runtime = Runtime.build(settings)
            runtime.store.create_table()
            runtime.rule.client.put_rule(
                Name=settings.rule_name, ScheduleExpression=EPOCH_EXPRESSION, State="ENABLED"
            )
            now = datetime.now(UTC)
            loading = time.perf_counter()
            bulk_load(runtime.store, tasks, now - timedelta(seconds=1), timedelta(0), None, action="io50")
            load_s = time.perf_counter() - loading
            return _measure(settings, url, fires, tasks, invocations, pool_size) | {
                "load_s": round(load_s, 1)
            }
    finally:
        shutil.rmtree(fires, ignore_errors=True)


def _measure(
    settings: NextTickSettings, url: str, fires: Path, tasks: int, invocations: int, pool_size: int
) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    sandboxes: list[ProcessPoolExecutor] = []  # the pool, once its environment (the endpoint) is known

    def run(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        result = sandboxes[0].submit(_invoke, event).result()
        results.append(result)
        return result

    function = LocalFunction(
        settings.worker_function,
        run,
        timeout_seconds=TIMEOUT_SECONDS,
        region=settings.region,
        concurrency=invocations,
        retry_delays=(),
    )
    endpoint = InvokeEndpoint([function]).start()
    environment = {
        **EMULATOR_CREDENTIALS,
        "AWS_REGION": settings.region,
        "NEXTTICK_ENDPOINT_URL": url,
        "NEXTTICK_LAMBDA_ENDPOINT_URL": endpoint.url,
        # As deployed: a wait too long to sleep through (a head another invocation holds, until
        # its lease ends) is handed to a delayed message, and the invocation ends.
        "NEXTTICK_HANDOVER_QUEUE_URL": f"{url}/{ACCOUNT}/{HANDOVER_QUEUE}",
        "NEXTTICK_POOL_SIZE": str(pool_size),
        "NEXTTICK_QUEUE_SHARDS": str(SHARDS),
        "NEXTTICK_MAX_INVOCATIONS": str(invocations),
        "NEXTTICK_ACTIONS_CONFIG": json.dumps(ACTIONS),
        "NEXTTICK_BENCH_FIRES": str(fires),
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
    spawn = get_context("spawn")  # a fresh interpreter per sandbox, as Lambda's
    try:
        with ProcessPoolExecutor(
            invocations, mp_context=spawn, initializer=_sandbox, initargs=(environment,)
        ) as pool:
            sandboxes.append(pool)
            list(pool.map(_warm, range(invocations)))
            began = time.time()
            function.invoke_async({"source": "aws.events", "detail-type": "Scheduled Event"})
            if not function.wait_idle(TIMEOUT_SECONDS):
                raise RuntimeError(f"the burst did not drain in {TIMEOUT_SECONDS:.0f} s")
    finally:
        function.stop(grace=5.0)
        endpoint.stop()
    stats = requests.get(f"{url}/stats", timeout=10).json()
    return _row(fires, began, tasks, invocations, pool_size, results, stats)


def _row(
    fires: Path,
    began: float,
    tasks: int,
    invocations: int,
    pool_size: int,
    results: list[dict[str, Any]],
    stats: dict[str, Any],
) -> dict[str, Any]:
    runs: collections.Counter[str] = collections.Counter()
    last = began
    for log in fires.glob("*.log"):
        for line in log.read_text().splitlines():
            task_id, at = line.split()
            runs[task_id] += 1
            last = max(last, float(at))
    drain_s = last - began
    contended = sum(r.get("contended", 0) for r in results)
    requests_by_op: dict[str, int] = stats["requests"]
    return {
        "invocations": invocations,
        "pool_size": pool_size,
        "drain_s": round(drain_s, 2),
        "fires_per_s": round(len(runs) / drain_s, 1) if drain_s > 0 else None,
        "conflicts_per_fire": round(contended / tasks, 4),
        "duplicates": sum(count - 1 for count in runs.values()),
        "lost": tasks - len(runs),
        "invocations_run": len(results),
        "helpers": sum(r.get("helpers", 0) for r in results),
        "worker_cpu_ms_per_fire": round(1000 * sum(r["cpu_seconds"] for r in results) / tasks, 2),
        "requests_per_fire": {op: round(n / tasks, 2) for op, n in sorted(requests_by_op.items())},
    }


def _projection(rows: list[dict[str, Any]], tasks: int) -> dict[str, Any]:
    """Fires per second on AWS from the measured per-fire costs: per invocation, the lesser of what
    its pool overlaps (measured here under the latency model, where this machine's CPU allowed it)
    and what its CPU share allows at the deployed memory; times the invocations; under DynamoDB's
    per-partition write limit over the queue's shards."""
    one = rows[0]
    cpu_ms = max(row["worker_cpu_ms_per_fire"] for row in rows)
    vcpu = DEPLOYED_MEMORY_MB / MB_PER_VCPU
    per_invocation_cpu = vcpu * 1000 / cpu_ms
    per_invocation = min(one["fires_per_s"], per_invocation_cpu)
    partitions = SHARDS * PARTITION_WCU_PER_S / QUEUE_WRITES_PER_FIRE
    counts = (4, 8, INVOCATION_BOUND, 16, 32)
    by_invocations = {str(n): round(min(n * per_invocation, partitions)) for n in counts}
    needed = (
        math.ceil(SCHEDULER_FIRES_PER_S / per_invocation) if partitions >= SCHEDULER_FIRES_PER_S else None
    )
    # A function with 1,769 MB gets a whole vCPU: the same invocations fire 3.5x as fast (and cost
    # the same per fire: Lambda bills GB-seconds, and a fire takes 3.5x less time at 3.5x the memory).
    per_vcpu = min(one["fires_per_s"], 1000 / cpu_ms)
    at_one_vcpu = {str(n): round(min(n * per_vcpu, partitions)) for n in counts}
    return {
        "per_invocation_fires_per_s_measured": one["fires_per_s"],
        "worker_cpu_ms_per_fire": cpu_ms,
        "lambda_vcpu_at_deployed_memory": round(vcpu, 3),
        "per_invocation_fires_per_s_cpu_bound": round(per_invocation_cpu),
        "dynamodb_partition_ceiling_fires_per_s": round(partitions),
        "fires_per_s_by_max_invocations": by_invocations,
        "invocations_for_1000_fires_per_s": needed,
        "fires_per_s_by_max_invocations_at_1769_mb": at_one_vcpu,
        "note": (
            f"per invocation: min(measured {one['fires_per_s']}/s with pool {one['pool_size']}, "
            f"{DEPLOYED_MEMORY_MB} MB = {vcpu:.2f} vCPU / {cpu_ms} ms CPU per fire); "
            f"queue writes: {QUEUE_WRITES_PER_FIRE} per fire on one of {SHARDS} shard keys, "
            f"{PARTITION_WCU_PER_S} WCU/s per partition"
        ),
    }


def _efficiency(rows: list[dict[str, Any]], invocations: int) -> float | None:
    """Fires per second at `invocations` over that many times the single invocation's."""
    base = rows[0]["fires_per_s"]
    row = next((r for r in rows if r["invocations"] == invocations), None)
    return round(row["fires_per_s"] / (invocations * base), 2) if row and base else None


def run(quick: bool) -> dict[str, Any]:
    """Two series: the default pool (32), where one invocation already spends most of a core of
    this 2-core machine (so more invocations cannot scale here: the machine is the limit), and a
    pool of 2, where each invocation waits on I/O and the series shows how the fan-out itself
    scales while the machine has CPU to spare."""
    tasks = 100 if quick else FULL_TASKS
    counts = (1, 2) if quick else (1, 2, 4)
    rows = [drain(tasks, n) for n in counts]
    small_tasks = 20 if quick else 300
    io_bound = [drain(small_tasks, n, pool_size=2) for n in counts]
    projection = _projection(rows, tasks)
    return {
        "tasks": tasks,
        "backend": "DynamoDB/EventBridge stand-in + latency model (own process; a wait hand-over's "
        "SQS send answered there); invocations in warm sandbox processes behind the local Lambda "
        "endpoint",
        "latency_model_ms": dict(LATENCY_MS),
        "rows": rows,
        "efficiency_at_4": _efficiency(rows, 4),
        "io_bound": {
            "tasks": small_tasks,
            "pool_size": 2,
            "rows": io_bound,
            "efficiency_at_4": _efficiency(io_bound, 4),
        },
        "projected_aws_fires_per_s": projection["fires_per_s_by_max_invocations"][str(INVOCATION_BOUND)],
        "projected_aws_invocations": INVOCATION_BOUND,
        "invocations_for_1000_fires_per_s": projection["invocations_for_1000_fires_per_s"],
        "projection": projection,
    }


if __name__ == "__main__":
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    for count in map(int, sys.argv[2:] or ["1", "2"]):
        print(json.dumps(drain(tasks, count)))
