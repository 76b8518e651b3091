"""bench/REPORT.md from results.json: the run, the headline (bench/judge.py), the latency model,
each section's figures (bench/sections.py) and what was not measured; `write` adds the plots."""

from __future__ import annotations

from pathlib import Path

from bench import plots
from bench.judge import headline, shortfalls
from bench.markdown import cell, table
from bench.results import DEFAULT_BACKENDS, RESULTS_FILE, Results
from bench.sections import SECTIONS, command

REPORT_FILE = "REPORT.md"


def _machine(results: Results) -> str:
    m = results["machine"]
    facts = [
        f"{m.get('cpus')} CPUs" + (f" ({m['cpu_model']})" if m.get("cpu_model") else ""),
        f"{m['memory_gb']} GB memory" if m.get("memory_gb") else "",
        f"Python {m.get('python')}",
        m.get("os") or m.get("system", ""),
    ]
    return ", ".join(f for f in facts if f)


def _latency_model(results: Results) -> str:
    model = results.get("latency_model")
    if not model or not model.get("ms"):
        return (
            "\n## Latency model\n\nNo latency model in these results (`bench.latency` absent when they "
            "were measured): every AWS call ran at the emulator's own speed, with no network delay.\n"
        )
    basis = (model.get("basis") or "").strip()
    rows = [{"operation": op, "ms": value} for op, value in model["ms"].items()]
    return (
        "\n## Latency model\n\nThe delay added to each emulated AWS call where a figure says it uses "
        "the model (`bench/latency.py`).\n\n"
        + table(rows, ["operation", "ms"])
        + (f"\n{basis}\n" if basis else "")
    )


def not_measured(results: Results) -> list[str]:
    """What the results lack, and why; plus what no section measures by design."""
    detail = results["detail"]
    reasons = results.get("failed", {})
    out = []
    for section in DEFAULT_BACKENDS:
        if not detail.get(section):
            why = reasons.get(section, "not run for these results")
            out.append(f"Section `{section}`: {why} (`{command(results, section)}`).")
        elif section in reasons:  # figures from an earlier run are shown, with their date
            out.append(
                f"Section `{section}`: {reasons[section]}; the figures shown are from "
                f"{results.get('measured', {}).get(section) or 'an earlier run'}."
            )
    for key, value in results["local_load"].items():
        source = "listing" if key == "list_page_s" else "local_load"
        if value is None and detail.get(source):
            out.append(f"`local_load.{key}`: the `{source}` section gave no figure for it.")
    lt = detail.get("lateness")
    if lt and not all(plots.SAMPLES_KEY in lt[p] for p in ("second", "minute")):
        out.append(
            "Lateness histogram: `bench/lateness.py` records percentiles only, not each task's "
            "lateness; the plot shows the percentiles instead."
        )
    burst = results["burst"]
    if detail.get("burst") and burst["peak_rss_mb"] is None:
        out.append("Burst peak RSS: these burst figures predate it (tracemalloc only, emulator included).")
    out += [
        "Anything on real AWS: every figure runs against an emulator (see each figure's backend); "
        "network latency enters only through the latency model where a figure says so.",
        "Cost: the per-million figures count DynamoDB, the worker Lambda and EventBridge (the all-in "
        "figure's worker duration is a model, the hand-over's sleep per wake-up in `second` mode; "
        "the sparse rows as billed measure it in simulated time); the monthly bill adds the keeper "
        "and API Lambdas, API Gateway, the wait hand-over's SQS, storage with its backups and "
        "CloudWatch. In none of them: DynamoDB Streams (free to a Lambda trigger), X-Ray (only with "
        "`tracing`), KMS (only with `alarm_email`), the log groups' storage, data transfer, cold "
        "starts' initialisation, and the free tiers of nexttick's services.",
    ]
    return out


def render(results: Results) -> str:
    quick = results.get("quick")
    out = [
        "# nexttick benchmark report\n\n",
        "All of it: `make bench` (`python -m bench.run`); small: `make bench-quick`. Latest run: "
        f"`{results.get('command', 'python -m bench.run')}` on {results.get('date', '?')}; each section "
        "below names the command that measures it alone and when it was measured"
        + (
            f" (run time per section, s: {cell(results['run_seconds'])})"
            if results.get("run_seconds")
            else ""
        )
        + f". Machine: {_machine(results)}. Every number is from `{RESULTS_FILE}` beside this file; "
        "re-render without measuring: `python -m bench.run --render-only`.\n",
    ]
    if quick:
        out.append(
            "\n**Quick run**: small sizes, a smoke test of the benchmarks; the figures are not the "
            "targets' measurements.\n"
        )
    out.append("\n## Headline: targets against measurements\n\n")
    out.append(table(headline(results), ["what", "anchor", "target", "measured", "status"]))
    missed = shortfalls(results)
    if missed:
        out.append("\n### Where a target is not met: why, and what would close it\n\n")
        out += [f"- {line}\n" for line in missed]
    out.append(_latency_model(results))
    out += [section(results) for section in SECTIONS]
    out.append("\n## Not measured, and why\n\n")
    out += [f"- {line}\n" for line in not_measured(results)]
    return "".join(out)


def write(results: Results, out: Path) -> Path:
    """REPORT.md and its plots into `out`; `results["plots"]` names the PNGs written."""
    results["plots"] = plots.write_all(results, out)
    path = out / REPORT_FILE
    path.write_text(render(results))
    return path
