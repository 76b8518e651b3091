"""Forcing interleavings, two ways.

* `Interleaver`: actors run in threads and park before every external operation; a chooser decides
  which parked actor takes its next step. Only one actor runs at a time, so a schedule is a list of
  choices and is exactly reproducible. For real code against moto.
* `replay_step`: no threads. An actor's program is re-run from its start for every step, each
  operation it already performed answering from its log; the first new one is performed, the next
  parks it. An actor's state is therefore just its log, so a model checker can copy, compare and
  branch whole system states cheaply (tests/support/rule_models.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Step = Callable[[str], None]
Actor = Callable[[Step], Any]
Chooser = Callable[[list[str]], str | None]  # None aborts the run


class Aborted(Exception):
    """Raised inside an actor when the schedule was cut short by the chooser."""


_TIMEOUT = 30.0


class Interleaver:
    """Runs actors one step at a time in the order the chooser picks.

    Hand-off is by semaphores: the controller grants one parked actor, then waits for exactly one
    signal back (the actor parked again or finished), so only one thread ever runs."""

    def __init__(self, chooser: Chooser) -> None:
        self.chooser = chooser
        self.trace: list[tuple[str, str]] = []
        self.results: dict[str, Any] = {}
        self.errors: dict[str, BaseException] = {}
        self.aborted = False
        self._back = threading.Semaphore(0)
        self._grant: dict[str, threading.Semaphore] = {}
        self._parked: dict[str, str] = {}  # actor -> label of the operation it waits to do

    def _step_for(self, name: str) -> Step:
        def step(label: str) -> None:
            self._parked[name] = label
            self._back.release()
            if not self._grant[name].acquire(timeout=_TIMEOUT):
                raise TimeoutError(f"{name} never scheduled")
            if self.aborted:
                raise Aborted(name)

        return step

    def _await_back(self) -> None:
        if not self._back.acquire(timeout=_TIMEOUT):
            raise TimeoutError(f"an actor did not park or finish; parked: {self._parked}")

    def run(self, actors: dict[str, Actor]) -> list[tuple[str, str]]:
        threads = [threading.Thread(target=self._body, args=(n, a), daemon=True) for n, a in actors.items()]
        for name in actors:
            self._grant[name] = threading.Semaphore(0)
        for thread in threads:
            thread.start()
        for _ in threads:
            self._await_back()  # each actor parks at its first step or finishes
        while self._parked:
            parked = [n for n in actors if n in self._parked]
            choice = self.chooser(parked)
            if choice is None:
                self.aborted = True
                for name in parked:
                    del self._parked[name]
                    self._grant[name].release()
                for _ in parked:
                    self._await_back()
                break
            self.trace.append((choice, self._parked.pop(choice)))
            self._grant[choice].release()
            self._await_back()
        for thread in threads:
            thread.join(_TIMEOUT)
        return self.trace

    def _body(self, name: str, actor: Actor) -> None:
        try:
            self.results[name] = actor(self._step_for(name))
        except Aborted:
            pass
        except BaseException as exc:  # reported to the test, never swallowed
            self.errors[name] = exc
        finally:
            self._back.release()


class Stepped:
    """Proxy that parks its actor before every call of the wrapped object (one external operation)
    and records what each call returned (the actor's observations)."""

    def __init__(
        self,
        target: Any,
        step: Step,
        *,
        exclude: frozenset[str] = frozenset(),
        observed: list[tuple[str, Any]] | None = None,
    ) -> None:
        self._target = target
        self._step = step
        self._exclude = exclude
        self.observed: list[tuple[str, Any]] = observed if observed is not None else []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr) or name in self._exclude or name.startswith("_"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self._step(name)
            result = attr(*args, **kwargs)
            self.observed.append((name, result))
            return result

        return call


# ---------------------------------------------------------------------------------- replay stepping


@dataclass(frozen=True)
class Op:
    """An operation an actor is about to perform (its name and arguments)."""

    name: str
    args: tuple[Any, ...] = ()


class Parked(BaseException):
    """Unwinds an actor's program at its next scheduling point (a BaseException: no `except
    Exception` in the code under test can swallow it)."""


class Replay:
    """One run of an actor's program. Operations already in `log` return their logged result with no
    effect; the first new scheduled operation is performed (`perform`), and the next one parks the
    program. Unscheduled operations (reading a clock) are performed whenever reached and logged too,
    so every replay sees the values the first run saw."""

    def __init__(self, log: tuple[Any, ...], perform: Callable[[Op, int], Any], *, may_perform: bool) -> None:
        self.results = list(log)
        self._position = 0
        self._perform = perform
        self._may_perform = may_perform
        self.parked_at: Op | None = None

    def call(self, name: str, *args: Any, scheduled: bool = True) -> Any:
        if self._position < len(self.results):
            self._position += 1
            return self.results[self._position - 1]
        op = Op(name, args)
        if scheduled:
            if not self._may_perform:
                self.parked_at = op
                raise Parked
            self._may_perform = False
        result = self._perform(op, len(self.results))
        self.results.append(result)
        self._position += 1
        return result


@dataclass(frozen=True)
class StepResult:
    log: tuple[Any, ...]
    parked_at: Op | None  # None: the program returned (or raised `error`)
    error: BaseException | None = None


def replay_step(
    program: Callable[[Replay], Any],
    log: tuple[Any, ...],
    perform: Callable[[Op, int], Any],
    *,
    may_perform: bool,
) -> StepResult:
    """Re-run `program` through `log`, perform at most one new scheduled operation (`perform` gets
    it and its position in the log), and park it at the next (`may_perform=False`: only run up to
    its first scheduling point)."""
    replay = Replay(log, perform, may_perform=may_perform)
    try:
        program(replay)
    except Parked:
        return StepResult(tuple(replay.results), replay.parked_at)
    except Exception as exc:  # the program under test failed: reported, never swallowed
        return StepResult(tuple(replay.results), None, exc)
    return StepResult(tuple(replay.results), None)
