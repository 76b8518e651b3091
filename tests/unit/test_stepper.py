"""The model checker's stepper (tests/support/interleave.py): stepping a program through its
operations performs each scheduled one at its own step, unscheduled ones whenever reached, parks
at the next scheduling point, and re-runs a program only for a history it has not seen."""

from __future__ import annotations

from typing import Any

from tests.support.interleave import Op, Replay, Stepper


def counter_program(replay: Replay) -> int:
    """Reads a clock (unscheduled), then increments a shared counter twice if the clock is even
    (once if odd), reading it back each time; returns what it last read."""
    now = replay.call("now", scheduled=False)
    rounds = 2 if now % 2 == 0 else 1
    seen = 0
    for _ in range(rounds):
        seen = replay.call("increment")
    return int(seen)


class World:
    def __init__(self, now: int) -> None:
        self.now, self.counter = now, 0
        self.performed: list[tuple[str, int]] = []

    def perform(self, op: Op, position: int) -> Any:
        self.performed.append((op.name, position))
        if op.name == "now":
            return self.now
        self.counter += 1
        return self.counter


def run_to_end(stepper: Stepper, world: World) -> list[tuple[str, int]]:
    history, log = stepper.start("counter"), ()
    result = stepper.step(counter_program, log, history, world.perform, may_perform=False, max_ops=10)
    while result.parked_at is not None:
        assert result.error is None
        result = stepper.step(
            counter_program, result.log, result.history, world.perform, may_perform=True, max_ops=10
        )
    return world.performed


def test_a_program_parks_at_each_scheduled_operation_and_performs_clock_reads_when_reached() -> None:
    stepper = Stepper(lambda answer: answer)
    world = World(now=4)
    # The first step performs only the clock read and parks at the first increment
    first = stepper.step(
        counter_program, (), stepper.start("counter"), world.perform, may_perform=False, max_ops=10
    )
    assert first.parked_at == Op("increment") and first.log == (4,)
    # Each later step performs one increment and parks at the next, until the program returns
    second = stepper.step(
        counter_program, first.log, first.history, world.perform, may_perform=True, max_ops=10
    )
    assert second.parked_at == Op("increment") and second.log == (4, 1)
    third = stepper.step(
        counter_program, second.log, second.history, world.perform, may_perform=True, max_ops=10
    )
    assert third.parked_at is None and third.error is None and third.log == (4, 1, 2)
    assert world.performed == [("now", 0), ("increment", 1), ("increment", 2)]


def test_a_history_seen_before_is_not_run_again_and_keeps_its_number() -> None:
    stepper = Stepper(lambda answer: answer)
    # When two worlds give the same answers, the second is stepped from the remembered histories
    run_to_end(stepper, World(now=4))
    reruns = stepper.reruns
    assert run_to_end(stepper, World(now=4)) == [("now", 0), ("increment", 1), ("increment", 2)]
    assert stepper.reruns == reruns
    # And a world whose clock answers otherwise takes another path, with histories of its own
    assert run_to_end(stepper, World(now=3)) == [("now", 0), ("increment", 1)]
    assert stepper.reruns > reruns
    one, other = stepper.start("counter"), stepper.start("counter")
    assert one == other != stepper.start("another program")


def test_a_program_that_raises_or_runs_past_its_budget_is_reported() -> None:
    def failing(replay: Replay) -> None:
        replay.call("increment")
        raise ValueError("boom")

    def spinning(replay: Replay) -> None:
        while True:
            replay.call("now", scheduled=False)

    stepper = Stepper(lambda answer: answer)
    world = World(now=0)
    parked = stepper.step(failing, (), stepper.start("failing"), world.perform, may_perform=False, max_ops=5)
    ended = stepper.step(failing, parked.log, parked.history, world.perform, may_perform=True, max_ops=5)
    assert ended.parked_at is None and isinstance(ended.error, ValueError)
    spun = stepper.step(spinning, (), stepper.start("spinning"), world.perform, may_perform=False, max_ops=5)
    assert spun.parked_at is None and spun.error is None and len(spun.log) == 6
