"""A month's AWS bill from a month's usage: each term, on demand and provisioned, beside what
EventBridge Scheduler bills for the same invocations. Arithmetic only: the usage comes from what
bench/monthly.py measured, the prices from bench/lifecycle.py, the deployment's sizes from infra/.

The month is 30 days. nexttick's terms are list prices, without the free tiers of Lambda, DynamoDB,
CloudWatch or SQS (they are the account's, shared with whatever else it runs); EventBridge
Scheduler's bill is shown with its free tier and without, and so is the SQS term.

The waiting is not a term of the totals but a share of two of them, the worker Lambda's and SQS's:
the worker's billed time beyond its own work (its sleeps, in the invocation that waits and in the
one a hand-over starts) and the requests of the invocations hand-overs start, plus the whole SQS
term (the queue serves only the hand-over), so the month's cost of waiting reads as one figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.derive import EVENTBRIDGE_RULE_USD_PER_MILLION
from bench.fanout import MB_PER_VCPU
from bench.lifecycle import (
    EVENTBRIDGE_SCHEDULER_FREE_PER_MONTH,
    EVENTBRIDGE_SCHEDULER_PER_MILLION,
    PRICE_ALARM_MONTH,
    PRICE_API_REQUEST,
    PRICE_DASHBOARD_MONTH,
    PRICE_LAMBDA_REQUEST,
    PRICE_LOGS_INGESTED_GB,
    PRICE_METRIC_MONTH,
    PRICE_PITR_GB_MONTH,
    PRICE_RCU_HOUR,
    PRICE_RRU,
    PRICE_SQS_REQUEST,
    PRICE_STORAGE_GB_MONTH,
    PRICE_WCU_HOUR,
    PRICE_WRU,
    SQS_FREE_PER_MONTH,
)

MONTH_DAYS = 30
MONTH_HOURS = MONTH_DAYS * 24
MONTH_SECONDS = MONTH_HOURS * 3600
GB = 2**30
# DynamoDB keeps up to five minutes of a table's unused provisioned capacity for bursts.
BURST_CREDIT_SECONDS = 300


@dataclass(frozen=True)
class Deployment:
    """What the stack deploys that the bill depends on (infra/config.py, infra/names.py, the template)."""

    worker_memory_mb: int
    keeper_memory_mb: int
    api_memory_mb: int
    architecture: str
    gb_s_price: float
    read_capacity: tuple[int, int]  # provisioned: auto scaling's (min, max)
    write_capacity: tuple[int, int]
    target_utilization: float  # 0.7 for 70 %
    retention_days: int
    alarms: int
    dashboards: int


@dataclass(frozen=True)
class Phase:
    """Units spent within `seconds`: the provisioned capacity they need while they are spent."""

    seconds: float
    rru: float
    wru: float


@dataclass(frozen=True)
class Usage:
    """One load's month. `phases` happen `phases_per_month` times (a steady load: one phase, the
    whole month); `metric_hours`: per custom metric, the hours of the month it is published in."""

    tasks: float
    rru: float
    wru: float
    phases: tuple[Phase, ...]
    phases_per_month: float
    worker_invocations: float
    worker_seconds: float
    worker_idle_seconds: float  # of worker_seconds, those it did no work of its own in
    handover_invocations: float  # of worker_invocations, those a hand-over message started
    keeper_invocations: float
    keeper_seconds: float
    api_invocations: float
    api_seconds: float
    log_bytes: float
    metric_hours: dict[str, float]
    stored_bytes_per_task: float
    eventbridge_calls: float  # PutRule calls and the rule's scheduled events
    sqs_requests: float  # billed: the hand-over's messages, and its mapping's polls


def lambda_usd(invocations: float, seconds: float, memory_mb: int, gb_s_price: float) -> float:
    """What Lambda bills for `invocations` of a function of `memory_mb` lasting `seconds` in all."""
    return invocations * PRICE_LAMBDA_REQUEST + seconds * memory_mb / 1024 * gb_s_price


def lambda_seconds(seconds: float) -> float:
    """An invocation's billed duration: Lambda rounds each one up to the millisecond."""
    return math.ceil(round(seconds * 1000, 6)) / 1000


def cpu_seconds(cpu_s: float, memory_mb: int) -> float:
    """How long `cpu_s` of one core's work takes a function of `memory_mb`: Lambda gives a function
    CPU in proportion to its memory, one vCPU at MB_PER_VCPU (a core of the bench's machine taken as one)."""
    return cpu_s * max(1.0, MB_PER_VCPU / memory_mb)


def provisioned(
    phases: tuple[Phase, ...], per_month: float, deployment: Deployment
) -> tuple[float, float, float]:
    """Provisioned capacity's month (USD) and the peak read and write capacity the phases need: the
    auto-scaling minimum all month, and above it, for the whole hours of each phase that its burst
    credit does not cover, the capacity that spends its units at the target utilization."""
    usd = 0.0
    peaks = []
    for (minimum, _), price, units in (
        (deployment.read_capacity, PRICE_RCU_HOUR, [p.rru for p in phases]),
        (deployment.write_capacity, PRICE_WCU_HOUR, [p.wru for p in phases]),
    ):
        usd += minimum * MONTH_HOURS * price
        peak = 0.0
        for phase, spent in zip(phases, units, strict=True):
            needed = spent / phase.seconds / deployment.target_utilization
            peak = max(peak, needed)
            if spent <= minimum * BURST_CREDIT_SECONDS or needed <= minimum:
                continue
            hours = min(MONTH_HOURS, math.ceil(phase.seconds / 3600))
            usd += (needed - minimum) * hours * per_month * price
        peaks.append(peak)
    return usd, peaks[0], peaks[1]


def scheduler(tasks: float, free: bool = True) -> float:
    """EventBridge Scheduler's month for one invocation per task (its free tier, or none)."""
    billed = max(0.0, tasks - EVENTBRIDGE_SCHEDULER_FREE_PER_MONTH) if free else tasks
    return billed / 1e6 * EVENTBRIDGE_SCHEDULER_PER_MILLION


def sqs(requests: float, free: bool = False) -> float:
    """SQS's month for `requests` billed requests (within its free tier, or at list price)."""
    billed = max(0.0, requests - SQS_FREE_PER_MONTH) if free else requests
    return billed * PRICE_SQS_REQUEST


def bill(usage: Usage, deployment: Deployment) -> dict[str, float]:
    """Each term of the month (USD), the totals, the waiting's share of them, and EventBridge
    Scheduler's bill."""

    def function(invocations: float, seconds: float, memory_mb: int) -> float:
        return lambda_usd(invocations, seconds, memory_mb, deployment.gb_s_price)

    stored_gb = usage.tasks * usage.stored_bytes_per_task * deployment.retention_days / MONTH_DAYS / GB
    terms = {
        "dynamodb_on_demand": (usage.rru * PRICE_RRU + usage.wru * PRICE_WRU) / 1e6,
        "dynamodb_provisioned": provisioned(usage.phases, usage.phases_per_month, deployment)[0],
        "dynamodb_storage": stored_gb * (PRICE_STORAGE_GB_MONTH + PRICE_PITR_GB_MONTH),
        "lambda_worker": function(
            usage.worker_invocations, usage.worker_seconds, deployment.worker_memory_mb
        ),
        "lambda_keeper": function(
            usage.keeper_invocations, usage.keeper_seconds, deployment.keeper_memory_mb
        ),
        "lambda_api": function(usage.api_invocations, usage.api_seconds, deployment.api_memory_mb),
        "api_gateway": usage.api_invocations * PRICE_API_REQUEST,
        "eventbridge": usage.eventbridge_calls * EVENTBRIDGE_RULE_USD_PER_MILLION / 1e6,
        "sqs": sqs(usage.sqs_requests),
        "cloudwatch_logs": usage.log_bytes / GB * PRICE_LOGS_INGESTED_GB,
        "cloudwatch_metrics": sum(min(h, MONTH_HOURS) for h in usage.metric_hours.values())
        / MONTH_HOURS
        * PRICE_METRIC_MONTH,
        "cloudwatch_alarms_dashboards": deployment.alarms * PRICE_ALARM_MONTH
        + deployment.dashboards * PRICE_DASHBOARD_MONTH,
    }
    shared = sum(v for k, v in terms.items() if not k.startswith("dynamodb_") or k == "dynamodb_storage")
    return {
        **terms,
        "lambda": terms["lambda_worker"] + terms["lambda_keeper"] + terms["lambda_api"],
        "cloudwatch": terms["cloudwatch_logs"]
        + terms["cloudwatch_metrics"]
        + terms["cloudwatch_alarms_dashboards"],
        "total_on_demand": terms["dynamodb_on_demand"] + shared,
        "total_provisioned": terms["dynamodb_provisioned"] + shared,
        "waiting": function(
            usage.handover_invocations, usage.worker_idle_seconds, deployment.worker_memory_mb
        )
        + terms["sqs"],
        "sqs_within_free_tier": sqs(usage.sqs_requests, free=True),
        "scheduler": scheduler(usage.tasks),
        "scheduler_without_free_tier": scheduler(usage.tasks, free=False),
    }
