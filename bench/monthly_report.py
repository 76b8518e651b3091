"""bench/REPORT.md's "Monthly bill" section (bench/monthly.py's figures): the bill of each load and
precision beside EventBridge Scheduler's, the waiting's share of it, the measured inputs it comes
from, and for each load a sentence, written from the figures, saying where nexttick is the cheaper
and where it is not."""

from __future__ import annotations

from typing import Any

from bench.bill import BURST_CREDIT_SECONDS
from bench.fanout import MB_PER_VCPU
from bench.handover import LONG_POLL_SECONDS, MAPPING_POLLERS, POLL_DELAY
from bench.lifecycle import EVENTBRIDGE_SCHEDULER_FREE_PER_MONTH, SQS_FREE_PER_MONTH
from bench.markdown import table
from bench.monthly import PHASES, STEADY_AHEAD
from bench.results import Results
from bench.timeline import ITEM_OVERHEAD_BYTES, POLLS_PER_SECOND

BILL_COLUMNS = {
    "dynamodb_on_demand": "DynamoDB on demand",
    "dynamodb_provisioned": "DynamoDB provisioned",
    "dynamodb_storage": "DynamoDB storage",
    "lambda": "Lambda",
    "api_gateway": "API Gateway",
    "cloudwatch": "CloudWatch",
    "eventbridge": "EventBridge",
    "sqs": "SQS",
    "total_on_demand": "total on demand",
    "total_provisioned": "total provisioned",
    "waiting": "of which waiting",
    "scheduler": "EventBridge Scheduler",
}
INPUT_COLUMNS = [
    "rru_per_task",
    "wru_per_task",
    "wakes_per_month",
    "worker_s_per_wake",
    "idle_s_per_wake",
    "handovers_per_month",
    "worker_cpu_ms_per_task",
    "keeper_invocations_per_task",
    "keeper_ms_per_invocation",
    "api_ms_per_create",
    "log_bytes_per_task",
    "custom_metrics",
    "metric_months",
    "stored_bytes_per_task",
    "peak_wcu",
    "deferred_starts",
    "max_deferral_s",
]
# The terms a sentence may name as a bill's largest (the totals and sums are not terms).
TERMS = {
    "dynamodb_on_demand": "DynamoDB's units",
    "dynamodb_storage": "DynamoDB's storage",
    "lambda_worker": "the worker Lambda",
    "lambda_keeper": "the keeper Lambda",
    "lambda_api": "the API Lambda",
    "api_gateway": "API Gateway",
    "sqs": "SQS",
    "cloudwatch_logs": "CloudWatch Logs",
    "cloudwatch_metrics": "the custom metrics",
    "cloudwatch_alarms_dashboards": "the alarms and the dashboard",
}


def dollars(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.5f}"


def monthly_section(results: Results, head: str) -> str:
    """The section under `head` (its command, date and backend), or "" when it was not measured."""
    detail = results["detail"].get("monthly")
    if not detail:
        return ""
    rows = detail["rows"]
    bills = [
        {
            "load": r["load"],
            "precision": r["precision"],
            # (results from before the hand-over was billed have no SQS term and no waiting)
            **{
                title: dollars(r["usd"][key]) if key in r["usd"] else "—"
                for key, title in BILL_COLUMNS.items()
            },
            "cheaper": r["cheaper"],
        }
        for r in rows
    ]
    inputs = [{"load": r["load"], "precision": r["precision"], **r["measured"]} for r in rows]
    windows = [{"load": r["load"], "precision": r["precision"], **r["window"]} for r in rows]
    d = detail["deployment"]
    return (
        head
        + f"One-shot tasks for a {detail['month_days']}-day month, per load and precision, at us-east-1 list "
        "prices; EventBridge Scheduler's bill for one invocation per task beside it, within its free "
        f"tier of {EVENTBRIDGE_SCHEDULER_FREE_PER_MONTH:,} a month. Each load ran as a window of itself in "
        "simulated time (bench/timeline.py): the real API, keeper and worker handlers against moto, each "
        "request taking its modelled round trip, the "
        f"keeper fed from the table's stream as Lambda polls it ({POLLS_PER_SECOND} times a second), every "
        "worker invocation the rule (firing at the start of its minute), an invoke or a wait hand-over's "
        "message starts. 1/day: tasks "
        "each alone in the queue; 1/minute, 1/second, 100/second: a stretch of steady state, each task "
        f"created through the API {STEADY_AHEAD.total_seconds() / 60:g} minutes before it is due, the "
        f"tasks at {PHASES} phases of a second in turn (a hand-over's delay is whole seconds); the "
        "burst: scaled down, created at the API stage's "
        "throttle rate, then scaled up. Per-task figures are scaled by tasks, per-wake ones (a worker "
        "invocation's waits, the hours a metric is published in) by wakes.\n\n"
        + table(bills, ["load", "precision", *BILL_COLUMNS.values(), "cheaper"])
        + "\n"
        + "".join(f"- {line}\n" for line in verdicts(rows))
        + "\n**How each term is computed.** DynamoDB: the units the meter counted, on demand; provisioned, "
        f"the capacity that spends them at the {d['target_utilization']:.0%} target utilization, never "
        f"below auto scaling's minimum ({d['read_capacity'][0]} read, {d['write_capacity'][0]} write units); "
        "a burst pays, for its whole hours, the capacity its creates (at the API's throttle rate) and its "
        f"drain (the stack's `max_invocations` at the worker's CPU per task) need beyond the "
        f"{BURST_CREDIT_SECONDS} s of the minimum's unused capacity DynamoDB keeps: auto scaling reacts in "
        "minutes, so that capacity has to "
        "be raised ahead of the burst, which the stack does not do. Storage: each finished task's item "
        f"(+{ITEM_OVERHEAD_BYTES} bytes) kept {d['retention_days']} days, with point-in-time recovery. "
        f"Lambda ({d['architecture']}, worker {d['worker_memory_mb']} MB, keeper {d['keeper_memory_mb']} MB, "
        f"API {d['api_memory_mb']} MB): each invocation rounded up to the millisecond; a worker invocation "
        "lasts its span in simulated time (its waits for instants) or its own CPU at its share of a vCPU "
        f"({MB_PER_VCPU:,} MB = 1 vCPU), the "
        "longer; a keeper batch or a create, its requests' round trips (latency model) plus its own CPU "
        "at its share. Own CPU: this process's, less the emulator's and the bench's; in-process, a "
        "request's HTTP exchange is not in it. API Gateway: one REST request per create. EventBridge: "
        "the rule's scheduled events and PutRule cost nothing. SQS (standard queue, the wait "
        "hand-over's): a worker that would sleep through a wait of more than a few seconds hands it to a "
        "delayed message instead and ends; the queue's event source "
        "mapping receives the message when its delay has passed "
        f"(+{POLL_DELAY.total_seconds():g} s, the bench's figure), invokes the worker with it (an "
        "invocation counted in the worker's; it sleeps the last seconds and runs the task) and deletes "
        "it: a send, a receive and a delete per message, a request per 64 KB of payload; and the "
        f"mapping's pollers at rest, {MAPPING_POLLERS} long polls of {LONG_POLL_SECONDS} s at once all "
        f"month whatever the load. SQS's free tier ({SQS_FREE_PER_MONTH:,} requests a month) is not "
        "counted. The waiting (a share of the totals, not a term): the worker's billed time beyond its "
        "own work (its sleeps, less the work it would do during them), the requests of the invocations "
        "a hand-over starts, and the SQS term. CloudWatch: the bytes the functions "
        "print at the deployed log level (their JSON lines and their EMF metrics) and Lambda's START, "
        "END and REPORT lines, at the ingestion price; each custom metric (name and dimension values) "
        f"the EMF lines publish, prorated by the hours it is published in; {d['alarms']} alarms and "
        f"{d['dashboards']} dashboard, as the stack's template has them. No free tier of nexttick's "
        "services is counted (they are the account's); cold starts' initialisation is not counted.\n"
        + "\nThe measured inputs (per task unless named; `idle_s_per_wake`: of `worker_s_per_wake`, the "
        "billed time without work of its own; `peak_wcu`: the write capacity the busiest phase "
        "needs provisioned; `deferred_starts`: worker invocations that started later than on AWS, "
        "because the bench runs invocations one at a time):\n\n"
        + table(inputs, ["load", "precision", *INPUT_COLUMNS])
        + "\nThe windows (`simulated_s`: the measured stretch; `run_s`: the bench's time to run it):\n\n"
        + table(windows, ["load", "precision", "tasks", "finished", "simulated_s", "run_s"])
    )


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """One sentence per load: where nexttick is cheaper than EventBridge Scheduler and where not."""
    lines = []
    for load in dict.fromkeys(r["load"] for r in rows):
        mine = [r for r in rows if r["load"] == load]
        ours = [r for r in mine if r["cheaper"] == "nexttick"]
        if len(ours) == len(mine):
            verdict = "nexttick is cheaper in both precisions"
        elif ours:
            verdict = f"nexttick is cheaper in `{ours[0]['precision']}` precision only"
        else:
            verdict = "EventBridge Scheduler is cheaper in both precisions"
        totals = ", ".join(f"{_best(r)} in `{r['precision']}`" for r in mine)
        usd = mine[0]["usd"]
        largest = max(TERMS, key=lambda term: max(r["usd"].get(term, 0.0) for r in mine))
        notes = [r["notes"] for r in mine]
        if all(n == notes[0] for n in notes):
            beyond = "; ".join(notes[0])
        else:
            beyond = " ".join(f"`{r['precision']}`: {'; '.join(r['notes'])}." for r in mine if r["notes"])
        lines.append(
            f"**{load}** ({mine[0]['tasks_per_month']:,} tasks a month): {verdict}. nexttick: {totals}; "
            f"its largest term is {TERMS[largest]} (up to {dollars(max(r['usd'][largest] for r in mine))}). "
            f"EventBridge Scheduler: {dollars(usd['scheduler'])} "
            f"({dollars(usd['scheduler_without_free_tier'])} without its free tier)."
            + (f" Beyond the stack's defaults: {beyond.rstrip('.')}." if beyond else "")
        )
    return lines


def _best(row: dict[str, Any]) -> str:
    usd = row["usd"]
    mode = "on demand" if usd["total_on_demand"] <= usd["total_provisioned"] else "provisioned"
    return f"{dollars(min(usd['total_on_demand'], usd['total_provisioned']))} ({mode})"
