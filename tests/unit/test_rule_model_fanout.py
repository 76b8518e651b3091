"""The model checker with a burst spread over invocations (tests/support/rule_models.py): a worker
that finds a burst starts a helper for the other group of shards; leader and helper run at once,
each drains its group, then works like any invocation (re-arm, claim the wait, sleep). The helper
may die after any step, with or without Lambda's retry (the leader too with `NEXTTICK_MODEL_SOAK=1`).
Every committed task still runs once, on time when nobody died; the rule is right at rest. A defect
put back into the fan-out is caught."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nexttick.worker.sharing import ShardSharing
from tests.support.rule_models import SOAK, ModelWorker, Plan, Scenario, check, shard_of

# Tasks due 09:01:40 in both shards (a burst), and one due 09:08 the worker re-arms for.
BURST = (("a", 100), ("b", 100), ("c", 100), ("later", 8 * 60))

FAN_OUT = Scenario(
    start=30,
    armed=0,
    fired=True,
    queued=BURST,
    plans=(Plan("fired", 30),),
    horizon=15 * 60,
    fan_out=True,
)


class KeepsItsGroup(ShardSharing):
    """Sharing in which an invocation works only its group for the whole invocation (the defect: a
    helper's shards are its helper's alone, so a helper that dies leaves them to the next one)."""

    def leave_group(self) -> None:
        return None


class KeepsItsGroupWorker(ModelWorker):
    sharing_class = KeepsItsGroup


def test_the_burst_is_in_both_shards() -> None:
    assert {shard_of(task) for task, due in BURST if due == 100} == {0, 1}


def test_a_burst_spread_over_a_helper_runs_every_task_once_on_time() -> None:
    # When the fired worker finds the burst and starts a helper for the other shard
    result = check(FAN_OUT)
    # Then every task ran exactly once and on time, and the rule is right at rest
    assert result.states > 50, "the search must actually branch"
    assert result.violations == [], result.first()


def test_a_helper_that_dies_anywhere_loses_nothing() -> None:
    # When the helper dies after any step (Lambda retries the invocation)
    result = check(replace(FAN_OUT, crashes=1, crashable=("helper",)))
    assert result.states > 500, "the search must actually branch"
    assert result.violations == [], result.first()


@pytest.mark.skipif(not SOAK, reason="long run (about 5 core-minutes): NEXTTICK_MODEL_SOAK=1")
def test_soak_a_leader_or_helper_that_dies_anywhere_loses_nothing() -> None:
    # When the leader or its helper dies after any step (Lambda retries the invocation)
    result = check(replace(FAN_OUT, crashes=1, crashable=("worker", "helper")))
    assert result.violations == [], result.first()


def test_a_helper_that_dies_for_good_is_covered_by_its_leader() -> None:
    # When the helper dies and its event is never retried (the local stack's restart, or an event
    # dropped after its last retry)
    result = check(replace(FAN_OUT, crashes=1, crashable=("helper",), retries=False))
    # Then the leader, its own group drained, covers the helper's shards (late by the crash only)
    assert result.violations == [], result.first()


def test_the_search_catches_a_worker_that_keeps_its_group() -> None:
    # Given workers that never leave their group (the defect)
    scenario = replace(FAN_OUT, crashes=1, crashable=("helper",), retries=False, worker=KeepsItsGroupWorker)
    result = check(scenario)
    # Then a helper dying leaves its shards' tasks to nobody: its leader waits for them forever
    assert result.violations, "a dead helper's shards must be left behind"
    problem = result.violations[0][0]
    assert problem.startswith(("stalled", "lost", "late")) or "spins" in problem, result.first()
