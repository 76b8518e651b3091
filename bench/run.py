"""Run the benchmarks side by side with their baselines; write results.json, REPORT.md and plots/.

make bench                      # everything, into bench/ (about 35 minutes on 2 cores, estimated)
make bench-quick                # python -m bench.run --quick: small sizes, into bench/quick/
python -m bench.run --only burst,lifecycle   # these sections; the others keep their latest figures
python -m bench.run --quick --out /tmp/b     # anywhere else (the e2e test writes to a temp dir)
python -m bench.run --render-only            # measure nothing: results.json's keys, REPORT.md, plots anew
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import (
    backlog,
    burst,
    cold_start,
    cpu,
    fanout,
    keeper,
    latency,
    lateness,
    lifecycle,
    listing,
    localload,
    monthly,
    report,
    sparse,
    startup,
)

BENCH = Path(__file__).resolve().parent
QUICK_OUT = BENCH / "quick"
# In the order they run; each one's figures are results.json's detail.<section>.
RUNNERS: dict[str, Callable[[bool], Any]] = {
    "backlog": lambda quick: backlog.run((1_000, 10_000) if quick else (1_000, 10_000, 100_000, 1_000_000)),
    # The sparse rows as AWS bills them live in bench/sparse.py (it prices with lifecycle's figures).
    "lifecycle": lambda quick: lifecycle.run(quick) | {"sparse_billed": sparse.run(quick)},
    "monthly": monthly.run,
    "burst": burst.run,
    "fanout": fanout.run,
    "lateness": lateness.run,
    "listing": listing.run,
    "local_load": localload.run,
    "startup": startup.run,
    "keeper": keeper.run,
    "cpu": cpu.run,
    "cold_start": lambda quick: cold_start.run(),
}
SECTIONS = tuple(RUNNERS)


def latency_model() -> report.LatencyModel:
    """The latency model (bench/latency.py): op -> ms, and its docstring as the figures' basis."""
    return {"ms": dict(latency.LATENCY_MS), "basis": latency.__doc__ or ""}


def machine() -> dict[str, Any]:
    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "system": platform.system(),
        "os": platform.platform(terse=True),
    }
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        facts["cpu_model"] = next(
            line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")
        )
        meminfo = Path("/proc/meminfo").read_text().split()
        facts["memory_gb"] = round(int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20, 1)
    except (OSError, StopIteration, ValueError):
        pass
    return facts


def previous_detail(previous: dict[str, Any]) -> dict[str, Any]:
    """Each section's figures from an earlier results.json (also from the layout before `detail`,
    when the sections' figures were its top-level keys)."""
    if "detail" in previous:
        return {s: v for s, v in previous["detail"].items() if s in SECTIONS}
    return {s: previous[s] for s in SECTIONS if s in previous}


def progress(number: int, order: list[str], last_seconds: dict[str, float], elapsed: float) -> str:
    """`bench: [3/10] burst … (elapsed 4:10; left after it: fanout, lateness; ~12 min by their last runs)`."""
    section, left = order[number - 1], order[number:]
    line = f"bench: [{number}/{len(order)}] {section} … (elapsed {_minutes(elapsed)}"
    if left:
        line += f"; left after it: {', '.join(left)}"
    known = [last_seconds[s] for s in order[number - 1 :] if s in last_seconds]
    if known:
        line += f"; ~{_minutes(sum(known))} by their last runs"
    return line + ")"


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run), into bench/quick/")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument(
        "--out", type=Path, help="directory for the results (default bench/, or bench/quick/)"
    )
    parser.add_argument(
        "--render-only", action="store_true", help="measure nothing: render the figures there"
    )
    args = parser.parse_args(argv)
    chosen = [] if args.render_only else [s for s in args.only.split(",") if s]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    out: Path = args.out or (QUICK_OUT if args.quick else BENCH)
    out.mkdir(parents=True, exist_ok=True)
    path = out / report.RESULTS_FILE
    # A run of some sections keeps the others' latest figures (each section says when it ran).
    previous = json.loads(path.read_text()) if path.exists() else {}
    detail = previous_detail(previous)
    measured = {s: previous.get("measured", {}).get(s, previous.get("date", "")) for s in detail}
    failures: dict[str, str] = {}
    date = datetime.now(UTC).isoformat(timespec="seconds")
    command = " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])])
    quick, facts = args.quick, machine()
    if args.render_only:  # the figures' own run, not this rendering
        command, date = previous.get("command", command), previous.get("date", date)
        quick, facts = previous.get("quick", quick), previous.get("machine", facts)
    failed = False
    durations = {s: v for s, v in previous.get("run_seconds", {}).items() if s in detail}
    order = [s for s in SECTIONS if s in chosen]
    started = time.monotonic()
    for number, section in enumerate(order, 1):
        print(progress(number, order, durations, time.monotonic() - started), file=sys.stderr, flush=True)
        began = time.monotonic()
        try:
            # Workers run in this process print their metric lines (EMF) to stdout; the progress
            # lines (stderr) are what the bench shows.
            with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
                figures = RUNNERS[section](args.quick)
        except Exception as error:  # the other sections' figures are still written; exit 1
            traceback.print_exc()
            failed = True
            failures[section] = f"its latest run failed ({type(error).__name__}: {error})"
            print(f"bench: {section} failed: {failures[section]}", file=sys.stderr, flush=True)
            continue
        durations[section] = round(time.monotonic() - began, 1)
        print(f"bench: {section} took {durations[section]} s", file=sys.stderr, flush=True)
        detail[section], measured[section] = figures, date
    results: report.Results = {
        **report.derive(detail),
        "command": command,
        "date": date,
        "quick": quick,
        "machine": facts,
        "measured": measured,
        "run_seconds": durations,
        "failed": failures,
        "latency_model": latency_model(),
        "detail": detail,
    }
    report_path = report.write(results, out)  # adds results["plots"]
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"bench: wrote {path}, {report_path} and {len(results['plots'])} plot(s)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
