"""bench/REPORT.md's sections on what a task costs (bench/lifecycle.py's, bench/sparse.py's and
bench/cpu.py's figures): units and dollars per task, dense and sparse as billed, the payload sweep,
and the worker's CPU per fire by request type."""

from __future__ import annotations

from typing import Any

from bench.derive import EVENTBRIDGE_RULE_USD_PER_MILLION
from bench.lifecycle import HANDOVER_SLEEP_S, HANDOVER_SQS_REQUESTS
from bench.markdown import cell, number, table
from bench.results import Results


def cost_section(results: Results, head: str) -> str:
    """The lifecycle section under `head`: units and cost per task, the sparse task as billed, the
    payload sweep, PutRule calls."""
    lc = results["detail"]["lifecycle"]
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
        head
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


def cpu_section(results: Results, head: str) -> str:
    """The cpu section under `head`: CPU per fire, in requests by operation and outside them."""
    detail = results["detail"]["cpu"]
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
        head
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
