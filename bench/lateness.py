"""Lateness (delivery - due) in the local stack with the default EventBridge emulation (the rule
fires at a random second of its minute, delivered 0-5 s later), `second` precision side by side with
`minute` precision, and the idle stack's CPU.

Both stacks run at once and get the same schedule: tasks due at random instants over a span of
minutes, the first of them due at the start of the first minute still armable for it once they
are created (85-145 s ahead), so each is first reached through the armed rule (no task starts from
a direct invoke). What happens after a fire is each
precision's own behaviour: `second` waits inside the invocation for the exact instant of the next
task too close to arm; `minute` runs what the fired minute holds. Then, on the `second` stack, a
burst: BURST tasks due at one instant, reported as the lateness of its first and last delivery.
"""

from __future__ import annotations

import math
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.localstack import (
    LocalStackProcess,
    Receiver,
    idle_cpu,
    percentile,
    rfc3339,
    stack_environment,
)
from nexttick.config import NextTickSettings, Precision
from nexttick.runtime import timing_from

# Quick: the earliest task is this far ahead (a lead that arms a minute in part of the minute).
QUICK_LEAD_SECONDS = 75.0
# Seconds the creates may take before the earliest task's minute is no longer armable.
CREATE_MARGIN_SECONDS = 5.0
IDLE_SECONDS = {False: 10, True: 5}  # each of idle_cpu's three windows
# The burst is due this long after its first create, plus this much per task: every create is
# answered before the instant (checked), as a burst set up ahead of time would be.
BURST_LEAD_SECONDS = 30.0
BURST_SECONDS_PER_CREATE = 0.03


def _start(precision: str, root: Path) -> tuple[LocalStackProcess, Receiver]:
    receiver = Receiver()
    state = root / precision
    state.mkdir()
    env = stack_environment(
        state, hook_url=receiver.url, NEXTTICK_PRECISION=precision, POWERTOOLS_LOG_LEVEL="WARNING"
    )
    return LocalStackProcess(state, env, root / f"{precision}.log").start(), receiver


def _first_armed_due(now: float) -> float:
    """The earliest instant whose `second`-precision minute (its start 70 s before it, at the
    deployed timing) is still armable once the creates are done: no earlier task would start from a
    direct invoke, and no later one than needed keeps the section waiting."""
    timing = timing_from(NextTickSettings(precision=Precision.SECOND))
    armable_from = now + timing.settle_seconds + CREATE_MARGIN_SECONDS
    minute = math.ceil(armable_from / 60) * 60
    return minute + timing.lead.total_seconds()


def _figures(receiver: Receiver, prefix: str) -> dict[str, Any]:
    deliveries = [d for d in receiver.deliveries if d.task_id.startswith(prefix)]
    lateness = sorted(d.lateness for d in deliveries)
    keys = [d.key for d in deliveries]
    return {
        "n": len(lateness),
        "duplicates": len(keys) - len(set(keys)),
        "early": sum(1 for x in lateness if x < 0),
        "p50_s": round(percentile(lateness, 50), 3),
        "p90_s": round(percentile(lateness, 90), 3),
        "p99_s": round(percentile(lateness, 99), 3),
        "max_s": round(lateness[-1], 3),
        "samples_s": [round(x, 4) for x in lateness],
    }


def _arrived(receiver: Receiver, prefix: str, count: int, timeout: float) -> None:
    def done() -> bool:
        return sum(1 for d in receiver.deliveries if d.task_id.startswith(prefix)) >= count

    if not receiver.wait_until(done, timeout):
        raise AssertionError(f"only part of {count} {prefix} tasks arrived within {timeout:.0f} s")


def run(quick: bool = False) -> dict[str, Any]:
    tasks, span, burst = (20, 30.0, 30) if quick else (200, 300.0, 1000)
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stacks = {p: _start(p, root) for p in ("second", "minute")}
        try:
            idle = {p: round(100 * idle_cpu(s.pid, IDLE_SECONDS[quick]), 3) for p, (s, _) in stacks.items()}
            t0 = time.time() + QUICK_LEAD_SECONDS if quick else _first_armed_due(time.time())
            lead = t0 - time.time()
            dues = sorted(t0 + rng.uniform(0, span) for _ in range(tasks))
            for i, due in enumerate(dues):
                for stack, _ in stacks.values():
                    stack.post({"action": "hook", "due": rfc3339(due), "id": f"spread-{i}"})
            results: dict[str, Any] = {
                "schedule": f"{tasks} tasks over {span:.0f} s, the first {lead:.0f} s ahead",
                "idle_cpu_percent_of_a_core": idle,
            }
            wait = lead + span + 120
            stack, receiver = stacks["second"]
            _arrived(receiver, "spread-", tasks, wait)
            results["second"] = _figures(receiver, "spread-")
            # The burst goes to the `second` stack while the `minute` stack still delivers the last
            # minute of its spread (up to a minute late by design): a few deliveries, no contention.
            posting = time.time()
            at = posting + BURST_LEAD_SECONDS + burst * BURST_SECONDS_PER_CREATE
            for i in range(burst):
                stack.post({"action": "hook", "due": rfc3339(at), "id": f"burst-{i}"})
            posted = time.time()
            if posted > at:
                raise AssertionError(f"the burst's creates took {posted - posting:.1f} s, past its instant")
            _arrived(stacks["minute"][1], "spread-", tasks, wait)
            results["minute"] = _figures(stacks["minute"][1], "spread-")
            _arrived(receiver, "burst-", burst, 600)
            burst_lateness = sorted(d.lateness for d in receiver.deliveries if d.task_id.startswith("burst-"))
            results["burst"] = {
                "tasks": burst,
                "first_s": round(burst_lateness[0], 3),
                "last_s": round(burst_lateness[-1], 3),
                "created_s": round(posted - posting, 1),
                "created_ahead_s": round(at - posted, 1),
            }
            return results
        finally:
            for stack, receiver in stacks.values():
                stack.kill()
                receiver.shutdown()
