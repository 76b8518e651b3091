"""Invariant I2 under EVERY interleaving of two editors and one worker (in-memory model).

Each actor's every external operation (record read, CAS, head read, PutRule, DescribeRule, invoke)
is a step; a depth-first search over the choice of which actor steps next visits every reachable
state (replaying schedules from scratch; states already seen are not expanded again — an actor's
future is a function of what it has observed, so (world state, observations) identifies a node).
The naive reference synchroniser and our protocol without its second head read must fail."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nexttick.config import Precision
from nexttick.rulesync import Outcome, RuleSync
from nexttick.schedules import Timing
from tests.support.interleave import Interleaver, Stepped
from tests.support.rule_models import (
    FixedClock,
    ModelRule,
    ModelStore,
    ModelTrigger,
    NaiveRuleSync,
    NoRecheckRuleSync,
    rest_violation,
)

NOW = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)  # the worker woke for the 09:00 minute
TIMING = Timing(precision=Precision.SECOND)
SyncFactory = Callable[..., RuleSync]


@dataclass
class World:
    store: ModelStore = field(default_factory=ModelStore)
    rule: ModelRule = field(default_factory=ModelRule)
    trigger: ModelTrigger = field(default_factory=ModelTrigger)
    observed: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)

    def key(self) -> tuple[object, ...]:
        return (
            self.store.snapshot(),
            self.rule.minute,
            len(self.trigger.wakes),
            tuple((name, repr(obs)) for name, obs in sorted(self.observed.items())),
        )


def build(sync_cls: SyncFactory, editor_dues: list[datetime], queued: list[datetime]) -> tuple[World, dict]:
    """Given the rule armed for the current minute and a worker that has just run the task it woke
    for and now re-arms; editors add tasks at `editor_dues`; `queued` tasks wait further out."""
    world = World()
    clock = FixedClock(NOW)
    for i, due in enumerate(queued):
        world.store.add(f"queued{i}", due)
    world.store.armed, world.store.version = NOW.replace(second=0), 7
    world.rule.minute = world.store.armed

    def sync_for(name: str, step: Any) -> tuple[RuleSync, Stepped]:
        obs = world.observed.setdefault(name, [])
        store = Stepped(world.store, step, observed=obs)
        sync = sync_cls(
            store,
            Stepped(world.rule, step, observed=obs),
            Stepped(world.trigger, step, observed=obs),
            TIMING,
            clock,
        )
        return sync, store

    def worker(step: Any) -> None:
        sync, store = sync_for("worker", step)
        run_worker_tail(sync, store, world)

    def editor(i: int, due: datetime) -> Callable[[Any], None]:
        def act(step: Any) -> None:
            sync, store = sync_for(f"editor{i}", step)
            store.add(f"new{i}", due)
            sync.on_task_due(due)

        return act

    actors = {"worker": worker} | {f"editor{i}": editor(i, d) for i, d in enumerate(editor_dues)}
    return world, actors


def run_worker_tail(sync: RuleSync, store: Any, world: World) -> None:
    """The end of a worker run: re-arm; a head too close to arm is run in-process, then re-arm."""
    while sync.rearm().outcome is Outcome.DUE_SOON:
        for task_id, due in list(world.store.entries.items()):
            if not TIMING.armable(TIMING.fire_minute(due), NOW):
                store.remove(task_id)


def settle_wakes(sync_cls: SyncFactory, world: World) -> None:
    """A wake is an asynchronous worker invocation: it runs (after the call that issued it) and
    ends with a re-arm. Run one such worker to completion if any wake was issued."""
    if world.trigger.wakes:
        sync = sync_cls(world.store, world.rule, world.trigger, TIMING, FixedClock(NOW))
        run_worker_tail(sync, world.store, world)


def explore(sync_cls: SyncFactory, editor_dues: list[datetime], queued: list[datetime]) -> tuple[int, list]:
    """Depth-first over all schedules; returns (distinct states, violations with their schedule)."""
    seen: set[tuple[object, ...]] = set()
    violations: list[tuple[str, list[tuple[str, str]]]] = []
    pending: list[list[str]] = [[]]
    while pending:
        prefix = pending.pop()
        world, actors = build(sync_cls, editor_dues, queued)
        position = 0

        def choose(enabled: list[str], world: World = world, prefix: list[str] = prefix) -> str | None:
            nonlocal position
            if position < len(prefix):
                choice = prefix[position]
                position += 1
                return choice
            key = (world.key(), tuple(enabled))
            if key in seen:
                return None
            seen.add(key)
            for other in enabled[1:]:
                pending.append([*prefix[:position], other])
            prefix.append(enabled[0])
            position += 1
            return enabled[0]

        runner = Interleaver(choose)
        trace = runner.run(actors)
        assert not runner.errors, runner.errors
        if runner.aborted:
            continue
        settle_wakes(sync_cls, world)
        problem = rest_violation(
            TIMING,
            NOW,
            world.store.armed if getattr(sync_cls, "uses_record", True) else world.rule.minute,
            world.rule.minute,
            list(world.store.entries.values()),
            len(world.trigger.wakes),
        )
        if problem:
            violations.append((problem, trace))
    return len(seen), violations


M = timedelta(minutes=1)
SCENARIOS = {
    # editors' tasks earlier than the queued head, the worker raises past them
    "both-before-head": ([NOW + 5 * M, NOW + 9 * M], [NOW + 30 * M]),
    "same-minute": ([NOW + 6 * M, NOW + 6 * M + timedelta(seconds=20)], [NOW + 30 * M]),
    "one-after-head": ([NOW + 5 * M, NOW + 45 * M], [NOW + 30 * M]),
    "queue-empties": ([NOW + 5 * M, NOW + 12 * M], []),
    "one-too-close": ([NOW + timedelta(seconds=40), NOW + 8 * M], [NOW + 30 * M]),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_interleaving_of_two_editors_and_a_worker_comes_to_rest_armed_in_time(scenario: str) -> None:
    # Given two editors adding tasks while a worker re-arms after its run
    dues, queued = SCENARIOS[scenario]
    # When every interleaving of their steps is executed
    states, violations = explore(RuleSync, dues, queued)
    # Then every one comes to rest with the rule matching the record, at or before the head
    assert states > 50, "the search must actually branch"
    assert violations == []


@pytest.mark.parametrize("broken", [NaiveRuleSync, NoRecheckRuleSync], ids=["naive-poc", "no-recheck"])
def test_the_search_catches_a_lost_wakeup_in_weaker_protocols(broken: SyncFactory) -> None:
    # Given the naive "read head, PutRule" of the reference PoC, or ours without the second head read
    dues, queued = SCENARIOS["both-before-head"]
    # When all interleavings are explored
    _, violations = explore(broken, dues, queued)
    # Then some schedule loses a wake-up
    assert violations, "the exhaustive search should find a lost wake-up"
    assert any("lost wake-up" in problem or "epoch" in problem for problem, _ in violations)
