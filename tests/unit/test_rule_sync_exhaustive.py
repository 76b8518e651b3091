"""I1/I2 under every interleaving of two editors and a worker re-arming after its run.

The model checker (tests/support/rule_models.py) runs the real RuleSync and the real worker loop
against an in-memory world in which every AWS call is a scheduling point, and explores every
schedule (each distinct state once). After the concurrent start it runs on: EventBridge fires what
is armed, workers wait for due times and run tasks, until each task ran or the run is judged. The
reference proof of concept and our protocol without its second head read must fail the search."""

from __future__ import annotations

import pytest

from nexttick.rulesync import RuleSync
from tests.support.rule_models import SOAK, NaiveRuleSync, NoRecheckRuleSync, Plan, Scenario, check

M = 60
# Given the rule fired for 09:00 and its worker, at 09:00:30, is about to re-arm while two editors
# create tasks due at `dues`; `queued` tasks wait further out (seconds after 09:00).
SCENARIOS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "both-before-head": ((5 * M + 30, 9 * M + 30), (30 * M + 30,)),
    "same-minute": ((6 * M + 30, 6 * M + 50), (30 * M + 30,)),
    "one-after-head": ((5 * M + 30, 45 * M + 30), (30 * M + 30,)),
    "queue-empties": ((5 * M + 30, 12 * M + 30), ()),
    # too close to arm: the worker it invokes is the third actor
    "one-too-close": ((70,), (30 * M + 30,)),
}
if SOAK:
    SCENARIOS["two-one-too-close"] = ((70, 8 * M + 30), (30 * M + 30,))


def scenario(name: str, protocol: type[RuleSync] = RuleSync) -> Scenario:
    dues, queued = SCENARIOS[name]
    creates = tuple(Plan("create", 30, f"new{i}", due) for i, due in enumerate(dues))
    return Scenario(
        start=30,
        armed=0,
        fired=True,
        queued=tuple((f"queued{i}", due) for i, due in enumerate(queued)),
        plans=(Plan("fired", 30), *creates),
        horizon=max(dues + queued) + 5 * M,
        protocol=protocol,
    )


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_interleaving_of_two_editors_and_a_worker_runs_every_task_on_time(name: str) -> None:
    # Given editors creating tasks while a worker re-arms after its run
    # When every interleaving of their steps is executed, and the world runs on
    result = check(scenario(name))
    # Then every task runs at its due time, and the rule comes to rest equal to the record
    assert result.states > 500, "the search must actually branch"
    assert result.violations == [], result.first()


@pytest.mark.parametrize("broken", [NaiveRuleSync, NoRecheckRuleSync], ids=["naive-poc", "no-recheck"])
def test_the_search_catches_a_lost_wakeup_in_weaker_protocols(broken: type[RuleSync]) -> None:
    # Given the naive "read head, PutRule" of the reference PoC, or ours without the second head read
    # When all interleavings are explored
    result = check(scenario("both-before-head", broken))
    # Then some schedule runs a task late (the rule fires for a later one) or never
    assert result.violations, "the exhaustive search should find a lost wake-up"
    problem = result.violations[0][0]
    assert problem.startswith(("late:", "lost", "stalled")), result.first()
