"""Fault injection at the HTTP layer, and the AWS around nexttick's actors, against in-process moto.

* `Injector` hooks the botocore clients of one actor (an editor's process, one worker or keeper
  Lambda container) through botocore's event system, and per AWS call can: fail the call
  (throttling, 5xx: what the code sees once the SDK gave up), fail single HTTP attempts that the
  SDK then retries, delay the call (slow) or delay and time it out (nothing applied), lose the
  response of an applied request so that the SDK sends it again, or kill the actor right after the
  call completed (`Crash`, a BaseException: no `except Exception` of the code under test runs, as
  at a Lambda timeout). A dead actor makes no further call; a Lambda container whose virtual
  deadline passed dies at its next call.
* `World` is moto with the table's stream on, one container (runtime, injector, its own copy of
  the handler module) per actor, and the AWS machinery a recovery needs: Lambda's asynchronous
  invokes with its two retries (`LambdaService`), EventBridge firing the rule within its minute
  (`EventBridge`, fed by every PutRule moto applies), the keeper's stream trigger with its
  retries (`StreamFeed`), and the hand-over queue's trigger (every hand-over message moto accepts
  starts a worker invocation when its delay ends; one that fails comes back after the visibility
  timeout, as the queue redelivers it). `settle()` and `drive(until)` run it one event at a time
  on a `SimClock`; the soak (tests/soak.py) also runs it concurrently in threads.
"""

from __future__ import annotations

import contextlib
import heapq
import importlib.util
import io
import itertools
import json
import logging
import os
import random
import re
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from types import ModuleType
from typing import Any, Protocol

import boto3
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError

from nexttick.aws import LambdaWorkerTrigger, SqsWaitHandover, parse_rule_minute, rule_firings
from nexttick.config import NextTickSettings
from nexttick.constants import EPOCH_EXPRESSION, WORKER_EVENT_SOURCE, WORKER_EVENT_SYNC
from nexttick.runtime import Runtime
from nexttick.timeutil import floor_minute
from tests.support.worker import FakeContext

# ------------------------------------------------------------------------------------------ faults


class Crash(BaseException):
    """The actor's process stops here (a Lambda timeout, a killed client). A BaseException, raised
    from botocore's hooks: no `except Exception` in the code under test runs."""


class Kind(StrEnum):
    THROTTLE = "throttle"  # the call fails: ProvisionedThroughputExceeded / Throttling / TooManyRequests
    SERVER_ERROR = "5xx"  # the call fails: InternalServerError / InternalException / ServiceException
    THROTTLE_RETRIED = "throttle-retried"  # the first HTTP attempt is throttled; the SDK retries
    SERVER_ERROR_RETRIED = "5xx-retried"  # the first HTTP attempt gets a 500; the SDK retries
    SLOW = "slow"  # the call waits `delay` seconds (virtual) before it is sent
    TIMEOUT = "timeout"  # waits `delay`, then a read timeout; the request never reached the service
    LOST_RESPONSE = "lost-response"  # applied, its response lost: the SDK sends the request again
    CRASH = "crash"  # the actor dies right after the call completed


# What each service answers (code, HTTP status), by service model name.
_THROTTLE = {
    "dynamodb": ("ProvisionedThroughputExceededException", 400),
    "events": ("ThrottlingException", 400),
    "lambda": ("TooManyRequestsException", 429),
    "sqs": ("RequestThrottled", 400),
}
_SERVER_ERROR = {
    "dynamodb": ("InternalServerError", 500),
    "events": ("InternalException", 500),
    "lambda": ("ServiceException", 500),
    "sqs": ("InternalFailure", 500),
}
_FAILS_CALL = {Kind.THROTTLE: _THROTTLE, Kind.SERVER_ERROR: _SERVER_ERROR}
_FAILS_ATTEMPT = {Kind.THROTTLE_RETRIED: _THROTTLE, Kind.SERVER_ERROR_RETRIED: _SERVER_ERROR}


@dataclass(frozen=True)
class Fault:
    kind: Kind
    delay: float = 15.0  # SLOW / TIMEOUT: virtual seconds (longer than the rule's settle time)


class Plan(Protocol):
    """Which fault an actor's `index`-th AWS call (1-based, `service.Operation`) gets, and whether
    the actor dies right after it."""

    def fault_for(self, index: int, operation: str) -> Fault | None: ...

    def crash_after(self, index: int, operation: str) -> bool: ...


class NoFaults:
    def fault_for(self, index: int, operation: str) -> Fault | None:
        return None

    def crash_after(self, index: int, operation: str) -> bool:
        return False


NO_FAULTS = NoFaults()


@dataclass
class Script:
    """Faults at given call indexes (`Kind.CRASH`: die right after that call)."""

    faults: Mapping[int, Fault]

    @classmethod
    def at(cls, index: int, kind: Kind, delay: float = 15.0) -> Script:
        return cls({index: Fault(kind, delay)})

    def fault_for(self, index: int, operation: str) -> Fault | None:
        fault = self.faults.get(index)
        return None if fault is None or fault.kind is Kind.CRASH else fault

    def crash_after(self, index: int, operation: str) -> bool:
        fault = self.faults.get(index)
        return fault is not None and fault.kind is Kind.CRASH


@dataclass
class CrashAfter:
    """Another plan's faults, and death right after call `index` for certain (besides any the plan
    draws): a soak makes each actor's crash a fact of the run, not a chance of its seed."""

    plan: Plan
    index: int

    def fault_for(self, index: int, operation: str) -> Fault | None:
        return self.plan.fault_for(index, operation)

    def crash_after(self, index: int, operation: str) -> bool:
        return self.plan.crash_after(index, operation) or index == self.index


@dataclass
class RandomPlan:
    """Each call independently: a fault of each kind with its probability, and death after it with
    `crash_rate` (seeded: one Random per plan)."""

    rng: random.Random
    rates: Mapping[Kind, float]
    crash_rate: float = 0.0
    delays: tuple[float, float] = (1.0, 20.0)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def fault_for(self, index: int, operation: str) -> Fault | None:
        with self._lock:
            draw = self.rng.random()
            for kind, rate in self.rates.items():
                if draw < rate:
                    return Fault(kind, self.rng.uniform(*self.delays))
                draw -= rate
        return None

    def crash_after(self, index: int, operation: str) -> bool:
        with self._lock:
            return self.rng.random() < self.crash_rate


class _Raw(io.BytesIO):
    """The raw body botocore's AWSResponse reads."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        chunk = self.read()
        while chunk:
            yield chunk
            chunk = self.read()


def _error_response(
    url: str, service: str, protocol: str, table: Mapping[str, tuple[str, int]]
) -> AWSResponse:
    """An error answer as the service sends it over HTTP (JSON or REST-JSON protocol)."""
    code, status = table[service]
    message = f"injected by tests.support.faults ({code})"
    if protocol == "rest-json":
        headers = {"x-amzn-ErrorType": code, "Content-Type": "application/json"}
        body = {"message": message}
    else:
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        body = {"__type": code, "message": message}
    return AWSResponse(url, status, headers, _Raw(json.dumps(body).encode()))  # type: ignore[arg-type]


@dataclass
class _Call:
    index: int
    operation: str
    service: str
    protocol: str
    fault: Fault | None
    failed_attempts: int = 0
    resent: bool = False


class Injector:
    """Hooks one actor's botocore clients. `begin(plan)` starts an invocation (a new process:
    alive, counters at zero); every AWS call of the actor then goes through the plan."""

    def __init__(self, clock: Any, name: str) -> None:
        self.clock = clock
        self.name = name
        self.plan: Plan = NO_FAULTS
        self.deadline: datetime | None = None
        self.dead = False
        self.death: str | None = None
        self.calls: list[str] = []  # completed calls of this invocation, in order
        self.injected: Counter[str] = Counter()  # over the injector's life, by Kind value
        self.operations: Counter[str] = Counter()  # over the injector's life
        self.unbounded: list[
            str
        ] = []  # reads whose size does not depend on a page (a Scan, a Query without Limit)
        self._count = 0
        self._lock = threading.Lock()
        self._current = threading.local()
        self._clients: list[Any] = []

    # ------------------------------------------------------------------ wiring
    def attach(self, *clients: Any) -> Injector:
        for client in clients:
            if any(client is known for known in self._clients):
                continue
            self._clients.append(client)
            events = client.meta.events
            events.register_first("provide-client-params", self._params)
            events.register_first("before-call", self._before_call)
            events.register_first("before-send", self._before_send)
            events.register_first("needs-retry", self._needs_retry)
            events.register_first("after-call", self._after_call)
        return self

    def attach_runtime(self, runtime: Runtime) -> Injector:
        trigger = runtime.trigger
        assert isinstance(trigger, LambdaWorkerTrigger), "a container's worker trigger is the real invoke"
        handover = runtime.handover
        clients = [
            runtime.store.client,
            runtime.rule.client,
            trigger.client,
        ]
        if isinstance(handover, SqsWaitHandover):
            clients.append(handover.client)
        return self.attach(*clients)

    def begin(self, plan: Plan = NO_FAULTS, *, deadline: datetime | None = None) -> None:
        with self._lock:
            self.plan, self.deadline = plan, deadline
            self.dead, self.death = False, None
            self.calls = []
            self._count = 0

    @property
    def made(self) -> int:
        """AWS calls started in this invocation."""
        return self._count

    def kill(self, why: str) -> Crash:
        """Mark the actor dead; returns the exception to raise."""
        with self._lock:
            if not self.dead:
                self.dead, self.death = True, why
                self.injected["timeout-kill" if why.startswith("deadline") else Kind.CRASH.value] += 1
        return Crash(f"{self.name}: {why}")

    # ------------------------------------------------------------------ botocore hooks
    def _params(self, *, model: Any, params: dict[str, Any], **_: Any) -> None:
        """The call's API parameters (before they are serialised): record reads not bounded by a page."""
        operation = f"{model.service_model.service_name}.{model.name}"
        with self._lock:
            self.operations[operation] += 1
            if model.name == "Scan" or (model.name == "Query" and not params.get("Limit")):
                self.unbounded.append(operation)

    def _before_call(self, *, model: Any, context: dict[str, Any], **_: Any) -> Any:
        service = model.service_model.service_name
        operation = f"{service}.{model.name}"
        with self._lock:
            if self.dead:
                raise Crash(f"{self.name} is dead ({self.death}); {operation} never sent")
            self._count += 1
            index = self._count
            fault = self.plan.fault_for(index, operation)
            if fault is not None:
                self.injected[fault.kind.value] += 1
        self._check_deadline(operation)
        call = _Call(index, operation, service, model.service_model.protocol, fault)
        context["fault_call"] = call
        self._current.call = call
        if fault is None:
            return None
        if fault.kind in (Kind.SLOW, Kind.TIMEOUT):
            self.clock.sleep(fault.delay)
            self._check_deadline(operation)
            if fault.kind is Kind.TIMEOUT:
                raise ReadTimeoutError(endpoint_url=f"injected timeout of {operation}")
        if fault.kind in _FAILS_CALL:
            http = _error_response("https://fault.invalid/", service, call.protocol, _FAILS_CALL[fault.kind])
            code, status = _FAILS_CALL[fault.kind][service]
            parsed = {
                "Error": {"Code": code, "Message": f"injected ({code})"},
                "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}, "RetryAttempts": 0},
            }
            return http, parsed
        return None

    def _check_deadline(self, operation: str) -> None:
        if self.deadline is not None and self.clock.now() >= self.deadline:
            raise self.kill(f"deadline passed before {operation} (Lambda timeout)")

    def _before_send(self, *, request: Any, **_: Any) -> AWSResponse | None:
        call: _Call | None = getattr(self._current, "call", None)
        if call is None or call.fault is None or call.fault.kind not in _FAILS_ATTEMPT:
            return None
        if call.failed_attempts >= 1:
            return None
        call.failed_attempts += 1
        _UNSENT.request = request  # in-process moto must not apply it (see `observed_moto`)
        return _error_response(request.url, call.service, call.protocol, _FAILS_ATTEMPT[call.fault.kind])

    def _needs_retry(self, *, response: Any = None, request_dict: Any = None, **_: Any) -> float | None:
        call: _Call | None = (request_dict or {}).get("context", {}).get("fault_call")
        if call is None or call.fault is None or call.fault.kind is not Kind.LOST_RESPONSE or call.resent:
            return None
        if response is None or response[0] is None or response[0].status_code >= 300:
            return None
        call.resent = True
        return 0.0  # the response was lost: the SDK sends the (applied) request again at once

    def _after_call(self, *, model: Any, context: dict[str, Any], **_: Any) -> None:
        call: _Call | None = context.get("fault_call")
        self._current.call = None
        if call is None:
            return
        with self._lock:
            self.calls.append(call.operation)
            crash = not self.dead and self.plan.crash_after(call.index, call.operation)
        if crash:
            raise self.kill(f"crashed after call {call.index} ({call.operation})")


# ------------------------------------------------------------------------------------------ clock


class SimClock:
    """Virtual UTC time shared by every actor. `speed` 0: time moves only when an actor sleeps or the
    test advances it (sequential tests); > 0: it also runs at `speed` x real time (the concurrent
    soak). A sleeper wakes early when the speed changes, and at speed 0 skips the rest of its sleep."""

    def __init__(self, start: datetime, speed: float = 0.0) -> None:
        self._cond = threading.Condition()
        self._base = start
        self._speed = speed
        self._mono = time.monotonic()

    def _now(self) -> datetime:
        if not self._speed:
            return self._base
        return self._base + timedelta(seconds=(time.monotonic() - self._mono) * self._speed)

    def now(self) -> datetime:
        with self._cond:
            return self._now()

    def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        with self._cond:
            end = self._now() + timedelta(seconds=seconds)
            while (now := self._now()) < end:
                if not self._speed:
                    self._base += end - now
                    return
                self._cond.wait((end - now).total_seconds() / self._speed)

    def advance_to(self, when: datetime) -> None:
        with self._cond:
            now = self._now()
            if when > now:
                self._base += when - now
                self._cond.notify_all()

    def set_speed(self, speed: float) -> None:
        with self._cond:
            self._base, self._mono, self._speed = self._now(), time.monotonic(), speed
            self._cond.notify_all()

    @property
    def speed(self) -> float:
        return self._speed


# ------------------------------------------------------------------------------------------ actions

WORLD_ACTIONS: dict[str, dict[str, Any]] = {
    "log": {"type": "log"},
    "record": {"type": "python", "target": "tests.support.faults:record"},
    "fail": {"type": "python", "target": "tests.support.faults:poison"},
}


class Deliveries:
    """Every delivery envelope the worker handed to an action, by task id."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def add(self, envelope: dict[str, Any]) -> None:
        with self.lock:
            self.by_task[envelope["task_id"]].append(envelope)

    def reset(self) -> None:
        with self.lock:
            self.by_task.clear()

    def of(self, task_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.by_task.get(task_id, ()))

    def copy(self) -> dict[str, list[dict[str, Any]]]:
        with self.lock:
            return {k: list(v) for k, v in self.by_task.items()}

    def total(self) -> int:
        with self.lock:
            return sum(len(v) for v in self.by_task.values())


DELIVERIES = Deliveries()


def record(envelope: dict[str, Any]) -> None:
    DELIVERIES.add(envelope)


def poison(envelope: dict[str, Any]) -> None:
    DELIVERIES.add(envelope)
    raise RuntimeError("poison: this action always fails")


# ------------------------------------------------------------------------------------------ moto


_STUBBER_LOCK = threading.Lock()
# botocore asks every before-send handler, in-process moto's included, and uses the first answer: an
# attempt the injector answers with an error is marked here so that the patched moto skips it (a
# moto server never sees it: botocore does not send a request that a handler answered).
_UNSENT = threading.local()
HANDOVER_ORIGIN = "handover"
_INVOKE_PATH = re.compile(r"/2015-03-31/functions/(?P<name>[^/]+)/invocations")
_DYNAMO_WRITES = frozenset(
    f"DynamoDB_20120810.{op}" for op in ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")
)


@contextlib.contextmanager
def observed_moto(world: World) -> Iterator[None]:
    """Patch in-process moto so that each request is processed atomically (real DynamoDB applies a
    conditional write atomically; moto's in-process backend does not lock) and, in the order moto
    applied them, tell the world about rule changes, asynchronous Lambda invokes and table writes."""
    from moto.core.botocore_stubber import BotocoreStubber

    original = BotocoreStubber.process_request
    if getattr(original, "observed", False):
        raise RuntimeError("one World at a time: moto's backends are per process")

    def process_request(self: Any, request: Any) -> Any:
        if getattr(_UNSENT, "request", None) is request:
            _UNSENT.request = None
            return None
        with _STUBBER_LOCK:
            response = original(self, request)
            if response is not None and response[0] < 300:
                world.observe(request)
        return response

    process_request.observed = True  # type: ignore[attr-defined]
    BotocoreStubber.process_request = process_request  # type: ignore[method-assign]
    try:
        yield
    finally:
        BotocoreStubber.process_request = original  # type: ignore[method-assign]


def _header(request: Any, name: str) -> str:
    value = request.headers.get(name)
    return value.decode() if isinstance(value, bytes) else (value or "")


def _body(request: Any) -> bytes:
    body = request.body
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode()
    if hasattr(body, "read"):
        data: bytes = body.read()
        body.seek(0)
        return data
    return bytes(body)


# ------------------------------------------------------------------------------------------ EventBridge


class EventBridge:
    """The one scheduled rule, fired as EventBridge does: at a random instant inside each minute its
    cron names (`rule_firings`: in `second` precision the armed minute and its backstop), delivered
    0-5 s later, once per minute. It honours a minute only if the rule has named it continuously
    since `lead` before the minute began (the protocol arms a minute only that far ahead: "allow a
    short period for changes to take effect"); a later PutRule is never fired for it, though a later
    minute it names still is."""

    def __init__(self, clock: Any, rng: random.Random, *, lead: timedelta, max_delay: float = 5.0) -> None:
        self.clock = clock
        self.rng = rng
        self.lead = lead
        self.max_delay = max_delay
        self.since: dict[datetime, datetime] = {}  # each minute the rule names now -> since when
        self.fired: list[datetime] = []
        self.missed: list[datetime] = []  # armed minutes (or later ones) named too late to fire
        self.armed: datetime | None = None  # the minute the rule is armed for now
        self.moved = 0  # minutes the rule stopped naming before their firing instant
        self.puts = 0
        self._plans: dict[datetime, datetime] = {}  # minute the rule named -> instant it is evaluated
        self._done: set[datetime] = set()
        self._lock = threading.Condition()

    def on_put(self, expression: str, at: datetime) -> None:
        """A minute still named keeps its `since`; one no longer named is moved at its instant."""
        firings = rule_firings(expression)
        armed = parse_rule_minute(expression)
        with self._lock:
            self.puts += 1
            self.armed = armed if isinstance(armed, datetime) else None
            self.since = {minute: self.since.get(minute, at) for minute in firings}
            for minute in firings:
                if minute not in self._plans and minute not in self._done:
                    self._plans[minute] = minute + timedelta(seconds=self.rng.uniform(0.0, 60.0))
            self._lock.notify_all()

    def next_time(self) -> datetime | None:
        with self._lock:
            return min(self._plans.values(), default=None)

    def due(self, now: datetime) -> list[tuple[datetime, float]]:
        """Evaluate every firing whose instant has come: (minute, delivery delay) of those that fire."""
        fire: list[tuple[datetime, float]] = []
        with self._lock:
            for minute, instant in sorted(self._plans.items(), key=lambda kv: kv[1]):
                if instant > now:
                    continue
                del self._plans[minute]
                since = self.since.get(minute)
                if since is None:
                    self.moved += 1  # moved away before it fired
                    continue
                self._done.add(minute)
                if since > minute - self.lead:
                    # A combination before the armed minute (12:01 of the rule for 12:58 and its
                    # backstop 13:01) is past by design when the rule is put: not a miss.
                    if self.armed is None or minute >= self.armed:
                        self.missed.append(minute)
                    continue
                self.fired.append(minute)
                fire.append((minute, self.rng.uniform(0.0, self.max_delay)))
        return fire

    def will_fire(self, minute: datetime, now: datetime) -> bool:
        """The rule, as it stands, fires for `minute` later on."""
        with self._lock:
            since = self.since.get(minute)
            return (
                since is not None
                and minute in self._plans
                and self._plans[minute] > now
                and since <= minute - self.lead
            )

    @staticmethod
    def scheduled_event(minute: datetime) -> dict[str, Any]:
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "source": "aws.events",
            "detail-type": "Scheduled Event",
            "time": minute.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "resources": ["arn:aws:events:us-east-1:123456789012:rule/nexttick"],
            "detail": {},
        }


# ------------------------------------------------------------------------------------------ containers


def _module_copy(module_name: str, tag: str) -> ModuleType:
    """A private copy of a handler module: each Lambda container imports its handler itself, so the
    module's cached dependencies are per container."""
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None
    copy_spec = importlib.util.spec_from_file_location(f"{module_name}__{tag}", spec.origin)
    assert copy_spec is not None and copy_spec.loader is not None
    module = importlib.util.module_from_spec(copy_spec)
    copy_spec.loader.exec_module(module)
    return module


@dataclass
class Container:
    """One actor's process: its runtime (own boto3 clients), their injector, its handler module."""

    name: str
    role: str  # editor | worker | keeper
    runtime: Runtime
    injector: Injector
    module: ModuleType | None = None
    busy: bool = False


PlanSource = Callable[[str, int, bool], Plan]  # (role, attempt, last attempt) -> plan


def no_faults(role: str, attempt: int, last: bool) -> Plan:
    return NO_FAULTS


# ------------------------------------------------------------------------------------------ Lambda


@dataclass(order=True)
class Invocation:
    at: datetime
    seq: int
    event: dict[str, Any] = field(compare=False)
    origin: str = field(compare=False)  # rule | wake | sync
    attempt: int = field(compare=False, default=1)


@dataclass
class InvocationResult:
    invocation: Invocation
    container: str
    outcome: str  # ok | crashed | error
    result: Any = None
    error: str | None = None
    calls: list[str] = field(default_factory=list)  # completed AWS calls
    made: int = 0  # AWS calls started
    started: datetime | None = None
    finished: datetime | None = None
    deadline: datetime | None = None


class LambdaService:
    """The worker function's asynchronous invocations: queued, delivered to a free container (at most
    `concurrency` at once), retried twice after a failure (1 and 2 minutes later), then given up
    (the deployed function's on-failure queue)."""

    RETRY_DELAYS = (timedelta(minutes=1), timedelta(minutes=2))

    def __init__(self, world: World, *, timeout_seconds: float, concurrency: int) -> None:
        self.world = world
        self.timeout_seconds = timeout_seconds
        self.concurrency = concurrency
        self.containers: list[Container] = []
        self.queue: list[Invocation] = []
        self.results: list[InvocationResult] = []
        self.dead_letters: list[Invocation] = []
        self.running = 0
        self.stats: Counter[str] = Counter()
        self._seq = itertools.count()
        self.cond = threading.Condition()

    def enqueue(
        self, event: dict[str, Any], origin: str, at: datetime | None = None, attempt: int = 1
    ) -> None:
        with self.cond:
            when = at or self.world.clock.now()
            heapq.heappush(self.queue, Invocation(when, next(self._seq), event, origin, attempt))
            self.stats[f"queued:{origin}"] += 1
            self.cond.notify_all()

    def next_time(self) -> datetime | None:
        with self.cond:
            return self.queue[0].at if self.queue else None

    def pending(self) -> bool:
        with self.cond:
            return bool(self.queue) or self.running > 0

    def take_due(self, now: datetime) -> tuple[Invocation, Container] | None:
        """The next due invocation and a free container for it (marked busy), if both exist."""
        with self.cond:
            if not self.queue or self.queue[0].at > now:
                return None
            container = next((c for c in self.containers if not c.busy), None)
            if container is None:
                if len(self.containers) >= self.concurrency:
                    return None
                container = self.world.container("worker", f"worker-{len(self.containers) + 1}")
                self.containers.append(container)
            container.busy = True
            self.running += 1
            return heapq.heappop(self.queue), container

    def run(self, invocation: Invocation, container: Container) -> InvocationResult:
        """Deliver one invocation to its container (the calling thread runs the handler)."""
        clock = self.world.clock
        context = FakeContext(clock, self.timeout_seconds, function_name=self.world.settings.worker_function)
        last = invocation.attempt > len(self.RETRY_DELAYS)
        container.injector.begin(
            self.world.plan_for("worker", invocation.attempt, last, invocation.origin),
            deadline=context.deadline,
        )
        outcome = InvocationResult(
            invocation, container.name, "ok", started=clock.now(), deadline=context.deadline
        )
        try:
            assert container.module is not None
            outcome.result = container.module.handler(invocation.event, context)
        except Crash as exc:
            outcome.outcome, outcome.error = "crashed", str(exc)
        except Exception as exc:  # a failed invocation: Lambda retries it
            outcome.outcome, outcome.error = "error", f"{type(exc).__name__}: {exc}"
        if container.injector.dead and outcome.outcome == "ok":
            # it died in a thread it did not wait for (a lease heartbeat): Lambda saw a timeout
            outcome.outcome, outcome.error = "crashed", container.injector.death
        outcome.finished, outcome.calls = clock.now(), list(container.injector.calls)
        outcome.made = container.injector.made
        with self.cond:
            self.results.append(outcome)
            self.stats[f"invoked:{invocation.origin}"] += 1
            self.stats[outcome.outcome] += 1
            container.busy = False
            self.running -= 1
            self.cond.notify_all()
        if outcome.outcome != "ok":
            if invocation.attempt <= len(self.RETRY_DELAYS):
                delay = self.RETRY_DELAYS[invocation.attempt - 1]
                if invocation.origin == HANDOVER_ORIGIN:  # back in the queue when its visibility times out
                    delay = timedelta(seconds=self.timeout_seconds)
                self.enqueue(invocation.event, "retry", outcome.finished + delay, invocation.attempt + 1)
            else:
                with self.cond:
                    self.dead_letters.append(invocation)
        return outcome


# ------------------------------------------------------------------------------------------ stream


class StreamFeed:
    """What Lambda's DynamoDB Streams event source mapping does for the keeper: reads the table's
    stream in order, passes task and rule-record changes (the deployed filters) in batches to the
    keeper handler, retries a failing batch `retries` times, then gives it up (the on-failure queue)."""

    def __init__(
        self, world: World, container: Container, *, batch_size: int = 100, retries: int = 5
    ) -> None:
        from local.keeper import lambda_record
        from nexttick.store.streams import reaches_keeper

        self.world = world
        self.container = container
        self.batch_size = batch_size
        self.retries = retries
        self._convert, self._keep = lambda_record, reaches_keeper
        session = boto3.session.Session(region_name=world.settings.region)
        self.dynamodb = session.client("dynamodb")
        # moto serves DescribeStream only on the regional streams host.
        self.client = session.client(
            "dynamodbstreams", endpoint_url=f"https://streams.dynamodb.{world.settings.region}.amazonaws.com"
        )
        described = self.dynamodb.update_table(
            TableName=world.settings.table_name,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )["TableDescription"]
        self.arn = described["LatestStreamArn"]
        self.iterators: dict[str, str] = {}
        self.batches = 0
        self.records = 0
        self.given_up = 0
        self.failures = 0
        self.dirty = threading.Event()
        self.dirty.set()

    def _read(self) -> list[dict[str, Any]]:
        shards = self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]
        for shard in shards:
            if shard["ShardId"] not in self.iterators:
                self.iterators[shard["ShardId"]] = self.client.get_shard_iterator(
                    StreamArn=self.arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
        records: list[dict[str, Any]] = []
        for shard_id, iterator in list(self.iterators.items()):
            page = self.client.get_records(ShardIterator=iterator, Limit=1000)
            self.iterators[shard_id] = page.get("NextShardIterator") or iterator
            records.extend(self._convert(r, self.arn) for r in page["Records"] if self._keep(r))
        return records

    def drain(self) -> int:
        """Deliver everything written so far; the number of batches delivered."""
        if not self.dirty.is_set():
            return 0
        self.dirty.clear()
        delivered = 0
        while records := self._read():
            for start in range(0, len(records), self.batch_size):
                self._deliver(records[start : start + self.batch_size])
                delivered += 1
        return delivered

    def _deliver(self, batch: list[dict[str, Any]]) -> None:
        from local.lambdas import LambdaContext

        self.batches += 1
        self.records += len(batch)
        for attempt in range(1, self.retries + 2):
            last = attempt == self.retries + 1
            self.container.injector.begin(self.world.plan_for("keeper", attempt, last))
            try:
                assert self.container.module is not None
                self.container.module.handler(
                    {"Records": batch}, LambdaContext("nexttick-keeper", 60, self.world.settings.region)
                )
            except (Crash, Exception):
                self.failures += 1
                continue
            if not self.container.injector.dead:
                return
            self.failures += 1
        self.given_up += 1


# ------------------------------------------------------------------------------------------ world


class World:
    """moto in-process with nexttick's resources, the table's stream, and the AWS machinery around
    the actors. Use as a context manager inside `mock_aws` (fake credentials in the environment)."""

    def __init__(
        self,
        settings: NextTickSettings,
        clock: SimClock,
        *,
        seed: int = 0,
        keeper: bool = True,
        worker_concurrency: int = 4,
        worker_timeout_seconds: float = 300.0,
        plans: PlanSource = no_faults,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.seed = seed
        self.rng = random.Random(seed)
        self.session: boto3.session.Session  # created inside moto (a session copies the handlers then)
        self.plans = plans
        self._scripted: dict[str, list[Plan]] = defaultdict(list)
        self.with_keeper = keeper
        self.containers: list[Container] = []
        self.worker_concurrency = worker_concurrency
        self.worker_timeout_seconds = worker_timeout_seconds
        self._stack = contextlib.ExitStack()
        self.observer: Runtime | None = None
        self.eventbridge: EventBridge
        self.lambda_: LambdaService
        self.stream: StreamFeed | None = None
        self.writes = threading.Event()

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> World:
        from local.resources import create_resources

        stack = self._stack
        self.session = boto3.session.Session(region_name=self.settings.region)
        stack.enter_context(observed_moto(self))
        stack.enter_context(_quiet_logs())
        DELIVERIES.reset()
        self.eventbridge = EventBridge(
            self.clock,
            random.Random(self.rng.random()),
            lead=timedelta(seconds=self.settings.settle_seconds),
        )
        self.lambda_ = LambdaService(
            self, timeout_seconds=self.worker_timeout_seconds, concurrency=self.worker_concurrency
        )
        create_resources(self.settings)
        queue = self.session.client("sqs").create_queue(QueueName=f"{self.settings.worker_function}-handover")
        self.settings = self.settings.model_copy(update={"handover_queue_url": queue["QueueUrl"]})
        self.observer = Runtime.build(self.settings, session=self.session, clock=self.clock)
        if self.with_keeper:
            self.stream = StreamFeed(self, self.container("keeper", "keeper"))
        else:  # the mutant world: the stream is on, but nothing consumes it
            self.session.client("dynamodb").update_table(
                TableName=self.settings.table_name,
                StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
            )
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def container(self, role: str, name: str) -> Container:
        """A new actor process: its own runtime and clients, hooked by its own injector."""
        runtime = Runtime.build(self.settings, session=self.session, clock=self.clock)
        injector = Injector(self.clock, name).attach_runtime(runtime)
        module: ModuleType | None = None
        if role == "worker":
            from nexttick.actions import build_registry

            module = _module_copy("lambdas.worker.handler", name.replace("-", "_"))
            module.use(runtime, build_registry(self.settings.action_definitions(), self.settings))
        elif role == "keeper":
            module = _module_copy("lambdas.keeper.handler", name.replace("-", "_"))
            module.use(runtime)
        container = Container(name, role, runtime, injector, module)
        self.containers.append(container)
        return container

    # ------------------------------------------------------------------ faults
    def script_next(self, role: str, plan: Plan) -> None:
        """The next invocation of `role` (worker, keeper, or a worker's invocation of one origin:
        `handover`) runs with `plan`; later ones as `plans` says."""
        self._scripted[role].append(plan)

    def plan_for(self, role: str, attempt: int, last: bool, origin: str = "") -> Plan:
        for scripted in (origin, role):
            if self._scripted[scripted]:
                return self._scripted[scripted].pop(0)
        return self.plans(role, attempt, last)

    def injected(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for container in self.containers:
            total.update(container.injector.injected)
        return total

    # ------------------------------------------------------------------ what moto applied
    def observe(self, request: Any) -> None:
        """Called by the patched moto, in order, for every request it answered with success."""
        target = _header(request, "X-Amz-Target")
        if target == "AWSEvents.PutRule":
            body = json.loads(_body(request) or b"{}")
            if body.get("Name") == self.settings.rule_name:
                self.eventbridge.on_put(body.get("ScheduleExpression", EPOCH_EXPRESSION), self.clock.now())
            return
        if target == "AmazonSQS.SendMessage":
            body = json.loads(_body(request) or b"{}")
            if body.get("QueueUrl") == self.settings.handover_queue_url:
                message = {
                    "eventSource": "aws:sqs",
                    "messageId": uuid.uuid4().hex,
                    "body": body["MessageBody"],
                }
                delay = timedelta(seconds=int(body.get("DelaySeconds", 0)) + 0.1)
                self.lambda_.enqueue({"Records": [message]}, HANDOVER_ORIGIN, self.clock.now() + delay)
            return
        if target in _DYNAMO_WRITES:
            if self.stream is not None:
                self.stream.dirty.set()
            self.writes.set()
            return
        match = _INVOKE_PATH.search(request.url)
        if (
            match
            and _header(request, "X-Amz-Invocation-Type") == "Event"
            and match.group("name") == self.settings.worker_function
        ):
            event = json.loads(_body(request) or b"{}")
            self.lambda_.enqueue(event, "wake", self.clock.now() + timedelta(seconds=0.1))

    # ------------------------------------------------------------------ sequential running
    def step(self) -> bool:
        """Do one thing that is due now: keeper batches, a rule firing, a worker invocation."""
        now = self.clock.now()
        if self.stream is not None and self.stream.drain():
            return True
        fired = self.eventbridge.due(now)
        for minute, delay in fired:
            self.lambda_.enqueue(
                self.eventbridge.scheduled_event(minute), "rule", now + timedelta(seconds=delay)
            )
        if fired:
            return True
        taken = self.lambda_.take_due(now)
        if taken is not None:
            self.lambda_.run(*taken)
            return True
        return False

    def settle(self, *, within: timedelta = timedelta(hours=1)) -> None:
        """Run everything queued — keeper batches, invocations and their retries, firings on the way
        — until the stream is drained and no invocation is queued. Stops before a future firing.
        Raises if that takes longer than `within` (virtual): the world never comes to rest."""
        give_up = self.clock.now() + within
        while self.clock.now() <= give_up:
            if self.step():
                continue
            upcoming = self.lambda_.next_time()
            if upcoming is None:
                return
            firing = self.eventbridge.next_time()
            self.clock.advance_to(min(upcoming, firing) if firing is not None else upcoming)
        recent = "\n".join(
            f"  {r.invocation.origin} #{r.invocation.attempt} {r.outcome} {r.result or r.error}"
            for r in self.lambda_.results[-8:]
        )
        raise RuntimeError(f"the world did not come to rest within {within}; the last invocations:\n{recent}")

    def start_case(self, label: str) -> None:
        """Run the world to the next whole minute and seed EventBridge's draws from `label`: a case
        then meets the same firings at the same seconds whatever ran before it in this world (the
        module's tests share one, and xdist orders them differently from run to run)."""
        self.drive(floor_minute(self.clock.now()) + timedelta(minutes=1))
        self.eventbridge.rng.seed(label)

    def drive(self, until: datetime) -> None:
        """Run the world to `until`: every firing and invocation on the way, in time order; then
        settle."""
        while True:
            if self.step():
                continue
            upcoming = [t for t in (self.lambda_.next_time(), self.eventbridge.next_time()) if t is not None]
            if not upcoming or min(upcoming) > until:
                self.clock.advance_to(until)
                self.settle()
                return
            self.clock.advance_to(min(upcoming))

    def at_rest(self) -> bool:
        return not self.lambda_.pending() and (self.stream is None or not self.stream.dirty.is_set())

    def sync_event(self) -> dict[str, Any]:
        return {"source": WORKER_EVENT_SOURCE, "action": WORKER_EVENT_SYNC}


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """The handlers' logs and metrics stay out of the output (faults make them loud)."""
    from nexttick.observability import logger

    previous_level = logger.log_level
    from nexttick.observability import metrics

    previous_metrics = os.environ.get("POWERTOOLS_METRICS_DISABLED")
    # Concurrent invocations share the process's metrics between flushes: once a metric holds 100
    # values Powertools prints them whatever the setting. Metrics are not under test here.
    metrics.provider.add_metric = lambda *args, **kwargs: None  # type: ignore[method-assign]
    python_logger = logging.getLogger("nexttick")
    previous_python = python_logger.level
    logger.setLevel("CRITICAL")
    python_logger.setLevel(logging.CRITICAL)
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    try:
        yield
    finally:
        del metrics.provider.add_metric
        logger.setLevel(previous_level)
        python_logger.setLevel(previous_python)
        if previous_metrics is None:
            os.environ.pop("POWERTOOLS_METRICS_DISABLED", None)
        else:
            os.environ["POWERTOOLS_METRICS_DISABLED"] = previous_metrics


def world_settings(**overrides: Any) -> NextTickSettings:
    """Settings of a test world: few shards, a small pool, the recording actions."""
    values: dict[str, Any] = {"queue_shards": 2, "pool_size": 4, "actions_config": WORLD_ACTIONS}
    values.update(overrides)
    return NextTickSettings(**values)


START = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)
