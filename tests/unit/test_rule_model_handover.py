"""The model checker on the wait hand-over (tests/support/rule_models.py): the invocation that claims
a wait too long to sleep through sends a delayed message and ends; the invocation the message starts
sleeps until the head and runs it. The claim and its backstop stay the first invocation's, so a
message delivered twice, early or late costs at most its lateness, and a lost one (or a
continuation that dies) at most one rule firing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.support.rule_models import (
    HANDOVER_LATE_SECONDS,
    TIMING,
    NoBackstopRuleSync,
    Plan,
    Scenario,
    WakeIgnoringWorker,
    check,
)

SKEW = TIMING.clock_skew_seconds
# What a lost message or a dead continuation may cost: the backstop's minute, about a minute after
# the head, plus EventBridge's delivery delay into it (as for a waiter that dies in its sleep).
BACKSTOP_LATE = 60 + TIMING.settle_seconds + 65 + SKEW


def handed_over(delivery: str, *, crashes: int = 0) -> Scenario:
    """A task due 09:01:00 (too close to arm) and the worker its editor invoked at 09:00:30, which
    claims the wait and hands it over, and an editor creating a task due 09:01:10 that the claim
    covers once written (so it may skip the direct invoke). The queue delivers the message as
    `delivery` says.

    Without crashes the editor starts with the worker and a second may pass at any point (except for
    a duplicated message, whose two chains already branch widely). With `crashes`, the editor starts
    at 09:00:40, any worker (the one handing over, a continuation) may die after any step and
    nothing is retried (a restart of the local stack): the backstop is all that is left, and the
    keeper publishes a record a worker moved and then died before its PutRule (not with a
    duplicate: the search would not end)."""
    late = {"late": HANDOVER_LATE_SECONDS, "lost": BACKSTOP_LATE}.get(delivery, 0.0)
    return Scenario(
        start=30,
        queued=(("first", 60),),
        plans=(Plan("invoked", 30), Plan("create", 40 if crashes else 30, "covered", 70)),
        horizon=15 * 60,
        ticks=0 if crashes or delivery == "twice" else 1,
        tick_seconds=1,
        handover=delivery,
        crashes=crashes,
        crashable=("worker",),
        retries=False,
        keeper=bool(crashes) and delivery != "twice",
        fire_offset=30,
        late_bound=SKEW + late,
        crash_late_bound=BACKSTOP_LATE,
    )


@pytest.mark.parametrize("delivery", ["once", "twice", "early", "late", "lost"])
def test_a_handed_over_wait_runs_both_tasks_however_the_message_arrives(delivery: str) -> None:
    result = check(handed_over(delivery))
    assert result.states > 50, "the search must actually branch"
    assert result.violations == [], result.first()


@pytest.mark.parametrize("delivery", ["once", "twice", "early"])
def test_a_worker_that_dies_around_the_hand_over_costs_at_most_one_rule_firing(delivery: str) -> None:
    result = check(handed_over(delivery, crashes=1))
    assert result.violations == [], result.first()


def test_delivered_on_time_the_head_runs_on_time_not_at_the_backstop() -> None:
    # The bound is the clock skew: a run left to the backstop (a minute later) is caught
    result = check(replace(handed_over("once"), late_bound=SKEW))
    assert result.violations == [], result.first()


def test_the_search_catches_a_continuation_that_does_not_wait_for_its_head() -> None:
    # Given a continuation that starts at once: delivered early, it takes the live claim for another
    # waiter's and stops
    result = check(replace(handed_over("early"), worker=WakeIgnoringWorker))
    # Then the head waits for the backstop
    assert result.violations, "a continuation that ignores its wake time must be caught"
    assert result.violations[0][0].startswith("late:"), result.first()


def woken_by_its_minute(delivery: str) -> Scenario:
    """The rule armed for 09:01, the minute of a task due 09:02:15: its firing starts the worker
    that waits for the task, and the rule as it stands is that wait's backstop (at 09:04, named in
    the PutRule of 09:01), so the worker hands the wait over writing nothing: no claim, and the
    message carries the record it decided on. With a message delivered once or lost, an editor at
    09:01:40 creates a task due 09:02:20, which no claim covers (it invokes a worker); beside two
    continuations, its worker would grow the search past its bound."""
    late = {"late": HANDOVER_LATE_SECONDS, "lost": BACKSTOP_LATE}.get(delivery, 0.0)
    return Scenario(
        start=50,
        armed=60,
        queued=(("head", 135),),
        plans=(Plan("create", 100, "soon", 140),) if delivery in ("once", "lost") else (),
        horizon=15 * 60,
        handover=delivery,
        fire_offset=30,
        late_bound=SKEW + late,
    )


@pytest.mark.parametrize("delivery", ["once", "twice", "early", "late", "lost"])
def test_a_wait_handed_over_without_a_write_runs_on_time_or_at_the_backstop(delivery: str) -> None:
    result = check(woken_by_its_minute(delivery))
    assert result.states > 10, "the search must actually run"
    assert result.violations == [], result.first()


def test_the_search_catches_a_hand_over_without_the_backstop() -> None:
    # Given PutRules that name the armed minute alone (the defect): the message is all there is
    result = check(replace(woken_by_its_minute("lost"), protocol=NoBackstopRuleSync))
    # Then a lost message loses the head
    assert result.violations, "a hand-over without its backstop must be caught"
    assert result.violations[0][0].startswith(("lost", "stalled")), result.first()
