"""Forcing interleavings, two ways.

* `Interleaver`: actors run in threads and park before every external operation; a chooser decides
  which parked actor takes its next step. Only one actor runs at a time, so a schedule is a list of
  choices and is exactly reproducible. For real code against moto.
* `Stepper`: no threads. An actor's state is its log (what each of its operations answered); its
  program is re-run from the start through the log to find its next operation, once per distinct
  history, so a model checker can copy, compare and branch whole system states cheaply
  (tests/support/rule_models.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
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
    """Unwinds an actor's program at its next new operation (a BaseException: no `except
    Exception` in the code under test can swallow it)."""


@dataclass(frozen=True)
class Next:
    """What a program does once the operations of a log have answered: its next operation
    (`scheduled`: a scheduling point; otherwise performed whenever reached, e.g. a clock read), or
    its end (`op` None, with the exception it raised, if any)."""

    op: Op | None = None
    scheduled: bool = True
    error: BaseException | None = None


class Replay:
    """One run of an actor's program through `log`: the operations in it return their logged
    results with no effect, and the first operation past it unwinds the program (`Parked`), kept as
    `next`."""

    def __init__(self, log: tuple[Any, ...]) -> None:
        self._log = log
        self._position = 0
        self.next = Next()

    def call(self, name: str, *args: Any, scheduled: bool = True) -> Any:
        if self._position < len(self._log):
            self._position += 1
            return self._log[self._position - 1]
        self.next = Next(Op(name, args), scheduled)
        raise Parked


def next_operation(program: Callable[[Replay], Any], log: tuple[Any, ...]) -> Next:
    """Re-run `program` through `log` and say what it does next."""
    replay = Replay(log)
    try:
        program(replay)
    except Parked:
        return replay.next
    except Exception as exc:  # the program under test failed: reported, never swallowed
        return Next(error=exc)
    return Next()


@dataclass(frozen=True)
class StepResult:
    log: tuple[Any, ...]
    history: int  # names (program, frozen log): equal histories, equal numbers
    parked_at: Op | None  # None: the program returned (or raised `error`), or ran past `max_ops`
    error: BaseException | None = None


class Stepper:
    """Steps actors' programs without threads, so a model checker can copy, compare and branch
    whole system states cheaply: an actor's state is just its log (what each of its operations
    answered), named by a number (its history).

    A program is deterministic given what its operations answered, so what it does after a history
    is remembered, and a program is re-run from its start only for a history no earlier step
    reached. Histories form a tree (a history and one more answer), so naming one costs a lookup of
    the last answer, not a hash of the whole log. `freeze` must tell apart any two answers the
    program could tell apart."""

    def __init__(self, freeze: Callable[[Any], Hashable]) -> None:
        self._freeze = freeze
        self._histories: dict[tuple[int, Hashable], int] = {}  # (history, answer) -> history
        self._next: dict[int, Next] = {}
        self.reruns = 0

    def start(self, program_key: Hashable) -> int:
        """The empty history of the program `program_key` names."""
        return self._extend(-1, program_key)

    def _extend(self, history: int, answer: Hashable) -> int:
        key = (history, self._freeze(answer))
        extended = self._histories.get(key)
        if extended is None:
            extended = self._histories[key] = len(self._histories)
        return extended

    def step(
        self,
        program: Callable[[Replay], Any],
        log: tuple[Any, ...],
        history: int,
        perform: Callable[[Op, int], Any],
        *,
        may_perform: bool,
        max_ops: int,
    ) -> StepResult:
        """From `log` (named `history`), perform at most one scheduled operation (`may_perform=False`:
        only run up to the first scheduling point) and every unscheduled one up to the next
        scheduling point, where the program parks. `perform` gets each operation and its position
        in the log."""
        while True:
            after = self._next.get(history)
            if after is None:
                self.reruns += 1
                after = self._next[history] = next_operation(program, log)
            if after.op is None:
                return StepResult(log, history, None, after.error)
            if after.scheduled:
                if not may_perform:
                    return StepResult(log, history, after.op)
                may_perform = False
            result = perform(after.op, len(log))
            log, history = (*log, result), self._extend(history, result)
            if len(log) > max_ops:  # the caller reports the spin
                return StepResult(log, history, None)
