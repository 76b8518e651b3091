"""Lateness (start - due) in the local stack with the default EventBridge emulation (random second
in the minute + 0-5 s delivery delay), `second` precision side by side with `minute` precision
(which is what arming the due minute — the reference PoC, EventBridge-minute scheduling — gives),
and the idle stack's CPU. Both stacks run at once, scheduled identically."""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.localstack import (
    LocalStackProcess,
    Receiver,
    cpu_seconds,
    percentile,
    rfc3339,
    stack_environment,
)

DIRECT = 30  # due within the wait horizon: a direct worker invoke
ARMED = 10  # due 150-240 s ahead: the rule is armed and fired by the emulated EventBridge
IDLE_SECONDS = 20


def _start(precision: str, root: Path) -> tuple[LocalStackProcess, Receiver]:
    receiver = Receiver()
    state = root / precision
    state.mkdir()
    env = stack_environment(
        state, hook_url=receiver.url, NEXTTICK_PRECISION=precision, POWERTOOLS_LOG_LEVEL="WARNING"
    )
    return LocalStackProcess(state, env, root / f"{precision}.log").start(), receiver


def _idle_cpu(stack: LocalStackProcess) -> float:
    before, started = cpu_seconds(stack.pid), time.monotonic()
    time.sleep(IDLE_SECONDS)
    return (cpu_seconds(stack.pid) - before) / (time.monotonic() - started)


def run() -> dict[str, Any]:
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stacks = {p: _start(p, root) for p in ("second", "minute")}
        try:
            idle = {p: round(100 * _idle_cpu(s), 3) for p, (s, _) in stacks.items()}
            t0 = time.time() + 5
            dues = [t0 + rng.uniform(15, 90) for _ in range(DIRECT)]
            dues += [t0 + rng.uniform(150, 240) for _ in range(ARMED)]
            for i, due in enumerate(dues):
                for stack, _ in stacks.values():
                    stack.post({"action": "hook", "due": rfc3339(due), "id": f"late-{i}"})
            results: dict[str, Any] = {"tasks": len(dues), "idle_cpu_percent_of_a_core": idle}
            for precision, (_, receiver) in stacks.items():

                def all_delivered(r: Receiver = receiver) -> bool:
                    return len(r.deliveries) >= len(dues)

                receiver.wait_until(all_delivered, timeout=420)
                lateness = sorted(d.lateness for d in receiver.deliveries)
                keys = [d.key for d in receiver.deliveries]
                results[precision] = {
                    "delivered": len(lateness),
                    "duplicates": len(keys) - len(set(keys)),
                    "early": sum(1 for x in lateness if x < 0),
                    "p50_s": round(percentile(lateness, 50), 3),
                    "p99_s": round(percentile(lateness, 99), 3),
                    "max_s": round(lateness[-1], 3),
                }
            return results
        finally:
            for stack, receiver in stacks.values():
                stack.kill()
                receiver.shutdown()
