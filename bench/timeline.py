"""A window of load in simulated time, every part real: tasks created through the API handler, the
keeper fed from the table's stream as Lambda's trigger polls it, and every worker invocation the
protocol starts, each through its handler, against moto in-process, on time-machine's clock.

Why: what a deployment is billed for (DynamoDB units, Lambda invocations and how long they last,
log bytes, custom metrics) depends on when things happen: how long a worker waits for an instant,
how many stream records one keeper batch carries, which invocations the rule and the trigger start.
Simulated time gives those without waiting for them.

How:
* time stands still while code runs, except that each request a function makes takes its round
  trip by the latency model (bench/latency.py, `RoundTrips`: requests in flight together overlap);
  a `sleep` moves it to its end, after what happens in the world meanwhile has happened, in time
  order (`World.advance_to`): the creates due by then, the stream's polls, the rule's firing;
* a create is the API handler on a POST /tasks event as API Gateway delivers it;
* Lambda polls the stream's shard POLLS_PER_SECOND times a second: a poll after a table write reads
  what was written since the last one (moto's DynamoDB Streams API), keeps what the deployed
  trigger's filters pass and hands it to the keeper handler in batches of KEEPER_BATCH_SIZE;
* the rule fires at the start of each minute its cron names that was still ahead when it was put
  (`rule_firings`: in `second` precision the armed minute and its backstop; EventBridge promises the
  minute, not the second: the start makes the longest wait), each Invoke the trigger makes starts
  an invocation, and so does each message a waiting worker hands its wait over with, as the
  hand-over queue's event source mapping delivers it (bench/handover.py). They run one at a time,
  in order: one that would start while another runs starts when it ends (`Run.deferred_s`). A
  worker's context counts its remaining time in simulated time;
* what each function spent is charged by bench/accounts.py; a function's own CPU is this process's
  less the emulator's and the bench's (a worker invocation's also less the creates and keeper
  batches that ran during it).

A `Plan` with an `end` measures a steady state: tasks due before it are queued when it starts, as
their creates came earlier, and the measured part starts at `measured_from`; one without an end runs
until nothing is left to do.
"""

from __future__ import annotations

import contextlib
import contextvars
import heapq
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, cast

import time_machine

from bench.accounts import (
    API,
    KEEPER,
    POLLER,
    WORKER,
    Account,
    Accounts,
    Printed,
    acting,
    acting_for,
    capturing,
)
from bench.handover import HANDOVER, HandoverQueue
from bench.harness import emulated_aws
from bench.latency import RoundTrips
from bench.stream import StreamFeed
from editor import Editor
from editor.changes import new_record
from editor.inputs import TaskSpec
from infra import names
from infra.config import InfraConfig
from lambdas.api import handler as api_handler
from lambdas.api.app import build_app
from lambdas.keeper import handler as keeper_handler
from lambdas.worker import handler as worker_handler
from local.gateway import build_event
from local.lambdas import LambdaContext
from local.meter import item_size
from local.motoserver import EmulatedState
from nexttick.actions import build_registry
from nexttick.aws import LambdaWorkerTrigger, SqsWaitHandover, rule_firings
from nexttick.config import Precision
from nexttick.observability import metrics
from nexttick.runtime import Runtime
from nexttick.store.models import TaskItem
from nexttick.store.records import TaskStatus
from nexttick.store.streams import reaches_keeper

POLLS_PER_SECOND = 4  # Lambda's polling of each shard of a DynamoDB stream
RULE_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
API_TIMEOUT_SECONDS = 29  # API Gateway's integration limit, as infra/api.py sets it
# The stack sets no POWERTOOLS_LOG_LEVEL (InfraConfig.runtime_environment): Powertools' default.
DEPLOYED_LOG_LEVEL = "INFO"
# DynamoDB bills each stored item's bytes plus this much for its indexing.
ITEM_OVERHEAD_BYTES = 100
# Lambda's advice for a queue an event source mapping reads: a visibility timeout of at least six
# times the function's timeout (a message stays hidden while its invocation runs).
VISIBILITY_TIMEOUTS = 6


class WindowEnd(Exception):
    """A worker's wait reaches past the end of the window: its invocation stops there."""


@dataclass(frozen=True)
class Plan:
    """Tasks created at their times (`creates`: when, due) and tasks already queued at `start`
    (`queued`: dues), measured from `measured_from` (default `start`) to `end` (default: until
    nothing is left). `periods`: each create starts a period of its own (isolated tasks), which the
    metrics' publication marks count apart."""

    precision: Precision
    start: datetime
    creates: tuple[tuple[datetime, datetime], ...]
    queued: tuple[datetime, ...] = ()
    measured_from: datetime | None = None
    end: datetime | None = None
    periods: bool = False
    action: str = "silent"
    max_invocations: int = 1000  # a protocol that kept re-invoking would fail the window, not hang it


@dataclass
class Run:
    """One invocation: when it started and ended (within the measured part; its requests' round
    trips pass in simulated time), its own CPU, how much later it started than it would have on AWS."""

    cause: str
    start: datetime
    end: datetime
    cpu_s: float
    deferred_s: float = 0.0

    @property
    def span_s(self) -> float:
        return (self.end - self.start).total_seconds()


@dataclass
class Measured:
    """What a window spent: by function, its invocations; printed bytes; per custom metric, how
    many (period, hour) marks it was published in; finished tasks and the bytes each one keeps; the
    hand-over queue's billed requests by operation (its pollers' idle receives aside) and the
    invocations its messages started (`worker` has the invocations it measured part of, a long one
    begun before it among them)."""

    accounts: dict[str, Account]
    worker: list[Run]
    keeper: list[Run]
    api: list[Run]
    printed_bytes: dict[str, int]
    metric_marks: dict[str, int]
    finished: int
    stored_bytes_per_task: float
    sqs_requests: dict[str, int] = field(default_factory=dict)
    handovers: int = 0


@dataclass(order=True)
class _Start:
    at: datetime
    seq: int
    cause: str = field(compare=False)
    event: dict[str, Any] = field(compare=False)


class SimClock:
    """time-machine's time; `sleep` lets the world live until its end (no real time passes)."""

    def __init__(self) -> None:
        self.world: World | None = None

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0 and self.world is not None:
            self.world.sleep(seconds)


class SimContext(LambdaContext):
    """A Lambda context whose remaining time runs on the simulated clock."""

    def __init__(self, function_name: str, timeout_seconds: float, memory_mb: int) -> None:
        super().__init__(function_name, timeout_seconds, memory_mb=memory_mb)
        self.deadline = datetime.now(UTC) + timedelta(seconds=timeout_seconds)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - datetime.now(UTC)).total_seconds() * 1000))


class World:
    """Everything but the running worker invocation: creates, polls, the rule, invocations to start."""

    def __init__(self, runtime: Runtime, traveller: time_machine.Traveller, plan: Plan) -> None:
        self.runtime, self.traveller, self.plan = runtime, traveller, plan
        self.deployed = InfraConfig(precision=plan.precision)
        self.editor = Editor(runtime=runtime)
        self.feed = StreamFeed(runtime)
        trigger = cast(LambdaWorkerTrigger, runtime.trigger)
        handover = cast(SqsWaitHandover, runtime.handover)
        self.handover = HandoverQueue(handover.client, handover.queue_url)
        clients = (runtime.rule.client, trigger.client, self.feed.client, handover.client)
        self.accounts = Accounts(runtime.store, clients, self.wrote)
        self.printed = Printed(self.accounts, self._mark)
        runtime.rule.client.meta.events.register("provide-client-params.events.PutRule", self._rule_put)
        trigger.client.meta.events.register("provide-client-params.lambda.Invoke", self._invoked)
        self.driver = threading.current_thread()
        self._world = threading.RLock()  # one world event at a time
        table_client = runtime.store.client
        RoundTrips(
            (table_client, *clients), lambda: datetime.now(UTC), self._passed, lambda: acting() != POLLER
        )
        self._schedule = threading.Lock()  # polls, the rule, invocations to start
        self._inside = False
        self._creates = sorted(plan.creates)
        self._poll_at: datetime | None = None
        self._firings: list[datetime] = []  # the rule's minutes still to fire, earliest first
        self._starts: list[_Start] = []
        self._seq = 0
        self._measuring = plan.measured_from is None
        self._active: tuple[datetime, float, float, float] | None = None  # the running invocation's baseline
        self._period = 0
        self.world_cpu_s = 0.0
        self.worker: list[Run] = []
        self.keeper: list[Run] = []
        self.api: list[Run] = []

    # ------------------------------------------------------------------ hooks
    def wrote(self) -> None:
        """A table write: the stream has something for the poll that follows it."""
        now = datetime.now(UTC)
        step = 1 / POLLS_PER_SECOND
        poll = datetime.fromtimestamp((now.timestamp() // step + 1) * step, UTC)
        with self._schedule:
            if self._poll_at is None or poll < self._poll_at:
                self._poll_at = poll

    def _rule_put(self, *, params: dict[str, Any], **_: Any) -> None:
        """The rule's minutes replace the old ones; one already begun never fires (so none fires twice)."""
        now = datetime.now(UTC)
        with self._schedule:
            self._firings = [m for m in rule_firings(params["ScheduleExpression"]) if m > now]

    def _invoked(self, *, params: dict[str, Any], **_: Any) -> None:
        event = json.loads(params["Payload"])
        self._start(datetime.now(UTC), str(event.get("action")), event)

    def _start(self, at: datetime, cause: str, event: dict[str, Any]) -> None:
        with self._schedule:
            self._seq += 1
            heapq.heappush(self._starts, _Start(at, self._seq, cause, event))

    def _mark(self) -> tuple[int, int]:
        return self._period, int(datetime.now(UTC).timestamp() // 3600)

    # ------------------------------------------------------------------ time
    def sleep(self, seconds: float) -> None:
        target = datetime.now(UTC) + timedelta(seconds=seconds)
        end = self.plan.end
        if (
            end is not None
            and target > end
            and threading.current_thread() is self.driver
            and not self._inside
        ):
            self.advance_to(end)
            raise WindowEnd
        self.advance_to(target)

    def advance_to(self, target: datetime) -> None:
        """Let what happens until `target` happen, in time order, then move the clock there."""
        with self._world:
            if not self._inside:
                limit = target if self.plan.end is None else min(target, self.plan.end)
                while (event := self._next_event(limit)) is not None:
                    at, happen = event
                    self._move(at)
                    self._inside, began = True, time.thread_time()
                    try:
                        happen()
                    finally:
                        self._inside = False
                        self.world_cpu_s += time.thread_time() - began
            self._move(target)

    def _passed(self, at: datetime) -> None:
        """A request's round trip ends at `at`: the clock moves there, the world's events in between
        happen at the next sleep (a round trip is milliseconds; a stream poll a quarter second)."""
        with self._world:
            self._move(at)

    def _move(self, at: datetime) -> None:
        if at > datetime.now(UTC):
            self.traveller.move_to(at)

    def _next_event(self, limit: datetime) -> tuple[datetime, Callable[[], None]] | None:
        with self._schedule:
            candidates: list[tuple[datetime, int, Callable[[], None]]] = []
            if not self._measuring and self.plan.measured_from is not None:
                candidates.append((self.plan.measured_from, 0, self._restart))
            if self._creates:
                candidates.append((self._creates[0][0], 1, self._create))
            if self._poll_at is not None:
                candidates.append((self._poll_at, 2, self._poll))
            if self._firings:
                candidates.append((self._firings[0], 3, self._fire))
            if (poll := self.handover.next_poll()) is not None:
                candidates.append((poll, 4, self._deliver))
        due = [c for c in candidates if c[0] <= limit]
        if not due:
            return None
        at, _, happen = min(due, key=lambda c: c[:2])
        return at, happen

    # ------------------------------------------------------------------ world events
    def _restart(self) -> None:
        """The measured part starts: what came before it is forgotten."""
        self._measuring = True
        self.accounts.restart()
        self.printed.restart()
        self.handover.restart()
        for runs in (self.worker, self.keeper, self.api):
            runs.clear()
        if self._active is not None:
            self._active = self._baseline()

    def _fire(self) -> None:
        with self._schedule:
            minute = self._firings.pop(0)
        self._start(minute, "rule", RULE_EVENT)

    def _deliver(self) -> None:
        event = self.handover.poll()
        if event is not None:
            self._start(datetime.now(UTC), HANDOVER, event)

    def _create(self) -> None:
        _, due = self._creates.pop(0)
        body = {"action": self.plan.action, "due": due.isoformat(), "payload": {"n": self._period}}
        event = build_event(
            method="POST",
            raw_path="/tasks",
            headers=[("content-type", "application/json")],
            body=json.dumps(body).encode(),
        )
        context = SimContext(
            self.deployed.resource_names.api_function, API_TIMEOUT_SECONDS, self.deployed.api_memory_mb
        )
        answer: dict[str, Any] = {}
        self.api.append(self._call(API, "create", lambda: answer.update(api_handler.handler(event, context))))
        assert answer["statusCode"] == 201, answer
        if self.plan.periods:
            self._period += 1

    def _poll(self) -> None:
        with self._schedule:
            self._poll_at = None
        with acting_for(POLLER):
            records = [r for r in self.feed.read() if reaches_keeper(r)]
        context = SimContext(
            self.deployed.resource_names.keeper_function, names.KEEPER_TIMEOUT_SECONDS, names.KEEPER_MEMORY_MB
        )
        for start in range(0, len(records), names.KEEPER_BATCH_SIZE):
            batch = {"Records": records[start : start + names.KEEPER_BATCH_SIZE]}
            self.keeper.append(self._call(KEEPER, "stream", partial(keeper_handler.handler, batch, context)))

    def _call(self, function: str, cause: str, call: Callable[[], Any]) -> Run:
        """One invocation of a function other than the worker, in this thread, in a context of its
        own (its log keys are not the caller's)."""
        with acting_for(function):
            before = self.accounts.by_function[function]
            not_its, began, at = (
                before.not_its_cpu_s,
                time.thread_time(),
                datetime.now(UTC),
            )
            contextvars.Context().run(call)
            after = self.accounts.by_function[function]
            cpu = time.thread_time() - began - (after.not_its_cpu_s - not_its)
        return Run(cause, at, datetime.now(UTC), cpu)

    # ------------------------------------------------------------------ invocations
    def run(self) -> None:
        """Start every invocation in order, letting the world live in between, until nothing is left."""
        started = 0
        while True:
            with self._schedule:
                first = self._starts[0] if self._starts else None
            if first is not None and (self.plan.end is None or first.at < self.plan.end):
                self.advance_to(first.at)
                with self._schedule:
                    if self._starts[0] is not first:
                        continue  # something started earlier meanwhile
                    heapq.heappop(self._starts)
                started += 1
                if started > self.plan.max_invocations:
                    raise RuntimeError(f"more than {self.plan.max_invocations} worker invocations")
                self._invoke_worker(first)
                continue
            event = self._next_event(self.plan.end or datetime.max.replace(tzinfo=UTC))
            if event is None:
                return
            self.advance_to(event[0])

    def _baseline(self) -> tuple[datetime, float, float, float]:
        worker = self.accounts.by_function[WORKER]
        return datetime.now(UTC), time.process_time(), self.world_cpu_s, worker.not_its_cpu_s

    def _invoke_worker(self, start: _Start) -> None:
        context = SimContext(
            self.runtime.settings.worker_function,
            self.deployed.worker_timeout_seconds,
            self.deployed.worker_memory_mb,
        )
        deferred = (datetime.now(UTC) - start.at).total_seconds()
        self._active = self._baseline()
        returned = False
        with contextlib.suppress(WindowEnd):
            worker_handler.handler(start.event, context)
            returned = True
        began, cpu, world, not_its = self._active
        self._active = None
        worker = self.accounts.by_function[WORKER]
        own = time.process_time() - cpu - (self.world_cpu_s - world) - (worker.not_its_cpu_s - not_its)
        if returned and start.cause == HANDOVER:
            self.handover.delete(start.event)
        if not self._measuring:
            return
        end = datetime.now(UTC) if self.plan.end is None else min(datetime.now(UTC), self.plan.end)
        self.worker.append(Run(start.cause, began, end, own, deferred_s=deferred))

    # ------------------------------------------------------------------ results
    def measured(self) -> Measured:
        state = EmulatedState(
            self.runtime.settings.region, self.runtime.settings.table_name, self.runtime.settings.rule_name
        )
        status = TaskItem.status.attr_name
        finished = [
            item_size(item) + ITEM_OVERHEAD_BYTES
            for item in state.get(state.keys())
            if item is not None and item.get(status, {}).get("S") == TaskStatus.SUCCEEDED.value
        ]
        marks = Counter({metric: len(seen) for metric, seen in self.printed.published.items()})
        return Measured(
            accounts=dict(self.accounts.by_function),
            worker=self.worker,
            keeper=self.keeper,
            api=self.api,
            printed_bytes=dict(self.printed.bytes),
            metric_marks=dict(marks),
            finished=len(finished),
            stored_bytes_per_task=sum(finished) / len(finished) if finished else 0.0,
            sqs_requests=dict(self.handover.requests),
            handovers=self.handover.delivered,
        )

    def deploy(self, queued: tuple[datetime, ...]) -> None:
        """The table as the window finds it: `queued` tasks stored as the API's creates store them
        (their creates came earlier), then the rule derived from the table by the sync a deploy
        runs (it writes the rule record the worker reads its shard heads from)."""
        now = datetime.now(UTC)
        records = [
            new_record(TaskSpec(action=self.plan.action, due=due, payload={"n": i}), self.editor.actions, now)
            for i, due in enumerate(queued)
        ]
        state = EmulatedState(
            self.runtime.settings.region, self.runtime.settings.table_name, self.runtime.settings.rule_name
        )
        state.put(item for _, items in self.runtime.store.new_items(records, now) for item in items)
        self.runtime.rule_sync.sync()
        self.feed.read()  # the sync's own records: the keeper saw them before the window
        self.accounts.restart()
        self.printed.restart()

    @contextlib.contextmanager
    def handlers(self) -> Iterator[None]:
        """The three handlers on this runtime, printing as deployed; restored afterwards."""
        saved = api_handler.app, worker_handler._deps, keeper_handler._keeper
        api_handler.app = build_app(lambda: self.editor)
        registry = build_registry(self.runtime.settings.action_definitions(), self.runtime.settings)
        worker_handler.use(self.runtime, registry)
        keeper_handler.use(self.runtime)
        try:
            with capturing(self.printed, DEPLOYED_LOG_LEVEL):
                yield
        finally:
            metrics.clear_metrics()  # a worker stopped at the window's end leaves its own unprinted
            api_handler.app, worker_handler._deps, keeper_handler._keeper = saved


def follow(plan: Plan) -> Measured:
    """Run `plan` and measure it."""
    clock = SimClock()
    deployed = InfraConfig(precision=plan.precision)
    with (
        time_machine.travel(plan.start, tick=False) as traveller,
        emulated_aws(
            clock=clock,
            handover_visibility_s=VISIBILITY_TIMEOUTS * deployed.worker_timeout_seconds,
            precision=plan.precision,
            max_invocations=deployed.max_invocations,
        ) as runtime,
    ):
        world = World(runtime, traveller, plan)
        world.deploy(plan.queued)
        clock.world = world
        with world.handlers():
            world.run()
        return world.measured()
