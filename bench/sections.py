"""bench/REPORT.md's sections, one per bench section: the command that measures it, when, against
what backend, and its figures as tables."""

from __future__ import annotations

from collections.abc import Callable

from bench import plots
from bench.cost_report import cost_section, cpu_section
from bench.markdown import cell, number, table
from bench.monthly_report import monthly_section
from bench.results import DEFAULT_BACKENDS, Results


def command(results: Results, section: str) -> str:
    quick = " --quick" if results.get("quick") else ""
    return f"python -m bench.run{quick} --only {section}"


def _section_head(results: Results, section: str, title: str) -> str:
    detail = results["detail"].get(section) or {}
    backend = detail.get("backend") if isinstance(detail, dict) else None
    when = results.get("measured", {}).get(section, "")
    return (
        f"\n## {title}\n\n"
        f"Command: `{command(results, section)}` — measured {when or 'at an unknown date'}. "
        f"Backend: {backend or DEFAULT_BACKENDS[section]}.\n\n"
    )


def _figure(results: Results, name: str, caption: str) -> str:
    path = results.get("plots", {}).get(name)
    return f"\n![{caption}]({path})\n" if path else ""


def _backlog_section(results: Results) -> str:
    if not results["detail"].get("backlog"):
        return ""
    return (
        _section_head(results, "backlog", "Items read per create / per worker run against backlog")
        + f"Baseline: the reference PoC, which scans its whole table on every add and every run "
        f"(measured up to 1e5 pending: a Scan reads every item, and beyond that loading and scanning "
        f"it through moto takes minutes). {results['detail']['backlog'][0]['due_now']} tasks are due "
        f"at the run. The backlog is loaded straight into moto's table (`load_s`).\n\n"
        + table(
            results["detail"]["backlog"],
            [
                "pending",
                "load_s",
                "due_now",
                "items_per_add",
                "poc_items_per_add",
                "reduction_add",
                "items_per_run",
                "poc_items_per_run",
                "reduction_run",
            ],
        )
        + _figure(results, "backlog", "items read against backlog, log-log")
    )


def _cost_section(results: Results) -> str:
    if not results["detail"].get("lifecycle"):
        return ""
    title = "DynamoDB units per one-shot task, PutRule calls, cost per million"
    return cost_section(results, _section_head(results, "lifecycle", title))


def _cpu_section(results: Results) -> str:
    if not results["detail"].get("cpu"):
        return ""
    return cpu_section(results, _section_head(results, "cpu", "Worker CPU per fire, by request type"))


def _burst_section(results: Results) -> str:
    detail = results["detail"].get("burst")
    if not detail:
        return ""
    b = results["burst"]
    head = _section_head(results, "burst", "Burst of tasks due at one instant, 50 ms I/O action")
    if "sequential" in detail:  # the shape before the latency model
        return (
            head
            + "Baseline: sequential (pool of one). Recorded before the latency model: every DynamoDB call "
            "costs the in-process emulator's CPU instead of overlapping as network I/O, which caps the "
            "speed-up; memory is tracemalloc's, emulator included.\n\n"
            + table(
                [detail["sequential"], *detail["pooled"]],
                ["tasks", "pool_size", "seconds", "tasks_per_second", "peak_traced_mib"],
            )
            + f"\nSpeed-up: **{detail['speedup']}x**.\n"
        )
    rows = [
        {"mode": "sequential (pool of 1)", "seconds": b["sequential_s"]},
        {"mode": f"pooled (pool of {detail.get('pool_size', '?')})", "seconds": b["pooled_s"]},
    ]
    raw = detail.get("raw")
    raw_text = (
        f"\nWithout the latency model ({raw.get('backend', 'raw emulator')}, "
        f"{number(raw.get('tasks', b['tasks']))} tasks): sequential "
        f"{number(raw.get('sequential_s'), ' s')}, pooled {number(raw.get('pooled_s'), ' s')}, speed-up "
        f"{number(raw.get('speedup'), 'x')}.\n"
        if raw
        else ""
    )
    rss = b["peak_rss_mb"] or {}
    return (
        head + f"{number(b['tasks'])} tasks due at one instant, drained by one invocation, every AWS call "
        "delayed by the latency model (above). Baseline: sequential execution.\n\n"
        + table(rows, ["mode", "seconds"])
        + f"\nSpeed-up: **{number(b['speedup'], 'x')}**. "
        + "Worker peak RSS growth during the run, by burst size: "
        + (
            ", ".join(
                f"{int(k):,} tasks {cell(v)} MB" for k, v in sorted(rss.items(), key=lambda kv: int(kv[0]))
            )
            or "—"
        )
        + ".\n"
        + raw_text
    )


FANOUT_COLUMNS = [
    "invocations",
    "pool_size",
    "drain_s",
    "fires_per_s",
    "conflicts_per_fire",
    "duplicates",
    "lost",
    "helpers",
    "worker_cpu_ms_per_fire",
]


def _fanout_section(results: Results) -> str:
    detail = results["detail"].get("fanout")
    if not detail:
        return ""
    f = results["fanout"]
    out = [
        _section_head(results, "fanout", "Fan-out: one burst drained by concurrent worker invocations"),
        f"{number(f['tasks'])} tasks due at one instant. Baseline: one invocation.\n\n",
        table(detail["rows"], FANOUT_COLUMNS),
    ]
    io_bound = detail.get("io_bound")
    if io_bound:
        pool = io_bound.get("pool_size")
        out += [
            f"\nThe same with a pool of {pool} per invocation, {number(io_bound.get('tasks'))} tasks (each "
            "invocation waits on I/O, so what scales is the fan-out itself):\n\n",
            table(io_bound.get("rows", []), FANOUT_COLUMNS),
            f"\nEfficiency at 4 invocations, pool of {pool}: {number(io_bound.get('efficiency_at_4'))}.\n",
        ]
    out.append(
        f"\nEfficiency at 4 invocations: **{number(f['efficiency_at_4'])}**. Projected on AWS: "
        f"**{number(f['projected_aws_fires_per_s'])} fires/s** at "
        f"{number(f.get('projected_aws_invocations'))} "
        f"invocations (1,000 fires/s needs {number(f.get('invocations_for_1000_fires_per_s'))}).\n"
    )
    projection = detail.get("projection")
    if projection:
        out.append("\nThe projection's assumptions:\n\n")
        out += [f"- `{key}`: {cell(value)}\n" for key, value in projection.items()]
    out.append(_figure(results, "fanout", "drain time against invocations"))
    return "".join(out)


def _lateness_section(results: Results) -> str:
    lt = results["detail"].get("lateness")
    if not lt:
        return ""
    rows = [{"precision": p, **lt[p]} for p in ("second", "minute")]
    bt = lt["burst"]
    samples = all(plots.SAMPLES_KEY in lt[p] for p in ("second", "minute"))
    return (
        _section_head(results, "lateness", "Lateness in the local stack, `second` vs `minute` precision")
        + f"{lt['schedule']}, the same on both stacks, run at once: each task first reached through the "
        "armed rule, which the emulator fires at a random second of its minute plus 0-5 s delivery "
        "delay, as EventBridge does. `minute` precision is what arming the due minute gives (the "
        "reference PoC); `second` waits inside the invocation for each instant and claims 0.5 s ahead.\n\n"
        + table(rows, ["precision", "n", "duplicates", "early", "p50_s", "p90_s", "p99_s", "max_s"])
        + f"\nBurst, `second` precision: {number(bt['tasks'])} tasks due at one instant"
        + (
            f" (created one after another through the API in {number(bt['created_s'], ' s')}, the last "
            f"{number(bt['created_ahead_s'], ' s')} ahead of it)"
            if "created_s" in bt
            else ""
        )
        + f": first delivered {number(bt['first_s'], ' s')} after it, last {number(bt['last_s'], ' s')}.\n\n"
        "Idle CPU, % of a core (right after the start, the quietest of three 10 s windows: "
        f"bench/localstack.py `idle_cpu`): {cell(lt['idle_cpu_percent_of_a_core'])}.\n"
        + _figure(
            results,
            "lateness",
            "lateness histogram" if samples else "lateness percentiles (per-task samples not recorded)",
        )
    )


LISTING_COLUMNS = {
    "list_page_s": "list_page_s",
    "items_read_per_page": "items_read",
    "queries_per_page": "queries",
    "read_units_per_page": "read_units",
    "moto_query_s": "moto_query_s",
    "moto_share": "moto_share",
}


def _listing_section(results: Results) -> str:
    detail = results["detail"].get("listing")
    if not detail:
        return ""
    sizes = sorted(detail.get("list_page_s") or {}, key=int)
    rows = [
        {
            "tasks_stored": int(n),
            **{short: (detail.get(key) or {}).get(n) for key, short in LISTING_COLUMNS.items()},
        }
        for n in sizes
    ]
    return (
        _section_head(results, "listing", "API list page against tasks stored")
        + f"One page of `Editor.list(limit={detail.get('limit', '?')})` (what `GET /tasks` runs), median "
        f"wall time; items read by the DynamoDB meter (bound: {number(detail.get('items_read_bound'))}); "
        "`moto_query_s`: one raw Query against the emulator; `moto_share`: the part of the page's time "
        "that the emulator's own Query cost accounts for.\n\n"
        + table(rows, ["tasks_stored", *LISTING_COLUMNS.values()])
    )


def _local_load_section(results: Results) -> str:
    detail = results["detail"].get("local_load")
    if not detail:
        return ""
    columns = [
        "clients",
        "operations",
        "api_p50_s",
        "api_p99_s",
        "api_max_s",
        "errors",
        "lateness_p50_s",
        "lateness_p99_s",
        "tasks_fired",
    ]
    return (
        _section_head(results, "local_load", "The local stack under concurrent API clients")
        + "Closed-loop clients, each request on a new connection (create, get, list, reschedule, "
        "cancel); `operations`: requests of all clients; `errors`: connection errors and 5xx "
        "answers; lateness of the tasks they created.\n\n" + table([detail], columns)
    )


def _startup_section(results: Results) -> str:
    st = results["detail"].get("startup")
    if not st:
        return ""
    return (
        _section_head(results, "startup", "Start-up time of the local stack against restored tasks")
        + f"Median of {st['repeats']} start(s) of the installed `nexttick local` on a copy of a clean "
        "stop's state directory. Baseline: an empty start. `ready_s`: launch to local.json written; "
        "`healthy_s`: until GET /health answered; `restore_in_process_s`: the snapshot restored "
        "in-process; `stop_s`: Ctrl-C right after ready until exit.\n\n"
        + table(
            st["sizes"],
            [
                "tasks",
                "restored",
                "ready_s",
                "ratio_to_empty",
                "added_s",
                "healthy_s",
                "cpu_s",
                "restore_in_process_s",
                "stop_s",
                "stops_abandoning_worker",
                "state_mib",
            ],
        )
    )


def _keeper_section(results: Results) -> str:
    kp = results["detail"].get("keeper")
    if not kp:
        return ""
    return (
        _section_head(results, "keeper", "The keeper's delay: a client that dies after its task write")
        + f"{kp['tasks_per_path']} tasks per path, alternating, each the new earliest. Delay until the "
        "rule is armed for the task (DescribeRule polled every 10 ms). Baseline: the inline path of a "
        "client that lives.\n\n"
        + table(kp["delays"], ["path", "from", "count", "p50_s", "p90_s", "p99_s", "max_s"])
    )


def _cold_start_section(results: Results) -> str:
    cs = results["detail"].get("cold_start")
    if not cs:
        return ""
    rows = [{"handler": name, **ms} for name, ms in cs["import_ms_p50"].items()]
    return (
        _section_head(results, "cold_start", "Cold start: asset size and handler import time")
        + f"Asset: {number(cs.get('asset_mb'))} MB in {number(cs.get('asset_files'))} files, "
        f"{number(cs.get('asset_zipped_mb'))} MB zipped. Lambda runs Python {cs.get('runtime_python')}; this "
        f"build ran {cs.get('build_python')}, so the asset "
        f"{'ships' if cs.get('bytecode_shipped') else 'does not ship'} bytecode. Median import ms of "
        f"{cs.get('runs')} fresh interpreters, same files, same pinned requirements:\n\n"
        + table(rows, ["handler", "source_only", "bytecode"])
    )


def _monthly_section(results: Results) -> str:
    title = "Monthly bill: five loads in both precisions, beside EventBridge Scheduler"
    return monthly_section(results, _section_head(results, "monthly", title))


SECTIONS: tuple[Callable[[Results], str], ...] = (
    _backlog_section,
    _cost_section,
    _monthly_section,
    _burst_section,
    _fanout_section,
    _lateness_section,
    _listing_section,
    _local_load_section,
    _startup_section,
    _keeper_section,
    _cpu_section,
    _cold_start_section,
)
