"""One waiting worker per due-soon time (no herd): the rule record names the invocation sleeping
in-process for the head; other invocations stop, and editors skip the direct invoke when that
waiter will wake at or before their task and live past it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
import time_machine

from editor import Editor
from local.meter import DynamoMeter
from nexttick.actions import build_registry
from nexttick.clock import Clock
from nexttick.config import NextTickSettings
from nexttick.rulearm import Outcome
from nexttick.rulesync import RuleSync
from nexttick.runtime import Runtime
from nexttick.worker import Worker
from tests.support.aws import RecordedRuntime
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv

S = timedelta(seconds=1)
M = timedelta(minutes=1)


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4)


class Killed(BaseException):
    """The invocation stopped (a Lambda timeout or crash, a restart of the local stack)."""


@dataclass
class OtherHostClock:
    """Another invocation's clock: `offset` from the shared one; sleeping there may kill it."""

    inner: Clock
    offset: timedelta = timedelta(0)
    dies_in_sleep: bool = False

    def now(self) -> datetime:
        return self.inner.now() + self.offset

    def sleep(self, seconds: float) -> None:
        if self.dies_in_sleep:
            raise Killed
        self.inner.sleep(seconds)


def on_clock(env: WorkerEnv, clock: Clock) -> Runtime:
    """The runtime of another invocation (same table, rule and trigger) running on `clock`."""
    rt = env.runtime
    sync = RuleSync(rt.store, rt.rule, rt.trigger, rt.rule_sync.timing, clock)
    return Runtime(rt.settings, rt.store, rt.rule, rt.trigger, sync, clock)


def test_claim_waiter_admits_one_sleeper_per_time(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    now = runtime.clock.now()
    store = runtime.store
    head = now + 40 * S
    # Given a first invocation sleeping until the head, alive for five minutes
    assert store.claim_waiter(head, "a", now + 300 * S, now)
    # Then a second one wanting the same or a later time is refused
    assert not store.claim_waiter(head, "b", now + 300 * S, now)
    assert not store.claim_waiter(head + 5 * S, "b", now + 300 * S, now)
    # But the waiter itself may move its own time
    assert store.claim_waiter(head + 2 * S, "a", now + 300 * S, now)
    # And an invocation with an earlier head takes over
    assert store.claim_waiter(head, "b", now + 300 * S, now)
    # And a waiter that is gone before the wanted time, or should have woken before the given
    # instant (it died: a waiter releases its claim when it wakes), does not block anyone
    assert store.claim_waiter(now + 10 * S, "c", now + 12 * S, now)
    assert store.claim_waiter(now + 20 * S, "d", now + 300 * S, now)
    assert store.claim_waiter(now + 25 * S, "e", now + 300 * S, now + 21 * S)
    # And a released claim is gone; only its own owner and wake time release it
    assert not store.release_waiter("e", now + 26 * S)
    assert not store.release_waiter("d", now + 25 * S)
    assert store.release_waiter("e", now + 25 * S)
    assert store.read_rule_state().waiter_owner is None


def test_a_claim_needs_the_record_unmoved_and_published(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    now = runtime.clock.now()
    store = runtime.store
    # Given a record armed at version 1 whose PutRule was not confirmed yet
    assert store.cas_rule_state(0, now.replace(second=0) + 2 * M) == 1
    # Then a claim at that version is refused until it is confirmed, and one at another version too
    assert not store.claim_waiter(now + 40 * S, "w", now + 300 * S, now, expected_version=1)
    assert store.confirm_published(1)
    assert not store.claim_waiter(now + 40 * S, "w", now + 300 * S, now, expected_version=0)
    assert store.claim_waiter(now + 40 * S, "w", now + 300 * S, now, expected_version=1)
    assert not store.confirm_published(0)


@pytest.mark.parametrize(
    ("waiter_in", "alive_for", "released", "expected"),
    [
        (None, None, False, Outcome.INVOKED),  # nobody waits: invoke a worker
        (30, 300, False, Outcome.COVERED),  # a waiter wakes first and outlives the task
        (50, 300, False, Outcome.INVOKED),  # the waiter wakes after the task is due
        (30, 35, False, Outcome.INVOKED),  # the waiter's invocation ends before the task
        # The claim is trusted until released, however close or past its wake time by our clock:
        # the waiter (or the worker its backstop starts) releases it before reading the head
        (0.5, 300, False, Outcome.COVERED),
        (-10, 300, False, Outcome.COVERED),
        (30, 300, True, Outcome.INVOKED),  # the waiter woke: it may have read the head already
    ],
)
def test_a_due_soon_task_is_handed_to_a_worker_unless_a_waiter_covers_it(
    runtime: RecordedRuntime,
    frozen_now: time_machine.Traveller,
    waiter_in: float | None,
    alive_for: float,
    released: bool,
    expected: Outcome,
) -> None:
    now = runtime.clock.now()
    if waiter_in is not None:
        wake = now + waiter_in * S
        assert runtime.store.claim_waiter(wake, "sleeper", now + alive_for * S, now - M)
        if released:
            assert runtime.store.release_waiter("sleeper", wake)
    # When a task due in 40 s (too soon to arm) has been committed
    outcome = runtime.rule_sync.on_task_due(now + 40 * S, 0)
    # Then a worker is invoked exactly when no waiter covers it
    assert outcome is expected
    assert len(runtime.trigger.reasons) == (1 if expected is Outcome.INVOKED else 0)


def test_a_worker_stops_instead_of_sleeping_when_another_waits_for_an_earlier_time(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    # Given an invocation already asleep until a due-soon task
    now = runtime.clock.now()
    editor.schedule_in("log", 45, {})
    assert runtime.store.claim_waiter(now + 45 * S, "sleeper", now + 290 * S, now)
    registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
    # When a second worker invocation runs (e.g. another editor's direct invoke)
    report = Worker(runtime, registry, owner="second", remaining_ms=300_000).run()
    # Then it leaves the task to the waiter instead of sleeping too
    assert report.outcome == "covered"
    assert report.waited_seconds == 0
    assert runtime.store.read_rule_state().waiter_owner == "sleeper"


def test_a_worker_that_finds_the_backstop_armed_decides_on_the_claim_without_a_second_read(
    editor: Editor, runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    # Given a due-soon task whose backstop a worker already armed, and an invocation asleep for it
    now = runtime.clock.now()
    editor.schedule_in("log", 45, {})
    runtime.rule_sync.rearm()
    armed = runtime.store.read_rule_state()
    assert armed.armed_minute is not None and armed.published
    assert runtime.store.claim_waiter(
        now + 45 * S, "sleeper", now + 290 * S, now, expected_version=armed.version
    )
    registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
    meter = DynamoMeter(runtime.store)
    # When a second worker invocation runs
    report = Worker(runtime, registry, owner="second", remaining_ms=300_000).run()
    # Then it leaves the task to the waiter, having read the record once: its re-arm found the
    # record as it should be (nothing written) and the claim is decided on that read
    assert report.outcome == "covered"
    assert meter.calls["GetItem"] == 1
    assert sum(meter.calls[op] for op in ("PutItem", "UpdateItem", "DeleteItem")) == 0


def test_the_waiter_record_never_moves_the_rule(
    runtime: RecordedRuntime, frozen_now: time_machine.Traveller
) -> None:
    # Given an armed rule record
    now = runtime.clock.now()
    minute = (now + timedelta(hours=1)).replace(second=0, microsecond=0)
    runtime.rule_sync.lower(minute)
    before = runtime.store.read_rule_state()
    # When a waiter registers
    assert runtime.store.claim_waiter(now + 40 * S, "w", now + 300 * S, now)
    # Then the armed minute and its CAS version are untouched
    after = runtime.store.read_rule_state()
    assert (after.armed_minute, after.version) == (before.armed_minute, before.version)


def test_an_editor_whose_clock_is_behind_does_not_trust_a_waiter_that_already_woke(env: WorkerEnv) -> None:
    # Given a worker that slept in-process for a task due in 30 s, woke, ran it and finished
    first = env.editor.schedule_in("record", 30)
    env.run()
    assert [c.at for c in RECORDER.calls[first.id]] == [first.due]
    invoked = len(env.runtime.trigger.reasons)
    # When, 1 s after that wake-up, an editor whose clock is 3 s behind creates a task due 20 s
    # later (too close to arm)
    env.travel_to(first.due + S)
    skewed = Editor(runtime=on_clock(env, OtherHostClock(env.clock, offset=-3 * S)))
    late = skewed.schedule_at("record", first.due + 20 * S)
    # Then it invokes the worker: the waiter that woke no longer covers anything
    assert len(env.runtime.trigger.reasons) == invoked + 1
    # And that worker runs the task at its due time
    env.run()
    assert [c.at for c in RECORDER.calls[late.id]] == [late.due]


def test_a_waiter_that_dies_in_its_sleep_costs_one_rule_firing_not_the_task(env: WorkerEnv) -> None:
    # Given a worker that claimed the wait for a task due in 40 s and died in its sleep
    first = env.editor.schedule_in("record", 40)
    dying = on_clock(env, OtherHostClock(env.clock, dies_in_sleep=True))
    with pytest.raises(Killed):
        Worker(dying, env.registry, owner="dead", remaining_ms=300_000).run()
    assert env.runtime.store.read_rule_state().waiter_owner == "dead"
    invoked = len(env.runtime.trigger.reasons)
    # When an editor creates a task due 10 s after it (too close to arm; the claim covers it)
    second = env.editor.schedule_at("record", first.due + 10 * S)
    assert len(env.runtime.trigger.reasons) == invoked
    # Then the rule is armed as a backstop: a minute that starts at or after the waiter's wake time
    armed = env.runtime.rule.current()
    assert isinstance(armed, datetime), armed
    assert first.due <= armed <= first.due + M + env.runtime.rule_sync.timing.settle_seconds * S
    # And when EventBridge fires it (at the end of that minute, after the longest delivery delay),
    # the worker runs both tasks, at most about one firing late
    env.travel_to(armed + 64 * S)
    env.run()
    for task in (first, second):
        [call] = RECORDER.calls[task.id]
        assert call.at - task.due <= 2 * M + 15 * S
