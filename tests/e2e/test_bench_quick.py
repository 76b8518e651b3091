"""`make bench-quick` cannot rot: `python -m bench.run --quick` runs as `make bench` runs it (a
subprocess, the real sections at small sizes) into a temporary directory, and writes results.json
with every key of the performance issue, REPORT.md, and the plots of the sections it ran.

Only the sections in QUICK_SECTIONS run here (about three minutes), to keep `make test` short; the
others (lateness, the local stack under load, start-up and cold start take minutes even when small)
run with `make bench-quick`. Every plot and
report section is also drawn from made-up results in tests/unit/test_bench_report.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
QUICK_SECTIONS = ("backlog", "lifecycle", "monthly", "burst", "fanout", "listing", "keeper")
ISSUE_KEYS = {
    "backlog",
    "lateness",
    "burst",
    "fanout",
    "cost",
    "monthly",
    "waiting",
    "local_load",
    "cold_start",
    "idle",
}
MONTHLY_LOADS = ("1/day", "1/minute", "1/second", "100/second", "daily burst of 100,000")

pytestmark = [pytest.mark.xdist_group("bench-quick"), pytest.mark.slow]


def test_bench_quick_writes_results_report_and_plots(tmp_path: Path) -> None:
    # Given an empty output directory
    out = tmp_path / "bench"
    # When the quick bench runs some sections into it
    command = [
        sys.executable,
        "-m",
        "bench.run",
        "--quick",
        "--only",
        ",".join(QUICK_SECTIONS),
        "--out",
        str(out),
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    # And it shows its progress, not the metric lines of the workers it runs in-process
    assert "bench: [1/" in done.stderr and '"_aws"' not in done.stdout + done.stderr
    # Then results.json holds every issue key, those sections' figures in full
    results = json.loads((out / "results.json").read_text())
    assert set(results) >= ISSUE_KEYS
    assert [row["pending"] for row in results["backlog"]] == [1_000, 10_000]
    assert all(row["ours_items_per_run"] < row["baseline_items_per_run"] for row in results["backlog"])
    assert set(results["detail"]) == set(QUICK_SECTIONS) and results["quick"] is True
    # And the sections run filled their keys: exactly-once fan-out, units per task, a burst speed-up
    fanout = results["fanout"]
    assert [row["invocations"] for row in fanout["rows"]] == [1, 2]
    assert all(row["duplicates"] == 0 for row in fanout["rows"]), fanout
    assert fanout["projected_aws_fires_per_s"] > 0
    assert results["cost"]["wru_per_task"] > 0 and results["cost"]["rru_per_task_sparse"] > 0
    assert results["burst"]["speedup"] > 1 and set(results["burst"]["peak_rss_mb"]) == {"50", "200"}
    assert set(results["local_load"]["list_page_s"]) == {"0", "100", "1000"}
    # And the monthly bill has the five loads in both precisions, EventBridge Scheduler beside each
    monthly = results["monthly"]
    assert [(row["load"], row["precision"]) for row in monthly] == [
        (load, precision) for load in MONTHLY_LOADS for precision in ("second", "minute")
    ]
    assert all(row["usd_on_demand"] > 0 and row["usd_provisioned"] > 0 for row in monthly), monthly
    # (within its free tier of 14 million a month but at 100/second)
    assert [row["usd_eventbridge_scheduler"] > 0 for row in monthly] == [
        row["load"] == "100/second" for row in monthly
    ]
    # (and `second` precision's waiting, each load's and per million tasks at 1/minute)
    waiting = results["waiting"]
    assert set(waiting["second_usd_per_month"]) == set(MONTHLY_LOADS)
    assert waiting["second_usd_per_month_max"] > 0 and waiting["second_usd_per_million_1_per_minute"] > 0
    # (every task of each window ran; a steady one may reach one past its end by claiming ahead)
    windows = [row["window"] for row in results["detail"]["monthly"]["rows"]]
    assert all(w["tasks"] <= w["finished"] <= w["tasks"] + 1 for w in windows), windows
    # And the sections not run are null, and the report says so
    assert results["idle"]["cpu_percent"] is None and results["cold_start"]["asset_mb"] is None
    report = (out / "REPORT.md").read_text()
    assert "## Headline: targets against measurements" in report
    for section in QUICK_SECTIONS:
        assert f"Command: `python -m bench.run --quick --only {section}`" in report
    assert "Section `lateness`: not run for these results" in report.split("## Not measured, and why")[1]
    # And the plots of the sections run are PNGs beside the report, linked from it
    assert set(results["plots"]) == {"backlog", "fanout"}, results["plots"]
    for name, path in results["plots"].items():
        assert (out / path).read_bytes().startswith(b"\x89PNG"), name
        assert f"]({path})" in report
