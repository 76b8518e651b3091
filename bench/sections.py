"""bench/REPORT.md's sections, one per bench section: the command that measures it, when, against
what backend, and its figures as tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench import plots
from bench.derive import EVENTBRIDGE_RULE_USD_PER_MILLION
from bench.lifecycle import HANDOVER_SLEEP_S, HANDOVER_SQS_REQUESTS
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
        + table(
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
        + "\nAll-in, dense (the first row): "
        f"**${number(c['usd_per_million_on_demand'])} per million tasks on demand, "
        f"${number(c['usd_per_million_provisioned'])} provisioned** = DynamoDB + the worker Lambda "
        f"({prices.get('worker_architecture')}, {prices.get('worker_memory_gb')} GB, `second` mode: two "
        f"invocations, {HANDOVER_SLEEP_S:g} s of sleep and {HANDOVER_SQS_REQUESTS} SQS requests per wake-up, "
        "shared by every task of the run: the wait hand-over) + EventBridge "
        f"(${EVENTBRIDGE_RULE_USD_PER_MILLION:.2f}: the rule's scheduled events and PutRule calls are not "
        f"billed). Baseline: EventBridge Scheduler at ${prices['eventbridge_scheduler_per_million']:.2f} per "
        "million invocations (60 s flexible window at best). The second row runs one task per worker run, "
        "each worker started after its task was due: it leaves out the early wake (next table). "
        f"Prices: {cell(prices)}.\n"
        + _sparse_billed(lc.get("sparse_billed"))
        + _payload_sweep(lc.get("payload"))
        + "\nPutRule calls per task while creating tasks:\n\n"
        + table(lc["putrule"], ["tasks", "order", "putrule_calls", "per_task"])
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
    "sqs_requests",
    "usd_per_million_dynamodb",
    "usd_per_million_lambda",
    "usd_per_million_sqs",
    "usd_per_million",
]


def _sparse_billed(billed: dict[str, Any] | None) -> str:
    """The sparse task from create to completion as billed, `second` beside `minute` precision."""
    if not billed:
        return ""
    modes = [m for m in ("second", "minute", "at_once", "on_the_hour") if m in billed]
    rows = [{"per task": column, **{m: billed[m].get(column) for m in modes}} for column in SPARSE_COLUMNS]
    parts = [
        {"precision": m, "part": part, **figures}
        for m in modes
        for part, figures in billed[m].get("by_part", {}).items()
    ]
    tasks = billed[modes[0]]["tasks"]
    return (
        f"\n**A sparse task as AWS bills it** (bench/sparse.py): {number(tasks)} one-shot tasks, each alone "
        "in the queue, created 10 minutes ahead and followed to its completion in simulated time "
        "(bench/timeline.py), after the sync a deploy runs: the create through the API handler and "
        "its rule arming; the keeper on the table's stream records as Lambda polls them (moto's "
        "streams API, the deployed trigger's filters, 4 polls a second); the rule firing at the start "
        "of its armed minute (in `second` mode 70-130 s ahead of the task, in `minute` mode the task's "
        "own minute); every worker invocation that firing, an invoke or a wait hand-over's delayed SQS "
        "message starts (a worker that would sleep through a long wait sends one and ends; its "
        "invocation sleeps the last seconds), its wait and its run. "
        "Per task, averaged; `worker_alive_s`: the invocations' simulated lifetime; `gb_s`: the longer "
        "of that and their own CPU at the deployed memory's share of a vCPU, x the deployed worker "
        "memory; the keeper's duration is its requests' round trips (latency model) plus its own CPU, "
        "priced in `usd_per_million_lambda` with its invocations; `sqs_requests`: the hand-over's send, "
        "receive and delete (its pollers' idle receives are the deployment's, in the monthly bill). "
        "Tasks fall evenly over the seconds "
        "of a minute, so the wait averages over where a task falls. `at_once`: `second` mode, each "
        "task created due that instant (a run now): its editor invokes the worker, and the keeper, "
        "whose batch usually comes after that worker ran it, reads the entry and invokes no second "
        "worker. `on_the_hour`: `second` mode, each task due in the first minute of an hour and "
        "created 90 minutes ahead; its armed minute (:58 or :59) and backstop (:01 or :02) make the "
        "rule's cron name two hours, so EventBridge also fires it about 57 minutes early: a spurious "
        "wake (one invocation and one read of the rule's record) per task.\n\n"
        + table(rows, ["per task", *modes])
        + "\nBy who spent it (per task):\n\n"
        + table(parts, ["precision", "part", "rru", "wru", "putrule", "requests"])
    )


def _payload_sweep(rows: list[dict[str, Any]] | None) -> str:
    if not rows:
        return ""
    return (
        f"\n**Payload size** (dense, {number(rows[0]['tasks'])} tasks per worker run; the payload one string "
        "field of that many characters): units per task by what they pay for. The worker runs with a "
        "pool of one and its occurrence hook's steps split its requests: `claim` is the home item's "
        "conditional UpdateItem (its answer is the task); `completion` is the read of a payload kept "
        "in its own item (over 256 bytes: written once, at create) and the outcome's UpdateItem (its "
        "run kept on the item, which ends the entry); `other` is the rest of the run (the pass's "
        "Queries, the lateness histogram, the re-arm), shared by the run's tasks. A write is billed "
        "by the larger of the item before and after it.\n\n"
        + table(
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


def _cpu_section(results: Results) -> str:
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
        f"{number(row['floor']['stock_botocore_get_item_ms'], ' ms')}, through the store's client (its "
        f"light path) {number(row['floor']['light_get_item_ms'], ' ms')}, the store's get_task "
        f"{number(row['floor']['store_get_task_ms'], ' ms')}"
        for row in rows
    )
    return (
        _section_head(results, "cpu", "Worker CPU per fire, by request type")
        + f"{number(detail['tasks'])} one-shot `log` tasks due now, drained by one worker handler invocation "
        "in this process (max_invocations 1) against the stand-in without latency in its own process. "
        "Process CPU per fire; a request's CPU is its thread's CPU from the client's first event of the "
        "call (`provide-client-params`, so serialisation counts) to `after-call`; the "
        "remainder is everything else (PynamoDB's models, the record mapping, the loop, logging, "
        "metrics, threads). Worker CPU per fire (deployed pool): "
        f"**{number(detail['worker_cpu_ms_per_fire'])} ms**.\n\n"
        + table(
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
        + table(by_op, list(by_op[0]) if by_op else ["operation"])
        + "\nThe client's floor, single-threaded, CPU per call (median of alternated calls on one item): "
        f"{floors}.\n"
    )


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
