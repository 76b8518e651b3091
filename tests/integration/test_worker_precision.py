"""Precision with a controllable clock (docs/architecture.md, "Time and precision"): EventBridge
fires anywhere in the armed minute plus a delivery delay; in `second` mode every task starts at its
due second, never before."""

from __future__ import annotations

import json
import random
import statistics
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from editor import Task
from lambdas.worker import handler as worker_handler
from nexttick.config import NextTickSettings, Precision
from nexttick.timeutil import floor_minute
from nexttick.worker.waking import Waking
from tests.support.aws import RecordedRuntime
from tests.support.worker import ACTIONS, RECORDER, FakeContext, WorkerEnv, make_env, make_moto_atomic

START = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)
SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


@pytest.fixture(params=[Precision.SECOND, Precision.MINUTE], ids=["second", "minute"])
def settings(request: pytest.FixtureRequest) -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=8, precision=request.param)


@pytest.fixture
def traveller() -> Iterator[time_machine.Traveller]:
    """Time stands still from START except where the worker sleeps and EventBridge fires: lateness
    here is the protocol's (where it wakes, claims ahead and waits), whatever else the machine is
    doing. The machine's own share is the bench's to measure (`make bench`, its lateness rows)."""
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


@pytest.fixture
def env(
    traveller: time_machine.Traveller, runtime: RecordedRuntime, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WorkerEnv]:
    make_moto_atomic(monkeypatch)
    env = make_env(runtime, traveller)
    worker_handler.use(env.runtime, env.registry)
    yield env
    monkeypatch.setattr(worker_handler, "_deps", None)


def invoke(env: WorkerEnv, event: dict) -> dict:
    return worker_handler.handler(event, FakeContext(env.clock, remaining_seconds=300))


def emulate_eventbridge(env: WorkerEnv, rng: random.Random, *, delay: float = 10.0) -> None:
    """Fire the armed minute at a random second plus 0 to `delay` s (never a past minute); deliver
    direct wakes at once. Runs until the rule rests at the epoch."""
    handled_wakes = 0
    for _ in range(1000):
        reasons = env.runtime.trigger.reasons
        if handled_wakes < len(reasons):
            handled_wakes += 1
            invoke(env, {"source": "nexttick", "action": "wake", "reason": reasons[handled_wakes - 1]})
            continue
        armed = env.runtime.rule.current()
        if armed is None:
            return
        # I2: at rest, the rule never points at a past minute while tasks are pending
        assert isinstance(armed, datetime) and armed > floor_minute(env.now()) - timedelta(minutes=1)
        fire = armed + timedelta(seconds=rng.uniform(0, 59.999) + rng.uniform(0, delay))
        env.travel_to(max(fire, env.now()))
        invoke(env, SCHEDULED_EVENT)
    raise AssertionError("the rule never came to rest")


def test_tasks_start_at_their_due_time_never_before(env: WorkerEnv, settings: NextTickSettings) -> None:
    rng = random.Random(20300107)
    lateness: list[float] = []
    for _round in range(4):
        # Given tasks due at random instants over the next 20 minutes (some in the same minute)
        base = env.now()
        tasks = []
        for _ in range(6):
            offset = timedelta(seconds=rng.uniform(75, 1200), microseconds=rng.randrange(1_000_000))
            tasks.append(env.editor.schedule_at("record", base + offset))
        tasks.append(env.editor.schedule_at("record", tasks[-1].due + timedelta(seconds=rng.uniform(0, 3))))
        # When EventBridge fires the armed minutes with random second and delivery delay
        emulate_eventbridge(env, rng)
        # Then every task ran once, not before its due time
        for task in tasks:
            [call] = RECORDER.calls[task.id]
            late = (call.at - task.due).total_seconds()
            assert late >= 0, f"ran {-late:.3f}s early"
            lateness.append(late)
    # And on time: within 1 s in `second` mode; within the minute plus delivery delay in `minute` mode
    bound = 1.0 if settings.precision is Precision.SECOND else 71.0
    assert max(lateness) < bound
    print(
        f"\n[{settings.precision}] lateness over {len(lateness)} tasks: "
        f"p50={statistics.median(lateness) * 1000:.1f}ms max={max(lateness) * 1000:.1f}ms"
    )


def test_a_waiting_worker_claims_and_reads_ahead_so_that_at_the_instant_only_the_action_runs(
    env: WorkerEnv, settings: NextTickSettings
) -> None:
    if settings.precision is not Precision.SECOND:
        pytest.skip("only `second` mode waits for an instant")
    # Given a task due in 3 s (too close to arm: the editor woke the worker, which waits for it)
    task = env.editor.schedule_at("record", env.now() + timedelta(seconds=3))
    assert task.due is not None
    calls: list[tuple[datetime, str, str]] = []

    def before_call(*, model: Any, params: dict[str, Any], **_: Any) -> None:
        calls.append((env.now(), model.name, json.dumps(params, default=str)))

    client = env.runtime.store.client
    client.meta.events.register("before-call.dynamodb", before_call)
    # When that worker runs
    invoke(env, {"source": "nexttick", "action": "wake", "reason": "due-soon"})
    # Then the action ran once, not before its instant
    [call] = RECORDER.calls[task.id]
    assert call.at >= task.due
    # And the occurrence was claimed (its entry leased) and its task read before the instant ...
    claims = [
        at for at, op, params in calls if op == "UpdateItem" and task.id in params and "lease_owner" in params
    ]
    # (a home item's claim answers with its task: the claim is the read)
    reads = [at for at, op, params in calls if op == "GetItem" and task.id in params] or claims
    assert claims and reads and max(claims[0], reads[0]) < task.due, calls
    # ... so that between the instant and the action no DynamoDB call was made
    assert [op for at, op, _ in calls if task.due <= at < call.at] == []


UNCLAIMED: dict[str, Any] = {"waiter_at": None, "waiter_until": None, "waiter_owner": None}


def created_while_the_waiter_runs(env: WorkerEnv, settings: NextTickSettings) -> tuple[list[str], list[Task]]:
    """A task the worker waits for in-process (in shard 0), whose action creates a task due 2 s
    later in each of the four shards; the worker run. Returns the wakes the creates asked for and
    the tasks they created."""
    if settings.precision is not Precision.SECOND:
        pytest.skip("only `second` mode waits for an instant")
    first = env.editor.schedule_at("record", env.now() + timedelta(seconds=3), id=env.ids_in_shard(0, 1)[0])
    created: list[Task] = []
    RECORDER.during[first.id] = lambda _: created.extend(
        env.editor.schedule_at("record", env.now() + timedelta(seconds=2), id=env.ids_in_shard(shard, 2)[1])
        for shard in range(4)
    )
    wakes = len(env.runtime.trigger.reasons)
    invoke(env, {"source": "nexttick", "action": "wake", "reason": "due-soon"})
    return env.runtime.trigger.reasons[wakes:], created


def ran_on_time(task: Task) -> bool:
    calls = RECORDER.calls[task.id]
    return task.due is not None and len(calls) == 1 and 0 <= (calls[0].at - task.due).total_seconds() < 1.0


def test_a_task_created_while_the_waiter_runs_what_it_woke_for_is_left_to_it(
    env: WorkerEnv, settings: NextTickSettings
) -> None:
    # Given a waiter running what it woke for, and tasks created meanwhile, due soon
    wakes, created = created_while_the_waiter_runs(env, settings)
    # Then the creates found its claim still held and invoked no worker of their own ...
    assert wakes == []
    # ... and its re-arm, after releasing that claim, found them and ran them on time
    assert len(created) == 4 and all(ran_on_time(task) for task in created)


def test_a_waiter_that_kept_its_claim_through_its_re_arm_would_strand_those_tasks(
    env: WorkerEnv, settings: NextTickSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the defect: the claim the passes kept still stands while the re-arm reads the heads (the
    # re-arm, not told of it, overwrites it with its next claim), so those reads may predate the
    # creates that relied on it
    monkeypatch.setattr(Waking, "rearm_read", lambda self, read: read and replace(read, **UNCLAIMED))
    wakes, created = created_while_the_waiter_runs(env, settings)
    # Then no worker is invoked for them, and those outside the shard the waiter ran (its re-arm reads
    # that one again) wait
    assert wakes == []
    assert not all(ran_on_time(task) for task in created)


def waited_for_and_one_after(env: WorkerEnv, settings: NextTickSettings, seconds: float) -> tuple[Task, Task]:
    """A task due in 3 s (too close to arm: the editor woke the worker, which waits for it) and
    one due `seconds` after it; `second` mode only."""
    if settings.precision is not Precision.SECOND:
        pytest.skip("only `second` mode waits for an instant")
    first = env.editor.schedule_at("record", env.now() + timedelta(seconds=3))
    assert first.due is not None
    return first, env.editor.schedule_at("record", first.due + timedelta(seconds=seconds))


def test_a_task_due_just_after_the_one_waited_for_is_claimed_with_it(
    env: WorkerEnv, settings: NextTickSettings
) -> None:
    # Given a task the worker waits for and one due 0.4 s after it
    first, second = waited_for_and_one_after(env, settings, 0.4)
    # When that worker runs
    report = invoke(env, {"source": "nexttick", "action": "wake", "reason": "due-soon"})
    # Then both ran once, neither before its instant
    [first_call], [second_call] = RECORDER.calls[first.id], RECORDER.calls[second.id]
    assert first.due is not None and second.due is not None
    assert first_call.at >= first.due and second_call.at >= second.due
    # And in two passes: the wake's (nothing within the claim-ahead yet) and the one the wait for the
    # first ends in, which claims both. A third would be the second claimed only after the first
    # finished: on a real clock, late by that pass's reads and claim.
    assert (report["succeeded"], report["passes"]) == (2, 2), report


def test_a_task_due_while_another_still_runs_is_claimed_by_a_roll_and_starts_on_time(
    env: WorkerEnv, settings: NextTickSettings
) -> None:
    # Given a task the worker waits for, whose action runs until another task has started (at most
    # 5 s), and a task due 0.7 s after it: past the claim-ahead window of the pass that claims the first
    first, second = waited_for_and_one_after(env, settings, 0.7)
    second_started, first_saw_it = threading.Event(), []
    RECORDER.during[second.id] = lambda _: second_started.set()
    RECORDER.during[first.id] = lambda _: first_saw_it.append(second_started.wait(5))
    # When the worker runs them
    invoke(env, {"source": "nexttick", "action": "wake", "reason": "due-soon"})
    # Then the second started while the first still ran (the pass read on and claimed it), at its
    # instant: not after the first had finished
    assert first_saw_it == [True]
    [second_call] = RECORDER.calls[second.id]
    assert second_call.at == second.due
