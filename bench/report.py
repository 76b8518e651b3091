"""From the sections' figures to results.json's keys, and from results.json to bench/REPORT.md and
its plots.

`derive(detail)` gives the issue's keys (backlog, lateness, burst, fanout, cost, local_load,
cold_start, idle), always in full: a figure no section measured is null and the report says why.
`render(results)` is the Markdown; `write(results, out)` writes REPORT.md and the PNGs beside it.

    python -m bench.run --render-only   # measure nothing: results.json's keys, REPORT.md, plots anew
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import fanout, localload, plots

REPORT_FILE = "REPORT.md"
RESULTS_FILE = "results.json"

# EventBridge bills nothing for the rule: its scheduled events are AWS-service events on the
# default bus (free), and PutRule is a control-plane call (free). Kept as a term so the all-in cost
# says so.
EVENTBRIDGE_RULE_USD_PER_MILLION = 0.0

LOCAL_STACK = (
    "local stack (`nexttick local` as a subprocess: moto_server, emulated EventBridge, Lambda runner)"
)
# Where each section's figures come from, for a section whose results do not name it.
DEFAULT_BACKENDS = {
    "backlog": "moto in-process",
    "lifecycle": "moto in-process",
    "burst": "moto in-process",
    "lateness": LOCAL_STACK,
    "startup": LOCAL_STACK,
    "keeper": LOCAL_STACK,
    "cold_start": "no AWS: handler imports in fresh local interpreters",
    "listing": "not stated by the section",
    "local_load": LOCAL_STACK,
    "fanout": "not stated by the section",
    "cpu": "DynamoDB stand-in without latency (own process); the worker handler in-process",
}


# --- results.json's keys ------------------------------------------------------------------------


def _backlog(rows: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [
        {
            "pending": row["pending"],
            "ours_items_per_run": row["items_per_run"],
            "baseline_items_per_run": row["poc_items_per_run"],
            "ours_items_per_create": row["items_per_add"],
            "baseline_items_per_create": row["poc_items_per_add"],
        }
        for row in rows or []
    ]


def _lateness(section: dict[str, Any] | None) -> dict[str, Any]:
    section = section or {}

    def mode(name: str) -> dict[str, Any]:
        figures = section.get(name) or {}
        return {key: figures.get(key) for key in ("n", "p50_s", "p99_s", "max_s", "early")}

    burst = section.get("burst") or {}
    return {
        "second": mode("second"),
        "minute": mode("minute"),
        "burst": {key: burst.get(key) for key in ("tasks", "first_s", "last_s")},
    }


def _burst(section: dict[str, Any] | None) -> dict[str, Any]:
    keys = ("tasks", "latency_model_ms", "sequential_s", "pooled_s", "speedup", "peak_rss_mb")
    section = section or {}
    if "sequential" in section:  # the shape before the latency model: traced memory, no RSS
        sequential = section["sequential"]
        same_size = [row for row in section["pooled"] if row["tasks"] == sequential["tasks"]]
        return {
            "tasks": sequential["tasks"],
            "latency_model_ms": None,
            "sequential_s": sequential["seconds"],
            "pooled_s": same_size[0]["seconds"] if same_size else None,
            "speedup": section["speedup"],
            "peak_rss_mb": None,
        }
    return {key: section.get(key) for key in keys}


def _fanout(section: dict[str, Any] | None) -> dict[str, Any]:
    section = section or {}
    row_keys = ("invocations", "drain_s", "fires_per_s", "conflicts_per_fire", "duplicates")
    return {
        "tasks": section.get("tasks"),
        "rows": [{key: row.get(key) for key in row_keys} for row in section.get("rows") or []],
        "efficiency_at_4": section.get("efficiency_at_4"),
        "projected_aws_fires_per_s": section.get("projected_aws_fires_per_s"),
    }


def dense_and_sparse(lifecycle: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The lifecycle row where one worker run handles every task, and the one with a run per task."""
    rows = lifecycle["lifecycle"]
    dense = max(rows, key=lambda row: row["tasks_per_run"])
    sparse = min(rows, key=lambda row: row["tasks_per_run"])
    return dense, sparse


def sparse_units(lifecycle: dict[str, Any]) -> tuple[float, float]:
    """RRU and WRU of a sparse task: the `second`-mode task from create to completion as billed
    (bench/sparse.py), or, in results from before it, the row whose worker started after the task
    was due."""
    billed = (lifecycle.get("sparse_billed") or {}).get("second")
    if billed:
        return billed["rru"], billed["wru"]
    _, sparse = dense_and_sparse(lifecycle)
    return sparse["rru_total"], sparse["wru_total"]


def _cost(lifecycle: dict[str, Any] | None) -> dict[str, Any]:
    keys = (
        "wru_per_task",
        "rru_per_task",
        "rru_per_task_sparse",
        "wru_per_task_sparse",
        "putrule_per_task",
        "usd_per_million_on_demand",
        "usd_per_million_provisioned",
    )
    if not lifecycle:
        return dict.fromkeys(keys)
    dense, _ = dense_and_sparse(lifecycle)
    sparse_rru, sparse_wru = sparse_units(lifecycle)
    putrule = {row["order"]: row["per_task"] for row in lifecycle["putrule"]}
    others = dense["usd_per_million_lambda_second_mode"] + EVENTBRIDGE_RULE_USD_PER_MILLION
    return {
        "wru_per_task": dense["wru_total"],
        "rru_per_task": dense["rru_total"],
        "rru_per_task_sparse": sparse_rru,
        "wru_per_task_sparse": sparse_wru,
        "putrule_per_task": putrule.get("random"),
        "usd_per_million_on_demand": round(dense["usd_per_million_dynamodb"] + others, 2),
        "usd_per_million_provisioned": round(dense["usd_per_million_dynamodb_provisioned"] + others, 2),
    }


def _local_load(load: dict[str, Any] | None, listing: dict[str, Any] | None) -> dict[str, Any]:
    load = load or {}
    return {
        **{key: load.get(key) for key in ("clients", "operations", "api_p99_s", "lateness_p99_s", "errors")},
        "list_page_s": (listing or {}).get("list_page_s"),
    }


def _cold_start(section: dict[str, Any] | None) -> dict[str, Any]:
    return {key: (section or {}).get(key) for key in ("asset_mb", "import_ms_p50")}


def _idle(lateness: dict[str, Any] | None) -> dict[str, Any]:
    per_mode = (lateness or {}).get("idle_cpu_percent_of_a_core")
    return {"cpu_percent": max(per_mode.values()) if per_mode else None}


def derive(detail: dict[str, Any]) -> dict[str, Any]:
    """results.json's top-level keys from each section's own figures (`detail`)."""
    return {
        "backlog": _backlog(detail.get("backlog")),
        "lateness": _lateness(detail.get("lateness")),
        "burst": _burst(detail.get("burst")),
        "fanout": _fanout(detail.get("fanout")),
        "cost": _cost(detail.get("lifecycle")),
        "local_load": _local_load(detail.get("local_load"), detail.get("listing")),
        "cold_start": _cold_start(detail.get("cold_start")),
        "idle": _idle(detail.get("lateness")),
    }


# --- Markdown -------------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.6g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    return str(value)


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    return head + "".join("| " + " | ".join(_cell(r.get(c)) for c in columns) + " |\n" for r in rows)


def _n(value: float | None, unit: str = "") -> str:
    return "—" if value is None else f"{_cell(value)}{unit}"


Row = dict[str, str]
Check = Callable[[dict[str, Any]], Row | None]
MET, NOT_MET, NOT_MEASURED, NO_TARGET = "met", "**not met**", "not measured", "no target set"


def _row(what: str, anchor: str, target: str, measured: str, ok: bool | None) -> Row:
    status = NO_TARGET if target == "—" else NOT_MEASURED if ok is None else MET if ok else NOT_MET
    return {"what": what, "anchor": anchor, "target": target, "measured": measured, "status": status}


def _backlog_rows(results: dict[str, Any]) -> list[Row]:
    rows = results["backlog"]
    what = "items read per {} against backlog 1e3 → 1e6 pending"
    target = "flat in N (largest ≤ 2x smallest); ≥ 1,000x fewer than the scan at 1e5"
    anchor = "reference PoC: full scan (N)"
    out = []
    for kind, ours, theirs in (
        ("worker run", "ours_items_per_run", "baseline_items_per_run"),
        ("create", "ours_items_per_create", "baseline_items_per_create"),
    ):
        if not rows:
            out.append(_row(what.format(kind), anchor, target, "—", None))
            continue
        first, last = rows[0], rows[-1]
        scanned = [row for row in rows if row[theirs] is not None][-1]  # the scan stops at 1e5
        ratio = scanned[theirs] / max(scanned[ours], 1)
        measured = (
            f"{_cell(first[ours])} → {_cell(last[ours])} at {_cell(first['pending'])} → "
            f"{_cell(last['pending'])}; scan {_cell(scanned[theirs])} at {_cell(scanned['pending'])} "
            f"({ratio:,.0f}x fewer)"
        )
        ok = (
            None
            if scanned["pending"] < 100_000
            else all(row[ours] <= 2 * max(first[ours], 1) for row in rows) and ratio >= 1000
        )
        out.append(_row(what.format(kind), anchor, target, measured, ok))
    return out


def _lateness_row(results: dict[str, Any]) -> list[Row]:
    second, minute = results["lateness"]["second"], results["lateness"]["minute"]
    anchor = (
        "EventBridge Scheduler: 60 s window; Sidekiq: ~5 s poll; "
        f"`minute` mode here: p99 {_n(minute['p99_s'], ' s')}, max {_n(minute['max_s'], ' s')}"
    )
    measured = (
        f"p99 {_n(second['p99_s'], ' s')}, max {_n(second['max_s'], ' s')}, "
        f"{_n(second['early'])} early of {_n(second['n'])}"
    )
    ok = (
        None
        if second["p99_s"] is None
        else second["p99_s"] <= 0.25 and second["max_s"] <= 1 and second["early"] == 0 and second["n"] >= 200
    )
    return [
        _row(
            "lateness (start - due), local stack, default EventBridge emulation",
            anchor,
            "`second` mode, ≥ 200 tasks over ≥ 5 min: p99 ≤ 250 ms, max ≤ 1 s, none early",
            measured,
            ok,
        )
    ]


def _burst_rows(results: dict[str, Any]) -> list[Row]:
    b = results["burst"]
    anchor = "sequential execution (pool of one)"
    speed = None if b["speedup"] is None or (b["tasks"] or 0) < 1000 else b["speedup"] >= 20
    measured = (
        f"{_n(b['speedup'], 'x')} at {_n(b['tasks'])} tasks "
        f"(sequential {_n(b['sequential_s'], ' s')}, pooled {_n(b['pooled_s'], ' s')})"
    )
    rss = b["peak_rss_mb"] or {}
    sizes = sorted(rss, key=int)
    flat = None if len(sizes) < 2 else rss[sizes[-1]] <= max(1.25 * rss[sizes[0]], rss[sizes[0]] + 5)
    rss_text = " → ".join(f"{_cell(rss[s])} MB at {int(s):,}" for s in sizes) or "—"
    return [
        _row(
            "burst: 1,000 tasks due at one instant, 50 ms I/O action, under the latency model",
            anchor,
            "≥ 20x faster",
            measured,
            speed,
        ),
        _row(
            "burst: worker peak RSS growth during the run against burst size",
            anchor,
            "flat from 1,000 to 5,000 due (largest ≤ 1.25x smallest, or within 5 MB of it)",
            rss_text,
            flat,
        ),
    ]


def _cost_rows(results: dict[str, Any]) -> list[Row]:
    c = results["cost"]
    anchor = "EventBridge Scheduler $1.00 per million"
    units = None if c["wru_per_task"] is None else c["wru_per_task"] <= 3 and c["rru_per_task"] <= 1.5
    sparse, sparse_wru = c["rru_per_task_sparse"], c["wru_per_task_sparse"]
    putrule = None if c["putrule_per_task"] is None else c["putrule_per_task"] <= 0.1
    usd = c["usd_per_million_provisioned"]
    return [
        _row(
            "DynamoDB units per one-shot task lifecycle (dense: 1,000 per worker run)",
            anchor,
            "≤ 3 WRU + ≤ 1.5 RRU",
            f"{_n(c['wru_per_task'])} WRU + {_n(c['rru_per_task'])} RRU",
            units,
        ),
        _row(
            "DynamoDB units per one-shot task (sparse: alone in the queue, create to completion "
            "in `second` mode, early wake included)",
            anchor,
            "≤ 6 RRU + ≤ 8 WRU",
            f"{_n(sparse)} RRU + {_n(sparse_wru)} WRU",
            None if sparse is None or sparse_wru is None else sparse <= 6 and sparse_wru <= 8,
        ),
        _row(
            "PutRule calls per task, dense creates in random order",
            anchor,
            "≪ 1 per task (read as ≤ 0.1)",
            _n(c["putrule_per_task"]),
            putrule,
        ),
        _row(
            "cost per million one-shot tasks, all-in (DynamoDB + Lambda + EventBridge), steady load",
            anchor,
            "≤ $1.00 provisioned",
            f"${_n(usd)} provisioned, ${_n(c['usd_per_million_on_demand'])} on demand",
            None if usd is None else usd <= 1.0,
        ),
    ]


def _idle_row(results: dict[str, Any]) -> list[Row]:
    cpu = results["idle"]["cpu_percent"]
    return [
        _row(
            "idle local stack CPU (the busier of the two precisions)",
            "an idle scheduler costs nothing",
            "≤ 1 % of a core",
            _n(cpu, " %"),
            None if cpu is None else cpu <= 1,
        )
    ]


def _span(values: dict[str, Any] | None, unit: str = "") -> str:
    """`{"0": a, "1000": b}` as "a → b at 0 → 1,000"."""
    if not values:
        return "—"
    keys = sorted(values, key=int)
    return " → ".join(_n(values[k], unit) for k in keys) + " at " + " → ".join(f"{int(k):,}" for k in keys)


def _fanout_rows(results: dict[str, Any]) -> list[Row]:
    f = results["fanout"]
    rows = f["rows"]
    detail = (results["detail"].get("fanout") or {}).get("rows", [])
    lost = sum(r.get("lost") or 0 for r in detail)
    duplicates = sum(r["duplicates"] or 0 for r in rows)
    conflicts = max((r["conflicts_per_fire"] or 0 for r in rows), default=None)
    drains = _span({str(r["invocations"]): r["drain_s"] for r in rows}, " s")
    efficiency, projected = f["efficiency_at_4"], f["projected_aws_fires_per_s"]
    io_bound = (results["detail"].get("fanout") or {}).get("io_bound") or {}
    full = bool(rows) and (f["tasks"] or 0) >= fanout.FULL_TASKS
    counts = ", ".join(str(r["invocations"]) for r in rows) or "1, 2, 4"
    return [
        _row(
            f"fan-out: a burst of {f['tasks'] or fanout.FULL_TASKS:,} tasks due at once, drained by "
            f"{counts} concurrent invocations",
            "one invocation",
            "no duplicate or lost task; ≤ 0.05 lost claims per fire",
            f"drain {drains} invocations; duplicates {duplicates}, lost {lost}, "
            f"lost claims per fire ≤ {_n(conflicts)}"
            if rows
            else "—",
            None if not full else duplicates == 0 and lost == 0 and (conflicts or 0) <= 0.05,
        ),
        _row(
            "fan-out: scaling efficiency at 4 invocations (where the emulator is not the limit)",
            "4x one invocation",
            "≥ 0.7",
            f"{_n(efficiency)} (pool 32); {_n(io_bound.get('efficiency_at_4'))} (pool 2)" if rows else "—",
            None if not full or efficiency is None else efficiency >= 0.7,
        ),
        _row(
            "fan-out: fires per second projected on AWS (8 invocations)",
            "EventBridge Scheduler: 1,000 targets/s",
            "≥ 1,000 fires/s",
            _n(projected),
            None if not full or projected is None else projected >= 1000,
        ),
    ]


def _local_rows(results: dict[str, Any]) -> list[Row]:
    load, cs = results["local_load"], results["cold_start"]
    listing = results["detail"].get("listing") or {}
    pages = load["list_page_s"] or {}
    largest = max(pages, key=int) if pages else None
    pages_text = (
        f"{_span(pages, ' s')} pending; items read {_span(listing.get('items_read_per_page'))}"
        if pages
        else "—"
    )
    clients = (
        f"{_n(load['clients'])} clients, {_n(load['operations'])} requests: API p99 "
        f"{_n(load['api_p99_s'], ' s')}, lateness p99 {_n(load['lateness_p99_s'], ' s')}, "
        f"errors {_n(load['errors'])}"
        if load["clients"] is not None
        else "—"
    )
    load_ok = (
        None
        if load["api_p99_s"] is None
        else load["api_p99_s"] <= 0.2 and load["errors"] == 0 and (load["lateness_p99_s"] or 0) <= 1
    )
    # The sizes measured, else the full run's (localload.SIZES).
    size = localload.SIZES[False]
    if load["clients"] and load["operations"] is not None:
        size = load["clients"], load["operations"] // load["clients"]
    # The deployed asset ships bytecode (built on the runtime's Python): that is the figure judged.
    imports = {name: ms.get("bytecode") for name, ms in (cs["import_ms_p50"] or {}).items()}
    slowest = max((ms for ms in imports.values() if ms is not None), default=None)
    return [
        _row(
            "API list page (limit 20) against tasks pending, local",
            "—",
            "≤ 50 ms at 0 … 1e5 pending",
            pages_text,
            None if largest is None or int(largest) < 100_000 else all(v <= 0.05 for v in pages.values()),
        ),
        _row(
            f"local stack: {_n(size[0])} concurrent clients x {_n(size[1])} mixed operations",
            "—",
            "API p99 ≤ 200 ms, 0 connection errors, lateness p99 ≤ 1 s",
            clients,
            load_ok,
        ),
        _row(
            "cold start: handler import with the shipped bytecode (median of 5 fresh processes)",
            "—",
            "≤ 300 ms",
            f"{_n(cs['asset_mb'], ' MB')} asset; "
            + ", ".join(f"{name} {_n(ms)} ms" for name, ms in sorted(imports.items()))
            if cs["asset_mb"] is not None
            else "—",
            None if slowest is None else slowest <= 300,
        ),
    ]


# For each headline row that can fall short: why it does (measured causes), and what would close it.
SHORTFALL: dict[str, str] = {
    "burst: 1,000 tasks": (
        "the worker is no longer what bounds it: a fire costs about 4.3 ms of worker CPU on this machine "
        "(cpu section: two DynamoDB requests — the claim, whose answer is the task, and the completion "
        "— at about 0.9 ms each through the store's light client, the rest the loop, the record "
        "mapping, Powertools logging and metrics), and in a 500-task pooled run the worker process "
        "used 2.9 s of CPU in 6.3 s while the stand-in, on the same two cores, used 4.8 s (its HTTP "
        "handling and moto's condition and expression evaluation for every request under its one "
        "lock). Closing it: a lighter stand-in (the figure is then the worker's again), less CPU per "
        "fire, or what the design does for large bursts: more invocations (fan-out, below)."
    ),
    "DynamoDB units per one-shot task lifecycle": (
        "a one-shot task created without a client id is one item, its first queue entry: 1 write to "
        "create, 2 to run (the claim, whose answer is the task; the outcome with its run, which ends "
        "the entry): 3.00, and reads are the create's rule-record read and the task's share of the "
        "pass's page and of the re-arm's re-check. What is over 3 is the run's own writes shared by "
        "its tasks — the lateness histogram's minute, the rule record's CAS, confirmation and shard "
        "raise, the create's occasional head lowering — about 8 per 1,000 tasks: at 1,000 per run "
        "3.008, printed 3.01. Closing it: fewer record writes per run (folding the head raise into "
        "the CAS) or more tasks per run."
    ),
    "DynamoDB units per one-shot task (sparse": (
        "reads: the worker's wake reads only the task's shard (the rule record's shard heads), its "
        "re-arm starts from the pass's read and takes the record from its own conditional writes' "
        "answers, and the keeper reads the record once per batch — what is left is a read of the "
        "record per create, per pass and per keeper batch (about 7), the shard read by the pass, by "
        "the re-arm and again after raising its head (the second read the model checker's mutant "
        "shows is needed), and the task's read. Writes: the create's entry, head lowering, task, "
        "record CAS and confirmation; the early wake's CAS, confirmation and wait claim; the run's "
        "claim, task outcome, entry delete and lateness minute; the re-arm's release, "
        "head raise, CAS and confirmation. The one-item layout took the entry write and delete and "
        "the task read out (create 1 write, claim without the task read, completion 1 write); "
        "closing the rest: folding the wait claim and the head raise into the record writes the wake "
        "makes anyway."
    ),
    "cost per million": (
        "DynamoDB is $0.85 of it at 3 write units per task; the rest is the worker Lambda's duration "
        "in `second` mode (about 70 s of waiting per wake-up at 512 MB, shared by the tasks of a run: "
        "$0.47). Closing it: less waiting per wake-up (a later early wake, or `minute` mode's short "
        "wait) or a smaller worker for the wait."
    ),
    "fan-out: a burst": (
        "see the fan-out section: a duplicate or a lost task would be a defect; lost claims come from "
        "invocations that finish their group and probe the others'."
    ),
    "fan-out: scaling efficiency": (
        "this machine has 2 cores and one invocation with the default pool of 32 already spends most "
        "of one (worker CPU per fire in the fan-out table), so beyond 2 invocations there is no CPU "
        "to scale into: the machine is the limit, not the emulator or the design. The pool-2 series "
        "(each invocation waiting on I/O) shows how the fan-out scales while CPU is free."
    ),
    "fan-out: fires per second": (
        "Lambda gives a 512 MB function about 0.29 vCPU, so at the measured CPU per fire (about 4.3 ms "
        "in the cpu section, 4.1 to 5.7 ms in the fan-out's sandbox processes with the pool of 32, the "
        "most when 4 share 2 cores) one invocation fires about 50 tasks per second; 1,000 fires/s "
        "needs more invocations (`max_invocations` and reserved concurrency), more memory per "
        "invocation (its CPU share: 8 "
        "invocations of 1,769 MB are projected at about 890), or less CPU per fire. The projection "
        "table lists the figure for each."
    ),
    "API list page": (
        "a page reads the same items whatever the backlog (one round of 16 Queries, about 50 queue "
        "entries, and the page's tasks in one BatchGetItem), and its time no longer grows with the "
        "backlog either: the emulator keeps each partition's keys sorted and stops a Query at its "
        "Limit, as DynamoDB does (local/motopatches.py; before it, moto sorted a whole queue shard "
        "per Query: 0.69 s per page at 1e5 pending). What is left is the page's 17 requests through "
        "the store's client and in-process moto, a few ms each (`moto_query_s`). Closing it: a page that "
        "queries only the shards that hold pending work, which the per-shard cursors of the hot-path "
        "change would tell it."
    ),
    "local stack: ": (
        "moto runs in its own process (API p99 60 s -> ~6 s, connection errors 25 -> 0) and the "
        "worker reads only the shards whose recorded head is due. What is left is queueing on CPU: "
        "the local API runs one request at a time, as one Lambda execution environment does "
        "(local/stack.py, `one_at_a_time`), so 20 closed-loop clients wait behind one another — a "
        "p50 of 1.7 s is about 20 requests of ~90 ms each, their service time while the stack, the "
        "emulator and the clients share two cores — and the worker's deliveries wait for the same "
        "CPU (lateness p50 5 ms, p99 3 s). The figure moves between runs (API p99 5.6, 7.4 and 8.1 s "
        "in three). Closing it: several API execution environments, as Lambda scales out, and less "
        "CPU per request in the stack and the emulator."
    ),
    "`make bench` run time": (
        "lateness alone needs 200 tasks over 5 minutes behind a 150 s lead, then the `minute` "
        "stack's last delivery (~9 minutes, fixed by its target); the burst's sequential baseline "
        "is 1,000 x ~96 ms plus its 5,000-task peak; the fan-out drains 2,000 tasks three times and "
        "the pool-2 series three more, each drain with its stand-in and sandbox processes to start. "
        "The sizes were cut (fan-out 10,000 -> 2,000 tasks and no 8-invocation rows, "
        "30 instead of 100 operations per load client, the raw burst comparison at 200 tasks, "
        "the lateness burst at 300): what is left is the targets' own sizes. Closing it: sections "
        "run side by side on more cores (each measures in processes of its own)."
    ),
    "cold start": (
        "the worker and the keeper meet it, the API does not. No handler imports the X-Ray SDK any "
        "more (with `tracing` off, the default, the tracer's "
        "provider does nothing; Powertools' default provider built an X-Ray client at import, ~0.2 s) "
        "nor boto3 (clients come from botocore sessions; boto3 imports its S3 transfer manager, "
        "~0.1 s). What is left is common to all three: botocore's client machinery (it imports its "
        "documentation builders with the client module), pydantic and pydantic-settings; the API "
        "adds Powertools' event handler and OpenAPI models. Import times on this machine also vary "
        "by about ±30 % between runs of the same files. Closing it: the API's validation models "
        "loaded on first use; settings parsed without pydantic-settings."
    ),
}


def shortfalls(results: dict[str, Any]) -> list[str]:
    """For each target not met: its row, why, and what would close it."""
    out = []
    for row in headline(results):
        if row["status"] != NOT_MET:
            continue
        why = next((text for prefix, text in SHORTFALL.items() if row["what"].startswith(prefix)), None)
        out.append(f"**{row['what']}** — measured {row['measured']}; target {row['target']}. Why: {why}")
    return out


BENCH_TARGET_S = 25 * 60


def _bench_time_row(results: dict[str, Any]) -> list[Row]:
    """`make bench` end to end: the sum of every section's latest run time (sections may be re-run
    alone, so no single run's wall time covers them all)."""
    times = results.get("run_seconds") or {}
    total = sum(times.values())
    complete = set(DEFAULT_BACKENDS) <= set(times)
    measured = f"{total / 60:.0f} min (sum of the sections' latest run times)" if times else "—"
    return [
        _row(
            "`make bench` run time on this machine",
            "—",
            f"≤ {BENCH_TARGET_S // 60} min",
            measured,
            None if not complete or results.get("quick") else total <= BENCH_TARGET_S,
        )
    ]


HEADLINE: tuple[Callable[[dict[str, Any]], list[Row]], ...] = (
    _backlog_rows,
    _lateness_row,
    _burst_rows,
    _cost_rows,
    _idle_row,
    _fanout_rows,
    _local_rows,
    _bench_time_row,
)


def headline(results: dict[str, Any]) -> list[Row]:
    return [row for rows in HEADLINE for row in rows(results)]


def _command(results: dict[str, Any], section: str) -> str:
    quick = " --quick" if results.get("quick") else ""
    return f"python -m bench.run{quick} --only {section}"


def _section_head(results: dict[str, Any], section: str, title: str) -> str:
    detail = results["detail"].get(section) or {}
    backend = detail.get("backend") if isinstance(detail, dict) else None
    when = results.get("measured", {}).get(section, "")
    return (
        f"\n## {title}\n\n"
        f"Command: `{_command(results, section)}` — measured {when or 'at an unknown date'}. "
        f"Backend: {backend or DEFAULT_BACKENDS[section]}.\n\n"
    )


def _figure(results: dict[str, Any], name: str, caption: str) -> str:
    path = results.get("plots", {}).get(name)
    return f"\n![{caption}]({path})\n" if path else ""


def _machine(results: dict[str, Any]) -> str:
    m = results["machine"]
    facts = [
        f"{m.get('cpus')} CPUs" + (f" ({m['cpu_model']})" if m.get("cpu_model") else ""),
        f"{m['memory_gb']} GB memory" if m.get("memory_gb") else "",
        f"Python {m.get('python')}",
        m.get("os") or m.get("system", ""),
    ]
    return ", ".join(f for f in facts if f)


def _latency_model(results: dict[str, Any]) -> str:
    model = results.get("latency_model") or {}
    ms = model.get("ms")
    if not ms:
        return (
            "\n## Latency model\n\nNo latency model in these results (`bench.latency` absent when they "
            "were measured): every AWS call ran at the emulator's own speed, with no network delay.\n"
        )
    basis = (model.get("basis") or "").strip()
    rows = [{"operation": op, "ms": value} for op, value in ms.items()]
    return (
        "\n## Latency model\n\nThe delay added to each emulated AWS call where a figure says it uses "
        "the model (`bench/latency.py`).\n\n"
        + _table(rows, ["operation", "ms"])
        + (f"\n{basis}\n" if basis else "")
    )


def _backlog_section(results: dict[str, Any]) -> str:
    if not results["detail"].get("backlog"):
        return ""
    return (
        _section_head(results, "backlog", "Items read per create / per worker run against backlog")
        + f"Baseline: the reference PoC, which scans its whole table on every add and every run "
        f"(measured up to 1e5 pending: a Scan reads every item, and beyond that loading and scanning "
        f"it through moto takes minutes). {results['detail']['backlog'][0]['due_now']} tasks are due "
        f"at the run. The backlog is loaded straight into moto's table (`load_s`).\n\n"
        + _table(
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


def _cost_section(results: dict[str, Any]) -> str:
    lc = results["detail"].get("lifecycle")
    if not lc:
        return ""
    prices = lc["prices"]
    c = results["cost"]
    rows = [
        {
            "row": "dense" if row["tasks_per_run"] > 1 else "sparse, worker started after the task was due",
            **row,
        }
        for row in lc["lifecycle"]
    ]
    return (
        _section_head(
            results, "lifecycle", "DynamoDB units per one-shot task, PutRule calls, cost per million"
        )
        + "Capacity units computed from the items read and written, with DynamoDB's sizing rules.\n\n"
        + _table(
            rows,
            [
                "row",
                "tasks",
                "tasks_per_run",
                "wru_create",
                "rru_create",
                "wru_run",
                "rru_run",
                "wru_total",
                "rru_total",
                "usd_per_million_dynamodb",
                "usd_per_million_dynamodb_provisioned",
                "usd_per_million_lambda_second_mode",
            ],
        )
        + f"\nAll-in, dense (the first row): **${_n(c['usd_per_million_on_demand'])} per million tasks on "
        f"demand, ${_n(c['usd_per_million_provisioned'])} provisioned** = DynamoDB + the worker Lambda "
        f"({prices.get('worker_architecture')}, {prices.get('worker_memory_gb')} GB, `second` mode waiting "
        "~70 s per wake-up, shared by every task of the run) + EventBridge "
        f"(${EVENTBRIDGE_RULE_USD_PER_MILLION:.2f}: the rule's scheduled events and PutRule calls are not "
        f"billed). Baseline: EventBridge Scheduler at ${prices['eventbridge_scheduler_per_million']:.2f} per "
        "million invocations (60 s flexible window at best). The second row runs one task per worker run, "
        "each worker started after its task was due: it leaves out the early wake (next table). "
        f"Prices: {_cell(prices)}.\n"
        + _sparse_billed(lc.get("sparse_billed"))
        + _payload_sweep(lc.get("payload"))
        + "\nPutRule calls per task while creating tasks:\n\n"
        + _table(lc["putrule"], ["tasks", "order", "putrule_calls", "per_task"])
    )


SPARSE_COLUMNS = [
    "rru",
    "wru",
    "requests",
    "putrule",
    "invocations",
    "worker_alive_s",
    "gb_s",
    "keeper_invocations",
    "usd_per_million_dynamodb",
    "usd_per_million_lambda",
    "usd_per_million",
]


def _sparse_billed(billed: dict[str, Any] | None) -> str:
    """The sparse task from create to completion as billed, `second` beside `minute` precision."""
    if not billed:
        return ""
    modes = [m for m in ("second", "minute") if m in billed]
    rows = [{"per task": column, **{m: billed[m].get(column) for m in modes}} for column in SPARSE_COLUMNS]
    parts = [
        {"precision": m, "part": part, **figures}
        for m in modes
        for part, figures in billed[m].get("by_part", {}).items()
    ]
    tasks = billed[modes[0]]["tasks"]
    return (
        f"\n**A sparse task as AWS bills it** (bench/sparse.py): {_n(tasks)} one-shot tasks, each alone "
        "in the queue, created 10 minutes ahead and followed to its completion: the editor's create "
        "and its rule arming; the keeper on the table's stream records (moto's streams API, the "
        "deployed trigger's filters; a batch after the create, one when a worker goes to sleep, one "
        "when an invocation ends); the rule firing at the start of its armed minute (in `second` mode "
        "70-130 s ahead of the task, in `minute` mode the task's own minute); every worker invocation "
        "that firing or an invoke starts, its wait (simulated time) and its run. Per task, "
        "averaged; `gb_s`: the invocations' simulated lifetime x the deployed worker memory; the "
        "keeper's duration is modelled from its requests' round trips (latency model) and priced "
        "in `usd_per_million_lambda` with its invocations. Tasks fall evenly over the seconds of a "
        "minute, so the wait averages over where a task falls.\n\n"
        + _table(rows, ["per task", *modes])
        + "\nBy who spent it (per task):\n\n"
        + _table(parts, ["precision", "part", "rru", "wru", "putrule", "requests"])
    )


def _payload_sweep(rows: list[dict[str, Any]] | None) -> str:
    if not rows:
        return ""
    return (
        f"\n**Payload size** (dense, {_n(rows[0]['tasks'])} tasks per worker run; the payload one string "
        "field of that many characters): units per task by what they pay for. The worker runs with a "
        "pool of one and its occurrence hook's steps split its requests: `claim` is the home item's "
        "conditional UpdateItem (its answer is the task); `completion` is the read of a payload kept "
        "in its own item (over 256 bytes: written once, at create) and the outcome's UpdateItem (its "
        "run kept on the item, which ends the entry); `other` is the rest of the run (the pass's "
        "Queries, the lateness histogram, the re-arm), shared by the run's tasks. A write is billed "
        "by the larger of the item before and after it.\n\n"
        + _table(
            rows,
            [
                "payload_bytes",
                "wru_create",
                "rru_create",
                "wru_claim",
                "rru_claim",
                "wru_completion",
                "rru_completion",
                "wru_other",
                "rru_other",
            ],
        )
    )


def _cpu_section(results: dict[str, Any]) -> str:
    detail = results["detail"].get("cpu")
    if not detail:
        return ""
    rows = detail["rows"]
    ops = sorted({op for row in rows for op in row["requests_per_fire"]})
    by_op = [
        {
            "operation": op,
            **{
                f"{key} (pool {row['pool_size']})": row[key].get(op)
                for row in rows
                for key in ("requests_per_fire", "ms_per_request", "request_cpu_ms_per_fire_by_op")
            },
        }
        for op in ops
    ]
    floors = ", ".join(
        f"pool {row['pool_size']} run: GetItem through a stock botocore client "
        f"{_n(row['floor']['stock_botocore_get_item_ms'], ' ms')}, through the store's client (its "
        f"light path) {_n(row['floor']['light_get_item_ms'], ' ms')}, the store's get_task "
        f"{_n(row['floor']['store_get_task_ms'], ' ms')}"
        for row in rows
    )
    return (
        _section_head(results, "cpu", "Worker CPU per fire, by request type")
        + f"{_n(detail['tasks'])} one-shot `log` tasks due now, drained by one worker handler invocation "
        "in this process (max_invocations 1) against the stand-in without latency in its own process. "
        "Process CPU per fire; a request's CPU is its thread's CPU from the client's first event of the "
        "call (`provide-client-params`, so serialisation counts) to `after-call`; the "
        "remainder is everything else (PynamoDB's models, the record mapping, the loop, logging, "
        "metrics, threads). Worker CPU per fire (deployed pool): "
        f"**{_n(detail['worker_cpu_ms_per_fire'])} ms**.\n\n"
        + _table(
            rows,
            [
                "pool_size",
                "tasks",
                "worker_cpu_ms_per_fire",
                "request_cpu_ms_per_fire",
                "remainder_cpu_ms_per_fire",
            ],
        )
        + "\nBy operation:\n\n"
        + _table(by_op, list(by_op[0]) if by_op else ["operation"])
        + "\nThe client's floor, single-threaded, CPU per call (median of alternated calls on one item): "
        f"{floors}.\n"
    )


def _burst_section(results: dict[str, Any]) -> str:
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
            + _table(
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
        f"{_n(raw.get('tasks', b['tasks']))} tasks): sequential "
        f"{_n(raw.get('sequential_s'), ' s')}, pooled {_n(raw.get('pooled_s'), ' s')}, speed-up "
        f"{_n(raw.get('speedup'), 'x')}.\n"
        if raw
        else ""
    )
    rss = b["peak_rss_mb"] or {}
    return (
        head + f"{_n(b['tasks'])} tasks due at one instant, drained by one invocation, every AWS call "
        "delayed by the latency model (above). Baseline: sequential execution.\n\n"
        + _table(rows, ["mode", "seconds"])
        + f"\nSpeed-up: **{_n(b['speedup'], 'x')}**. Worker peak RSS growth during the run, by burst size: "
        + (
            ", ".join(
                f"{int(k):,} tasks {_cell(v)} MB" for k, v in sorted(rss.items(), key=lambda kv: int(kv[0]))
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


def _fanout_section(results: dict[str, Any]) -> str:
    detail = results["detail"].get("fanout")
    if not detail:
        return ""
    f = results["fanout"]
    out = [
        _section_head(results, "fanout", "Fan-out: one burst drained by concurrent worker invocations"),
        f"{_n(f['tasks'])} tasks due at one instant. Baseline: one invocation.\n\n",
        _table(detail["rows"], FANOUT_COLUMNS),
    ]
    io_bound = detail.get("io_bound")
    if io_bound:
        pool = io_bound.get("pool_size")
        out += [
            f"\nThe same with a pool of {pool} per invocation, {_n(io_bound.get('tasks'))} tasks (each "
            "invocation waits on I/O, so what scales is the fan-out itself):\n\n",
            _table(io_bound.get("rows", []), FANOUT_COLUMNS),
            f"\nEfficiency at 4 invocations, pool of {pool}: {_n(io_bound.get('efficiency_at_4'))}.\n",
        ]
    out.append(
        f"\nEfficiency at 4 invocations: **{_n(f['efficiency_at_4'])}**. Projected on AWS: "
        f"**{_n(f['projected_aws_fires_per_s'])} fires/s**.\n"
    )
    projection = detail.get("projection")
    if projection:
        out.append("\nThe projection's assumptions:\n\n")
        out += [f"- `{key}`: {_cell(value)}\n" for key, value in projection.items()]
    out.append(_figure(results, "fanout", "drain time against invocations"))
    return "".join(out)


def _lateness_section(results: dict[str, Any]) -> str:
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
        + _table(rows, ["precision", "n", "duplicates", "early", "p50_s", "p90_s", "p99_s", "max_s"])
        + f"\nBurst, `second` precision: {_n(bt['tasks'])} tasks due at one instant: first delivered "
        f"{_n(bt['first_s'], ' s')} after it, last {_n(bt['last_s'], ' s')}.\n\n"
        f"Idle CPU, % of a core over 20 s: {_cell(lt['idle_cpu_percent_of_a_core'])}.\n"
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


def _listing_section(results: dict[str, Any]) -> str:
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
        f"wall time; items read by the DynamoDB meter (bound: {_n(detail.get('items_read_bound'))}); "
        "`moto_query_s`: one raw Query against the emulator; `moto_share`: the part of the page's time "
        "that the emulator's own Query cost accounts for.\n\n"
        + _table(rows, ["tasks_stored", *LISTING_COLUMNS.values()])
    )


def _local_load_section(results: dict[str, Any]) -> str:
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
        "answers; lateness of the tasks they created.\n\n" + _table([detail], columns)
    )


def _startup_section(results: dict[str, Any]) -> str:
    st = results["detail"].get("startup")
    if not st:
        return ""
    return (
        _section_head(results, "startup", "Start-up time of the local stack against restored tasks")
        + f"Median of {st['repeats']} start(s) of the installed `nexttick local` on a copy of a clean "
        "stop's state directory. Baseline: an empty start. `ready_s`: launch to local.json written; "
        "`healthy_s`: until GET /health answered; `restore_in_process_s`: the snapshot restored "
        "in-process; `stop_s`: Ctrl-C right after ready until exit.\n\n"
        + _table(
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


def _keeper_section(results: dict[str, Any]) -> str:
    kp = results["detail"].get("keeper")
    if not kp:
        return ""
    return (
        _section_head(results, "keeper", "The keeper's delay: a client that dies after its task write")
        + f"{kp['tasks_per_path']} tasks per path, alternating, each the new earliest. Delay until the "
        "rule is armed for the task (DescribeRule polled every 10 ms). Baseline: the inline path of a "
        "client that lives.\n\n"
        + _table(kp["delays"], ["path", "from", "count", "p50_s", "p90_s", "p99_s", "max_s"])
    )


def _cold_start_section(results: dict[str, Any]) -> str:
    cs = results["detail"].get("cold_start")
    if not cs:
        return ""
    rows = [{"handler": name, **ms} for name, ms in cs["import_ms_p50"].items()]
    return (
        _section_head(results, "cold_start", "Cold start: asset size and handler import time")
        + f"Asset: {_n(cs.get('asset_mb'))} MB in {_n(cs.get('asset_files'))} files, "
        f"{_n(cs.get('asset_zipped_mb'))} MB zipped. Lambda runs Python {cs.get('runtime_python')}; this "
        f"build ran {cs.get('build_python')}, so the asset "
        f"{'ships' if cs.get('bytecode_shipped') else 'does not ship'} bytecode. Median import ms of "
        f"{cs.get('runs')} fresh interpreters, same files, same pinned requirements:\n\n"
        + _table(rows, ["handler", "source_only", "bytecode"])
    )


SECTIONS: tuple[Callable[[dict[str, Any]], str], ...] = (
    _backlog_section,
    _cost_section,
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


def not_measured(results: dict[str, Any]) -> list[str]:
    """What the results lack, and why; plus what no section measures by design."""
    detail = results["detail"]
    reasons = results.get("failed", {})
    out = []
    for section in DEFAULT_BACKENDS:
        if not detail.get(section):
            why = reasons.get(section, "not run for these results")
            out.append(f"Section `{section}`: {why} (`{_command(results, section)}`).")
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
        "Cost beyond DynamoDB, the worker Lambda and EventBridge: the keeper Lambda (counted only in the "
        "sparse rows as billed), DynamoDB Streams (free to a Lambda trigger), API Gateway and the API "
        "Lambda for creates over HTTP, storage and backups; the worker "
        "Lambda's duration in the all-in figure is a model (~70 s per wake-up in `second` mode); the sparse "
        "rows as billed measure it in simulated time (the rule firing at the start of its minute).",
    ]
    return out


def render(results: dict[str, Any]) -> str:
    quick = results.get("quick")
    out = [
        "# nexttick benchmark report\n\n",
        "All of it: `make bench` (`python -m bench.run`); small: `make bench-quick`. Latest run: "
        f"`{results.get('command', 'python -m bench.run')}` on {results.get('date', '?')}; each section "
        "below names the command that measures it alone and when it was measured"
        + (
            f" (run time per section, s: {_cell(results['run_seconds'])})"
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
    out.append(_table(headline(results), ["what", "anchor", "target", "measured", "status"]))
    missed = shortfalls(results)
    if missed:
        out.append("\n### Where a target is not met: why, and what would close it\n\n")
        out += [f"- {line}\n" for line in missed]
    out.append(_latency_model(results))
    out += [section(results) for section in SECTIONS]
    out.append("\n## Not measured, and why\n\n")
    out += [f"- {line}\n" for line in not_measured(results)]
    return "".join(out)


def write(results: dict[str, Any], out: Path) -> Path:
    """REPORT.md and its plots into `out`; `results["plots"]` names the PNGs written."""
    results["plots"] = plots.write_all(results, out)
    path = out / REPORT_FILE
    path.write_text(render(results))
    return path
