"""End to end: clients that die in the middle of a create, against `nexttick local` started as a
user starts it. Each client is a process using the editor library with the stack's environment
(`.nexttick/local.json` -> "env") that calls `os._exit(1)` right after its N-th AWS request (a
botocore `after-call` hook on its DynamoDB, EventBridge and Lambda clients), for every N of a create,
for tasks due in 20 s (too close to arm: the worker must be invoked) and in about 100 s (armable:
the rule must be armed). Every committed task runs exactly once, at most 2 s late.

Any later create or worker run covers an earlier task too (the worker re-arms for the queue head),
so the phases are kept apart: a lone client due in 20 s that dies right after its task write, then
every crash point due in 20 s, then every crash point due in about 100 s with no worker activity
until then. In the first and the last phase nothing but the keeper, fed by the table's stream, can
cover the task of the client that died right after writing it: without it, that task never runs
(or runs a minute or more late).

The keeper's delay from commit to covered is not asserted here: `make bench` measures it (section
"keeper", bench/keeper.py), side by side with the inline path of a client that lives. About three
minutes in all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
import requests

from bench.localstack import REPO, LocalStackProcess, Receiver, parse_time, rfc3339, stack_environment
from nexttick.ruletiming import Timing

pytestmark = [pytest.mark.xdist_group("keeper-e2e"), pytest.mark.slow]

CLOSE_IN = 20.0  # seconds: too close to arm, the worker is invoked directly
# A create reads the client id, writes the entry, reads the rule record and lowers its shard's head
# when that is later, then writes the task: its fifth request is the task write or the one after it.
TASK_WRITE = 5
MAX_CALLS = 10  # a create makes fewer AWS requests than this: the last clients complete
LATENESS_MAX = 2.0

# A client process: dies right after its N-th AWS request (any of its clients), or with `<Op>:<k>`
# right after its k-th request of that operation, while creating one task; exits 0 ("completed")
# when the create needed fewer requests.
CLIENT = """
import os, sys
from editor import Editor, TaskSpec
when, task_id, due_or_delay = sys.argv[1], sys.argv[2], sys.argv[3]
operation, _, k = when.rpartition(":")
editor = Editor()
made = []
def after_call(*, model, **_):
    made.append(model.name)
    if (made.count(operation) == int(k) and made[-1] == operation) if operation else len(made) == int(k):
        print(" ".join(made), flush=True)
        os._exit(1)
rt = editor.runtime
clients = [rt.store.client, rt.rule.client, rt.trigger.client]
for client in {id(c): c for c in clients}.values():
    client.meta.events.register("after-call", after_call)
spec = {"due": due_or_delay} if "T" in due_or_delay else {"delay_seconds": float(due_or_delay)}
editor.create(TaskSpec(action="hook", id=task_id, **spec))
print(" ".join(made), flush=True)
"""


@dataclass
class Crash:
    task_id: str
    calls: int | str  # the request it died after: its number, or `<Op>:<k>`
    exit_code: int
    requests: list[str]


@dataclass
class Scenario:
    stack: LocalStackProcess
    receiver: Receiver
    env: dict[str, str]
    crashes: list[Crash] = field(default_factory=list)
    last_due: float = 0.0


def _client_env(stack: LocalStackProcess) -> dict[str, str]:
    """The user's shell after `source .nexttick/env`: the stack's environment."""
    info = json.loads((stack.state_dir / "local.json").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTTICK_", "AWS_", "POWERTOOLS_"))}
    env.update(info["env"], PYTHONPATH=str(REPO))
    return env


def _run(env: dict[str, str], code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def _crash(env: dict[str, str], n: int | str, task_id: str, due_or_delay: str) -> Crash:
    done = _run(env, CLIENT, str(n), task_id, due_or_delay)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return Crash(task_id, n, done.returncode, done.stdout.split())


def _armable_due(now: float) -> float:
    """About 100 s ahead, in a fire minute that stays armable while the clients run (at least 15 s):
    the rule minute M starts 25-85 s from now and the task is due at M + 72 s (second precision: the
    rule fires in the minute that ends at least 10 s before the task is due)."""
    minute = (int(now + 25) // 60 + 1) * 60
    return minute + 72.0


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    state_dir = tmp_path_factory.mktemp("keeper-state")
    receiver = Receiver()
    env = stack_environment(state_dir, hook_url=receiver.url)
    stack = LocalStackProcess(state_dir, env, state_dir.parent / "keeper-stack.log")
    stack.start()
    try:
        s = Scenario(stack, receiver, _client_env(stack))
        # 1. A client due in 20 s dies right after its task write, and nothing else happens until its
        # task is due: only the keeper can invoke the worker for it.
        isolated = _crash(s.env, "PutItem:2", "close-isolated", str(CLOSE_IN))
        assert isolated.requests[:3] == ["GetItem", "PutItem", "GetItem"], isolated  # id, entry, record
        assert isolated.requests[-1] == "PutItem" and isolated.exit_code == 1, isolated  # the task
        s.crashes.append(isolated)
        s.receiver.wait_for("close-isolated", 1, timeout=CLOSE_IN + 10)
        # 2. Every crash point from the task write on of a create due in 20 s, side by side. (One that
        # dies before it leaves a queue entry without a task, which a worker keeps deferring for
        # minutes before deleting it: that worker would then cover phase 3. Phase 3 has them.)
        with ThreadPoolExecutor(4) as pool:
            jobs = [(n, f"close-{n}", str(CLOSE_IN)) for n in range(TASK_WRITE, MAX_CALLS + 1)]
            s.crashes += pool.map(lambda job: _crash(s.env, *job), jobs)
        # All delivered and the worker done: phase 3 is on its own.
        time.sleep(CLOSE_IN + LATENESS_MAX + 1)
        # 3. Every crash point of a create due in about 100 s, one client after the other: the first
        # dies right after its task write, the next after reading the record, the next after its
        # CAS; later ones find the record armed and write nothing. Without the keeper the rule would
        # never be armed for that minute; no worker runs before it to cover them either.
        s.last_due = _armable_due(time.time())
        for n in range(1, MAX_CALLS + 1):
            s.crashes.append(_crash(s.env, n, f"armable-{n}", rfc3339(s.last_due)))
            if s.crashes[-1].exit_code == 0:
                break  # this create needed fewer requests: so do the later ones
        yield s
    finally:
        stack.kill()
        receiver.shutdown()


def test_every_task_committed_by_a_client_that_died_runs_exactly_once_on_time(scenario: Scenario) -> None:
    s = scenario
    time.sleep(max(0.0, s.last_due + LATENESS_MAX + 2 - time.time()))
    committed: dict[str, dict[str, Any]] = {}
    for crash in s.crashes:
        response = requests.get(f"{s.stack.api_url}/tasks/{crash.task_id}", timeout=30)
        assert response.status_code in (200, 404), response.text
        if response.status_code == 200:
            committed[crash.task_id] = response.json()
        else:
            # Died before its task write: nothing was accepted, nothing runs
            assert s.receiver.of(crash.task_id) == [], crash
    # Every kind of due time had clients that died after committing (right after the task write,
    # before arming or invoking anything), and the create's last requests were reached too
    for kind in ("close", "armable"):
        died = [c for c in s.crashes if c.task_id.startswith(kind) and c.exit_code == 1]
        assert [c for c in died if c.task_id in committed], s.crashes
        assert [c for c in s.crashes if c.task_id.startswith(kind) and c.exit_code == 0], s.crashes
    # Then each committed task ran exactly once, at most 2 s late, and ended succeeded
    for task_id, task in committed.items():
        deliveries = s.receiver.of(task_id)
        crash = next(c for c in s.crashes if c.task_id == task_id)
        assert len(deliveries) == 1, (crash, task, [d.body for d in deliveries])
        (delivery,) = deliveries
        scheduled = parse_time(delivery.body["scheduled_for"])
        if task_id.startswith("armable"):
            assert scheduled == s.last_due
        else:
            assert abs(scheduled - parse_time(task["created_at"]) - CLOSE_IN) < 1.0
        assert 0 <= delivery.lateness <= LATENESS_MAX, (crash, delivery.lateness)
        assert task["status"] == "succeeded"
    # And the armable ones were run by the emulated EventBridge firing the rule the keeper armed
    minute = Timing().fire_minute(datetime.fromtimestamp(s.last_due, UTC))
    assert f"rule fired for {minute.isoformat()}" in s.stack.output()
