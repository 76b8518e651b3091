"""One waiting worker per due-soon time (no herd): the rule record names the invocation sleeping
in-process for the head; other invocations stop, and editors skip the direct invoke when that
waiter will wake at or before their task and live past it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nexttick.actions import build_registry
from nexttick.rulesync import Outcome
from nexttick.runtime import Runtime
from nexttick.worker import Worker

S = timedelta(seconds=1)


def test_claim_waiter_admits_one_sleeper_per_time(runtime: Runtime, frozen_now) -> None:  # type: ignore[no-untyped-def]
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
    # And a waiter that is gone before the wanted time, or already woke, does not block anyone
    assert store.claim_waiter(now + 10 * S, "c", now + 12 * S, now)
    assert store.claim_waiter(now + 20 * S, "d", now + 300 * S, now)
    assert store.claim_waiter(now + 25 * S, "e", now + 300 * S, now + 21 * S)


@pytest.mark.parametrize(
    ("waiter_in", "alive_for", "expected"),
    [
        (None, None, Outcome.INVOKED),  # nobody waits: invoke a worker
        (30, 300, Outcome.COVERED),  # a live waiter wakes first and outlives the task
        (50, 300, Outcome.INVOKED),  # the waiter wakes after the task is due
        (30, 35, Outcome.INVOKED),  # the waiter's invocation ends before the task
        (0.5, 300, Outcome.INVOKED),  # the waiter is waking now: it may have read the head already
    ],
)
def test_a_due_soon_task_is_handed_to_a_worker_unless_a_waiter_covers_it(
    runtime: Runtime, frozen_now, waiter_in, alive_for, expected
) -> None:  # type: ignore[no-untyped-def]
    now = runtime.clock.now()
    if waiter_in is not None:
        assert runtime.store.claim_waiter(now + waiter_in * S, "sleeper", now + alive_for * S, now)
    # When a task due in 40 s (too soon to arm) has been committed
    outcome = runtime.rule_sync.on_task_due(now + 40 * S)
    # Then a worker is invoked exactly when no waiter covers it
    assert outcome is expected
    assert len(runtime.trigger.reasons) == (1 if expected is Outcome.INVOKED else 0)


def test_a_worker_stops_instead_of_sleeping_when_another_waits_for_an_earlier_time(
    editor, runtime: Runtime, frozen_now
) -> None:  # type: ignore[no-untyped-def]
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


def test_the_waiter_record_never_moves_the_rule(runtime: Runtime, frozen_now) -> None:  # type: ignore[no-untyped-def]
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
