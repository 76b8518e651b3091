"""What a steady stream of one-shot tasks costs by how long before its due time each is created:
the monthly bill's 1/second window (bench/monthly.py), side by side with creates seconds ahead.

Why: a task created too close to its due time to arm the rule goes to a worker directly unless a
waiting worker's published claim covers it (docs/architecture.md, "One waiter, not a herd"), so a
stream of short-notice tasks can cost invocations and units that the monthly bill's windows, created
minutes ahead, never show (docs/architecture.md, cost section).

How: bench/timeline.py's simulated AWS (moto in-process, the real handlers, each request taking its
modelled round trip), `second` precision, one window per notice; creates spread over the second
before each due instant. Units per task by function, worker invocations by what started them.

    python -m bench.shortnotice [--seconds 120] [--per-second 1] [--ahead 180 10]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from datetime import timedelta
from typing import Any

from bench.accounts import API, KEEPER, WORKER
from bench.monthly import steady_plan
from bench.timeline import follow
from nexttick.config import Precision


def measure(per_second: float, seconds: int, ahead_s: float) -> dict[str, Any]:
    """One window: tasks due every 1/`per_second` s for `seconds`, each created `ahead_s` (plus its
    spread offset) before it is due."""
    plan, tasks = steady_plan(
        Precision.SECOND, per_second, seconds, ahead=timedelta(seconds=ahead_s), spread_creates=True
    )
    measured = follow(plan)
    accounts = {f: measured.accounts[f] for f in (API, KEEPER, WORKER) if f in measured.accounts}
    return {
        "ahead_s": ahead_s,
        "tasks": tasks,
        "finished": measured.finished,
        "rru_per_task": round(sum(a.rru for a in accounts.values()) / tasks, 2),
        "wru_per_task": round(sum(a.wru for a in accounts.values()) / tasks, 2),
        "by_function": {
            f: {"rru": round(a.rru / tasks, 2), "wru": round(a.wru / tasks, 2)} for f, a in accounts.items()
        },
        "worker_invocations": dict(Counter(run.cause for run in measured.worker)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=120)
    parser.add_argument("--per-second", type=float, default=1.0)
    parser.add_argument("--ahead", type=float, nargs="+", default=[180.0, 10.0], help="seconds")
    args = parser.parse_args()
    for ahead in args.ahead:
        print(json.dumps(measure(args.per_second, args.seconds, ahead)), flush=True)


if __name__ == "__main__":
    main()
