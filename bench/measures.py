"""What the headline's targets read from results.json: the figures they compare (where a figure is
computed from several keys rather than read from one) and how each row's measurement reads.

A figure is None when the results do not hold it: the target is then not measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from bench import localload
from bench.markdown import cell, number, span
from bench.results import DEFAULT_BACKENDS, Results

Ours = Literal["ours_items_per_run", "ours_items_per_create"]
Theirs = Literal["baseline_items_per_run", "baseline_items_per_create"]
# A figure a target compares (None: not in these results), and how a row's measurement reads.
Figure = Callable[[Results], float | None]
Measured = Callable[[Results], str]


# --- backlog --------------------------------------------------------------------------------------


def _scanned(results: Results, theirs: Theirs) -> int | None:
    """The largest backlog the baseline's scan was measured at (it stops at 1e5), as a row index."""
    rows = results["backlog"]
    scanned = [i for i, row in enumerate(rows) if row[theirs] is not None]
    return scanned[-1] if scanned else None


def backlog_scan_size(theirs: Theirs) -> Figure:
    def figure(results: Results) -> float | None:
        i = _scanned(results, theirs)
        return None if i is None else results["backlog"][i]["pending"]

    return figure


def backlog_growth(ours: Ours) -> Figure:
    """The most items read at any backlog, against the smallest backlog's (at least 1)."""

    def figure(results: Results) -> float | None:
        rows = results["backlog"]
        return max(row[ours] for row in rows) / max(rows[0][ours], 1) if rows else None

    return figure


def backlog_fewer(ours: Ours, theirs: Theirs) -> Figure:
    """How many times fewer items than the scan, at the largest backlog the scan was measured at."""

    def figure(results: Results) -> float | None:
        i = _scanned(results, theirs)
        if i is None:
            return None
        row = results["backlog"][i]
        return (row[theirs] or 0) / max(row[ours], 1)

    return figure


def backlog_measured(ours: Ours, theirs: Theirs) -> Measured:
    def measured(results: Results) -> str:
        rows, i = results["backlog"], _scanned(results, theirs)
        if not rows or i is None:
            return "—"
        first, last, scanned = rows[0], rows[-1], rows[i]
        fewer = backlog_fewer(ours, theirs)(results)
        return (
            f"{cell(first[ours])} → {cell(last[ours])} at {cell(first['pending'])} → "
            f"{cell(last['pending'])}; scan {cell(scanned[theirs])} at {cell(scanned['pending'])} "
            f"({fewer:,.0f}x fewer)"
        )

    return measured


# --- lateness, burst, cost, idle ------------------------------------------------------------------


def lateness_anchor(results: Results) -> str:
    minute = results["lateness"]["minute"]
    return (
        "EventBridge Scheduler: 60 s window; Sidekiq: ~5 s poll; "
        f"`minute` mode here: p99 {number(minute['p99_s'], ' s')}, max {number(minute['max_s'], ' s')}"
    )


def lateness_measured(results: Results) -> str:
    second = results["lateness"]["second"]
    return (
        f"p99 {number(second['p99_s'], ' s')}, max {number(second['max_s'], ' s')}, "
        f"{number(second['early'])} early of {number(second['n'])}"
    )


def burst_measured(results: Results) -> str:
    b = results["burst"]
    return (
        f"{number(b['speedup'], 'x')} at {number(b['tasks'])} tasks "
        f"(sequential {number(b['sequential_s'], ' s')}, pooled {number(b['pooled_s'], ' s')})"
    )


def _rss_ends(results: Results) -> tuple[str, str] | None:
    """The smallest and the largest burst size with a peak RSS figure (None: fewer than two)."""
    sizes = sorted(results["burst"]["peak_rss_mb"] or {}, key=int)
    return (sizes[0], sizes[-1]) if len(sizes) >= 2 else None


def rss_smallest_size(results: Results) -> float | None:
    ends = _rss_ends(results)
    return None if ends is None else int(ends[0])


def rss_largest_size(results: Results) -> float | None:
    ends = _rss_ends(results)
    return None if ends is None else int(ends[1])


def rss_ratio(results: Results) -> float | None:
    """The largest burst's peak RSS growth over the smallest's."""
    ends, rss = _rss_ends(results), results["burst"]["peak_rss_mb"] or {}
    if ends is None:
        return None
    small, large = rss[ends[0]], rss[ends[1]]
    if small > 0:
        return large / small
    return math.inf if large > 0 else 1.0


def rss_growth(results: Results) -> float | None:
    """The largest burst's peak RSS growth less the smallest's, MB."""
    ends, rss = _rss_ends(results), results["burst"]["peak_rss_mb"] or {}
    return None if ends is None else rss[ends[1]] - rss[ends[0]]


def rss_measured(results: Results) -> str:
    rss = results["burst"]["peak_rss_mb"] or {}
    return " → ".join(f"{cell(rss[s])} MB at {int(s):,}" for s in sorted(rss, key=int)) or "—"


def dense_units_measured(results: Results) -> str:
    c = results["cost"]
    return f"{number(c['wru_per_task'])} WRU + {number(c['rru_per_task'])} RRU"


def sparse_units_measured(results: Results) -> str:
    c = results["cost"]
    return f"{number(c['rru_per_task_sparse'])} RRU + {number(c['wru_per_task_sparse'])} WRU"


def putrule_measured(results: Results) -> str:
    return number(results["cost"]["putrule_per_task"])


def usd_measured(results: Results) -> str:
    c = results["cost"]
    return (
        f"${number(c['usd_per_million_provisioned'])} provisioned, "
        f"${number(c['usd_per_million_on_demand'])} on demand"
    )


def waiting_measured(results: Results) -> str:
    """The most a month of `second` precision's waiting costs over the loads, and at which."""
    w = results.get("waiting") or {}
    by_load = w.get("second_usd_per_month") or {}
    if not by_load:
        return "—"
    busiest = max(by_load, key=by_load.__getitem__)
    least = min(by_load, key=by_load.__getitem__)
    return f"${by_load[busiest]:,.2f} a month at {busiest} (${by_load[least]:,.2f} at {least})"


def waiting_per_million_measured(results: Results) -> str:
    value = (results.get("waiting") or {}).get("second_usd_per_million_1_per_minute")
    return "—" if value is None else f"${value:,.2f} per million"


def idle_measured(results: Results) -> str:
    return number(results["idle"]["cpu_percent"], " %")


# --- fan-out ---------------------------------------------------------------------------------------


def fanout_tasks(results: Results) -> float | None:
    """The burst's size, when the section drained it."""
    f = results["fanout"]
    return f["tasks"] if f["rows"] else None


def _lost(results: Results) -> int:
    return sum(r.get("lost") or 0 for r in (results["detail"].get("fanout") or {}).get("rows", []))


def fanout_duplicated_or_lost(results: Results) -> float | None:
    rows = results["fanout"]["rows"]
    return sum(r["duplicates"] or 0 for r in rows) + _lost(results) if rows else None


def fanout_lost_claims(results: Results) -> float | None:
    """Lost claims per fire, the most of any row."""
    return max((r["conflicts_per_fire"] or 0 for r in results["fanout"]["rows"]), default=None)


def fanout_what(results: Results, full_size: int) -> str:
    f = results["fanout"]
    counts = ", ".join(str(r["invocations"]) for r in f["rows"]) or "1, 2, 4"
    return (
        f"fan-out: a burst of {f['tasks'] or full_size:,} tasks due at once, drained by "
        f"{counts} concurrent invocations"
    )


def fanout_measured(results: Results) -> str:
    rows = results["fanout"]["rows"]
    if not rows:
        return "—"
    drains = span({str(r["invocations"]): r["drain_s"] for r in rows}, " s")
    return (
        f"drain {drains} invocations; duplicates {sum(r['duplicates'] or 0 for r in rows)}, "
        f"lost {_lost(results)}, lost claims per fire ≤ {number(fanout_lost_claims(results))}"
    )


def efficiency_measured(results: Results) -> str:
    f = results["fanout"]
    io_bound = (results["detail"].get("fanout") or {}).get("io_bound") or {}
    if not f["rows"]:
        return "—"
    return f"{number(f['efficiency_at_4'])} (pool 32); {number(io_bound.get('efficiency_at_4'))} (pool 2)"


def worker_cpu_measured(results: Results) -> str:
    rows = (results["detail"].get("fanout") or {}).get("rows") or []
    by_invocations = " → ".join(number(r.get("worker_cpu_ms_per_fire")) for r in rows)
    alone = (results["detail"].get("cpu") or {}).get("worker_cpu_ms_per_fire")
    return (
        f"{number(results['fanout']['worker_cpu_ms_per_fire'], ' ms')} (fan-out: {by_invocations} ms at "
        f"{' → '.join(str(r.get('invocations')) for r in rows)} invocations); "
        f"{number(alone, ' ms')} with the stand-in in its own process (cpu section)"
    )


def local_burst_measured(results: Results) -> str:
    b = results["lateness"]["burst"]
    return (
        f"{number(b['tasks'])} tasks: first starts {number(b['first_s'], ' s')} late, "
        f"last {number(b['last_s'], ' s')}"
    )


def projected_measured(results: Results) -> str:
    f = results["fanout"]
    needed = f.get("invocations_for_1000_fires_per_s")
    return (
        f"{number(f['projected_aws_fires_per_s'])} at "
        f"{number(f.get('projected_aws_invocations'))} invocations"
        + (f" (1,000 needs {needed})" if needed else "")
    )


# --- the local stack, cold start, the bench's own run time -----------------------------------------


def list_page_smallest(results: Results) -> float | None:
    """The smallest backlog a list page was timed against."""
    pages = results["local_load"]["list_page_s"]
    return min(int(n) for n in pages) if pages else None


def list_page_largest(results: Results) -> float | None:
    pages = results["local_load"]["list_page_s"]
    return max(int(n) for n in pages) if pages else None


def list_page_slowest(results: Results) -> float | None:
    pages = results["local_load"]["list_page_s"]
    return max(pages.values()) if pages else None


def list_page_measured(results: Results) -> str:
    pages = results["local_load"]["list_page_s"]
    if not pages:
        return "—"
    listing = results["detail"].get("listing") or {}
    return f"{span(pages, ' s')} pending; items read {span(listing.get('items_read_per_page'))}"


def load_what(results: Results) -> str:
    """The load's size as measured, else the full run's (localload.SIZES)."""
    load = results["local_load"]
    clients, per_client = localload.SIZES[False]
    if load["clients"] and load["operations"] is not None:
        clients, per_client = load["clients"], load["operations"] // load["clients"]
    return f"local stack: {number(clients)} concurrent clients x {number(per_client)} mixed operations"


def load_measured(results: Results) -> str:
    load = results["local_load"]
    if load["clients"] is None:
        return "—"
    return (
        f"{number(load['clients'])} clients, {number(load['operations'])} requests: API p99 "
        f"{number(load['api_p99_s'], ' s')}, lateness p99 {number(load['lateness_p99_s'], ' s')}, "
        f"errors {number(load['errors'])}"
    )


def _bytecode_imports(results: Results) -> dict[str, float | None]:
    """Handler -> median import ms with the shipped bytecode (what the deployed asset ships, so
    the figure judged)."""
    return {name: ms.get("bytecode") for name, ms in (results["cold_start"]["import_ms_p50"] or {}).items()}


def slowest_import(results: Results) -> float | None:
    return max((ms for ms in _bytecode_imports(results).values() if ms is not None), default=None)


def cold_start_measured(results: Results) -> str:
    cs = results["cold_start"]
    if cs["asset_mb"] is None:
        return "—"
    imports = sorted(_bytecode_imports(results).items())
    return f"{number(cs['asset_mb'], ' MB')} asset; " + ", ".join(
        f"{name} {number(ms)} ms" for name, ms in imports
    )


def bench_seconds(results: Results) -> float | None:
    """`make bench` end to end: the sum of every section's latest run time (sections may be re-run
    alone, so no single run's wall time covers them all); None while a section has none, or for a
    quick run."""
    times = results.get("run_seconds") or {}
    if not set(DEFAULT_BACKENDS) <= set(times) or results.get("quick"):
        return None
    return sum(times.values())


def bench_time_measured(results: Results) -> str:
    times = results.get("run_seconds") or {}
    return f"{sum(times.values()) / 60:.0f} min (sum of the sections' latest run times)" if times else "—"
