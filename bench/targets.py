"""The headline's targets, each declared once: its name, its anchor, the section that measures it,
its limits (the results.json key each reads, the comparison and the threshold) and the sentence
that states it. The verdict (bench/judge.py) and the sentence in bench/REPORT.md both come from
the declaration (bench/target_model.py), so a threshold changed here changes both.
"""

from __future__ import annotations

from bench import fanout, measures
from bench.target_model import GE, LE, MS, SECONDS, TIMES, Limit, Target, dollars, power_of_ten, shown


def _backlog(kind: str, ours: measures.Ours, theirs: measures.Theirs) -> Target:
    return Target(
        id=f"backlog {kind}",
        what=f"items read per {kind} against backlog 1e3 → 1e6 pending",
        anchor="reference PoC: full scan (N)",
        section="backlog",
        sentence="flat in N (largest {growth} smallest); {fewer} fewer than the scan at {scan}",
        limits=(
            Limit("growth", f"backlog[].{ours}", LE, 2, TIMES, figure=measures.backlog_growth(ours)),
            Limit(
                "fewer", f"backlog[].{theirs}", GE, 1000, TIMES, figure=measures.backlog_fewer(ours, theirs)
            ),
        ),
        sizes=(
            Limit(
                "scan",
                "backlog[].pending",
                GE,
                100_000,
                power_of_ten,
                figure=measures.backlog_scan_size(theirs),
                says="",
            ),
        ),
        measured=measures.backlog_measured(ours, theirs),
    )


SCHEDULER_PRICE = "EventBridge Scheduler $1.00 per million"
# The fan-out's full size (the quick run drains fewer): its three targets are judged at it.
FANOUT_SIZE = Limit("tasks", "fanout.tasks", GE, fanout.FULL_TASKS, figure=measures.fanout_tasks, says="")
BURST_SPEEDUP = Limit("speedup", "burst.speedup", GE, 20, TIMES)

TARGETS: tuple[Target, ...] = (
    _backlog("worker run", "ours_items_per_run", "baseline_items_per_run"),
    _backlog("create", "ours_items_per_create", "baseline_items_per_create"),
    Target(
        id="lateness",
        what="lateness (start - due), local stack, default EventBridge emulation",
        anchor=measures.lateness_anchor,
        section="lateness",
        sentence="`second` mode, {n} tasks over ≥ 5 min: p99 {p99}, max {max}, {early} early",
        limits=(
            Limit("n", "lateness.second.n", GE, 200),
            Limit("p99", "lateness.second.p99_s", LE, 0.25, MS),
            Limit("max", "lateness.second.max_s", LE, 1, SECONDS),
            Limit("early", "lateness.second.early", LE, 0, none="none"),
        ),
        measured=measures.lateness_measured,
    ),
    Target(
        id="burst",
        what="burst: {tasks} tasks due at one instant, 50 ms I/O action, under the latency model",
        anchor="sequential execution (pool of one)",
        section="burst",
        sentence="{speedup} faster",
        limits=(BURST_SPEEDUP,),
        sizes=(Limit("tasks", "burst.tasks", GE, 1000, says=""),),
        measured=measures.burst_measured,
    ),
    Target(
        id="local burst",
        what="burst in the local stack: {tasks} tasks due at one instant, `second` mode",
        anchor="before the one-item layout: the last of 1,000 started 31 s late",
        section="lateness",
        sentence="the last starts {last} late",
        limits=(Limit("last", "lateness.burst.last_s", LE, 5, SECONDS),),
        sizes=(Limit("tasks", "lateness.burst.tasks", GE, 1000, says=""),),
        measured=measures.local_burst_measured,
    ),
    Target(
        id="burst rss",
        what="burst: worker peak RSS growth during the run against burst size",
        anchor="sequential execution (pool of one)",
        section="burst",
        sentence="flat from {smallest} to {largest} due (largest {ratio} smallest, or {growth} of it)",
        limits=(
            Limit("ratio", "burst.peak_rss_mb", LE, 1.25, TIMES, figure=measures.rss_ratio),
            Limit(
                "growth", "burst.peak_rss_mb", LE, 5, shown(" MB"), figure=measures.rss_growth, says="within"
            ),
        ),
        any_limit=True,
        sizes=(
            Limit("smallest", "burst.peak_rss_mb", LE, 1000, figure=measures.rss_smallest_size, says=""),
            Limit("largest", "burst.peak_rss_mb", GE, 5000, figure=measures.rss_largest_size, says=""),
        ),
        measured=measures.rss_measured,
    ),
    Target(
        id="dense units",
        what="DynamoDB units per one-shot task lifecycle (dense: 1,000 per worker run)",
        anchor=SCHEDULER_PRICE,
        section="lifecycle",
        sentence="{wru} WRU + {rru} RRU",
        limits=(Limit("wru", "cost.wru_per_task", LE, 3), Limit("rru", "cost.rru_per_task", LE, 1.5)),
        measured=measures.dense_units_measured,
    ),
    Target(
        id="sparse units",
        what="DynamoDB units per one-shot task (sparse: alone in the queue, create to completion "
        "in `second` mode, early wake included)",
        anchor=SCHEDULER_PRICE,
        section="lifecycle",
        sentence="{rru} RRU + {wru} WRU",
        limits=(
            Limit("rru", "cost.rru_per_task_sparse", LE, 6),
            Limit("wru", "cost.wru_per_task_sparse", LE, 8),
        ),
        measured=measures.sparse_units_measured,
    ),
    Target(
        id="putrule",
        what="PutRule calls per task, dense creates in random order",
        anchor=SCHEDULER_PRICE,
        section="lifecycle",
        sentence="≪ 1 per task (read as {calls})",
        limits=(Limit("calls", "cost.putrule_per_task", LE, 0.1),),
        measured=measures.putrule_measured,
    ),
    Target(
        id="cost",
        what="cost per million one-shot tasks, all-in (DynamoDB + Lambda + EventBridge), steady load",
        anchor=SCHEDULER_PRICE,
        section="lifecycle",
        sentence="{usd} provisioned",
        limits=(Limit("usd", "cost.usd_per_million_provisioned", LE, 1.0, dollars),),
        measured=measures.usd_measured,
    ),
    Target(
        id="waiting",
        what="`second` precision's waiting a month, at the costliest of the monthly bill's five loads "
        "(the worker's billed time beyond its work, the hand-over's SQS requests and invocations)",
        anchor="a worker asleep until each instant",
        section="monthly",
        sentence="{usd} a month at any load",
        limits=(Limit("usd", "waiting.second_usd_per_month_max", LE, 3.0, dollars),),
        measured=measures.waiting_measured,
    ),
    Target(
        id="waiting per task",
        what="`second` precision's waiting per million tasks, a task a minute (the monthly bill's 1/minute)",
        anchor="a worker asleep until each instant",
        section="monthly",
        sentence="{usd} per million tasks",
        limits=(Limit("usd", "waiting.second_usd_per_million_1_per_minute", LE, 20.0, dollars),),
        measured=measures.waiting_per_million_measured,
    ),
    Target(
        id="idle",
        what="idle local stack CPU (the busier of the two precisions)",
        anchor="an idle scheduler costs nothing",
        section="lateness",
        sentence="{cpu} of a core",
        limits=(Limit("cpu", "idle.cpu_percent", LE, 1, shown(" %")),),
        measured=measures.idle_measured,
    ),
    Target(
        id="fanout",
        what=lambda results: measures.fanout_what(results, int(FANOUT_SIZE.limit)),
        anchor="one invocation",
        section="fanout",
        sentence="{lost} duplicate or lost task; {claims} lost claims per fire",
        limits=(
            Limit(
                "lost",
                "fanout.rows[].duplicates, detail.fanout.rows[].lost",
                LE,
                0,
                figure=measures.fanout_duplicated_or_lost,
                none="no",
            ),
            Limit("claims", "fanout.rows[].conflicts_per_fire", LE, 0.05, figure=measures.fanout_lost_claims),
        ),
        sizes=(FANOUT_SIZE,),
        measured=measures.fanout_measured,
    ),
    Target(
        id="fanout efficiency",
        what="fan-out: scaling efficiency at 4 invocations (where the emulator is not the limit)",
        anchor="4x one invocation",
        section="fanout",
        sentence="{efficiency}",
        limits=(Limit("efficiency", "fanout.efficiency_at_4", GE, 0.7),),
        sizes=(FANOUT_SIZE,),
        measured=measures.efficiency_measured,
    ),
    Target(
        id="worker cpu",
        what="worker CPU per fire, deployed pool (the most of the fan-out's 1, 2, 4 invocations)",
        anchor="before the one-item layout: 9-19 ms",
        section="fanout",
        sentence="{ms}",
        limits=(Limit("ms", "fanout.worker_cpu_ms_per_fire", LE, 2, shown(" ms")),),
        sizes=(FANOUT_SIZE,),
        measured=measures.worker_cpu_measured,
    ),
    Target(
        id="fanout projected",
        what="fan-out: fires per second projected on AWS at the deployed memory, at most 10 invocations",
        anchor="EventBridge Scheduler: 1,000 targets/s",
        section="fanout",
        sentence="{fires} fires/s at {invocations} invocations",
        limits=(
            Limit("fires", "fanout.projected_aws_fires_per_s", GE, 1000),
            Limit("invocations", "fanout.projected_aws_invocations", LE, 10),
        ),
        sizes=(FANOUT_SIZE,),
        measured=measures.projected_measured,
    ),
    Target(
        id="list page",
        what="API list page (limit 20) against tasks pending, local",
        anchor="—",
        section="listing",
        sentence="{page} at {empty} … {pending} pending",
        limits=(Limit("page", "local_load.list_page_s", LE, 0.05, MS, figure=measures.list_page_slowest),),
        sizes=(
            Limit("empty", "local_load.list_page_s", LE, 0, figure=measures.list_page_smallest, says=""),
            Limit(
                "pending",
                "local_load.list_page_s",
                GE,
                100_000,
                power_of_ten,
                figure=measures.list_page_largest,
                says="",
            ),
        ),
        measured=measures.list_page_measured,
    ),
    Target(
        id="local load",
        what=measures.load_what,
        anchor="—",
        section="local_load",
        sentence="API p99 {api}, {errors} connection errors, lateness p99 {lateness}",
        limits=(
            Limit("api", "local_load.api_p99_s", LE, 0.2, MS),
            Limit("errors", "local_load.errors", LE, 0, none="0"),
            Limit("lateness", "local_load.lateness_p99_s", LE, 0.5, SECONDS),
        ),
        measured=measures.load_measured,
    ),
    Target(
        id="cold start",
        what="cold start: handler import with the shipped bytecode (median of 5 fresh processes)",
        anchor="—",
        section="cold_start",
        sentence="{ms}",
        limits=(
            Limit("ms", "cold_start.import_ms_p50", LE, 300, shown(" ms"), figure=measures.slowest_import),
        ),
        measured=measures.cold_start_measured,
    ),
    Target(
        id="bench time",
        what="`make bench` run time on this machine",
        anchor="—",
        section="all",
        sentence="{time}",
        limits=(
            Limit("time", "run_seconds", LE, 25 * 60, shown(" min", 1 / 60), figure=measures.bench_seconds),
        ),
        measured=measures.bench_time_measured,
    ),
)
