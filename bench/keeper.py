"""The keeper's delay in the local stack: from the commit of a task by a client that dies right after
its task write to the rule armed for it, side by side with the inline path, the same create by a
client that lives (its own sync arms the rule), timed from the start of its create.

`nexttick local` runs as a user starts it (the keeper fed by the local stream trigger, moto behind
every call); one client process using the editor library with the stack's environment
(`.nexttick/local.json` -> "env") creates the tasks, each due hours ahead and earlier than the one
before, so each must move the rule and none starts a worker. Dying and living creates alternate, so
drift on the machine hits both paths alike. A dying create raises from a botocore `after-call` hook
right after its task write (the entry, then the task: committed) and goes no further; a living one
has the same hook, which only notes the time of the task write. After each create the client polls
the rule (DescribeRule, every 10 ms) until it is armed for the task's minute. In the inline path the
keeper sees the same writes and may race the client's own sync for the rule record: that is part of
what is measured, as it would be deployed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.localstack import REPO, LocalStackProcess, Receiver, percentile, stack_environment

# Times both paths: for each of 2 x `count` tasks (each earlier than the one before, so each moves the
# rule), alternately die right after the task write (raise from the hook: only the keeper can arm the
# rule) or let the create finish (its inline sync arms it), then poll the rule until it is armed for
# the task's minute. Prints the delays (seconds) as JSON: the keeper's from the task write; the inline
# path's from the start of its create, and from its task write.
MEASURE = """
import json, sys, time
from datetime import UTC, datetime, timedelta
from editor import Editor, TaskSpec
from nexttick.aws import parse_rule_minute
class Died(BaseException):
    pass
editor = Editor()
rule, timing = editor.runtime.rule, editor.runtime.rule_sync.timing
puts, written, dies = [], [], [False]
def after_call(*, model, **_):
    puts.append(model.name)
    if model.name == "PutItem" and puts.count("PutItem") == 2:  # the entry, then the task: committed
        written.append(time.monotonic())
        if dies[0]:
            raise Died
editor.store.client.meta.events.register("after-call", after_call)
latest = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(hours=6)
delays = {"keeper": [], "inline": [], "inline_after_write": []}
for k in range(2 * int(sys.argv[1])):
    due = latest - timedelta(minutes=k)
    dies[0] = k % 2 == 0
    puts.clear()
    started = time.monotonic()
    try:
        editor.create(TaskSpec(action="hook", due=due, id=f"measured-{k}"))
    except Died:
        pass
    if len(written) != k + 1:
        sys.exit(f"measured-{k}: no task write seen ({puts})")
    wanted = timing.fire_minute(due)
    while parse_rule_minute(rule.client.describe_rule(Name=rule.name)["ScheduleExpression"]) != wanted:
        if time.monotonic() - written[-1] > 10:
            sys.exit(f"measured-{k}: the rule was not armed for it within 10 s")
        time.sleep(0.01)
    armed = time.monotonic()
    if dies[0]:
        delays["keeper"].append(armed - written[-1])
    else:
        delays["inline"].append(armed - started)
        delays["inline_after_write"].append(armed - written[-1])
print(json.dumps(delays))
"""


def client_env(stack: LocalStackProcess) -> dict[str, str]:
    """The user's shell after `source .nexttick/env`: the stack's environment."""
    info = json.loads((stack.state_dir / "local.json").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTTICK_", "AWS_", "POWERTOOLS_"))}
    env.update(info["env"], PYTHONPATH=str(REPO))
    return env


def measure(env: dict[str, str], count: int) -> dict[str, list[float]]:
    """Run MEASURE in a client process: `count` tasks per path."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(count)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60 + 30 * count,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    delays: dict[str, list[float]] = json.loads(done.stdout)
    return delays


def _summary(path: str, origin: str, delays: list[float]) -> dict[str, Any]:
    return {
        "path": path,
        "from": origin,
        "count": len(delays),
        "p50_s": round(percentile(delays, 50), 3),
        "p90_s": round(percentile(delays, 90), 3),
        "p99_s": round(percentile(delays, 99), 3),
        "max_s": round(max(delays), 3),
    }


def run(quick: bool) -> dict[str, Any]:
    count = 20 if quick else 100
    receiver = Receiver()  # the action's target: nothing comes due while measuring
    try:
        with tempfile.TemporaryDirectory(prefix="nexttick-keeper-") as tmp:
            root = Path(tmp)
            state_dir = root / "state"
            state_dir.mkdir()
            env = stack_environment(state_dir, hook_url=receiver.url, POWERTOOLS_LOG_LEVEL="WARNING")
            stack = LocalStackProcess(state_dir, env, root / "stack.log").start()
            try:
                delays = measure(client_env(stack), count)
            finally:
                stack.kill()
    finally:
        receiver.shutdown()
    assert receiver.deliveries == [], "a measured task ran: they are due hours ahead"
    rows = [
        _summary("keeper (client died)", "task write", delays["keeper"]),
        _summary("inline (client lived)", "create start", delays["inline"]),
        _summary("inline (client lived)", "task write", delays["inline_after_write"]),
    ]
    return {"tasks_per_path": count, "interleaved": True, "delays": rows}
