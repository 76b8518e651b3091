"""What results.json holds, typed: the issue's keys (derived from the sections' figures by
bench/derive.py), the run's facts, and each section's own figures under `detail`.

The keys the headline judges are typed here; `detail` stays each section's own mapping, since
every section writes its own shape (and older results keep older shapes, bench/derive.py reads
them).
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

RESULTS_FILE = "results.json"

LOCAL_STACK = (
    "local stack (`nexttick local` as a subprocess: moto_server, emulated EventBridge, Lambda runner)"
)
# Every section, and where its figures come from when its results do not name it.
DEFAULT_BACKENDS = {
    "backlog": "moto in-process",
    "lifecycle": "moto in-process",
    "monthly": "moto in-process",
    "burst": "moto in-process",
    "lateness": LOCAL_STACK,
    "startup": LOCAL_STACK,
    "keeper": LOCAL_STACK,
    "cold_start": "no AWS: handler imports in fresh local interpreters",
    "listing": "not stated by the section",
    "local_load": LOCAL_STACK,
    "fanout": "not stated by the section",
    "cpu": "DynamoDB stand-in without latency (own process); the worker handler in-process",
}


class BacklogRow(TypedDict):
    pending: int
    ours_items_per_run: int
    baseline_items_per_run: int | None  # the scan stops at 1e5 pending
    ours_items_per_create: int
    baseline_items_per_create: int | None


class LatenessMode(TypedDict):
    n: int | None
    p50_s: float | None
    p99_s: float | None
    max_s: float | None
    early: int | None


class LatenessBurst(TypedDict):
    tasks: int | None
    first_s: float | None
    last_s: float | None


class Lateness(TypedDict):
    second: LatenessMode
    minute: LatenessMode
    burst: LatenessBurst


class Burst(TypedDict):
    tasks: int | None
    latency_model_ms: dict[str, float] | None
    sequential_s: float | None
    pooled_s: float | None
    speedup: float | None
    peak_rss_mb: dict[str, float] | None  # burst size (a string, as JSON keys are) -> MB


class FanoutRow(TypedDict):
    invocations: int | None
    drain_s: float | None
    fires_per_s: float | None
    conflicts_per_fire: float | None
    duplicates: int | None


class Fanout(TypedDict):
    tasks: int | None
    rows: list[FanoutRow]
    efficiency_at_4: float | None
    projected_aws_fires_per_s: float | None
    projected_aws_invocations: int | None
    invocations_for_1000_fires_per_s: int | None
    worker_cpu_ms_per_fire: float | None


class Cost(TypedDict):
    wru_per_task: float | None
    rru_per_task: float | None
    rru_per_task_sparse: float | None
    wru_per_task_sparse: float | None
    putrule_per_task: float | None
    usd_per_million_on_demand: float | None
    usd_per_million_provisioned: float | None


class MonthlyRow(TypedDict):
    """One load in one precision: nexttick's month (USD) beside EventBridge Scheduler's, and the
    waiting's share of nexttick's (null in results from before the hand-over was billed)."""

    load: str
    precision: str
    tasks_per_month: int
    usd_on_demand: float
    usd_provisioned: float
    usd_eventbridge_scheduler: float
    usd_waiting: float | None
    cheaper: str


class Waiting(TypedDict):
    """What `second` precision's waiting costs (bench/bill.py): a month of each load, the most of
    them, and per million tasks at 1/minute."""

    second_usd_per_month: dict[str, float]  # load -> USD
    second_usd_per_month_max: float | None
    second_usd_per_million_1_per_minute: float | None


class LocalLoad(TypedDict):
    clients: int | None
    operations: int | None
    api_p99_s: float | None
    lateness_p99_s: float | None
    errors: int | None
    list_page_s: dict[str, float] | None  # tasks pending (a string) -> seconds


class ColdStart(TypedDict):
    asset_mb: float | None
    import_ms_p50: dict[str, dict[str, float]] | None  # handler -> {"source_only", "bytecode"} -> ms


class Idle(TypedDict):
    cpu_percent: float | None


class Derived(TypedDict):
    """results.json's issue keys, always in full: a figure no section measured is null."""

    backlog: list[BacklogRow]
    lateness: Lateness
    burst: Burst
    fanout: Fanout
    cost: Cost
    monthly: list[MonthlyRow]
    waiting: Waiting
    local_load: LocalLoad
    cold_start: ColdStart
    idle: Idle


class LatencyModel(TypedDict):
    ms: dict[str, float]
    basis: str


class Results(Derived):
    """The whole document. The run's facts are absent from results older than them."""

    detail: dict[str, Any]  # section -> its own figures
    command: NotRequired[str]
    date: NotRequired[str]
    quick: NotRequired[bool]
    machine: NotRequired[dict[str, Any]]
    measured: NotRequired[dict[str, str]]  # section -> when its figures were measured
    run_seconds: NotRequired[dict[str, float]]
    failed: NotRequired[dict[str, str]]  # section -> why its latest run gave no figures
    latency_model: NotRequired[LatencyModel]
    plots: NotRequired[dict[str, str]]  # figure -> PNG path relative to the report
