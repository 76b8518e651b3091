"""bench/report.py and bench/plots.py: results.json's keys derived from each section's figures,
the headline's verdicts, the report's "not measured" list, and the plots drawn from results alone."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, cast

import pytest

from bench import plots, report

ISSUE_KEYS = {
    "backlog": None,
    "lateness": {"second", "minute", "burst"},
    "burst": {"tasks", "latency_model_ms", "sequential_s", "pooled_s", "speedup", "peak_rss_mb"},
    "fanout": {
        "tasks",
        "rows",
        "efficiency_at_4",
        "projected_aws_fires_per_s",
        "projected_aws_invocations",
        "invocations_for_1000_fires_per_s",
        "worker_cpu_ms_per_fire",
    },
    "cost": {
        "wru_per_task",
        "rru_per_task",
        "rru_per_task_sparse",
        "wru_per_task_sparse",
        "putrule_per_task",
        "usd_per_million_on_demand",
        "usd_per_million_provisioned",
    },
    "monthly": None,
    "waiting": {"second_usd_per_month", "second_usd_per_month_max", "second_usd_per_million_1_per_minute"},
    "local_load": {"clients", "operations", "api_p99_s", "lateness_p99_s", "errors", "list_page_s"},
    "cold_start": {"asset_mb", "import_ms_p50"},
    "idle": {"cpu_percent"},
}


def _lifecycle() -> dict[str, Any]:
    def row(
        tasks: int, per_run: int, wru: float, rru: float, ddb: float, prov: float, lam: float
    ) -> dict[str, Any]:
        return {
            "tasks": tasks,
            "tasks_per_run": per_run,
            "wru_total": wru,
            "rru_total": rru,
            "usd_per_million_dynamodb": ddb,
            "usd_per_million_dynamodb_provisioned": prov,
            "usd_per_million_lambda_second_mode": lam,
        }

    return {
        "lifecycle": [
            row(1000, 1000, 5.0, 2.12, 3.39, 1.4, 0.47),
            row(100, 1, 7.02, 67.0, 12.76, 5.27, 466.87),
        ],
        "putrule": [
            {"tasks": 1000, "order": "random", "putrule_calls": 8, "per_task": 0.008},
            {"tasks": 1000, "order": "descending", "putrule_calls": 51, "per_task": 0.051},
        ],
        "prices": {
            "eventbridge_scheduler_per_million": 1.0,
            "worker_architecture": "arm64",
            "worker_memory_gb": 0.5,
        },
    }


def _monthly() -> dict[str, Any]:
    """Two loads: nexttick cheaper in one precision of the first, in neither of the second."""

    def row(
        load: str, precision: str, on_demand: float, scheduler: float, notes: list[str], waiting: float = 0.5
    ) -> dict[str, Any]:
        terms = {
            "dynamodb_on_demand": on_demand - 3.6,
            "dynamodb_provisioned": 2.81,
            "dynamodb_storage": 0.0,
            "lambda_worker": 0.0,
            "lambda_keeper": 0.0,
            "lambda_api": 0.0,
            "api_gateway": 0.0,
            "eventbridge": 0.0,
            "sqs": 0.0,
            "cloudwatch_logs": 0.0,
            "cloudwatch_metrics": 0.0,
            "cloudwatch_alarms_dashboards": 3.6,
        }
        usd = {
            **terms,
            "lambda": 0.0,
            "cloudwatch": 3.6,
            "total_on_demand": on_demand,
            "total_provisioned": 6.41,
            "waiting": waiting,
            "sqs_within_free_tier": 0.0,
            "scheduler": scheduler,
            "scheduler_without_free_tier": scheduler + 14.0,
        }
        return {
            "load": load,
            "precision": precision,
            "tasks_per_month": 20_000_000,
            "window": {"tasks": 10, "finished": 10, "simulated_s": 60.0, "run_s": 1.0},
            "measured": {"rru_per_task": 2.5, "wru_per_task": 3.0, "wakes_per_month": 43_200},
            "usd": usd,
            "cheaper": "nexttick" if min(on_demand, 6.41) < scheduler else "EventBridge Scheduler",
            "notes": notes,
        }

    return {
        "backend": "moto in-process",
        "month_days": 30,
        "deployment": {
            "worker_memory_mb": 512,
            "keeper_memory_mb": 256,
            "api_memory_mb": 512,
            "architecture": "arm64",
            "read_capacity": [5, 500],
            "write_capacity": [5, 500],
            "target_utilization": 0.7,
            "retention_days": 7,
            "alarms": 6,
            "dashboards": 1,
        },
        "rows": [
            row("1/second", "second", 9.0, 6.0, [], waiting=1.25),
            row("1/second", "minute", 5.0, 6.0, []),
            row("1/day", "second", 4.0, 0.0, ["creates exceed the throttle"]),
            row("1/day", "minute", 4.0, 0.0, ["creates exceed the throttle"]),
        ],
    }


def _lateness(samples: bool) -> dict[str, Any]:
    def mode(p99: float, max_s: float) -> dict[str, Any]:
        figures: dict[str, Any] = {
            "n": 4,
            "duplicates": 0,
            "early": 1,
            "p50_s": 0.002,
            "p90_s": 0.01,
            "p99_s": p99,
            "max_s": max_s,
        }
        if samples:
            figures[plots.SAMPLES_KEY] = [-0.01, 0.002, 0.01, max_s]
        return figures

    return {
        "schedule": "4 tasks over 10 s",
        "idle_cpu_percent_of_a_core": {"second": 0.15, "minute": 0.4},
        "second": mode(0.1, 0.12),
        "minute": mode(12.0, 17.0),
        "burst": {"tasks": 100, "first_s": 0.3, "last_s": 2.0},
    }


def _detail(samples: bool = True) -> dict[str, Any]:
    return {
        "backlog": [
            {
                "pending": n,
                "due_now": 10,
                "items_per_add": 2,
                "items_per_run": 55,
                "poc_items_per_add": n,
                "poc_items_per_run": n,
                "reduction_add": n / 2,
                "reduction_run": n / 55,
            }
            for n in (1_000, 10_000, 100_000)
        ],
        "lifecycle": _lifecycle(),
        "monthly": _monthly(),
        "burst": {
            "tasks": 5000,
            "latency_model_ms": {"GetItem": 4.0, "Query": 6.0},
            "backend": "moto_server",
            "sequential_s": 300.0,
            "pooled_s": 12.0,
            "speedup": 25.0,
            "pool_size": 32,
            "peak_rss_mb": {"1000": 80.0, "5000": 84.0},
            "raw": {"backend": "moto in-process", "sequential_s": 100.0, "pooled_s": 60.0, "speedup": 1.7},
        },
        "fanout": {
            "tasks": 2000,
            "backend": "stand-in",
            "rows": [
                {
                    "invocations": n,
                    "drain_s": 40.0 / n,
                    "fires_per_s": 50.0 * n,
                    "conflicts_per_fire": 0.1,
                    "duplicates": 0,
                    "lost": 0,
                }
                for n in (1, 2, 4)
            ],
            "efficiency_at_4": 0.9,
            "projected_aws_fires_per_s": 400.0,
            "projection": {"shards": 16},
            "io_bound": {
                "tasks": 100,
                "pool_size": 2,
                "rows": [{"invocations": n, "drain_s": 10.0 / n, "duplicates": 0} for n in (1, 2, 4)],
                "efficiency_at_4": 0.95,
            },
        },
        "lateness": _lateness(samples),
        "listing": {
            "list_page_s": {"0": 0.01, "1000": 0.02, "100000": 0.02},
            "items_read_per_page": {"0": 0, "1000": 55, "100000": 55},
            "items_read_bound": 56,
            "limit": 20,
        },
        "local_load": {
            "clients": 20,
            "operations": 100,
            "api_p50_s": 0.01,
            "api_p99_s": 0.2,
            "api_max_s": 0.4,
            "errors": 0,
            "lateness_p50_s": 0.01,
            "lateness_p99_s": 0.3,
            "tasks_fired": 900,
            "backend": "local stack",
        },
        "cold_start": {
            "asset_mb": 37.3,
            "import_ms_p50": {"worker": {"source_only": 638.4, "bytecode": 261.6}},
        },
    }


def _results(detail: dict[str, Any]) -> report.Results:
    return {
        **report.derive(detail),
        "command": "python -m bench.run",
        "date": "2026-11-24T12:00:00+00:00",
        "quick": False,
        "machine": {"python": "3.11.7", "cpus": 2, "system": "Linux"},
        "measured": dict.fromkeys(detail, "2026-11-24T12:00:00+00:00"),
        "failed": {},
        "latency_model": {"ms": {"GetItem": 4.0}, "basis": "Measured round trips."},
        "detail": detail,
    }


def test_derive_gives_every_issue_key_with_its_exact_inner_keys() -> None:
    # Given every section's figures / When deriving results.json's keys
    derived = report.derive(_detail())
    # Then each issue key is there with exactly its inner keys
    assert set(derived) == set(ISSUE_KEYS)
    by_key = cast(dict[str, Any], derived)
    for key, inner in ISSUE_KEYS.items():
        if inner is not None:
            assert set(by_key[key]) == inner, key
    assert set(derived["backlog"][0]) == {
        "pending",
        "ours_items_per_run",
        "baseline_items_per_run",
        "ours_items_per_create",
        "baseline_items_per_create",
    }
    assert set(derived["lateness"]["second"]) == {"n", "p50_s", "p99_s", "max_s", "early"}
    assert set(derived["lateness"]["burst"]) == {"tasks", "first_s", "last_s"}
    assert set(derived["fanout"]["rows"][0]) == {
        "invocations",
        "drain_s",
        "fires_per_s",
        "conflicts_per_fire",
        "duplicates",
    }


def test_derive_takes_cost_from_the_dense_and_sparse_lifecycles_all_in() -> None:
    cost = report.derive(_detail())["cost"]
    # Dense: one run for the 1,000 tasks; sparse: a run per task; PutRule: creates in random order.
    assert (cost["wru_per_task"], cost["rru_per_task"], cost["rru_per_task_sparse"]) == (5.0, 2.12, 67.0)
    assert cost["putrule_per_task"] == 0.008
    # All-in: DynamoDB + the worker Lambda + EventBridge (which bills the rule nothing).
    assert cost["usd_per_million_on_demand"] == round(3.39 + 0.47, 2)
    assert cost["usd_per_million_provisioned"] == round(1.4 + 0.47, 2)


def test_derive_takes_each_months_totals_and_verdict_from_the_monthly_rows() -> None:
    monthly = report.derive(_detail())["monthly"]
    assert [(row["load"], row["precision"], row["cheaper"]) for row in monthly] == [
        ("1/second", "second", "EventBridge Scheduler"),
        ("1/second", "minute", "nexttick"),
        ("1/day", "second", "EventBridge Scheduler"),
        ("1/day", "minute", "EventBridge Scheduler"),
    ]
    assert monthly[1] == {
        "load": "1/second",
        "precision": "minute",
        "tasks_per_month": 20_000_000,
        "usd_on_demand": 5.0,
        "usd_provisioned": 6.41,
        "usd_eventbridge_scheduler": 6.0,
        "usd_waiting": 0.5,
        "cheaper": "nexttick",
    }


def test_derive_takes_the_waiting_of_second_precision_from_the_monthly_rows() -> None:
    detail = _detail()
    # Given months where `second` precision's waiting costs $1.25 at 1/second and $0.50 at 1/day
    waiting = report.derive(detail)["waiting"]
    # Then the most of them is the 1/second one's, and no load is a task a minute
    assert waiting == {
        "second_usd_per_month": {"1/second": 1.25, "1/day": 0.5},
        "second_usd_per_month_max": 1.25,
        "second_usd_per_million_1_per_minute": None,
    }
    # When the second load is a task a minute (43,200 a month) instead
    for row in detail["monthly"]["rows"]:
        if row["load"] == "1/day":
            row["load"], row["tasks_per_month"] = "1/minute", 43_200
    # Then its waiting per million tasks is its month's over its tasks
    assert report.derive(detail)["waiting"]["second_usd_per_million_1_per_minute"] == round(0.5 / 0.0432, 2)
    # And results from before the waiting was billed have none
    for row in detail["monthly"]["rows"]:
        del row["usd"]["waiting"]
    assert report.derive(detail)["waiting"]["second_usd_per_month_max"] is None


def test_the_monthly_bill_says_per_load_where_nexttick_is_cheaper_and_where_not(tmp_path: Path) -> None:
    # Given monthly figures where nexttick wins one precision of one load and neither of another
    text = report.write(_results(_detail()), tmp_path).read_text()
    section = text.split("## Monthly bill")[1].split("\n## ")[0]
    # Then its table has every row, and a sentence per load says which is cheaper, from the figures
    bill_row = "| 1/second | minute | $1.40 | $2.81 | $0.00 | $0.00 | $0.00 | $3.60 | $0.00 | $0.00 | $5.00 |"
    assert f"{bill_row} $6.41 | $0.50 | $6.00 | nexttick |" in section
    assert section.count("| EventBridge Scheduler |\n") == 3
    assert (
        "**1/second** (20,000,000 tasks a month): nexttick is cheaper in `minute` precision only. "
        "nexttick: $6.41 (provisioned) in `second`, $5.00 (on demand) in `minute`" in section
    )
    assert "EventBridge Scheduler: $6.00 ($20.00 without its free tier)." in section
    assert (
        "**1/day** (20,000,000 tasks a month): EventBridge Scheduler is cheaper in both precisions" in section
    )
    assert "its largest term is the alarms and the dashboard (up to $3.60)" in section
    assert "Beyond the stack's defaults: creates exceed the throttle." in section


def test_derive_of_nothing_is_every_key_null() -> None:
    derived = report.derive({})
    assert derived["backlog"] == [] and derived["fanout"]["rows"] == [] and derived["monthly"] == []
    assert derived["idle"] == {"cpu_percent": None}
    assert derived["waiting"] == {
        "second_usd_per_month": {},
        "second_usd_per_month_max": None,
        "second_usd_per_million_1_per_minute": None,
    }
    assert all(v is None for v in derived["cost"].values())
    assert all(v is None for v in derived["local_load"].values())


def test_derive_reads_the_older_burst_shape() -> None:
    old = {
        "sequential": {"tasks": 1000, "pool_size": 1, "seconds": 115.0},
        "pooled": [
            {"tasks": 1000, "pool_size": 32, "seconds": 65.0},
            {"tasks": 5000, "pool_size": 32, "seconds": 331.0},
        ],
        "speedup": 1.7,
    }
    burst = report.derive({"burst": old})["burst"]
    assert burst == {
        "tasks": 1000,
        "latency_model_ms": None,
        "sequential_s": 115.0,
        "pooled_s": 65.0,
        "speedup": 1.7,
        "peak_rss_mb": None,
    }


def test_idle_is_the_busier_precision_and_local_load_joins_listing() -> None:
    derived = report.derive(_detail())
    assert derived["idle"]["cpu_percent"] == 0.4
    assert derived["local_load"]["list_page_s"] == {"0": 0.01, "1000": 0.02, "100000": 0.02}
    assert derived["local_load"]["api_p99_s"] == 0.2 and derived["local_load"]["errors"] == 0


def test_headline_verdicts() -> None:
    rows = {row["what"]: row["status"] for row in report.headline(_results(_detail()))}
    assert rows["items read per worker run against backlog 1e3 → 1e6 pending"] == report.MET
    # an early delivery among 4 (the target: none early among >= 200)
    assert rows["lateness (start - due), local stack, default EventBridge emulation"] == report.NOT_MET
    assert (
        rows["burst: 1,000 tasks due at one instant, 50 ms I/O action, under the latency model"] == report.MET
    )
    assert rows["burst: worker peak RSS growth during the run against burst size"] == report.MET
    dense = "DynamoDB units per one-shot task lifecycle (dense: 1,000 per worker run)"
    assert rows[dense] == report.NOT_MET  # 5 WRU > 3
    assert rows["idle local stack CPU (the busier of the two precisions)"] == report.MET
    # And each target not met says why
    missed = report.shortfalls(_results(_detail()))
    assert any(line.startswith(f"**{dense}**") and "Why: a one-shot task created" in line for line in missed)


def test_the_local_burst_is_judged_at_1000_tasks_and_cpu_per_fire_by_the_fan_outs_most() -> None:
    detail = _detail()
    local_burst = "burst in the local stack: 1,000 tasks due at one instant, `second` mode"
    cpu = "worker CPU per fire, deployed pool (the most of the fan-out's 1, 2, 4 invocations)"

    def status(what: str) -> str:
        return {row["what"]: row["status"] for row in report.headline(_results(detail))}[what]

    # A burst smaller than the target's is not measured; at 1,000 its last start is judged
    assert status(local_burst) == report.NOT_MEASURED
    detail["lateness"]["burst"] = {"tasks": 1000, "first_s": 0.1, "last_s": 5.5}
    assert status(local_burst) == report.NOT_MET
    detail["lateness"]["burst"]["last_s"] = 4.9
    assert status(local_burst) == report.MET
    # CPU per fire is the fan-out projection's figure: the most of its rows
    assert status(cpu) == report.NOT_MEASURED
    detail["fanout"]["projection"] = {"worker_cpu_ms_per_fire": 2.3}
    assert status(cpu) == report.NOT_MET
    detail["fanout"]["projection"] = {"worker_cpu_ms_per_fire": 1.9}
    assert status(cpu) == report.MET


def test_headline_says_not_measured_below_the_target_size() -> None:
    detail = _detail()
    detail["backlog"] = detail["backlog"][:2]  # a quick run stops at 10,000 pending
    rows = {row["what"]: row["status"] for row in report.headline(_results(detail))}
    assert rows["items read per worker run against backlog 1e3 → 1e6 pending"] == report.NOT_MEASURED


def test_the_backlog_beyond_the_scans_reach_is_judged_flat_against_the_last_scan(tmp_path: Path) -> None:
    # Given a 1e6 row without the baseline's scan (measured up to 1e5)
    detail = _detail()
    detail["backlog"].append(
        {**detail["backlog"][-1], "pending": 1_000_000, "poc_items_per_add": None, "poc_items_per_run": None}
    )
    results = _results(detail)
    row = next(r for r in report.headline(results) if r["what"].startswith("items read per worker run"))
    # Then the ratio is the last scan's, and the verdict holds over every row
    assert row["status"] == report.MET and "scan 100,000 at 100,000" in row["measured"], row
    detail["backlog"][-1]["items_per_run"] = 200  # no longer flat at 1e6
    assert (
        next(
            r for r in report.headline(_results(detail)) if r["what"].startswith("items read per worker run")
        )["status"]
        == report.NOT_MET
    )
    # And the plot is drawn from the measured points
    assert "backlog" in plots.write_all(copy.deepcopy(results), tmp_path)


def test_the_bench_run_time_is_judged_only_when_every_section_has_one() -> None:
    def verdict(run_seconds: dict[str, float]) -> str:
        results = _results(_detail())
        results["run_seconds"] = run_seconds
        return next(r for r in report.headline(results) if r["what"].startswith("`make bench`"))["status"]

    every = dict.fromkeys(report.DEFAULT_BACKENDS, 100.0)  # 10 sections: 16.7 minutes
    assert verdict(every) == report.MET
    assert verdict({**every, "fanout": 1000.0}) == report.NOT_MET  # 31.7 minutes
    assert verdict({"fanout": 100.0}) == report.NOT_MEASURED  # the other sections never ran


def test_report_names_each_command_backend_and_what_was_not_measured(tmp_path: Path) -> None:
    detail = _detail(samples=False)
    del detail["listing"], detail["local_load"]
    results = _results(detail)
    results["failed"] = {"listing": "its latest run failed (RuntimeError: boom)"}
    text = report.write(results, tmp_path).read_text()
    for section in ("backlog", "lifecycle", "monthly", "burst", "fanout", "lateness", "cold_start"):
        assert f"Command: `python -m bench.run --only {section}`" in text
    assert "Backend: moto_server." in text and "Backend: stand-in." in text
    assert "| GetItem | 4 |" in text and "Measured round trips." in text
    not_measured = text.split("## Not measured, and why")[1]
    assert "Section `listing`: its latest run failed (RuntimeError: boom)" in not_measured
    assert "Section `local_load`: not run for these results" in not_measured
    assert "records percentiles only" in not_measured


@pytest.mark.parametrize("samples", [True, False])
def test_plots_are_drawn_from_the_results_alone(tmp_path: Path, samples: bool) -> None:
    results = _results(_detail(samples))
    written = plots.write_all(copy.deepcopy(results), tmp_path / "a")
    again = plots.write_all(copy.deepcopy(results), tmp_path / "b")
    assert set(written) == {"lateness", "backlog", "fanout"}
    for name, rel in written.items():
        first, second = (tmp_path / "a" / rel).read_bytes(), (tmp_path / "b" / again[name]).read_bytes()
        assert first.startswith(b"\x89PNG") and first == second, name


def test_a_figure_without_its_data_is_not_drawn_and_a_stale_one_goes(tmp_path: Path) -> None:
    plots.write_all(_results(_detail()), tmp_path)
    detail = _detail()
    del detail["fanout"]
    written = plots.write_all(_results(detail), tmp_path)
    assert "fanout" not in written
    assert not (tmp_path / plots.PLOTS_DIR / "fanout.png").exists()
