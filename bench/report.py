"""From the sections' figures to results.json's keys, and from results.json to bench/REPORT.md and
its plots: what bench/run.py calls, in three steps of their own.

- derive (bench/derive.py): `derive(detail)` gives the issue's keys (typed in bench/results.py),
  always in full: a figure no section measured is null and the report says why;
- judge (bench/judge.py): the headline's targets, each declared once in bench/targets.py with its
  threshold (bench/target_model.py), against the results (`headline`, `shortfalls`);
- render (bench/render.py, bench/sections.py with bench/cost_report.py and
  bench/monthly_report.py): `render(results)` is the Markdown;
  `write(results, out)` writes REPORT.md and the PNGs beside it.

    python -m bench.run --render-only   # measure nothing: results.json's keys, REPORT.md, plots anew
"""

from __future__ import annotations

from bench.derive import derive
from bench.judge import MET, NOT_MEASURED, NOT_MET, headline, shortfalls
from bench.render import REPORT_FILE, render, write
from bench.results import DEFAULT_BACKENDS, RESULTS_FILE, LatencyModel, Results

__all__ = [
    "DEFAULT_BACKENDS",
    "MET",
    "NOT_MEASURED",
    "NOT_MET",
    "REPORT_FILE",
    "RESULTS_FILE",
    "LatencyModel",
    "Results",
    "derive",
    "headline",
    "render",
    "shortfalls",
    "write",
]
