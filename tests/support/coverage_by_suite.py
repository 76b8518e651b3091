"""`make coverage`'s summary: the share of the production packages' lines that each suite runs
alone, and all suites together, from the data `pytest --cov` left (contexts set by tests/conftest.py).
The lines that run while pytest collects the tests (imports, definitions) count for every suite.

python -m tests.support.coverage_by_suite
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import coverage

SUITES = ("unit", "integration", "infrastructure", "e2e")
COLLECTION = "^$"  # the context before the first test's: module-level lines
ROOT = Path(__file__).resolve().parents[2]


def percent(measured: coverage.Coverage, contexts: list[str] | None, root: Path = ROOT) -> float:
    """Line coverage of the measured sources in this checkout (not the copies some tests run),
    counting only lines run under `contexts` (regexes)."""
    return measured.report(file=io.StringIO(), contexts=contexts, include=[f"{root}/*"])


def main() -> int:
    measured = coverage.Coverage()
    measured.load()
    if not measured.get_data().measured_contexts():
        print("no coverage data: run `make coverage`", file=sys.stderr)
        return 1
    sources = ", ".join(measured.config.source or [])
    print(f"line coverage of {sources}, by the suite that ran them:")
    for suite in SUITES:
        print(f"  {suite:<15} {percent(measured, [f'^{suite}$', COLLECTION]):5.1f}%")
    print(f"  {'all suites':<15} {percent(measured, None):5.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
