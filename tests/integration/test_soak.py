"""The soak in `make test`: editors, workers and the keeper against moto for NEXTTICK_SOAK_SECONDS
(default 60) under random crashes and faults, then every in-process invariant at rest (tests/soak.py;
`make soak` runs it for ten minutes). Seeded (NEXTTICK_SOAK_SEED; the figures print the seed), so
the operations, faults and crashes drawn repeat; the threads' interleaving does not.

A test that cannot fail is a defect: the mutant run shows that the soak sees a loss."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from tests.soak import SoakConfig, SoakResult, run_soak
from tests.support.faults import Kind

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("soak")]

SECONDS = float(os.environ.get("NEXTTICK_SOAK_SECONDS", "60"))
SEED = int(os.environ.get("NEXTTICK_SOAK_SEED", "20300107"))


def explain(result: SoakResult) -> str:
    return "\n".join(
        [
            *result.lines(),
            "at rest: " + result.rest.summary(),
            "at the end: " + result.report.summary(),
            *result.harness_errors[:10],
        ]
    )


def test_the_soak_loses_nothing_under_crashes_and_faults() -> None:
    # Given editors, workers and the keeper running concurrently, every AWS call of each liable to a
    # fault and every actor to a crash, time advancing
    # When it runs, then goes quiet and settles
    result = run_soak(SoakConfig(seconds=SECONDS, seed=SEED))
    # Then every invariant holds at rest: nothing lost, the rule converged, duplicates only by key
    assert result.ok, explain(result)
    assert result.report.lost == []
    # And the run did what a soak must: every fault kind, crashes of every actor, real traffic
    for kind in (
        Kind.THROTTLE,
        Kind.SERVER_ERROR,
        Kind.SERVER_ERROR_RETRIED,
        Kind.SLOW,
        Kind.TIMEOUT,
        Kind.LOST_RESPONSE,
    ):
        assert result.faults[kind.value] > 0, explain(result)
    assert result.figures["crash:editor"] > 0 and result.figures["crash:worker"] > 0, explain(result)
    assert result.report.figures["status:succeeded"] > 50, explain(result)
    assert result.ops["create:ok"] > 50 and result.ops["cancel:ok"] > 0 and result.ops["reschedule:ok"] > 0
    assert result.invocations["invoked:wake"] > 0 and result.invocations["invoked:retry"] > 0
    assert result.figures["keeper_batches"] > 0


MUTANT_SECONDS = 10.0


def test_the_soak_sees_the_loss_when_the_keeper_is_gone() -> None:
    # Given clients that each die right after their task write and never repeat a request
    dying = SoakConfig(seconds=MUTANT_SECONDS, seed=SEED, editors_die_after_task_write=True)
    # When nothing consumes the table's stream (the mutant)
    mutant = run_soak(replace(dying, keeper=False))
    # Then the soak reports the committed tasks as lost, and the rule as not covering them at rest
    assert mutant.report.lost, explain(mutant)
    assert mutant.rest.of("I2"), explain(mutant)
    # And with the keeper, the same clients lose nothing
    control = run_soak(dying)
    assert control.ok, explain(control)
