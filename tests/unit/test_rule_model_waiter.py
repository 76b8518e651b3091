"""The model checker on the one waiter (tests/support/rule_models.py): clocks that disagree within
the stated bound, and a waiter that dies in its sleep. Editors skip the direct invoke only on an
unreleased claim on a record whose value a PutRule was confirmed for, and the rule stays armed as the
claim's backstop, so neither costs a task."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.support.rule_models import (
    SOAK,
    TIMING,
    ClockWaiterRuleSync,
    NoBackstopRuleSync,
    Plan,
    Scenario,
    TrustUnconfirmedClaimRuleSync,
    check,
)

SKEW = TIMING.clock_skew_seconds

# Given a task due 09:01:00 (too close to arm) and the worker its editor invoked at 09:00:30, which
# waits for it in-process; at 09:01:01, just after that wake-up, an editor whose clock is behind
# creates a task due 09:01:20. One second may pass at any point, so the editor can run while the
# waiter is still at any step after its wake-up.
SKEWED_EDITOR = Scenario(
    start=30,
    queued=(("first", 60),),
    plans=(Plan("invoked", 30), Plan("create", 61, "late", 80, skew=-3)),
    horizon=10 * 60,
    ticks=2 if SOAK else 1,
    tick_seconds=1,
)


def dead_waiter(fire_offset: float, worker_skew: float) -> Scenario:
    """The same waiter (it, or any worker after it, may die after any step — a restart of the local
    stack: no Lambda retry), and an editor at 09:00:40 creating a task due 09:01:10 that the claim
    covers. EventBridge delivers a firing `fire_offset` seconds into its minute; every worker's clock
    is `worker_skew` off. A death may cost one rule firing: at most the backstop gap (a minute plus
    `settle_seconds`) plus that minute and the delivery delay."""
    return Scenario(
        start=30,
        queued=(("first", 60),),
        plans=(Plan("invoked", 30, skew=worker_skew), Plan("create", 40, "covered", 70)),
        horizon=15 * 60,
        crashes=1,
        crashable=("worker",),
        retries=False,
        fire_offset=fire_offset,
        worker_skew=worker_skew,
        crash_late_bound=60 + TIMING.settle_seconds + 65 + SKEW,
    )


def test_an_editor_with_a_clock_behind_never_skips_the_invoke_for_a_waiter_that_woke() -> None:
    # When every schedule runs
    result = check(SKEWED_EDITOR)
    # Then both tasks run on time: the claim is released before the waiter's head read, and the
    # editor trusts only an unreleased claim (no clock compared)
    assert result.states > 1000, "the search must actually branch"
    assert result.violations == [], result.first()


def test_the_search_catches_a_waiter_skip_decided_by_the_editors_clock() -> None:
    # Given the skip decided by the editor's clock against the waiter's wake time, and no release
    result = check(replace(SKEWED_EDITOR, protocol=ClockWaiterRuleSync))
    # Then the task waits for the next firing instead of running at its due time
    assert result.violations, "a clock-based skip must be caught"
    assert result.violations[0][0].startswith(("late: late", "lost", "stalled")), result.first()


@pytest.mark.parametrize("fire_offset", [0, 30, 64])
@pytest.mark.parametrize("worker_skew", [-SKEW, 0, SKEW])
def test_a_waiter_that_dies_costs_at_most_one_rule_firing(fire_offset: float, worker_skew: float) -> None:
    result = check(dead_waiter(fire_offset, worker_skew))
    assert result.violations == [], result.first()


def woken_by_its_minute(fire_offset: float) -> Scenario:
    """The rule armed for 09:01, the minute of a task due 09:02:15: its firing starts the worker
    that waits for the task, and the rule as it stands is that wait's backstop (at 09:04, what the
    PutRule of 09:01 named with it), so the waiter writes only its claim. It may die after any step,
    as may any worker after it; an editor at 09:01:40 creates a task due 09:02:20 that the claim
    covers. A death may cost the time from the head to the backstop's firing: up to 110 s plus
    that minute (here 105 s plus `fire_offset`)."""
    return Scenario(
        start=50,
        armed=60,
        queued=(("head", 135),),
        plans=(Plan("create", 100, "covered", 140),),
        horizon=15 * 60,
        crashes=1,
        crashable=("worker",),
        retries=False,
        fire_offset=fire_offset,
        crash_late_bound=105 + fire_offset + SKEW,
    )


@pytest.mark.parametrize("fire_offset", [0, 30, 59])
def test_a_waiter_woken_by_its_heads_minute_is_backed_up_by_the_rule_as_it_stands(fire_offset: float) -> None:
    result = check(woken_by_its_minute(fire_offset))
    assert result.states > 100, "the search must actually branch"
    assert result.violations == [], result.first()


def test_the_search_catches_a_waiter_without_a_backstop() -> None:
    # Given PutRules that name the armed minute alone (the defect): nothing fires after it (the keeper
    # publishes a record whose writer died before its PutRule, so the rule comes to rest either way)
    result = check(replace(woken_by_its_minute(30), protocol=NoBackstopRuleSync, keeper=True))
    # Then the waiter's death leaves its head (and the task it covered) with no worker to come
    assert result.violations, "a dead waiter without a backstop must lose its tasks"
    found = [problem for problem, _ in result.violations]
    assert any(p.startswith(("stalled", "lost")) for p in found), found


def test_the_search_catches_an_editor_trusting_a_claim_whose_backstop_was_never_published() -> None:
    # Given editors that skip the invoke for a claim before its backstop's PutRule was confirmed
    result = check(replace(dead_waiter(30, 0), protocol=TrustUnconfirmedClaimRuleSync))
    # Then a waiter that dies between the CAS that took its claim and its PutRule strands them
    assert result.violations, "a claim trusted before its backstop was published must lose tasks"
    assert result.violations[0][0].startswith(("stalled", "lost")), result.first()
