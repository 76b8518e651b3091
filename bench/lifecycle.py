"""DynamoDB units per one-shot task lifecycle (create -> run -> done), PutRule calls per task, and
the cost per million tasks — dense (many tasks per worker run) and sparse (one per run)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import time_machine

from bench.harness import emulated_aws
from editor import Editor
from infra.config import InfraConfig
from local.meter import DynamoMeter
from nexttick.actions import build_registry
from nexttick.config import NextTickSettings
from nexttick.constants import WAKE_AHEAD_SECONDS
from nexttick.store.records import QueueEntry
from nexttick.worker import Worker

# us-east-1 list prices (USD), without free tiers unless named: on-demand per million write / read
# request units; provisioned per capacity-unit hour; Lambda per GB-s by architecture and per request.
PRICE_WRU = 0.625
PRICE_RRU = 0.125
PRICE_WCU_HOUR = 0.00065
PRICE_RCU_HOUR = 0.00013
PRICE_LAMBDA_GB_S = {"arm64": 0.0000133334, "x86_64": 0.0000166667}
PRICE_LAMBDA_REQUEST = 0.20 / 1e6
EVENTBRIDGE_SCHEDULER_PER_MILLION = 1.00
# EventBridge Scheduler's free tier: invocations per month, per account.
EVENTBRIDGE_SCHEDULER_FREE_PER_MONTH = 14_000_000
# DynamoDB per GB-month: table storage (standard class) and continuous backups (point-in-time recovery).
PRICE_STORAGE_GB_MONTH = 0.25
PRICE_PITR_GB_MONTH = 0.20
# SQS standard queue per request (a request per 64 KB chunk of its payload); its free tier: requests
# per month, per account.
PRICE_SQS_REQUEST = 0.40 / 1e6
SQS_FREE_PER_MONTH = 1_000_000
# API Gateway REST API per request (the first 333 million a month).
PRICE_API_REQUEST = 3.50 / 1e6
# CloudWatch: Logs ingestion per GB (standard log class); custom metrics per metric-month (the first
# 10,000, prorated by the hour they are published in); standard-resolution alarms per alarm-month;
# dashboards per dashboard-month.
PRICE_LOGS_INGESTED_GB = 0.50
PRICE_METRIC_MONTH = 0.30
PRICE_ALARM_MONTH = 0.10
PRICE_DASHBOARD_MONTH = 3.00
# The deployed worker: the stack's default size and architecture.
DEPLOYED = InfraConfig()
WORKER_MEMORY_GB = DEPLOYED.worker_memory_mb / 1024
LAMBDA_GB_S = PRICE_LAMBDA_GB_S[DEPLOYED.architecture]
PAYLOAD_BYTES = (64, 1024, 8192)
# A `second`-mode wake-up as deployed: the invocation the rule starts hands its wait over (one SQS
# message: send, receive, delete) and the invocation the message starts sleeps the lead and the
# wake-ahead before its pass (the monthly section measures it in simulated time).
HANDOVER_SLEEP_S = NextTickSettings().handover_lead_seconds + WAKE_AHEAD_SECONDS
HANDOVER_SQS_REQUESTS = 3


class PutRuleCounter:
    def __init__(self, events_client: Any) -> None:
        self.calls = 0
        events_client.meta.events.register("after-call.events.PutRule", self._count)

    def _count(self, **_: Any) -> None:
        self.calls += 1


@dataclass
class Spent:
    """What one part of the lifecycle cost: units, requests by operation, PutRule calls."""

    rru: float = 0.0
    wru: float = 0.0
    requests: Counter[str] = field(default_factory=Counter)
    rru_by_op: Counter[str] = field(default_factory=Counter)
    wru_by_op: Counter[str] = field(default_factory=Counter)
    putrule: int = 0


class Ledger:
    """Charges the meter's and the PutRule counter's growth since the last charge to a part."""

    def __init__(self, meter: DynamoMeter, putrules: PutRuleCounter) -> None:
        self.meter, self.putrules = meter, putrules
        self.parts: dict[str, Spent] = {}
        self._calls: Counter[str] = Counter()
        self._rru: Counter[str] = Counter()
        self._wru: Counter[str] = Counter()
        self._putrule = 0

    def charge(self, part: str) -> Spent:
        calls, rru = Counter(self.meter.calls), Counter(dict(self.meter.read_units))
        wru, putrule = Counter(dict(self.meter.write_units)), self.putrules.calls
        spent = self.parts.setdefault(part, Spent())
        spent.requests.update(calls - self._calls)
        spent.rru_by_op.update(rru - self._rru)
        spent.wru_by_op.update(wru - self._wru)
        spent.rru = sum(spent.rru_by_op.values())
        spent.wru = sum(spent.wru_by_op.values())
        spent.putrule += putrule - self._putrule
        self._calls, self._rru, self._wru, self._putrule = calls, rru, wru, putrule
        return spent


def lifecycle(tasks: int, per_run: int) -> dict[str, Any]:
    """Create `tasks` tasks a day ahead, then run the worker once per `per_run` of them."""
    start = datetime(2031, 3, 3, 8, 0, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False) as traveller, emulated_aws() as runtime:
        editor = Editor(runtime=runtime)
        registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
        meter = DynamoMeter(runtime.store)
        first = start + timedelta(days=1)
        dues = [first + timedelta(seconds=(i // per_run) * 600 + (i % per_run) * 0.01) for i in range(tasks)]
        for due in dues:
            editor.schedule_at("log", due, {"order": 1})
        create = (meter.total_write_units / tasks, meter.total_read_units / tasks)
        meter.reset()
        for batch in range(0, tasks, per_run):
            traveller.move_to(dues[min(batch + per_run, tasks) - 1] + timedelta(seconds=1))
            report = Worker(runtime, registry, owner=f"run{batch}", remaining_ms=300_000).run()
            assert report.results["succeeded"] == min(per_run, tasks - batch), report
        run = (meter.total_write_units / tasks, meter.total_read_units / tasks)
    wru, rru = create[0] + run[0], create[1] + run[1]
    runs_per_task = 1 / per_run
    lambda_cost = runs_per_task * (
        2 * PRICE_LAMBDA_REQUEST
        + HANDOVER_SQS_REQUESTS * PRICE_SQS_REQUEST
        + HANDOVER_SLEEP_S * WORKER_MEMORY_GB * LAMBDA_GB_S
    )
    # Provisioned at a steady load: each unit a task uses is held for a second, at the stack's
    # auto-scaling target utilization (capacity above the load is paid for too).
    unit_seconds = 3600 * DEPLOYED.capacity_target_utilization / 100
    provisioned = (wru * PRICE_WCU_HOUR + rru * PRICE_RCU_HOUR) / unit_seconds
    return {
        "tasks": tasks,
        "tasks_per_run": per_run,
        "wru_create": round(create[0], 2),
        "rru_create": round(create[1], 2),
        "wru_run": round(run[0], 2),
        "rru_run": round(run[1], 2),
        # Three places: a run's shared writes are a few per 1,000 tasks, which two places round away.
        "wru_total": round(wru, 3),
        "rru_total": round(rru, 3),
        "usd_per_million_dynamodb": round(wru * PRICE_WRU + rru * PRICE_RRU, 2),
        "usd_per_million_dynamodb_provisioned": round(provisioned * 1e6, 2),
        "usd_per_million_lambda_second_mode": round(lambda_cost * 1e6, 2),
    }


def payload_sweep(tasks: int, payload_bytes: int) -> dict[str, Any]:
    """The dense lifecycle (`lifecycle(tasks, tasks)`) with a payload of one string field of
    `payload_bytes` characters, units split by what they pay for. The worker runs with a pool of
    one, so its requests follow each other and its hook's steps delimit them: from an occurrence's
    `claim` to `claimed` is the claim (the home item's conditional UpdateItem, which answers with
    the task); from `claimed` to `completed`, the completion (the task's outcome with its run kept
    on the item, which ends the entry); the rest of the run (the pass's Queries, the lateness
    histogram, the re-arm) is `other`. Shards' pages hold every entry (`page_size` above
    `tasks`), so no Query falls inside an occurrence."""
    start = datetime(2031, 3, 3, 8, 0, 0, tzinfo=UTC)
    with (
        time_machine.travel(start, tick=False) as traveller,
        emulated_aws(pool_size=1, page_size=min(1000, tasks + 1)) as runtime,
    ):
        editor = Editor(runtime=runtime)
        registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
        ledger = Ledger(DynamoMeter(runtime.store), PutRuleCounter(runtime.rule.client))
        due = start + timedelta(days=1)
        payload = {"blob": "x" * payload_bytes}
        for i in range(tasks):
            editor.schedule_at("log", due + timedelta(seconds=i * 0.01), payload)
        ledger.charge("create")
        steps = {"claim": "other", "claimed": "claim", "completed": "completion"}

        def hook(step: str, _entry: QueueEntry) -> None:
            if step in steps:
                ledger.charge(steps[step])

        traveller.move_to(due + timedelta(seconds=tasks * 0.01 + 1))
        report = Worker(runtime, registry, owner="sweep", remaining_ms=300_000, hook=hook).run()
        assert report.results["succeeded"] == tasks, report
        ledger.charge("other")
    row: dict[str, Any] = {"payload_bytes": payload_bytes, "tasks": tasks}
    for part in ("create", "claim", "completion", "other"):
        spent = ledger.parts[part]
        row[f"wru_{part}"] = round(spent.wru / tasks, 2)
        row[f"rru_{part}"] = round(spent.rru / tasks, 2)
    row["requests_per_task"] = {
        part: {op: round(n / tasks, 2) for op, n in sorted(spent.requests.items())}
        for part, spent in ledger.parts.items()
    }
    return row


def putrule_per_task(tasks: int, order: str) -> dict[str, Any]:
    """PutRule calls while `tasks` creates arrive in `order` (random / ascending / descending)."""
    start = datetime(2031, 3, 3, 8, 0, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=False), emulated_aws() as runtime:
        editor = Editor(runtime=runtime)
        counter = PutRuleCounter(runtime.rule.client)
        offsets = list(range(tasks))
        if order == "random":
            random.Random(7).shuffle(offsets)
        elif order == "descending":
            offsets.reverse()
        for offset in offsets:
            editor.schedule_at("log", start + timedelta(minutes=10, seconds=offset * 3), {})
    return {"tasks": tasks, "order": order, "putrule_calls": counter.calls, "per_task": counter.calls / tasks}


def run(quick: bool) -> dict[str, Any]:
    n = 200 if quick else 1000
    return {
        # The second row starts each worker after its task was due: no early wake (bench/sparse.py
        # has the sparse task as billed); kept as the reference it was.
        "lifecycle": [lifecycle(n, n), lifecycle(n // 20 if quick else 30, 1)],
        "payload": [payload_sweep(n // 10, size) for size in PAYLOAD_BYTES],
        "putrule": [putrule_per_task(n, order) for order in ("random", "ascending", "descending")],
        "prices": {
            "wru_per_million": PRICE_WRU,
            "rru_per_million": PRICE_RRU,
            "wcu_hour": PRICE_WCU_HOUR,
            "rcu_hour": PRICE_RCU_HOUR,
            "lambda_gb_s": LAMBDA_GB_S,
            "worker_memory_gb": WORKER_MEMORY_GB,
            "worker_architecture": DEPLOYED.architecture,
            "provisioned_target_utilization": DEPLOYED.capacity_target_utilization,
            "eventbridge_scheduler_per_million": EVENTBRIDGE_SCHEDULER_PER_MILLION,
        },
    }
