"""A sparse one-shot task from its create to its completion, counted as AWS bills it: each of N
tasks alone in the queue, in `second` precision (the rule fires a minute or more ahead of the task
and the invocation hands its wait over to a delayed SQS message, whose invocation sleeps the last
seconds until the instant) and in `minute` precision (the rule fires at the start of the task's own
minute).

Why a row of its own: `lifecycle(n, 1)` starts the worker after its task is due, so it leaves out
what a sparse task pays for most in `second` mode, the early wake: the rule's firing ahead of the
task, the invocations alive while it waits, its wait claim and release, the backstop it arms, the
hand-over's message. A third row has each task due the instant it is created ("run now"): no rule
and no wait, but the editor's direct invoke and the keeper's check that the task has run.

What runs: bench/timeline.py's window (moto in-process, the real handlers, time from
time-machine): the deployment's sync, then each task created through the API handler 10 minutes
ahead and followed to its completion — the keeper on the table's stream as Lambda polls it, and
every worker invocation the rule's firing, an invoke or a hand-over message starts. Units are the
DynamoDB meter's, split by the function that spent them (the create is the API's); SQS's requests
are the hand-over's messages (the send, the mapping's receive and delete), not its pollers' idle
receives, which a deployment pays whatever its tasks (bench/monthly.py counts them).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.accounts import API, KEEPER, WORKER
from bench.bill import cpu_seconds, lambda_seconds, lambda_usd, sqs
from bench.lifecycle import LAMBDA_GB_S, PRICE_RRU, PRICE_WRU, WORKER_MEMORY_GB
from bench.timeline import Measured, Plan, Run, follow
from infra import names
from infra.config import InfraConfig
from nexttick.config import Precision

KEEPER_MEMORY_GB = names.KEEPER_MEMORY_MB / 1024
START = datetime(2031, 3, 3, 8, 0, 0, tzinfo=UTC)
CREATE_AHEAD = timedelta(minutes=10)
TASK_SPACING = timedelta(minutes=15)  # the queue is empty again well before the next create
# Requests that are not DynamoDB's (not in the units, priced elsewhere or free).
NOT_DYNAMODB = frozenset({"PutRule", "DescribeRule", "Invoke", "SendMessage"})
PARTS = {API: "create", WORKER: "worker", KEEPER: "keeper"}
AT_ONCE = "at_once"  # the row of tasks due the instant they are created (`second` precision)
ON_THE_HOUR = "on_the_hour"  # the row of tasks due at the top of an hour, created 90 minutes ahead
ON_THE_HOUR_AHEAD = timedelta(minutes=90)


def isolated_tasks(precision: Precision, tasks: int, action: str = "silent") -> Plan:
    """`tasks` one-shot tasks, each created alone and followed to its completion. They fall evenly
    over the seconds of a minute: the early wake's wait depends on where in it a task falls."""
    creates = tuple(
        (
            START + i * TASK_SPACING,
            START + i * TASK_SPACING + CREATE_AHEAD + timedelta(seconds=60 * i / tasks + 0.25),
        )
        for i in range(tasks)
    )
    return Plan(precision, START, creates, periods=True, action=action)


def tasks_due_at_once(tasks: int) -> Plan:
    """`tasks` one-shot tasks in `second` precision, each created alone due the instant it is created
    (a "run now" through the API): its editor invokes the worker directly, and the keeper gets the
    create's record as Lambda polls the stream, usually after that worker has run it."""
    creates = tuple((START + i * TASK_SPACING, START + i * TASK_SPACING) for i in range(tasks))
    return Plan(Precision.SECOND, START, creates, periods=True, action="silent")


def tasks_due_on_the_hour(tasks: int) -> Plan:
    """`tasks` one-shot tasks in `second` precision, each due in the first minute of an hour and
    created alone 90 minutes ahead (a daily `0 9 * * *` job's next run is set about a day ahead).
    Its armed minute (:58 or :59) and backstop (:01 or :02 of the next hour) make the rule's cron
    name two hours, so EventBridge also fires the combination about 57 minutes before the armed
    minute: one spurious wake per task. Two hours apart, so each is alone in the queue."""
    creates = []
    for i in range(tasks):
        due = START + timedelta(hours=2 + 2 * i, seconds=60 * i / tasks + 0.25)
        creates.append((due.replace(second=0, microsecond=0) - ON_THE_HOUR_AHEAD, due))
    return Plan(Precision.SECOND, START, tuple(creates), periods=True, action="silent")


def worker_seconds(run: Run, memory_mb: int, tasks_scale: float = 1.0) -> float:
    """A worker invocation's billed duration: it lives as long as it waits for instants (its span
    in simulated time) or as long as its work takes at its share of a vCPU, whichever is longer
    (work done before an instant shortens the wait for it). `tasks_scale`: its work grown by that
    factor (a burst measured smaller than it is billed)."""
    return lambda_seconds(max(run.span_s, cpu_seconds(run.cpu_s * tasks_scale, memory_mb)))


def idle_seconds(run: Run, memory_mb: int, tasks_scale: float = 1.0) -> float:
    """The part of a worker invocation's billed duration in which it does no work of its own: its
    sleeps (its span in simulated time), less the work it would do during them on AWS."""
    return max(0.0, run.span_s - cpu_seconds(run.cpu_s * tasks_scale, memory_mb))


def request_seconds(run: Run, memory_mb: int) -> float:
    """A keeper or API invocation's billed duration: its span (its requests' round trips by the
    latency model, one after another) and its own CPU at its share of a vCPU."""
    return lambda_seconds(run.span_s + cpu_seconds(run.cpu_s, memory_mb))


def sparse(plan: Plan) -> dict[str, Any]:
    """The row of `plan`'s tasks (one create each), followed to their completion."""
    tasks = len(plan.creates)
    measured = follow(plan)
    assert measured.finished == tasks, f"{measured.finished} of {tasks} tasks ran"
    return _row(tasks, plan.precision, measured)


def _row(tasks: int, precision: Precision, measured: Measured) -> dict[str, Any]:
    parts = {
        name: measured.accounts[function] for function, name in PARTS.items() if function in measured.accounts
    }
    rru = sum(p.rru for p in parts.values()) / tasks
    wru = sum(p.wru for p in parts.values()) / tasks
    requests: Counter[str] = sum((p.requests for p in parts.values()), Counter())
    deployed = InfraConfig(precision=precision)
    alive_s = sum(r.span_s for r in measured.worker)
    worker_s = sum(worker_seconds(r, deployed.worker_memory_mb) for r in measured.worker) / tasks
    keeper_s = sum(request_seconds(r, names.KEEPER_MEMORY_MB) for r in measured.keeper) / tasks
    dynamodb_usd = wru * PRICE_WRU + rru * PRICE_RRU
    lambda_cost = (
        lambda_usd(len(measured.worker) / tasks, worker_s, deployed.worker_memory_mb, LAMBDA_GB_S)
        + lambda_usd(len(measured.keeper) / tasks, keeper_s, names.KEEPER_MEMORY_MB, LAMBDA_GB_S)
    ) * 1e6
    sqs_requests = sum(measured.sqs_requests.values()) / tasks
    sqs_usd = sqs(sqs_requests) * 1e6
    starts = Counter(r.cause for r in measured.worker)

    def dynamodb(counted: Counter[str]) -> dict[str, float]:
        return {op: round(n / tasks, 2) for op, n in sorted(counted.items()) if op not in NOT_DYNAMODB}

    return {
        "tasks": tasks,
        "precision": precision.value,
        "rru": round(rru, 2),
        "wru": round(wru, 2),
        "requests": dynamodb(requests),
        "putrule": round(requests["PutRule"] / tasks, 2),
        "invocations": round(len(measured.worker) / tasks, 2),
        "invocations_by_cause": {cause: round(n / tasks, 2) for cause, n in sorted(starts.items())},
        "worker_alive_s": round(alive_s / tasks, 1),
        "gb_s": round(worker_s * WORKER_MEMORY_GB, 2),
        "keeper_invocations": round(len(measured.keeper) / tasks, 2),
        "keeper_gb_s_modelled": round(keeper_s * KEEPER_MEMORY_GB, 4),
        "sqs_requests": round(sqs_requests, 2),
        "by_part": {
            name: {
                "rru": round(p.rru / tasks, 2),
                "wru": round(p.wru / tasks, 2),
                "putrule": round(p.requests["PutRule"] / tasks, 2),
                "requests": dynamodb(p.requests),
            }
            for name, p in parts.items()
        },
        "usd_per_million_dynamodb": round(dynamodb_usd, 2),
        "usd_per_million_lambda": round(lambda_cost, 2),
        "usd_per_million_sqs": round(sqs_usd, 2),
        "usd_per_million": round(dynamodb_usd + lambda_cost + sqs_usd, 2),
    }


def run(quick: bool) -> dict[str, Any]:
    n = 5 if quick else 20
    rows = {p.value: sparse(isolated_tasks(p, n)) for p in (Precision.SECOND, Precision.MINUTE)}
    return rows | {AT_ONCE: sparse(tasks_due_at_once(n)), ON_THE_HOUR: sparse(tasks_due_on_the_hour(n))}
