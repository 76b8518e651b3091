"""The headline's verdicts: each target of bench/targets.py against the results, and for each one
missed, why (bench/shortfalls.py)."""

from __future__ import annotations

from typing import TypedDict

from bench.results import Results
from bench.shortfalls import WHY
from bench.target_model import Target
from bench.targets import TARGETS

MET, NOT_MET, NOT_MEASURED = "met", "**not met**", "not measured"


class Row(TypedDict):
    what: str
    anchor: str
    target: str
    measured: str
    status: str


def verdict(target: Target, results: Results) -> str:
    """Not measured below the target's sizes or without its figures; else met when its limits
    hold (every one, or any one for a target that says so)."""
    for size in target.sizes:
        value = size.read(results)
        if value is None or not size.holds(value):
            return NOT_MEASURED
    values = [limit.read(results) for limit in target.limits]
    if any(value is None for value in values):
        return NOT_MEASURED
    held = [
        limit.holds(value) for limit, value in zip(target.limits, values, strict=True) if value is not None
    ]
    return MET if (any(held) if target.any_limit else all(held)) else NOT_MET


def row(target: Target, results: Results) -> Row:
    return {
        "what": target.name(results),
        "anchor": target.where(results),
        "target": target.says(),
        "measured": target.measured(results),
        "status": verdict(target, results),
    }


def headline(results: Results, targets: tuple[Target, ...] = TARGETS) -> list[Row]:
    return [row(target, results) for target in targets]


def shortfalls(results: Results, targets: tuple[Target, ...] = TARGETS) -> list[str]:
    """For each target not met: its row, why, and what would close it."""
    return [
        f"**{r['what']}** — measured {r['measured']}; target {r['target']}. Why: {WHY.get(target.id)}"
        for target in targets
        if (r := row(target, results))["status"] == NOT_MET
    ]
