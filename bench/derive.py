"""results.json's issue keys (backlog, lateness, burst, fanout, cost, monthly, waiting, local_load,
cold_start, idle) from each section's own figures, always in full: a figure no section measured is
null (a list, empty), and the report says why."""

from __future__ import annotations

from typing import Any

from bench.results import (
    BacklogRow,
    Burst,
    ColdStart,
    Cost,
    Derived,
    Fanout,
    FanoutRow,
    Idle,
    Lateness,
    LatenessBurst,
    LatenessMode,
    LocalLoad,
    MonthlyRow,
    Waiting,
)

# EventBridge bills nothing for the rule: its scheduled events are AWS-service events on the
# default bus (free), and PutRule is a control-plane call (free). Kept as a term so the all-in cost
# says so.
EVENTBRIDGE_RULE_USD_PER_MILLION = 0.0
# The load whose waiting per million tasks the issue bounds (bench/monthly.py's name for it).
PER_MINUTE_LOAD = "1/minute"

Section = dict[str, Any]


def _backlog(rows: list[Section] | None) -> list[BacklogRow]:
    return [
        {
            "pending": row["pending"],
            "ours_items_per_run": row["items_per_run"],
            "baseline_items_per_run": row["poc_items_per_run"],
            "ours_items_per_create": row["items_per_add"],
            "baseline_items_per_create": row["poc_items_per_add"],
        }
        for row in rows or []
    ]


def _lateness(section: Section | None) -> Lateness:
    section = section or {}

    def mode(name: str) -> LatenessMode:
        figures = section.get(name) or {}
        return {
            "n": figures.get("n"),
            "p50_s": figures.get("p50_s"),
            "p99_s": figures.get("p99_s"),
            "max_s": figures.get("max_s"),
            "early": figures.get("early"),
        }

    burst = section.get("burst") or {}
    burst_keys: LatenessBurst = {
        "tasks": burst.get("tasks"),
        "first_s": burst.get("first_s"),
        "last_s": burst.get("last_s"),
    }
    return {"second": mode("second"), "minute": mode("minute"), "burst": burst_keys}


def _burst(section: Section | None) -> Burst:
    section = section or {}
    if "sequential" in section:  # the shape before the latency model: traced memory, no RSS
        sequential = section["sequential"]
        same_size = [row for row in section["pooled"] if row["tasks"] == sequential["tasks"]]
        return {
            "tasks": sequential["tasks"],
            "latency_model_ms": None,
            "sequential_s": sequential["seconds"],
            "pooled_s": same_size[0]["seconds"] if same_size else None,
            "speedup": section["speedup"],
            "peak_rss_mb": None,
        }
    return {
        "tasks": section.get("tasks"),
        "latency_model_ms": section.get("latency_model_ms"),
        "sequential_s": section.get("sequential_s"),
        "pooled_s": section.get("pooled_s"),
        "speedup": section.get("speedup"),
        "peak_rss_mb": section.get("peak_rss_mb"),
    }


def _fanout_row(row: Section) -> FanoutRow:
    return {
        "invocations": row.get("invocations"),
        "drain_s": row.get("drain_s"),
        "fires_per_s": row.get("fires_per_s"),
        "conflicts_per_fire": row.get("conflicts_per_fire"),
        "duplicates": row.get("duplicates"),
    }


def _fanout(section: Section | None) -> Fanout:
    section = section or {}
    return {
        "tasks": section.get("tasks"),
        "rows": [_fanout_row(row) for row in section.get("rows") or []],
        "efficiency_at_4": section.get("efficiency_at_4"),
        "projected_aws_fires_per_s": section.get("projected_aws_fires_per_s"),
        "projected_aws_invocations": section.get("projected_aws_invocations"),
        "invocations_for_1000_fires_per_s": section.get("invocations_for_1000_fires_per_s"),
        # The most of its rows (1, 2, 4 invocations): what its projection divides a vCPU by.
        "worker_cpu_ms_per_fire": (section.get("projection") or {}).get("worker_cpu_ms_per_fire"),
    }


def dense_and_sparse(lifecycle: Section) -> tuple[Section, Section]:
    """The lifecycle row where one worker run handles every task, and the one with a run per task."""
    rows = lifecycle["lifecycle"]
    dense = max(rows, key=lambda row: row["tasks_per_run"])
    sparse = min(rows, key=lambda row: row["tasks_per_run"])
    return dense, sparse


def sparse_units(lifecycle: Section) -> tuple[float, float]:
    """RRU and WRU of a sparse task: the `second`-mode task from create to completion as billed
    (bench/sparse.py), or, in results from before it, the row whose worker started after the task
    was due."""
    billed = (lifecycle.get("sparse_billed") or {}).get("second")
    if billed:
        return billed["rru"], billed["wru"]
    _, sparse = dense_and_sparse(lifecycle)
    return sparse["rru_total"], sparse["wru_total"]


def _cost(lifecycle: Section | None) -> Cost:
    if not lifecycle:
        return {
            "wru_per_task": None,
            "rru_per_task": None,
            "rru_per_task_sparse": None,
            "wru_per_task_sparse": None,
            "putrule_per_task": None,
            "usd_per_million_on_demand": None,
            "usd_per_million_provisioned": None,
        }
    dense, _ = dense_and_sparse(lifecycle)
    sparse_rru, sparse_wru = sparse_units(lifecycle)
    putrule = {row["order"]: row["per_task"] for row in lifecycle["putrule"]}
    others = dense["usd_per_million_lambda_second_mode"] + EVENTBRIDGE_RULE_USD_PER_MILLION
    return {
        "wru_per_task": dense["wru_total"],
        "rru_per_task": dense["rru_total"],
        "rru_per_task_sparse": sparse_rru,
        "wru_per_task_sparse": sparse_wru,
        "putrule_per_task": putrule.get("random"),
        "usd_per_million_on_demand": round(dense["usd_per_million_dynamodb"] + others, 2),
        "usd_per_million_provisioned": round(dense["usd_per_million_dynamodb_provisioned"] + others, 2),
    }


def _monthly(section: Section | None) -> list[MonthlyRow]:
    return [
        {
            "load": row["load"],
            "precision": row["precision"],
            "tasks_per_month": row["tasks_per_month"],
            "usd_on_demand": row["usd"]["total_on_demand"],
            "usd_provisioned": row["usd"]["total_provisioned"],
            "usd_eventbridge_scheduler": row["usd"]["scheduler"],
            "usd_waiting": row["usd"].get("waiting"),
            "cheaper": row["cheaper"],
        }
        for row in (section or {}).get("rows") or []
    ]


def _waiting(section: Section | None) -> Waiting:
    rows = [
        r for r in (section or {}).get("rows") or [] if r["precision"] == "second" and "waiting" in r["usd"]
    ]
    by_load = {r["load"]: r["usd"]["waiting"] for r in rows}
    per_minute = next((r for r in rows if r["load"] == PER_MINUTE_LOAD), None)
    return {
        "second_usd_per_month": by_load,
        "second_usd_per_month_max": max(by_load.values(), default=None),
        "second_usd_per_million_1_per_minute": (
            round(per_minute["usd"]["waiting"] / per_minute["tasks_per_month"] * 1e6, 2)
            if per_minute
            else None
        ),
    }


def _local_load(load: Section | None, listing: Section | None) -> LocalLoad:
    load = load or {}
    return {
        "clients": load.get("clients"),
        "operations": load.get("operations"),
        "api_p99_s": load.get("api_p99_s"),
        "lateness_p99_s": load.get("lateness_p99_s"),
        "errors": load.get("errors"),
        "list_page_s": (listing or {}).get("list_page_s"),
    }


def _cold_start(section: Section | None) -> ColdStart:
    section = section or {}
    return {"asset_mb": section.get("asset_mb"), "import_ms_p50": section.get("import_ms_p50")}


def _idle(lateness: Section | None) -> Idle:
    per_mode = (lateness or {}).get("idle_cpu_percent_of_a_core")
    return {"cpu_percent": max(per_mode.values()) if per_mode else None}


def derive(detail: Section) -> Derived:
    """results.json's top-level keys from each section's own figures (`detail`)."""
    return {
        "backlog": _backlog(detail.get("backlog")),
        "lateness": _lateness(detail.get("lateness")),
        "burst": _burst(detail.get("burst")),
        "fanout": _fanout(detail.get("fanout")),
        "cost": _cost(detail.get("lifecycle")),
        "monthly": _monthly(detail.get("monthly")),
        "waiting": _waiting(detail.get("monthly")),
        "local_load": _local_load(detail.get("local_load"), detail.get("listing")),
        "cold_start": _cold_start(detail.get("cold_start")),
        "idle": _idle(detail.get("lateness")),
    }
