"""The local stack under load: concurrent API clients against `nexttick local`, as a user runs it.

`nexttick local` starts as a subprocess (bench/localstack.py), with a webhook action `hook` to a
loopback receiver that records every delivery. CLIENTS threads each run OPERATIONS requests back
to back (a closed loop, no think time), each request on a new connection as curl or a script
without a session would, so the API's listen backlog and accept loop are part of the figure:

    50 % create (webhook to the receiver, due 2-20 s ahead)     15 % list (first page, 50)
    20 % get (one of the client's own tasks)                    10 % reschedule (PATCH due)
     5 % cancel (DELETE)

Every request's latency (send to full response) is recorded; `errors` counts connection errors
(refused, reset, timed out) and 5xx answers. A 4xx a client did not expect (a reschedule or cancel
racing the task's own run answers 409, which is expected) is not an error of the stack but is
reported as `unexpected` by `measure`. Then every task created and not cancelled (204) must be
delivered once for its last due time, and at most once for a due time a reschedule replaced after
that occurrence could be claimed (a change never stops a claimed occurrence: it completes, and the
task runs at its new time too); lateness is the receiver's clock at delivery minus the delivery's
`scheduled_for`. The tasks are due within the worker's wait
horizon, so the `second`-precision worker sleeps for them: lateness here is the stack's, not the
emulated EventBridge's minute jitter.

    python -m bench.localload [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from bench.localstack import LocalStackProcess, Receiver, parse_time, percentile, rfc3339, stack_environment
from nexttick.constants import CLAIM_AHEAD_SECONDS

SIZES = {False: (20, 100), True: (5, 20)}  # by `quick`: (clients, operations per client)
MIX: dict[str, float] = {"create": 50, "get": 20, "list": 15, "reschedule": 10, "cancel": 5}
DUE_AHEAD = (2.0, 20.0)  # seconds ahead of the request a create or a reschedule asks for
# A task due sooner than this is not rescheduled or cancelled by a client: it may be running.
CHANGE_MARGIN = 3.0
REQUEST_TIMEOUT = 60.0
# After the last request, how long the last tasks may take to be delivered.
DELIVERY_GRACE = 120.0
# Duplicates are looked for this long after the last expected delivery.
SETTLE_SECONDS = 3.0
BACKEND = (
    "local stack (`nexttick local` as a subprocess: moto, API Gateway adapter, emulated EventBridge, "
    "worker), loopback HTTP, one connection per request"
)


@dataclass
class Client:
    """One client thread's state: the tasks it created, what it expects of them, what it saw."""

    index: int
    base_url: str
    rng: random.Random
    latencies: list[float] = field(default_factory=list)
    connection_errors: int = 0
    server_errors: int = 0
    unexpected: list[str] = field(default_factory=list)
    due: dict[str, float] = field(default_factory=dict)  # task id -> due (epoch) as last set
    version: dict[str, int] = field(default_factory=dict)
    cancelled: set[str] = field(default_factory=set)  # 204: must not run
    maybe: set[str] = field(default_factory=set)  # 202: its claimable occurrence may still run
    # task id -> due times a reschedule replaced once their occurrence could be claimed (may run)
    superseded: dict[str, set[float]] = field(default_factory=dict)
    created = 0

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response | None:
        began = time.perf_counter()
        try:
            response = requests.request(method, f"{self.base_url}{path}", timeout=REQUEST_TIMEOUT, **kwargs)
        except requests.RequestException as exc:
            self.latencies.append(time.perf_counter() - began)
            self.connection_errors += 1
            self.unexpected.append(f"{method} {path}: {type(exc).__name__}")
            return None
        self.latencies.append(time.perf_counter() - began)
        if response.status_code >= 500:
            self.server_errors += 1
            self.unexpected.append(f"{method} {path}: {response.status_code} {response.text[:200]}")
            return None
        return response

    def expect(self, response: requests.Response | None, *statuses: int) -> bool:
        if response is None:
            return False
        if response.status_code not in statuses:
            self.unexpected.append(
                f"{response.request.method} {response.request.path_url}: "
                f"{response.status_code} {response.text[:200]}"
            )
            return False
        return True

    def changeable(self) -> str | None:
        """One of this client's live tasks not due too soon to change, at random."""
        horizon = time.time() + CHANGE_MARGIN
        live = [i for i, due in self.due.items() if due > horizon and i not in self.cancelled | self.maybe]
        return self.rng.choice(live) if live else None

    def run_one(self, operation: str) -> None:
        if operation != "create" and not self.due:
            operation = "create"
        {
            "create": self._create,
            "get": self._get,
            "list": self._list,
            "reschedule": self._reschedule,
            "cancel": self._cancel,
        }[operation]()

    def _create(self) -> None:
        self.created += 1
        task_id = f"load-{self.index}-{self.created}"
        due = time.time() + self.rng.uniform(*DUE_AHEAD)
        body = {"action": "hook", "due": rfc3339(due), "id": task_id, "payload": {"client": self.index}}
        response = self.request("POST", "/tasks", json=body)
        if self.expect(response, 201):
            assert response is not None
            self.due[task_id] = due
            self.version[task_id] = int(response.json()["version"])

    def _get(self) -> None:
        self.expect(self.request("GET", f"/tasks/{self.rng.choice(list(self.due))}"), 200)

    def _list(self) -> None:
        self.expect(self.request("GET", "/tasks", params={"limit": 50}), 200)

    def _reschedule(self) -> None:
        target = self.changeable()
        if target is None:
            return self._list()
        replaced = self.due[target]
        due = time.time() + self.rng.uniform(*DUE_AHEAD)
        response = self.request("PATCH", f"/tasks/{target}", json={"due": rfc3339(due)})
        if self.expect(response, 200, 409):
            assert response is not None
            if response.status_code == 200:
                if time.time() >= replaced - CLAIM_AHEAD_SECONDS:  # a slow answer: it may have been claimed
                    self.superseded.setdefault(target, set()).add(parse_time(rfc3339(replaced)))
                self.due[target] = due
                self.version[target] = int(response.json()["version"])
        return None

    def _cancel(self) -> None:
        target = self.changeable()
        if target is None:
            return self._get()
        response = self.request("DELETE", f"/tasks/{target}")
        if self.expect(response, 204, 202, 409):
            assert response is not None
            if response.status_code == 204:
                self.cancelled.add(target)
            elif response.status_code == 202:
                self.maybe.add(target)
        return None


def _operations(rng: random.Random, count: int) -> list[str]:
    return rng.choices(list(MIX), weights=list(MIX.values()), k=count)


@dataclass
class LoadRun:
    """What one run saw: the clients' records and the receiver's deliveries."""

    clients: list[Client]
    operations: int
    deliveries: list[Any]
    wall_seconds: float
    all_delivered: bool
    log: str = ""  # the stack's output, kept when a request got no proper answer

    @property
    def expected(self) -> set[str]:
        """Tasks that must be delivered once: created, not cancelled (204) nor maybe cancelled (202)."""
        return {t for c in self.clients for t in c.due if t not in c.cancelled | c.maybe}

    @property
    def forbidden(self) -> set[str]:
        return {t for c in self.clients for t in c.cancelled}

    def delivered(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for d in self.deliveries:
            if d.status == 200:
                counts[d.task_id] = counts.get(d.task_id, 0) + 1
        return counts

    def duplicates(self) -> dict[str, int]:
        """Per task, the deliveries beyond one for each occurrence it may have run: its last due
        time's, and each due time a reschedule replaced once that occurrence could be claimed."""
        allowed = {
            task: {parse_time(rfc3339(due)), *c.superseded.get(task, ())}
            for c in self.clients
            for task, due in c.due.items()
        }
        occurrences = Counter(
            (d.task_id, parse_time(d.body["scheduled_for"])) for d in self.deliveries if d.status == 200
        )
        extra: Counter[str] = Counter()
        for (task, at), count in occurrences.items():
            extra[task] += count - 1 if at in allowed.get(task, ()) else count
        return {task: count for task, count in extra.items() if count}

    def figures(self) -> dict[str, Any]:
        latencies = [x for c in self.clients for x in c.latencies]
        mine = [d for d in self.deliveries if d.task_id.startswith("load-")]
        lateness = [d.lateness for d in mine]
        return {
            "clients": len(self.clients),
            "operations": self.operations,
            "api_p50_s": round(percentile(latencies, 50), 4),
            "api_p99_s": round(percentile(latencies, 99), 4),
            "api_max_s": round(max(latencies), 4),
            "errors": sum(c.connection_errors + c.server_errors for c in self.clients),
            "lateness_p50_s": round(percentile(lateness, 50), 3) if lateness else None,
            "lateness_p99_s": round(percentile(lateness, 99), 3) if lateness else None,
            "tasks_fired": len({d.task_id for d in mine}),
            "backend": BACKEND,
        }


def measure(
    stack: LocalStackProcess, receiver: Receiver, clients: int, operations: int, seed: int = 8
) -> LoadRun:
    """Run the clients against a started stack, then wait for the deliveries."""
    rng = random.Random(seed)
    runners = [Client(i, stack.api_url, random.Random(rng.random())) for i in range(clients)]
    plans = [_operations(c.rng, operations) for c in runners]
    start = threading.Barrier(clients)

    def work(client: Client, plan: list[str]) -> None:
        start.wait()
        for operation in plan:
            client.run_one(operation)

    threads = [
        threading.Thread(target=work, args=(c, p), name=f"load-client-{c.index}")
        for c, p in zip(runners, plans, strict=True)
    ]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    load = LoadRun(runners, clients * operations, [], wall, False)
    expected = load.expected
    last_due = max((due for c in runners for due in c.due.values()), default=time.time())

    def arrived() -> bool:
        return expected <= {d.task_id for d in receiver.deliveries if d.status == 200}

    load.all_delivered = receiver.wait_until(arrived, max(0.0, last_due - time.time()) + DELIVERY_GRACE)
    time.sleep(SETTLE_SECONDS)
    with receiver.changed:
        load.deliveries = list(receiver.deliveries)
    return load


def started(root: Path, settings: dict[str, str] | None = None) -> tuple[LocalStackProcess, Receiver]:
    receiver = Receiver()
    state = root / "state"
    state.mkdir()
    env = stack_environment(state, hook_url=receiver.url, **(settings or {}))
    return LocalStackProcess(state, env, root / "stack.log").start(), receiver


def load_run(quick: bool, on_done: Callable[[LoadRun, LocalStackProcess], None] | None = None) -> LoadRun:
    clients, operations = SIZES[quick]
    with tempfile.TemporaryDirectory() as tmp:
        stack, receiver = started(Path(tmp))
        try:
            result = measure(stack, receiver, clients, operations)
            if any(c.unexpected for c in result.clients):
                result.log = stack.output()
            if on_done is not None:
                on_done(result, stack)
            return result
        finally:
            stack.kill()
            receiver.shutdown()
            receiver.server_close()


def run(quick: bool = False) -> dict[str, Any]:
    figures: dict[str, Any] = load_run(quick).figures()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--detail", action="store_true", help="also print wall time and unexpected answers")
    args = parser.parse_args()
    result = load_run(args.quick)
    print(json.dumps(result.figures(), indent=2))
    if args.detail:
        unexpected = [u for c in result.clients for u in c.unexpected]
        counts = result.delivered()
        print(
            json.dumps(
                {
                    "wall_s": round(result.wall_seconds, 2),
                    "expected": len(result.expected),
                    "all_delivered": result.all_delivered,
                    "duplicates": sum(result.duplicates().values()),
                    "cancelled_but_ran": sorted(result.forbidden & set(counts)),
                    "unexpected": unexpected[:20],
                    "unexpected_count": len(unexpected),
                },
                indent=2,
            )
        )
        if result.log:
            print(result.log, file=sys.stderr)


if __name__ == "__main__":
    main()
