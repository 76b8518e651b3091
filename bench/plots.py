"""The report's figures, drawn from results.json alone (one function per figure), so the same
results always give the same PNGs and `make bench-quick` draws every one of them.

Each function returns False, writing nothing, when the results do not hold its figures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display, before pyplot is imported

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

PLOTS_DIR = "plots"
MODES = ("second", "minute")
LATENESS_PERCENTILES = ("p50_s", "p90_s", "p99_s", "max_s")
# Per-task lateness samples (seconds) under detail.lateness.<mode>, when bench.lateness records them.
SAMPLES_KEY = "samples_s"


def _save(figure: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    # No "Software" chunk: the PNG depends on the results, not on the matplotlib build.
    figure.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(figure)


def lateness(results: Mapping[str, Any], path: Path) -> bool:
    """Lateness of `second` and `minute` precision: a histogram of the per-task samples when the
    results hold them, else the recorded percentiles (p50, p90, p99, max) side by side."""
    detail = results.get("detail", {}).get("lateness")
    if not detail or not all(mode in detail for mode in MODES):
        return False
    figure, axes = plt.subplots(figsize=(7, 4))
    if all(SAMPLES_KEY in detail[mode] for mode in MODES):
        floor = 1e-3  # on a log axis: deliveries on time or early are drawn at 1 ms
        samples = {mode: [max(float(x), floor) for x in detail[mode][SAMPLES_KEY]] for mode in MODES}
        top = max(max(values, default=floor) for values in samples.values())
        edges = [floor * (max(top, 2 * floor) / floor) ** (i / 40) for i in range(41)]
        for mode in MODES:
            axes.hist(samples[mode], bins=edges, alpha=0.6, label=f"{mode} (n={len(samples[mode])})")
        axes.set_xscale("log")
        axes.set_xlabel("lateness, delivery - due (s; <= 1 ms drawn at 1 ms)")
        axes.set_ylabel("tasks")
        axes.set_title("Lateness in the local stack, per task")
    else:
        width = 0.38
        for offset, mode in enumerate(MODES):
            values = [max(float(detail[mode][p]), 1e-3) for p in LATENESS_PERCENTILES]
            xs = [i + (offset - 0.5) * width for i in range(len(LATENESS_PERCENTILES))]
            axes.bar(xs, values, width=width, label=f"{mode} (n={detail[mode]['n']})")
        axes.set_xticks(range(len(LATENESS_PERCENTILES)), [p[:-2] for p in LATENESS_PERCENTILES])
        axes.set_yscale("log")
        axes.set_ylabel("lateness (s, log)")
        axes.set_title("Lateness in the local stack: percentiles (per-task samples not recorded)")
    axes.legend()
    _save(figure, path)
    return True


def backlog(results: Mapping[str, Any], path: Path) -> bool:
    """Items read per worker run (and per create) against pending tasks, log-log, ours and the
    baseline's full scan."""
    rows = results.get("backlog") or []
    if not rows:
        return False
    pending = [row["pending"] for row in rows]
    figure, axes = plt.subplots(figsize=(7, 4))
    series = (
        ("baseline_items_per_run", "baseline (full scan), per run / per create", "o-"),
        ("ours_items_per_run", "nexttick, per worker run", "s-"),
        ("ours_items_per_create", "nexttick, per create", "^--"),
    )
    for key, label, style in series:
        measured = [(n, row[key]) for n, row in zip(pending, rows, strict=True) if row[key] is not None]
        axes.plot([n for n, _ in measured], [max(v, 1) for _, v in measured], style, label=label)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("pending tasks (backlog)")
    axes.set_ylabel("items read")
    axes.set_title("Items read against backlog")
    axes.legend()
    _save(figure, path)
    return True


def fanout(results: Mapping[str, Any], path: Path) -> bool:
    """Time to drain one burst against the number of concurrent worker invocations: the issue's
    series and, when the section has it, its series with a small pool (I/O-bound invocations)."""
    section = results.get("fanout") or {}
    rows = section.get("rows") or []
    if not rows:
        return False
    detail = (results.get("detail") or {}).get("fanout") or {}
    pool = (detail.get("rows") or [{}])[0].get("pool_size")
    series = [(f"{section.get('tasks'):,} tasks" + (f", pool {pool}" if pool else ""), rows)]
    io_bound = detail.get("io_bound") or {}
    if io_bound.get("rows"):
        series.append(
            (f"{io_bound.get('tasks'):,} tasks, pool {io_bound.get('pool_size')}", io_bound["rows"])
        )
    figure, axes = plt.subplots(figsize=(7, 4))
    for label, points in series:
        invocations = [row["invocations"] for row in points]
        axes.plot(invocations, [row["drain_s"] for row in points], "o-", label=label)
    axes.set_xticks(sorted({row["invocations"] for _, points in series for row in points}))
    axes.set_xlabel("concurrent worker invocations")
    axes.set_ylabel("drain time (s)")
    axes.set_ylim(bottom=0)
    axes.set_title("Burst drain time against invocations")
    axes.legend()
    _save(figure, path)
    return True


FIGURES: dict[str, Callable[[Mapping[str, Any], Path], bool]] = {
    "lateness": lateness,
    "backlog": backlog,
    "fanout": fanout,
}


def write_all(results: Mapping[str, Any], out: Path) -> dict[str, str]:
    """Every figure the results hold, as `out/plots/<name>.png`; returns name -> path relative to
    `out`. A figure whose data is absent is removed, so no stale PNG outlives its figures."""
    written: dict[str, str] = {}
    for name, draw in FIGURES.items():
        path = out / PLOTS_DIR / f"{name}.png"
        if draw(results, path):
            written[name] = f"{PLOTS_DIR}/{name}.png"
        else:
            path.unlink(missing_ok=True)
    return written
