"""The soak: editors, workers and the keeper run concurrently against moto under random crashes and
faults while time advances, then a quiet period lets everything settle, then every invariant that
applies in-process is checked at rest (docs/reliability.md).

    python -m tests.soak [--seconds 600] [--seed N] [--faults throttle,5xx,...] [--write-docs]

* Editors (threads, one client process each): one-shot creates, cron (UTC and Europe/Berlin) and
  `every` tasks, poison tasks (their action always fails), reschedules and cancels (with If-Match),
  same-id repeats after an error, duplicate submissions, naive timestamps (must be refused), deploys
  (the post-deploy sync invocation).
* Workers: Lambda's asynchronous invocations (EventBridge firings, editors' and the keeper's wakes,
  the worker's own continuations) on up to four containers, each with a Lambda context on the shared
  clock; a failed invocation is retried twice, 1 and 2 minutes later.
* The keeper: the table's stream, read with the DynamoDB Streams API, batches to the keeper handler,
  a failed batch retried.
* Every AWS call of every actor may be throttled, fail with a 5xx, fail one attempt the SDK retries,
  be slow or time out; every actor may die right after any call (a crash: nothing after it runs).
  The last attempt Lambda makes of an event runs clean: past it the event would go to the
  on-failure queue, which is alarmed (out of scope here).
* Time: a `SimClock` at `speed` x real time, the same for every actor. Quiet period: editors stop,
  faults stop, the clock stops running (sleepers skip ahead), in-flight invocations finish, then the
  world runs one event at a time until at rest (I2 checked) and past every due time (I1-I5, I7).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from moto import mock_aws  # before any boto3 session exists: sessions copy moto's handler when made

from local.motopatches import lighten_dynamodb, route_without_listing_moto
from tests.support.aws import FAKE_AWS_ENV
from tests.support.faults import (
    DELIVERIES,
    NO_FAULTS,
    START,
    Container,
    Crash,
    CrashAfter,
    Kind,
    Plan,
    RandomPlan,
    SimClock,
    World,
    world_settings,
)
from tests.support.invariants import InvariantReport, Ledger, check_invariants

S = timedelta(seconds=1)
M = timedelta(minutes=1)
# Per AWS call.
DEFAULT_RATES: dict[Kind, float] = {
    Kind.THROTTLE: 0.010,
    Kind.SERVER_ERROR: 0.010,
    Kind.SERVER_ERROR_RETRIED: 0.010,
    Kind.THROTTLE_RETRIED: 0.002,
    Kind.SLOW: 0.010,
    Kind.TIMEOUT: 0.005,
    Kind.LOST_RESPONSE: 0.005,
}
CRASH_RATE = 0.008
# Besides the drawn crashes, every this many requests an editor dies right after its first or second
# call for certain: an editor makes few calls, so a drawn crash alone may not happen in a short run.
EDITOR_CRASH_EVERY = 15
FAULT_DELAYS = (1.0, 20.0)
# Recurring tasks every few minutes keep a worker awake (each next run too close to arm the rule for
# it): a few per editor, so that the world can come to rest for the I2 check.
MAX_RECURRING_PER_EDITOR = 2
# Editors alternate busy and sparse phases (real seconds each): dense load keeps a worker awake
# (each next due time too close to arm the rule), the sparse phases let it go idle so that the rule
# has to fire. One-shot tasks are due within (virtual seconds):
PHASE_SECONDS = 8.0
BUSY_DUES = (5.0, 240.0)
SPARSE_DUES = (120.0, 480.0)
# Real time an invocation may return after its simulated deadline before it counts against I5.
OVERRUN_SLACK = timedelta(seconds=0.5)
DUE_WITHIN = timedelta(seconds=SPARSE_DUES[1])  # virtual seconds a slow or timing-out call waits


@dataclass
class SoakConfig:
    seconds: float = 600.0  # wall time, chaos and quiet period together
    seed: int | None = None
    editors: int = 3
    speed: float = 30.0  # virtual seconds per real second while chaos runs
    keeper: bool = True
    rates: dict[Kind, float] = field(default_factory=lambda: dict(DEFAULT_RATES))
    crash_rate: float = CRASH_RATE
    # For the mutant check: every client dies right after its task write and nobody repeats a
    # request or deploys (left alone, such a task is covered only by the keeper).
    editors_die_after_task_write: bool = False

    @property
    def quiet_reserve(self) -> float:
        """Wall seconds kept for stopping the actors and the quiet period."""
        return min(30.0, max(6.0, self.seconds * 0.12))


@dataclass
class SoakResult:
    config: SoakConfig
    seed: int
    report: InvariantReport
    rest: InvariantReport
    ops: Counter[str]
    faults: Counter[str]
    invocations: Counter[str]
    figures: Counter[str]
    harness_errors: list[str]
    wall_seconds: float
    virtual: timedelta

    @property
    def ok(self) -> bool:
        return self.report.ok and self.rest.ok and not self.harness_errors

    def lines(self) -> list[str]:
        f, r = self.figures, self.report.figures
        crashes = self.faults.get(Kind.CRASH.value, 0) + self.faults.get("timeout-kill", 0)
        return [
            f"seed {self.seed}; wall {self.wall_seconds:.1f} s; virtual {self.virtual}"
            f" (x{self.config.speed:g} while chaos ran); keeper {'on' if self.config.keeper else 'OFF'}",
            "operations: " + _fmt(self.ops),
            "faults injected: "
            + _fmt(Counter({k: v for k, v in self.faults.items() if k != Kind.CRASH.value})),
            f"crashes: {crashes} (after a call {self.faults.get(Kind.CRASH.value, 0)},"
            f" at a Lambda deadline {self.faults.get('timeout-kill', 0)}); by actor: {_fmt(f, 'crash:')}",
            "worker invocations: " + _fmt(self.invocations),
            f"keeper: {f['keeper_batches']} batches, {f['keeper_records']} records, {f['keeper_failures']}"
            f" failed attempts, {f['keeper_given_up']} given up; rule: {f['puts']} PutRules,"
            f" {f['fired']} firings, {f['moved']} armed minutes moved before firing,"
            f" {f['missed']} armed too late to fire",
            f"tasks: {r['requested']} requested, {r['committed']} committed ({_fmt(r, 'status:')});"
            f" deliveries {r['deliveries']}; duplicates {r['duplicates']} (same key);"
            f" coalesced {r['coalesced']}; naive timestamps refused {self.ops['naive-refused']}",
            f"lost: {len(self.report.lost)}; violations at rest: {len(self.rest.violations)},"
            f" at the end: {len(self.report.violations)}; harness errors: {len(self.harness_errors)};"
            f" invocations that returned after their simulated deadline: {r['overran']}",
        ]


def _fmt(counter: Counter[str] | dict[str, int], prefix: str = "") -> str:
    items = sorted((k[len(prefix) :], v) for k, v in counter.items() if k.startswith(prefix) and v)
    return ", ".join(f"{k} {v}" for k, v in items) or "none"


class DieAfterTaskWrite:
    """The mutant client: dies right after its second PutItem (a create's task write)."""

    def __init__(self) -> None:
        self.puts = 0

    def fault_for(self, index: int, operation: str) -> None:
        return None

    def crash_after(self, index: int, operation: str) -> bool:
        if operation == "dynamodb.PutItem":
            self.puts += 1
        return self.puts == 2


# ------------------------------------------------------------------------------------------ editors


class EditorActor:
    """One client process issuing random requests; each request is a new process (fault plan)."""

    def __init__(self, soak: Soak, index: int) -> None:
        self.soak = soak
        self.name = f"editor-{index}"
        self.container: Container = soak.world.container("editor", self.name)
        self.rng = random.Random(soak.rng.random())
        self.mine: list[str] = []
        self.count = 0
        self.recurring = 0
        self.requests = 0

    def plan(self) -> Plan:
        if self.soak.config.editors_die_after_task_write:
            return DieAfterTaskWrite()
        self.requests += 1
        plan = self.soak.random_plan(self.rng)
        if self.soak.faulting and self.requests % EDITOR_CRASH_EVERY == 0:
            return CrashAfter(plan, self.rng.choice((1, 2)))
        return plan

    def request(self, kind: str, call: Callable[[Any], Any], *, repeat: float = 0.6) -> str:
        """Send a request; after an error or crash repeat it (same id, same If-Match) with
        probability `repeat`, as an API client does."""
        from editor import Editor

        if self.soak.config.editors_die_after_task_write:
            repeat = 0.0
        for attempt in range(3):
            self.container.injector.begin(self.plan() if attempt == 0 else self.soak.random_plan(self.rng))
            try:
                call(Editor(runtime=self.container.runtime))
                outcome = "ok"
            except Crash:
                outcome = "crashed"
            except Exception as exc:
                outcome = _classify(exc)
            self.soak.count(f"{kind}:{outcome}")
            if outcome in ("ok", "refused") or self.rng.random() >= repeat:
                return outcome
            self.soak.count(f"{kind}:repeated")
        return outcome

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            if not self.soak.busy() and self.name != "editor-1":
                time.sleep(0.2)  # sparse phase: one editor, now and then
                continue
            try:
                self.step()
            except Exception as exc:  # a harness bug, not a product outcome
                self.soak.harness_error(f"{self.name}: {type(exc).__name__}: {exc}")
            time.sleep(self.rng.uniform(0.03, 0.2) if self.soak.busy() else self.rng.uniform(2.0, 5.0))

    def step(self) -> None:
        from editor import TaskSpec
        from nexttick.errors import ValidationError

        draw = self.rng.random()
        now = self.soak.world.clock.now()
        ledger = self.soak.ledger
        if draw < 0.40 or not self.mine:
            self.count += 1
            task_id = f"{self.name}-{self.count}"
            poison = self.rng.random() < 0.05
            due = now + timedelta(seconds=self.rng.uniform(*(BUSY_DUES if self.soak.busy() else SPARSE_DUES)))
            action = "fail" if poison else "record"
            ledger.create(task_id, "once", action, due)
            spec = TaskSpec(
                action=action,
                due=due,
                id=task_id,
                payload={"n": self.count},
                max_attempts=2 if poison else 10,
                retry_backoff_seconds=5,
            )
            self.mine.append(task_id)
            outcome = self.request("create", lambda editor: editor.create(spec))
            if outcome == "ok" and self.rng.random() < 0.05:
                self.request("create-duplicate", lambda editor: editor.create(spec))
        elif draw < 0.50 and self.recurring < MAX_RECURRING_PER_EDITOR:
            self.recurring += 1
            self.count += 1
            task_id = f"{self.name}-{self.count}"
            if self.rng.random() < 0.5:
                zone = self.rng.choice(["UTC", "Europe/Berlin"])
                cron = self.rng.choice(["*/7 * * * *", "*/9 * * * *", "3-59/10 * * * *"])
                ledger.create(task_id, "cron", "record")
                spec = TaskSpec(action="record", cron=cron, timezone=zone, id=task_id, max_attempts=10)
            else:
                every = f"{self.rng.randrange(300, 630, 30)}s"
                ledger.create(task_id, "every", "record")
                spec = TaskSpec(action="record", every=every, id=task_id, max_attempts=10)
            self.mine.append(task_id)
            self.request("create-recurring", lambda editor: editor.create(spec))
        elif 0.50 <= draw < 0.75:
            task_id = self.rng.choice(self.mine)
            if ledger.get(task_id).kind != "once":
                return
            due = now + timedelta(seconds=self.rng.uniform(5, 300))
            version = self._version(task_id)
            if version is None:
                return
            ledger.reschedule(task_id, due)
            self.request(
                "reschedule",
                lambda editor: editor.reschedule(task_id, due=due, expected_version=version),
            )
        elif draw < 0.90:
            task_id = self.rng.choice(self.mine)
            ledger.cancel(task_id, now)
            self.request("cancel", lambda editor: editor.cancel(task_id))
        elif draw < 0.97:
            task_id = self.rng.choice(self.mine)
            self.request("get", lambda editor: editor.get(task_id), repeat=0)
        elif draw < 0.99:
            # I7: a timestamp without an offset is refused
            naive = now.replace(tzinfo=None) + M
            from editor import Editor

            self.container.injector.begin(NO_FAULTS)
            try:
                Editor(runtime=self.container.runtime).create(TaskSpec(action="record", due=naive))
            except ValidationError:
                self.soak.count("naive-refused")
            else:
                self.soak.harness_error(f"{self.name}: a naive timestamp was accepted")
        elif not self.soak.config.editors_die_after_task_write:
            self.soak.deploy()

    def _version(self, task_id: str) -> int | None:
        from editor import Editor

        self.container.injector.begin(self.soak.random_plan(self.rng))
        try:
            task = Editor(runtime=self.container.runtime).get(task_id)
        except (Crash, Exception):
            self.soak.count("get:failed")
            return None
        return task.version if task.status == "pending" else None


def _classify(exc: Exception) -> str:
    from nexttick.errors import ConflictError, TaskNotFoundError, VersionMismatchError

    if isinstance(exc, ConflictError | TaskNotFoundError | VersionMismatchError):
        return "refused"  # the task moved on, finished or never committed: a client-side outcome
    return "error"


# ------------------------------------------------------------------------------------------ the soak


class Soak:
    def __init__(self, config: SoakConfig) -> None:
        self.config = config
        self.seed = config.seed if config.seed is not None else random.SystemRandom().randrange(2**31)
        self.rng = random.Random(self.seed)
        self._plan_rng = random.Random(self.rng.random())
        self._lock = threading.Lock()
        self.ops: Counter[str] = Counter()
        self.errors: list[str] = []
        self.ledger = Ledger()
        self.faulting = True
        self.clock = SimClock(START)  # runs once the actors start
        self.world = World(
            world_settings(queue_shards=4),
            self.clock,
            seed=self.rng.randrange(2**31),
            keeper=config.keeper,
            plans=self.plan_for,
        )
        self.invocation_threads: list[threading.Thread] = []
        self.began = time.monotonic()

    # ------------------------------------------------------------------ faults
    def random_plan(self, rng: random.Random | None = None) -> Plan:
        if not self.faulting:
            return NO_FAULTS
        with self._lock:
            seed = (rng or self._plan_rng).random()
        return RandomPlan(random.Random(seed), self.config.rates, self.config.crash_rate, FAULT_DELAYS)

    def plan_for(self, role: str, attempt: int, last: bool) -> Plan:
        """Lambda's last attempt of an event runs clean (past it: the alarmed on-failure queue)."""
        return NO_FAULTS if last else self.random_plan()

    def count(self, what: str) -> None:
        with self._lock:
            self.ops[what] += 1

    def busy(self) -> bool:
        return int((time.monotonic() - self.began) / PHASE_SECONDS) % 2 == 0

    def harness_error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)

    def deploy(self) -> None:
        """A redeploy: the post-deploy step invokes the worker with the sync event (I6)."""
        self.count("deploy")
        self.world.lambda_.enqueue(self.world.sync_event(), "sync")

    # ------------------------------------------------------------------ background AWS
    def _dispatch(self, stop: threading.Event) -> None:
        lam = self.world.lambda_
        while not stop.is_set():
            taken = lam.take_due(self.clock.now())
            if taken is None:
                time.sleep(0.005)
                continue
            thread = threading.Thread(target=self._invoke, args=taken, daemon=True)
            self.invocation_threads.append(thread)
            thread.start()

    def _invoke(self, *taken: Any) -> None:
        try:
            self.world.lambda_.run(*taken)
        except BaseException as exc:  # the emulation itself failed
            self.harness_error(f"invocation: {type(exc).__name__}: {exc}")

    def _eventbridge(self, stop: threading.Event) -> None:
        eb, lam = self.world.eventbridge, self.world.lambda_
        while not stop.is_set():
            now = self.clock.now()
            for minute, delay in eb.due(now):
                lam.enqueue(eb.scheduled_event(minute), "rule", now + timedelta(seconds=delay))
            time.sleep(0.01)

    def _keeper(self, stop: threading.Event) -> None:
        stream = self.world.stream
        assert stream is not None
        while not stop.is_set():
            stream.dirty.wait(0.1)
            try:
                stream.drain()
            except Exception as exc:  # reading the stream is the emulation's, not the product's
                self.harness_error(f"keeper feed: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ run
    def run(self, out: Callable[[str], None] = print) -> SoakResult:
        began = self.began = time.monotonic()
        out(f"soak: seed {self.seed}, {self.config.seconds:g} s, speed x{self.config.speed:g}")
        with mock_aws(config={"lambda": {"use_docker": False}}), self.world:
            editors = [EditorActor(self, i + 1) for i in range(self.config.editors)]
            stop_editors, stop_aws = threading.Event(), threading.Event()
            threads = [threading.Thread(target=e.run, args=(stop_editors,), daemon=True) for e in editors]
            background = [
                threading.Thread(target=self._dispatch, args=(stop_aws,), daemon=True),
                threading.Thread(target=self._eventbridge, args=(stop_aws,), daemon=True),
            ]
            if self.world.stream is not None:
                background.append(threading.Thread(target=self._keeper, args=(stop_aws,), daemon=True))
            self.clock.set_speed(self.config.speed)
            for thread in background + threads:
                thread.start()
            chaos = max(3.0, self.config.seconds - self.config.quiet_reserve - (time.monotonic() - began))
            time.sleep(chaos)
            # Quiet: no more requests, no more faults, the clock stops running
            stop_editors.set()
            for thread in threads:
                thread.join()
            self.faulting = False
            stop_aws.set()
            for thread in background:
                thread.join()
            self.clock.set_speed(0.0)
            for thread in list(self.invocation_threads):
                thread.join()
            out(f"soak: chaos over after {time.monotonic() - began:.1f} s; settling")
            self.world.settle(within=timedelta(hours=2))
            rest = self._check(final=False)
            horizon = self.clock.now() + DUE_WITHIN + 2 * M
            self.world.drive(horizon)
            report = self._check(final=True)
            self._check_bounds(report)
            result = self._result(report, rest, time.monotonic() - began)
        return result

    def _check(self, *, final: bool) -> InvariantReport:
        observer = self.world.observer
        assert observer is not None
        now = self.clock.now()
        return check_invariants(
            observer.store,
            observer.rule,
            observer.rule_sync.timing,
            now,
            self.ledger,
            DELIVERIES.copy(),
            final=final,
            invocation_pending=self.world.lambda_.pending(),
            will_fire=lambda minute: self.world.eventbridge.will_fire(minute, now),
        )

    def _check_bounds(self, report: InvariantReport) -> None:
        """I5: no read that grows with the table; a worker invocation that ended normally did so
        before its Lambda deadline (it watched its remaining time).

        The deadline is on the simulated clock, and so is the worker's reserve (SAFETY_SECONDS): at
        x30 its 5 s are 0.17 s of real time, less than one scheduling delay of a busy machine,
        while a call after the deadline is killed by the injector anyway. So an invocation that
        returns late is a finding when it is late by more than OVERRUN_SLACK of *real* time: a
        worker that did not watch its clock, not a thread the machine ran a moment late. Every
        overrun is still counted (`overran`)."""
        for container in self.world.containers:
            for operation in container.injector.unbounded:
                report.add("I5", None, f"{container.name} made an unbounded read: {operation}")
        slack = OVERRUN_SLACK * max(self.config.speed, 1.0)
        for result in self.world.lambda_.results:
            if (
                result.outcome == "ok"
                and result.finished
                and result.deadline
                and result.finished > result.deadline
            ):
                report.figures["overran"] += 1
                if result.finished - result.deadline > slack:
                    late = (result.finished - result.deadline).total_seconds()
                    report.add(
                        "I5",
                        None,
                        f"{result.container} finished {late:.1f} s after its deadline: {result.invocation}",
                    )

    def _result(self, report: InvariantReport, rest: InvariantReport, wall: float) -> SoakResult:
        world = self.world
        figures: Counter[str] = Counter()
        for container in world.containers:
            for kind, n in container.injector.injected.items():
                if kind in (Kind.CRASH.value, "timeout-kill"):
                    figures[f"crash:{container.role}"] += n
        stream = world.stream
        if stream is not None:
            figures.update(
                keeper_batches=stream.batches,
                keeper_records=stream.records,
                keeper_failures=stream.failures,
                keeper_given_up=stream.given_up,
            )
        eb = world.eventbridge
        figures.update(puts=eb.puts, fired=len(eb.fired), missed=len(eb.missed), moved=eb.moved)
        invocations = Counter(
            {k: v for k, v in world.lambda_.stats.items() if k.startswith(("invoked:", "crashed", "error"))}
        )
        invocations["dead-lettered"] = len(world.lambda_.dead_letters)
        return SoakResult(
            self.config,
            self.seed,
            report,
            rest,
            Counter(self.ops),
            world.injected(),
            invocations,
            figures,
            list(self.errors),
            wall,
            self.clock.now() - START,
        )


@contextmanager
def fake_aws_environment() -> Iterator[None]:
    """Fake credentials, no NEXTTICK_* settings from the caller's shell."""
    saved = dict(os.environ)
    for name in [n for n in os.environ if n.startswith("NEXTTICK_")]:
        del os.environ[name]
    os.environ.update(FAKE_AWS_ENV)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_soak(config: SoakConfig, out: Callable[[str], None] = print) -> SoakResult:
    """Run one soak (inside fake AWS credentials) and print its figures."""
    with fake_aws_environment():
        result = Soak(config).run(out)
    for line in result.lines():
        out(line)
    if not result.ok:
        out("VIOLATIONS at rest:\n" + result.rest.summary())
        out("VIOLATIONS at the end:\n" + result.report.summary())
        for error in result.harness_errors[:20]:
            out(f"harness error: {error}")
    return result


# ------------------------------------------------------------------------------------------ docs

DOC = Path(__file__).resolve().parent.parent / "docs" / "reliability.md"


_DEADLINE_NOTE = (
    "I5's deadline check is on the simulated clock, and so is the worker's 5 s reserve: at x30 that "
    "is 0.17 s of real time, less than one scheduling delay of a busy machine. An invocation that "
    "returns after its deadline is a finding when it is late by more than "
    f"{OVERRUN_SLACK.total_seconds():g} s of real time (a worker that did not watch its clock); each "
    "one is counted above."
)


def write_docs(result: SoakResult, path: Path = DOC) -> None:
    """Replace the "## Soak" section of docs/reliability.md with this run's figures."""
    stamp = time.strftime("%Y-%m-%d")
    section = "\n".join(
        [
            "## Soak",
            "",
            f"Latest `make soak` ({stamp}; `SOAK_SECONDS={result.config.seconds:g}`, seed {result.seed}; "
            "rerun with `python -m tests.soak --seed <seed>` — the seed fixes every random choice, "
            "not the threads' interleaving):",
            "",
            *(f"- {line}" for line in result.lines()),
            "",
            f"Result: {'**all invariants held**' if result.ok else '**VIOLATIONS** (see the run output)'}.",
            "",
            _DEADLINE_NOTE,
            "",
        ]
    )
    text = path.read_text() if path.exists() else "# Reliability\n\n"
    pattern = re.compile(r"^## Soak\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(section + "\n", text) if pattern.search(text) else text.rstrip() + "\n\n" + section
    path.write_text(text.rstrip() + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 600)))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--speed", type=float, default=30.0, help="virtual seconds per real second")
    parser.add_argument("--editors", type=int, default=3)
    parser.add_argument("--faults", default=None, help="comma-separated kinds (default: all)")
    parser.add_argument("--no-keeper", action="store_true", help="the mutant: nothing consumes the stream")
    parser.add_argument(
        "--write-docs", action="store_true", help="replace the Soak section of docs/reliability.md"
    )
    args = parser.parse_args(argv)
    lighten_dynamodb()  # the emulator the test suite and the local stack run
    route_without_listing_moto()
    config = SoakConfig(
        seconds=args.seconds,
        seed=args.seed,
        speed=args.speed,
        editors=args.editors,
        keeper=not args.no_keeper,
    )
    if args.faults is not None:
        kinds = [Kind(name.strip()) for name in args.faults.split(",") if name.strip()]
        config.rates = {kind: DEFAULT_RATES[kind] for kind in kinds if kind in DEFAULT_RATES}
        config.crash_rate = CRASH_RATE if Kind.CRASH in kinds else 0.0
    result = run_soak(config)
    if args.write_docs:
        write_docs(result)
        print("soak: figures written to docs/reliability.md (section Soak)")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
