"""The model checker with time that passes while actors work (tests/support/rule_models.py): a
PutRule that returns late, a re-arm that must raise the record after a run, reschedules and
cancels racing the worker. Each defect put back into the protocol is caught."""

from __future__ import annotations

from dataclasses import replace

from tests.support.rule_models import (
    SOAK,
    NeverRaiseRuleSync,
    NoRecheckRuleSync,
    NoSettleCheckRuleSync,
    Plan,
    Scenario,
    check,
)

M = 60

# Given the rule firing for 09:00 and its worker at 09:00:30; a task due 09:02:15 was created while
# the record said 09:00 (so its editor wrote nothing): the worker's re-arm must arm 09:01, 30 s away.
# Time may pass for 30 s once, at any point (a PutRule that takes that long lands as 09:01 begins).
SLOW_PUTRULE = Scenario(
    start=30,
    armed=0,
    fired=True,
    queued=(("head", 2 * M + 15),),
    plans=(Plan("fired", 30),),
    horizon=8 * M,
    ticks=2 if SOAK else 1,
    tick_seconds=30,
)

# An editor whose task's minute is 20 s away when it decides, racing a worker's re-arm.
SLOW_LOWER = Scenario(
    start=30,
    armed=0,
    fired=True,
    queued=(("later", 30 * M),),
    plans=(Plan("fired", 30), Plan("create", 30, "new", 2 * M + 20)),
    horizon=35 * M,
    ticks=1,
    tick_seconds=15,
)

# The worker runs its head, then must raise the record to the next task's minute.
RAISE = Scenario(
    start=30,
    armed=0,
    fired=True,
    queued=(("first", 100), ("second", 10 * M)),
    plans=(Plan("fired", 30),),
    horizon=15 * M,
)

# A reschedule to an earlier time and a cancel, racing the worker's re-arm.
RESCHEDULE = Scenario(
    start=30,
    armed=0,
    fired=True,
    queued=(("moved", 30 * M), ("cancelled", 6 * M)),
    plans=(Plan("fired", 30), Plan("reschedule", 30, "moved", 4 * M), Plan("cancel", 30, "cancelled")),
    horizon=35 * M,
)


def test_a_putrule_that_returns_after_its_minute_began_never_strands_the_head() -> None:
    # When every schedule runs, with 30 s passing anywhere (also between PutRule sent and landed)
    result = check(SLOW_PUTRULE)
    # Then the head runs on time (the worker kept it) and the rule comes to rest with the record
    assert result.violations == [], result.first()


def test_the_search_catches_a_rearm_that_trusts_a_late_putrule() -> None:
    # Given a re-arm that does not re-check armability after publishing (the defect)
    result = check(replace(SLOW_PUTRULE, protocol=NoSettleCheckRuleSync))
    # Then the rule is left on a minute that will not fire: the head waits for its backstop (late)
    assert result.violations, "a re-arm trusting a late PutRule must strand its head"
    assert result.violations[0][0].startswith(("stalled", "late")), result.first()


def test_an_editor_whose_putrule_returns_late_hands_its_task_to_the_worker() -> None:
    result = check(SLOW_LOWER)
    assert result.violations == [], result.first()


def test_the_worker_raises_the_record_after_running_the_head() -> None:
    result = check(RAISE)
    assert result.violations == [], result.first()


def test_the_search_catches_a_rearm_that_never_raises() -> None:
    # Given a re-arm that leaves the record on the minute that fired (the defect)
    result = check(replace(RAISE, protocol=NeverRaiseRuleSync))
    # Then the past-minute check flags it: tasks pending, the rule on a fired minute, no worker
    assert result.violations, "a re-arm that never raises must stall the queue"
    assert result.violations[0][0].startswith("stalled"), result.first()


def test_reschedules_and_cancels_racing_the_worker_lose_nothing() -> None:
    result = check(RESCHEDULE)
    assert result.states > 100, "the search must actually branch"
    assert result.violations == [], result.first()


def test_the_search_catches_a_rearm_without_its_second_head_read_under_a_reschedule() -> None:
    result = check(replace(RESCHEDULE, protocol=NoRecheckRuleSync))
    assert result.violations, "a rescheduled task must be missed without the second head read"
    assert result.violations[0][0].startswith(("late:", "lost", "stalled")), result.first()
