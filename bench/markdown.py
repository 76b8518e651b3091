"""How a figure reads in bench/REPORT.md: one cell, a table, a figure with its unit, a series."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.6g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {cell(v)}" for k, v in value.items())
    return str(value)


def table(rows: Sequence[Mapping[str, Any]], columns: list[str]) -> str:
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    return head + "".join("| " + " | ".join(cell(r.get(c)) for c in columns) + " |\n" for r in rows)


def number(value: float | None, unit: str = "") -> str:
    """A figure with its unit, or "—" when it was not measured."""
    return "—" if value is None else f"{cell(value)}{unit}"


def span(values: Mapping[str, Any] | None, unit: str = "") -> str:
    """`{"0": a, "1000": b}` as "a → b at 0 → 1,000"."""
    if not values:
        return "—"
    keys = sorted(values, key=int)
    return (
        " → ".join(number(values[k], unit) for k in keys) + " at " + " → ".join(f"{int(k):,}" for k in keys)
    )
