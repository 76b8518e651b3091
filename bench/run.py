"""Run the benchmarks side by side with their baselines and write bench/results.{json,md}.

make bench                      # everything (takes several minutes)
python -m bench.run --quick     # smaller sizes, for a smoke run
python -m bench.run --only burst,lifecycle   # these sections; the others keep their latest figures
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import backlog, burst, cold_start, keeper, lateness, lifecycle, report, startup

SECTIONS = ("backlog", "lifecycle", "burst", "lateness", "startup", "keeper", "cold_start")
OUT = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    args = parser.parse_args(argv)
    chosen = [s for s in args.only.split(",") if s]
    suffix = "-quick" if args.quick else ""
    path = OUT / f"results{suffix}.json"
    # A run of some sections keeps the others' latest figures (each section says when it ran).
    previous = json.loads(path.read_text()) if path.exists() else {}
    results: dict[str, Any] = {section: previous[section] for section in SECTIONS if section in previous}
    date = datetime.now(UTC).isoformat(timespec="seconds")
    results.update(
        command="python -m bench.run " + " ".join(argv if argv is not None else sys.argv[1:]),
        date=date,
        machine={"python": platform.python_version(), "cpus": os.cpu_count(), "system": platform.system()},
        measured={
            **{s: previous.get("date", "") for s in results if s in SECTIONS},
            **previous.get("measured", {}),
            **dict.fromkeys(chosen, date),
        },
    )
    if "backlog" in chosen:
        results["backlog"] = backlog.run((1_000, 10_000) if args.quick else (1_000, 10_000, 100_000))
    if "lifecycle" in chosen:
        results["lifecycle"] = lifecycle.run(args.quick)
    if "burst" in chosen:
        results["burst"] = burst.run(args.quick)
    if "lateness" in chosen:
        results["lateness"] = lateness.run(args.quick)
    if "startup" in chosen:
        results["startup"] = startup.run(args.quick)
    if "keeper" in chosen:
        results["keeper"] = keeper.run(args.quick)
    if "cold_start" in chosen:
        results["cold_start"] = cold_start.run()
    path.write_text(json.dumps(results, indent=2) + "\n")
    (OUT / f"results{suffix}.md").write_text(report.render(results))
    print(report.render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
