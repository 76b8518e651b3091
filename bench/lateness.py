"""Lateness (delivery - due) in the local stack with the default EventBridge emulation (the rule
fires at a random second of its minute, delivered 0-5 s later), `second` precision side by side with
`minute` precision, and the idle stack's CPU.

Both stacks run at once and get the same schedule: tasks due at random instants over a span of
minutes, every one of them at least LEAD_SECONDS ahead when created, so each is first reached
through the armed rule (no task starts from a direct invoke). What happens after a fire is each
precision's own behaviour: `second` waits inside the invocation for the exact instant of the next
task too close to arm; `minute` runs what the fired minute holds. Then, on the `second` stack, a
burst: BURST tasks due at one instant, reported as the lateness of its first and last delivery.
"""

from __future__ import annotations

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

# The earliest task is this far ahead: its minute is armed, not invoked (quick: a shorter lead that
# still arms a minute).
LEAD_SECONDS = {False: 150.0, True: 75.0}
IDLE_SECONDS = {False: 10, True: 5}  # each of idle_cpu's three windows


def _start(precision: str, root: Path) -> tuple[LocalStackProcess, Receiver]:
    receiver = Receiver()
    state = root / precision
    state.mkdir()
    env = stack_environment(
        state, hook_url=receiver.url, NEXTTICK_PRECISION=precision, POWERTOOLS_LOG_LEVEL="WARNING"
    )
    return LocalStackProcess(state, env, root / f"{precision}.log").start(), receiver


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
    tasks, span, burst = (20, 30.0, 30) if quick else (200, 300.0, 300)
    lead = LEAD_SECONDS[quick]
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stacks = {p: _start(p, root) for p in ("second", "minute")}
        try:
            idle = {p: round(100 * idle_cpu(s.pid, IDLE_SECONDS[quick]), 3) for p, (s, _) in stacks.items()}
            t0 = time.time() + lead
            dues = sorted(t0 + rng.uniform(0, span) for _ in range(tasks))
            for i, due in enumerate(dues):
                for stack, _ in stacks.values():
                    stack.post({"action": "hook", "due": rfc3339(due), "id": f"spread-{i}"})
            results: dict[str, Any] = {
                "schedule": f"{tasks} tasks over {span:.0f} s, the first {lead:.0f} s ahead",
                "idle_cpu_percent_of_a_core": idle,
            }
            wait = lead + span + 120
            for precision, (_, receiver) in stacks.items():
                _arrived(receiver, "spread-", tasks, wait)
                results[precision] = _figures(receiver, "spread-")
            stack, receiver = stacks["second"]
            at = time.time() + 30
            for i in range(burst):
                stack.post({"action": "hook", "due": rfc3339(at), "id": f"burst-{i}"})
            _arrived(receiver, "burst-", burst, 600)
            burst_lateness = sorted(d.lateness for d in receiver.deliveries if d.task_id.startswith("burst-"))
            results["burst"] = {
                "tasks": burst,
                "first_s": round(burst_lateness[0], 3),
                "last_s": round(burst_lateness[-1], 3),
            }
            return results
        finally:
            for stack, receiver in stacks.values():
                stack.kill()
                receiver.shutdown()
