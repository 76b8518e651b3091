"""The monthly bill of five loads of one-shot tasks — spread evenly at 1/day, 1/minute, 1/second and
100/second, and a daily burst of 100,000 due at one instant — in `second` and `minute` precision,
beside EventBridge Scheduler's bill for the same invocations.

Why: the cost section's figures per million tasks leave out what a deployment pays whatever its
load (custom metrics, alarms, the dashboard, a provisioned table's minimum) and what depends on how
the tasks fall in time (how long a worker waits per wake, how many records a keeper batch carries):
the month's bill says where nexttick is the cheaper scheduler and where it is not.

How: each load runs a window of itself in simulated time (bench/timeline.py: moto in-process, the
API, keeper and worker handlers, time-machine): 1/day as isolated tasks, each alone in the queue
(bench/sparse.py's); the steady loads as a stretch of their steady state, each task created
STEADY_AHEAD before it is due through the API; the burst scaled down, created through the API at
the API stage's throttle rate. The window's figures are scaled to the 30-day month: per task (DynamoDB
units, creates, keeper batches, log bytes, the worker's CPU) by tasks, per wake (a worker invocation,
its waits, a hand-over's messages, custom metrics' hours) by wakes; the hand-over queue's pollers
poll all month whatever the load. bench/bill.py prices them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from bench.accounts import API, KEEPER, WORKER
from bench.bill import (
    MONTH_DAYS,
    MONTH_HOURS,
    MONTH_SECONDS,
    Deployment,
    Phase,
    Usage,
    bill,
    cpu_seconds,
    provisioned,
)
from bench.handover import idle_receives
from bench.lifecycle import PRICE_LAMBDA_GB_S
from bench.sparse import CREATE_AHEAD, START, idle_seconds, isolated_tasks, request_seconds, worker_seconds
from bench.timeline import Measured, Plan, follow
from infra import names, synth_template
from infra.config import InfraConfig
from nexttick.config import Precision

DAILY_BURST = 100_000
# Far enough ahead for `second` precision to arm the rule for a task (a minute starting 70 s before it).
STEADY_AHEAD = timedelta(minutes=3)
WARM_UP = timedelta(minutes=5)  # before a steady window: the rule fires, a worker starts waiting
# A steady load's tasks fall at this many phases of a second (of a step, if shorter), in turn: the
# rule fires on the minute and a hand-over's delay is whole seconds, so one phase for all would
# measure one rounding of that delay (up to a second more or less of waiting) for every task.
PHASES = 10
# Spread creates step through the second by the golden ratio's fraction: evenly, never in step with
# the phases.
SPREAD_STEP = 0.381966
FUNCTIONS = (API, KEEPER, WORKER)
ALARM, DASHBOARD = "AWS::CloudWatch::Alarm", "AWS::CloudWatch::Dashboard"


@dataclass(frozen=True)
class Window:
    """A plan and what it stands for: `tasks` of the load, `periods` of it (a steady load's: its
    seconds; isolated tasks': one per task; a burst's: one), of which the month has `per_month`."""

    plan: Plan
    tasks: int
    periods: float
    per_month: float
    creates_per_second: float


@dataclass(frozen=True)
class Load:
    name: str
    tasks_per_month: int
    window: Callable[[Precision, bool], Window]


def steady_plan(
    precision: Precision,
    per_second: float,
    length: int,
    ahead: timedelta = STEADY_AHEAD,
    spread_creates: bool = False,
) -> tuple[Plan, int]:
    """A stretch of steady state `length` s long and its task count: tasks due every
    1/`per_second` s, half a step into each, each at the next of PHASES phases of a second. The
    tasks due before `ahead` into it were created before it (queued); it creates those due `ahead`
    after its own due times, or, with `spread_creates`, at offsets spread over the second before
    them (creates that do not coincide with a due instant, as clients' do not)."""
    step = timedelta(seconds=1 / per_second)
    phase = min(step, timedelta(seconds=1)) / PHASES
    begins = START + WARM_UP
    count = round(length * per_second)
    dues = [begins + step / 2 + i * step + (i % PHASES) * phase for i in range(count)]
    offsets = [timedelta(seconds=(i * SPREAD_STEP) % 1 if spread_creates else 0) for i in range(count)]
    plan = Plan(
        precision,
        START,
        creates=tuple((due - offset, due + ahead) for due, offset in zip(dues, offsets, strict=True)),
        queued=tuple(d for d in dues if d < begins + ahead),
        measured_from=begins,
        end=begins + timedelta(seconds=length),
    )
    return plan, count


def _steady(per_second: float, seconds: dict[bool, int]) -> Callable[[Precision, bool], Window]:
    """A steady load's window (`steady_plan`), `seconds[quick]` long, each task created
    STEADY_AHEAD before it is due."""

    def window(precision: Precision, quick: bool) -> Window:
        plan, count = steady_plan(precision, per_second, seconds[quick])
        return Window(plan, count, seconds[quick], MONTH_SECONDS, per_second)

    return window


def _daily(precision: Precision, quick: bool) -> Window:
    tasks = 3 if quick else 8
    return Window(isolated_tasks(precision, tasks), tasks, tasks, MONTH_DAYS, 1 / 86_400)


def _burst(precision: Precision, quick: bool) -> Window:
    """The burst scaled down to `tasks`, created one after another at the API stage's throttle rate,
    the last CREATE_AHEAD before the instant."""
    tasks = 100 if quick else 1000
    rate = InfraConfig().api_throttle_rate
    creates = [START + timedelta(seconds=i / rate) for i in range(tasks)]
    instant = creates[-1] + CREATE_AHEAD
    return Window(Plan(precision, START, tuple((at, instant) for at in creates)), tasks, 1, MONTH_DAYS, rate)


LOADS = (
    Load("1/day", MONTH_DAYS, _daily),
    Load("1/minute", MONTH_SECONDS // 60, _steady(1 / 60, {False: 20 * 60, True: 6 * 60})),
    Load("1/second", MONTH_SECONDS, _steady(1, {False: 180, True: 30})),
    Load("100/second", 100 * MONTH_SECONDS, _steady(100, {False: 6, True: 1})),
    Load("daily burst of 100,000", DAILY_BURST * MONTH_DAYS, _burst),
)


def deployment() -> Deployment:
    """The stack's defaults (infra/config.py, infra/names.py) and what its template deploys."""
    config = InfraConfig()
    kinds = Counter(r["Type"] for r in synth_template(config, local=True)["Resources"].values())
    return Deployment(
        worker_memory_mb=config.worker_memory_mb,
        keeper_memory_mb=names.KEEPER_MEMORY_MB,
        api_memory_mb=config.api_memory_mb,
        architecture=config.architecture,
        gb_s_price=PRICE_LAMBDA_GB_S[config.architecture],
        read_capacity=(config.read_capacity.min, config.read_capacity.max),
        write_capacity=(config.write_capacity.min, config.write_capacity.max),
        target_utilization=config.capacity_target_utilization / 100,
        retention_days=config.retention_days,
        alarms=kinds[ALARM],
        dashboards=kinds[DASHBOARD],
    )


def platform_log_bytes(billed_s: float, memory_mb: int) -> int:
    """The START, END and REPORT lines Lambda's runtime writes for every invocation (text format)."""
    request = "8f5c2a4e-2f0b-4c5e-9a51-3d2f1b6c7e90"
    ms = billed_s * 1000
    return len(
        f"START RequestId: {request} Version: $LATEST\n"
        f"END RequestId: {request}\n"
        f"REPORT RequestId: {request}\tDuration: {ms:.2f} ms\tBilled Duration: {ms:.0f} ms\t"
        f"Memory Size: {memory_mb} MB\tMax Memory Used: {memory_mb} MB\t\n"
    )


def usage(load: Load, window: Window, measured: Measured, deployed: Deployment) -> Usage:
    """The month of `load` from its window: per-task figures times tasks, per-wake ones times wakes."""
    per_task = load.tasks_per_month / window.tasks
    per_period = window.per_month / window.periods
    grown = per_task / per_period  # a burst: its tasks per wake, billed over measured
    accounts = [measured.accounts[f] for f in FUNCTIONS if f in measured.accounts]
    worker = [worker_seconds(r, deployed.worker_memory_mb, grown) for r in measured.worker]
    keeper = [request_seconds(r, deployed.keeper_memory_mb) for r in measured.keeper]
    api = [request_seconds(r, deployed.api_memory_mb) for r in measured.api]
    platform = (
        sum(platform_log_bytes(s, deployed.worker_memory_mb) for s in worker) * per_period
        + sum(platform_log_bytes(s, deployed.keeper_memory_mb) for s in keeper) * per_task
        + sum(platform_log_bytes(s, deployed.api_memory_mb) for s in api) * per_task
    )
    rru, wru = sum(a.rru for a in accounts) * per_task, sum(a.wru for a in accounts) * per_task
    steady = window.plan.end is not None
    rule_firings = sum(r.cause == "rule" for r in measured.worker) * per_period
    putrule = sum(a.requests["PutRule"] for a in accounts) * per_task
    return Usage(
        tasks=load.tasks_per_month,
        rru=rru,
        wru=wru,
        phases=(Phase(MONTH_SECONDS, rru, wru),) if steady else _phases(window, measured, deployed, per_task),
        phases_per_month=1 if steady else window.per_month,
        worker_invocations=len(worker) * per_period,
        worker_seconds=sum(worker) * per_period,
        worker_idle_seconds=sum(idle_seconds(r, deployed.worker_memory_mb, grown) for r in measured.worker)
        * per_period,
        handover_invocations=measured.handovers * per_period,
        keeper_invocations=len(keeper) * per_task,
        keeper_seconds=sum(keeper) * per_task,
        api_invocations=len(api) * per_task,
        api_seconds=sum(api) * per_task,
        log_bytes=sum(measured.printed_bytes.values()) * per_task + platform,
        metric_hours={m: marks * per_period for m, marks in measured.metric_marks.items()},
        stored_bytes_per_task=measured.stored_bytes_per_task,
        eventbridge_calls=putrule + rule_firings,
        sqs_requests=sum(measured.sqs_requests.values()) * per_period + idle_receives(MONTH_SECONDS),
    )


def _phases(window: Window, measured: Measured, deployed: Deployment, per_task: float) -> tuple[Phase, ...]:
    """A period's units in two phases: the creates (the API's units) at the API stage's throttle
    rate, then the runs (the keeper's and the worker's), drained by the stack's `max_invocations`
    invocations at once, each as fast as its CPU at its share of a vCPU allows."""
    share = per_task / window.per_month  # one period of the month over the window
    config = InfraConfig()
    created = measured.accounts.get(API)
    ran = [measured.accounts[f] for f in (KEEPER, WORKER) if f in measured.accounts]
    drain_s = sum(cpu_seconds(r.cpu_s * share, deployed.worker_memory_mb) for r in measured.worker)
    return (
        Phase(
            max(window.tasks * share / config.api_throttle_rate, 1.0),
            created.rru * share if created else 0.0,
            created.wru * share if created else 0.0,
        ),
        Phase(
            max(drain_s / config.max_invocations, 1.0),
            sum(a.rru for a in ran) * share,
            sum(a.wru for a in ran) * share,
        ),
    )


def row(load: Load, precision: Precision, quick: bool, deployed: Deployment) -> dict[str, Any]:
    """One load in one precision: its month's bill, beside EventBridge Scheduler's, and the
    measured inputs it comes from."""
    window = load.window(precision, quick)
    began = time.monotonic()
    measured = follow(window.plan)
    run_s = time.monotonic() - began
    month = usage(load, window, measured, deployed)
    usd = bill(month, deployed)
    _, peak_rcu, peak_wcu = provisioned(month.phases, month.phases_per_month, deployed)
    per_task = load.tasks_per_month / window.tasks
    accounts = [measured.accounts[f] for f in FUNCTIONS if f in measured.accounts]
    deferred = [r.deferred_s for r in measured.worker if r.deferred_s > 0]
    cheapest = min(usd["total_on_demand"], usd["total_provisioned"])
    return {
        "load": load.name,
        "precision": precision.value,
        "tasks_per_month": load.tasks_per_month,
        "window": {
            "tasks": window.tasks,
            "simulated_s": round(_simulated(window.plan), 1),
            "run_s": round(run_s, 1),
            "finished": measured.finished,
        },
        "measured": {
            "rru_per_task": round(month.rru / month.tasks, 2),
            "wru_per_task": round(month.wru / month.tasks, 2),
            "units_per_task_by_function": {
                f: {"rru": round(a.rru / window.tasks, 2), "wru": round(a.wru / window.tasks, 2)}
                for f, a in measured.accounts.items()
                if f in FUNCTIONS
            },
            "putrule_per_task": round(sum(a.requests["PutRule"] for a in accounts) / window.tasks, 3),
            "wakes_per_month": round(month.worker_invocations, 1),
            "worker_s_per_wake": round(month.worker_seconds / max(month.worker_invocations, 1e-9), 2),
            "idle_s_per_wake": round(month.worker_idle_seconds / max(month.worker_invocations, 1e-9), 2),
            "handovers_per_month": round(month.handover_invocations, 1),
            "sqs_requests_per_month": round(month.sqs_requests),
            "worker_cpu_ms_per_task": round(1000 * sum(r.cpu_s for r in measured.worker) / window.tasks, 2),
            "keeper_invocations_per_task": round(month.keeper_invocations / month.tasks, 3),
            "keeper_ms_per_invocation": _mean_ms(month.keeper_seconds, month.keeper_invocations),
            "api_ms_per_create": _mean_ms(month.api_seconds, month.api_invocations),
            "log_bytes_per_task": round(month.log_bytes / month.tasks, 1),
            "custom_metrics": len(month.metric_hours),
            "metric_months": round(
                sum(min(h, MONTH_HOURS) for h in month.metric_hours.values()) / MONTH_HOURS, 3
            ),
            "stored_bytes_per_task": round(month.stored_bytes_per_task, 1),
            "peak_rcu": round(peak_rcu, 1),
            "peak_wcu": round(peak_wcu, 1),
            "deferred_starts": len(deferred),
            "max_deferral_s": round(max(deferred, default=0.0), 2),
            "per_task_scale": round(per_task, 3),
        },
        "usd": {term: round(value, 6) for term, value in usd.items()},
        "cheaper": "nexttick" if cheapest < usd["scheduler"] else "EventBridge Scheduler",
        "notes": _notes(window, peak_rcu, peak_wcu, deployed),
    }


def _simulated(plan: Plan) -> float:
    last = plan.end or max((due for _, due in plan.creates), default=plan.start)
    return (last - (plan.measured_from or plan.start)).total_seconds()


def _mean_ms(seconds: float, invocations: float) -> float:
    return round(1000 * seconds / invocations, 2) if invocations else 0.0


def _notes(window: Window, peak_rcu: float, peak_wcu: float, deployed: Deployment) -> list[str]:
    """What the load asks of the deployment beyond its defaults."""
    notes = []
    throttle = InfraConfig().api_throttle_rate
    if window.creates_per_second > throttle:
        notes.append(
            f"creates at {window.creates_per_second:g}/s exceed the API stage's throttle "
            f"({throttle:g}/s, `api_throttle_rate`)"
        )
    for kind, peak, (_, maximum) in (
        ("read", peak_rcu, deployed.read_capacity),
        ("write", peak_wcu, deployed.write_capacity),
    ):
        if peak > maximum:
            notes.append(
                f"provisioned: needs {peak:,.0f} {kind} capacity units, above the auto-scaling maximum "
                f"({maximum}, `{kind}_capacity.max`)"
            )
    return notes


def run(quick: bool) -> dict[str, Any]:
    deployed = deployment()
    return {
        "backend": "moto in-process, the API, keeper and worker handlers in simulated time",
        "deployment": asdict(deployed),
        "month_days": MONTH_DAYS,
        "rows": [
            row(load, precision, quick, deployed)
            for load in LOADS
            for precision in (Precision.SECOND, Precision.MINUTE)
        ],
    }
