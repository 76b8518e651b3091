"""How a headline target is declared: its limits (the results.json key each reads, the comparison
and the threshold, how the threshold reads) and the sentence that states them. bench/targets.py
declares each target with these; bench/judge.py gives the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.measures import Figure, Measured
from bench.results import Results

LE, GE = "≤", "≥"


def shown(unit: str = "", scale: float = 1.0) -> Callable[[float], str]:
    """How a threshold reads: scaled into the sentence's unit (0.25 s as "250 ms")."""
    return lambda value: f"{value * scale:,g}{unit}"


def dollars(value: float) -> str:
    return f"${value:.2f}"


def power_of_ten(value: float) -> str:
    """100,000 as "1e5" (the backlog sizes' notation)."""
    exponent = round(math.log10(value))
    return f"1e{exponent}" if 10**exponent == value else shown()(value)


PLAIN, TIMES, MS, SECONDS = shown(), shown("x"), shown(" ms", 1000), shown(" s")


@dataclass(frozen=True)
class Limit:
    """One comparison of a target: the figure at `key` in results.json against `limit`.

    `figure` computes it where the key is not one number (a maximum over rows, a ratio); `says`
    replaces the operator in the sentence ("" for the bare number of a target's size, "within");
    `none` is how a bound of 0 reads ("none early", "no duplicate").
    """

    name: str
    key: str
    op: str
    limit: float
    shows: Callable[[float], str] = PLAIN
    figure: Figure | None = None
    says: str | None = None
    none: str = ""

    def text(self) -> str:
        if self.limit == 0 and self.none:
            return self.none
        says = self.op if self.says is None else self.says
        return f"{says} {self.shows(self.limit)}".strip()

    def read(self, results: Results) -> float | None:
        if self.figure is not None:
            return self.figure(results)
        found: Any = results
        for part in self.key.split("."):
            found = found.get(part) if isinstance(found, Mapping) else None
        return found

    def holds(self, value: float) -> bool:
        return value <= self.limit if self.op == LE else value >= self.limit


@dataclass(frozen=True)
class Target:
    """One headline row: `what` is measured by `section` (`python -m bench.run --only <section>`;
    "all" for the bench's own run time). `sentence` and a str `what` name the limits and sizes as
    `{name}`.

    `sizes`: what the target is set at (a backlog of 1e5, a burst of 1,000): below them it is not
    measured rather than missed. `any_limit`: met when one limit holds (default: every one).
    """

    id: str
    what: str | Callable[[Results], str]
    anchor: str | Callable[[Results], str]
    section: str
    sentence: str
    limits: tuple[Limit, ...]
    measured: Measured
    sizes: tuple[Limit, ...] = ()
    any_limit: bool = False

    def words(self) -> dict[str, str]:
        return {limit.name: limit.text() for limit in (*self.limits, *self.sizes)}

    def says(self) -> str:
        """The target as the headline states it."""
        return self.sentence.format(**self.words())

    def name(self, results: Results) -> str:
        return self.what.format(**self.words()) if isinstance(self.what, str) else self.what(results)

    def where(self, results: Results) -> str:
        return self.anchor if isinstance(self.anchor, str) else self.anchor(results)
