"""The local stack's keeper trigger (local.keeper) on a real moto server over HTTP: it reads
the table's stream through the DynamoDB Streams API, is woken by the server's writes (no polling:
the safety re-read is set to a minute here) but reads at most once per poll interval, as Lambda's
mapping does, starts at the end of the stream, and retries a failing batch before giving up on it
and moving on."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import boto3
import pytest
import requests

from editor import Editor, TaskSpec
from lambdas.keeper import handler as keeper_handler
from local.keeper import LocalKeeper
from local.lambdas import LocalFunction
from local.motoserver import MotoServer
from nexttick.aws import parse_rule_minute
from nexttick.config import NextTickSettings
from nexttick.constants import EPOCH_EXPRESSION
from nexttick.runtime import Runtime
from nexttick.store import TaskStore
from tests.conftest import TEST_ACTIONS

COVERED_WITHIN = 1.0  # seconds from the task write to the rule armed for it
DUE_IN = timedelta(hours=1)  # always armable


class ClientDied(BaseException):
    """The editor's process ends here."""


@dataclass
class World:
    moto: MotoServer
    settings: NextTickSettings
    editor: Editor
    delivered: list[dict[str, Any]]  # every record the keeper function received
    keeper: LocalKeeper | None = None

    def client(self, service: Literal["events", "dynamodbstreams"]) -> Any:
        return boto3.client(service, region_name=self.settings.region, endpoint_url=self.moto.url)

    def rule_minute(self) -> datetime | str | None:
        rule = self.client("events").describe_rule(Name=self.settings.rule_name)
        return parse_rule_minute(rule["ScheduleExpression"])

    def start_keeper(self, *, fail_on: str | None = None, **options: Any) -> LocalKeeper:
        """The keeper function (the real handler; it raises for a batch holding `fail_on`), fed by
        the local trigger."""

        def handler(event: dict[str, Any], context: Any) -> Any:
            if fail_on is not None and fail_on in str(event):
                raise RuntimeError("poisoned batch")
            self.delivered.extend(event["Records"])
            return keeper_handler.handler(event, context)

        function = LocalFunction(
            "nexttick-keeper", handler, timeout_seconds=30, region="us-east-1", concurrency=0
        )
        streams = self.client("dynamodbstreams")
        self.keeper = LocalKeeper(streams, self.settings.table_name, function, resync_seconds=60.0, **options)
        self.keeper.watch(self.moto)
        return self.keeper.start()

    def create_dying_after_task_write(self, task_id: str, due: datetime) -> float:
        """A client that dies right after its task write (the 3rd call: id read, entry, task);
        returns when the task write was acknowledged."""
        made: list[str] = []
        acknowledged: list[float] = []

        def after_call(*, model: Any, **_: Any) -> None:
            made.append(model.name)
            if len(made) == 4:
                acknowledged.append(time.monotonic())
                raise ClientDied

        client = self.editor.store.client
        client.meta.events.register("after-call", after_call, unique_id="dies")
        try:
            with pytest.raises(ClientDied):
                self.editor.create(TaskSpec(action="log", due=due, id=task_id))
        finally:
            client.meta.events.unregister("after-call", unique_id="dies")
        assert made == ["GetItem", "PutItem", "GetItem", "PutItem"]  # the id, entry, record (head), task
        return acknowledged[0]


@pytest.fixture
def world(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    moto = MotoServer(0).start()
    requests.post(f"{moto.url}/moto-api/reset", timeout=10)  # moto's backends are per process
    settings = NextTickSettings(queue_shards=4, endpoint_url=moto.url, actions_config=TEST_ACTIONS)
    TaskStore.from_settings(settings).create_table()
    dynamodb = boto3.client("dynamodb", region_name=settings.region, endpoint_url=moto.url)
    dynamodb.update_table(
        TableName=settings.table_name,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    events = boto3.client("events", region_name=settings.region, endpoint_url=moto.url)
    events.put_rule(Name=settings.rule_name, ScheduleExpression=EPOCH_EXPRESSION, State="ENABLED")
    monkeypatch.setattr(keeper_handler, "_keeper", None)
    keeper_handler.use(Runtime.build(settings))
    w = World(moto, settings, Editor(runtime=Runtime.build(settings)), [])
    try:
        yield w
    finally:
        if w.keeper is not None:
            w.keeper.stop()
        moto.stop()


def _wait_for(predicate: Any, timeout: float) -> float | None:
    """Seconds until `predicate()` held (checked every 10 ms), None if it did not within `timeout`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic()
        time.sleep(0.01)
    return None


def test_a_task_whose_client_died_is_covered_within_a_second_by_the_write_wake(world: World) -> None:
    # Given the trigger running (its safety re-read a minute away)
    world.start_keeper()
    due = datetime.now(UTC) + DUE_IN
    minute = world.editor.runtime.rule_sync.timing.fire_minute(due)
    # When a client dies right after its task write
    written = world.create_dying_after_task_write("orphan", due)
    # Then the rule is armed for the task within a second: the write woke the trigger
    armed = _wait_for(lambda: world.rule_minute() == minute, 5 * COVERED_WITHIN)
    assert armed is not None, world.rule_minute()
    assert armed - written <= COVERED_WITHIN
    # And the records the keeper received are the task's (queue entries are filtered out)
    assert {r["dynamodb"]["Keys"]["pk"]["S"] for r in world.delivered} <= {"T#orphan", "RULE"}
    assert world.keeper is not None and world.keeper.stream_arn.startswith("arn:aws:dynamodb:")
    assert {r["eventSourceARN"] for r in world.delivered} == {world.keeper.stream_arn}


def test_it_starts_at_the_end_of_the_stream(world: World) -> None:
    # Given a task written (by a client that died) before the trigger started, as a restore writes
    world.create_dying_after_task_write("before", datetime.now(UTC) + DUE_IN)
    world.start_keeper()
    # When another task is created afterwards
    world.editor.create(TaskSpec(action="log", due=datetime.now(UTC) + 2 * DUE_IN, id="after"))
    assert _wait_for(lambda: any("T#after" in str(r) for r in world.delivered), 5.0)
    # Then only what was written after the start reached the keeper
    assert not [r for r in world.delivered if "T#before" in str(r)]


def test_an_idle_trigger_makes_no_request(world: World) -> None:
    # Given the trigger started (it reads once at once) and nothing written since
    keeper = world.start_keeper()
    time.sleep(0.5)
    reads: list[str] = []
    keeper.client.meta.events.register("after-call", lambda *, model, **_: reads.append(model.name))
    # Then it makes no request until its safety re-read, a minute later
    time.sleep(2.0)
    assert reads == []


def test_a_stream_of_writes_is_read_at_most_once_per_poll_interval(world: World) -> None:
    # Given the trigger started and settled
    keeper = world.start_keeper()
    time.sleep(0.5)
    reads: list[float] = []

    def count(*, model: Any, **_: Any) -> None:
        if model.name == "GetRecords":
            reads.append(time.monotonic())

    keeper.client.meta.events.register("after-call", count)
    # When tasks are created back to back (several writes each, every one waking the trigger)
    ids = [f"steady-{i}" for i in range(20)]
    began = time.monotonic()
    for task_id in ids:
        world.editor.create(TaskSpec(action="log", due=datetime.now(UTC) + DUE_IN, id=task_id))
    ended = time.monotonic()
    # Then every task reaches the keeper
    assert _wait_for(lambda: all(any(f"T#{t}" in str(r) for r in world.delivered) for t in ids), 5.0)
    # And while they were written the stream was read at most once per poll interval: the writes of
    # an interval came as one batch, not one read (and one keeper run) per write
    during = [at for at in reads if began <= at <= ended]
    assert len(during) <= (ended - began) / keeper.poll_seconds + 1, (len(during), ended - began)


def test_a_failing_batch_is_retried_then_given_up_and_the_stream_moves_on(world: World) -> None:
    # Given a keeper function that fails every batch holding one task's records
    keeper = world.start_keeper(fail_on="T#poison", retry_delays=(0.05, 0.05))
    failures_before = keeper.given_up
    world.create_dying_after_task_write("poison", datetime.now(UTC) + DUE_IN)
    # When its retries are used up
    assert _wait_for(lambda: keeper.given_up == failures_before + 1, 5.0)
    # Then the batch is dropped (the deployed trigger reports it to its failure queue) and later
    # writes are kept as usual
    world.editor.create(TaskSpec(action="log", due=datetime.now(UTC) + 2 * DUE_IN, id="healthy"))
    assert _wait_for(lambda: any("T#healthy" in str(r) for r in world.delivered), 5.0)
    assert not [r for r in world.delivered if "T#poison" in str(r)]
