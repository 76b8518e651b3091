"""Forcing interleavings: actors run in threads and park before every external operation; a chooser
decides which parked actor takes its next step. Only one actor runs at a time, so a schedule is a
list of choices and is exactly reproducible."""

from __future__ import annotations

import threading
from collections.abc import Callable
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
