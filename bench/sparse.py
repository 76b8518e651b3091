"""A sparse one-shot task from its create to its completion, counted as AWS bills it: each of N
tasks alone in the queue, in `second` precision (the rule fires a minute or more ahead of the task
and the invocation sleeps until the instant) and in `minute` precision (the rule fires at the
start of the task's own minute).

Why a row of its own: `lifecycle(n, 1)` starts the worker after its task is due, so it leaves out
what a sparse task pays for most in `second` mode, the early wake: the rule's firing ahead of the
task, the invocation alive while it waits, its wait claim and release, the backstop it arms.

What runs (moto in-process, real clients, time from time-machine): the editor's create and its
rule arming; the keeper (`nexttick.keeper.Keeper`) on the table's stream records as Lambda's
mapping would hand them over, read from moto's DynamoDB Streams API through the deployed
trigger's filters — a batch after the create, one whenever a worker goes to sleep and one when an
invocation ends; then every worker invocation the protocol starts, in order: the rule's firing at
the start of its armed minute, and each Lambda invoke the trigger makes (a wake, a continuation).
`Clock.sleep` moves the traveller, so a worker's wait costs no real time but counts as simulated
time for its GB-seconds. Units are the DynamoDB meter's (attached before the first create),
split by who spent them: create, keeper, worker.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import time_machine

from bench.harness import emulated_aws
from bench.latency import LATENCY_MS
from bench.lifecycle import (
    LAMBDA_GB_S,
    PRICE_LAMBDA_REQUEST,
    PRICE_RRU,
    PRICE_WRU,
    WORKER_MEMORY_GB,
    Ledger,
    PutRuleCounter,
)
from editor import Editor
from infra import names
from infra.config import InfraConfig
from local.keeper import lambda_record
from local.meter import DynamoMeter
from nexttick.actions import build_registry
from nexttick.config import Precision
from nexttick.keeper import Keeper
from nexttick.runtime import Runtime
from nexttick.store.streams import reaches_keeper
from nexttick.worker import Worker

# moto serves the streams API only on the regional streams host (tests/integration/test_keeper.py).
STREAMS_ENDPOINT = "https://streams.dynamodb.us-east-1.amazonaws.com"
KEEPER_MEMORY_GB = names.KEEPER_MEMORY_MB / 1024
CREATE_AHEAD = timedelta(minutes=10)
TASK_SPACING = timedelta(minutes=15)  # the queue is empty again well before the next create
MAX_INVOCATIONS_PER_TASK = 5  # a protocol that kept re-invoking would fail the row, not hang it


class TravelClock:
    """Time from time-machine; `sleep` first hands what was written so far to the keeper (a sleeping
    worker's writes reach the stream before it wakes), then moves the traveller instead of waiting."""

    def __init__(self, traveller: time_machine.Traveller, before_sleep: Callable[[], None]) -> None:
        self.traveller = traveller
        self.before_sleep = before_sleep

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        self.before_sleep()
        if seconds > 0:
            self.traveller.shift(timedelta(seconds=seconds))


class CountingTrigger:
    """The real worker trigger (an asynchronous Invoke against moto, where nothing runs), keeping
    each invoke as an invocation for the bench to run next."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.pending: list[str] = []

    def wake(self, reason: str) -> None:
        self.inner.wake(reason)
        self.pending.append(f"wake: {reason}")

    def help(self, shards: Collection[int], leader: str) -> None:
        self.inner.help(shards, leader)
        self.pending.append("help")


class StreamFeed:
    """The table's stream read from its start, handed to the keeper in batches as the deployed
    trigger hands them over (its filters; no batch when nothing passes them)."""

    def __init__(self, runtime: Runtime, keeper: Keeper) -> None:
        settings = runtime.settings
        described = boto3.client("dynamodb", region_name=settings.region).update_table(
            TableName=settings.table_name,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )["TableDescription"]
        self.arn = described["LatestStreamArn"]
        self.client = boto3.client(
            "dynamodbstreams", region_name=settings.region, endpoint_url=STREAMS_ENDPOINT
        )
        shard = self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"][0]["ShardId"]
        self.iterator = self.client.get_shard_iterator(
            StreamArn=self.arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        self.keeper = keeper
        self.invocations = 0
        self.modelled_seconds = 0.0  # the keeper's requests' round trips, by the latency model

    def flush(self, ledger: Ledger) -> None:
        """Hand every record written since the last flush to the keeper (one invocation per batch
        of up to the trigger's batch size); charged to the keeper."""
        ledger.charge("worker")  # whatever came before the batch is not the keeper's
        page = self.client.get_records(ShardIterator=self.iterator)
        self.iterator = page["NextShardIterator"]
        records = [lambda_record(r, self.arn) for r in page["Records"]]
        batch = [r for r in records if reaches_keeper(r)]
        for start in range(0, len(batch), names.KEEPER_BATCH_SIZE):
            before = Counter(ledger.meter.calls), ledger.putrules.calls
            self.keeper.handle(batch[start : start + names.KEEPER_BATCH_SIZE])
            self.invocations += 1
            made = Counter(ledger.meter.calls) - before[0]
            made["PutRule"] += ledger.putrules.calls - before[1]
            self.modelled_seconds += sum(LATENCY_MS.get(op, 0.0) * n for op, n in made.items()) / 1000
        ledger.charge("keeper")


def sparse(tasks: int, precision: Precision) -> dict[str, Any]:
    """`tasks` one-shot tasks, each created alone and followed to its completion."""
    start = datetime(2031, 3, 3, 8, 0, 0, tzinfo=UTC)
    timeout_ms = InfraConfig(precision=precision).worker_timeout_seconds * 1000
    flush: list[Callable[[], None]] = []  # the clock needs the feed, which needs the runtime
    with time_machine.travel(start, tick=False) as traveller:
        clock = TravelClock(traveller, lambda: flush[0]())
        with emulated_aws(clock=clock, precision=precision) as runtime:
            trigger = CountingTrigger(runtime.trigger)
            runtime.trigger = runtime.rule_sync.trigger = trigger
            editor = Editor(runtime=runtime)
            registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
            feed = StreamFeed(runtime, Keeper(runtime.rule_sync))
            ledger = Ledger(DynamoMeter(runtime.store), PutRuleCounter(runtime.rule.client))
            flush.append(lambda: feed.flush(ledger))
            invocations, alive_s, starts, succeeded = 0, 0.0, Counter[str](), 0
            for i in range(tasks):
                traveller.move_to(start + i * TASK_SPACING)
                # Spread over the minute: the early wake's wait depends on where in it the task falls.
                due = start + i * TASK_SPACING + CREATE_AHEAD + timedelta(seconds=60 * i / tasks + 0.25)
                editor.schedule_at("log", due, {"order": i})
                ledger.charge("create")
                feed.flush(ledger)
                for n in range(MAX_INVOCATIONS_PER_TASK + 1):
                    cause = _next_invocation(runtime, trigger, traveller)
                    if cause is None:
                        break
                    if n == MAX_INVOCATIONS_PER_TASK:
                        raise RuntimeError(f"task {i}: more than {n} invocations ({dict(starts)})")
                    starts[cause] += 1
                    began = clock.now()
                    report = Worker(runtime, registry, owner=f"t{i}-{n}", remaining_ms=timeout_ms).run()
                    succeeded += report.results["succeeded"]
                    alive_s += (clock.now() - began).total_seconds()
                    invocations += 1
                    feed.flush(ledger)
                assert succeeded == i + 1, f"task {i} did not run exactly once"
    return _row(tasks, precision, ledger, feed, invocations, alive_s, starts)


def _next_invocation(
    runtime: Runtime, trigger: CountingTrigger, traveller: time_machine.Traveller
) -> str | None:
    """What starts the next worker invocation: an invoke made so far (at once), else the rule's
    firing at the start of its armed minute (if that is still ahead); None when nothing will."""
    if trigger.pending:
        return trigger.pending.pop(0).split(":")[0]
    armed = runtime.rule.current()
    if not isinstance(armed, datetime) or armed <= runtime.clock.now():
        return None
    traveller.move_to(armed)
    return "rule"


def _row(
    tasks: int,
    precision: Precision,
    ledger: Ledger,
    feed: StreamFeed,
    invocations: int,
    alive_s: float,
    starts: Counter[str],
) -> dict[str, Any]:
    parts = ledger.parts
    rru = sum(p.rru for p in parts.values()) / tasks
    wru = sum(p.wru for p in parts.values()) / tasks
    requests: Counter[str] = sum((p.requests for p in parts.values()), Counter())
    gb_s = alive_s * WORKER_MEMORY_GB / tasks
    keeper_gb_s = feed.modelled_seconds * KEEPER_MEMORY_GB / tasks
    lambda_requests = (invocations + feed.invocations) / tasks
    dynamodb_usd = wru * PRICE_WRU + rru * PRICE_RRU
    lambda_usd = (lambda_requests * PRICE_LAMBDA_REQUEST + (gb_s + keeper_gb_s) * LAMBDA_GB_S) * 1e6
    return {
        "tasks": tasks,
        "precision": precision.value,
        "rru": round(rru, 2),
        "wru": round(wru, 2),
        "requests": {op: round(n / tasks, 2) for op, n in sorted(requests.items())},
        "putrule": round(sum(p.putrule for p in parts.values()) / tasks, 2),
        "invocations": round(invocations / tasks, 2),
        "invocations_by_cause": {cause: round(n / tasks, 2) for cause, n in sorted(starts.items())},
        "worker_alive_s": round(alive_s / tasks, 1),
        "gb_s": round(gb_s, 2),
        "keeper_invocations": round(feed.invocations / tasks, 2),
        "keeper_gb_s_modelled": round(keeper_gb_s, 4),
        "by_part": {
            name: {
                "rru": round(p.rru / tasks, 2),
                "wru": round(p.wru / tasks, 2),
                "putrule": round(p.putrule / tasks, 2),
                "requests": {op: round(n / tasks, 2) for op, n in sorted(p.requests.items())},
            }
            for name, p in parts.items()
        },
        "usd_per_million_dynamodb": round(dynamodb_usd, 2),
        "usd_per_million_lambda": round(lambda_usd, 2),
        "usd_per_million": round(dynamodb_usd + lambda_usd, 2),
    }


def run(quick: bool) -> dict[str, Any]:
    n = 5 if quick else 20
    return {precision.value: sparse(n, precision) for precision in (Precision.SECOND, Precision.MINUTE)}
