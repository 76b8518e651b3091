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
    """Runs actors one step at a time in the order the chooser picks."""

    def __init__(self, chooser: Chooser) -> None:
        self.chooser = chooser
        self.trace: list[tuple[str, str]] = []
        self.results: dict[str, Any] = {}
        self.errors: dict[str, BaseException] = {}
        self._cond = threading.Condition()
        self._status: dict[str, str] = {}
        self._label: dict[str, str] = {}
        self._granted: dict[str, bool] = {}
        self.aborted = False

    def _step_for(self, name: str) -> Step:
        def step(label: str) -> None:
            with self._cond:
                self._status[name] = "parked"
                self._label[name] = label
                self._cond.notify_all()
                if not self._cond.wait_for(lambda: self._granted[name], timeout=_TIMEOUT):
                    raise TimeoutError(f"{name} never scheduled")
                self._granted[name] = False
                self._status[name] = "running"
                if self.aborted:
                    raise Aborted(name)

        return step

    def run(self, actors: dict[str, Actor]) -> list[tuple[str, str]]:
        threads = []
        for name, actor in actors.items():
            self._status[name] = "running"
            self._granted[name] = False
            threads.append(threading.Thread(target=self._body, args=(name, actor), daemon=True))
        for thread in threads:
            thread.start()
        while True:
            with self._cond:
                settled = self._cond.wait_for(
                    lambda: all(s != "running" for s in self._status.values()), timeout=_TIMEOUT
                )
                if not settled:
                    raise TimeoutError(f"actors did not settle: {self._status}")
                parked = [n for n in actors if self._status[n] == "parked"]
                if not parked:
                    break
                choice = self.chooser(parked)
                if choice is None:
                    self.aborted = True
                    for n in parked:
                        self._granted[n] = True
                        self._status[n] = "running"
                    self._cond.notify_all()
                    continue
                self.trace.append((choice, self._label[choice]))
                self._status[choice] = "running"
                self._granted[choice] = True
                self._cond.notify_all()
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
            with self._cond:
                self._status[name] = "done"
                self._cond.notify_all()


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
