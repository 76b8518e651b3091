"""Renders benchmark results as Markdown tables."""

from __future__ import annotations

from typing import Any


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    return head + "".join("| " + " | ".join(str(r.get(c, "")) for c in columns) + " |\n" for r in rows)


def render(results: dict[str, Any]) -> str:
    out = [
        "# nexttick benchmark results\n",
        f"Command: `{results['command']}` — {results['date']} — Python {results['machine']['python']}, "
        f"{results['machine']['cpus']} CPUs. AWS is emulated in-process (moto); capacity units are "
        "computed from the items read and written with DynamoDB's sizing rules.\n",
    ]
    measured = {s: d for s, d in results.get("measured", {}).items() if s in results}
    if measured:
        out.append("Measured: " + ", ".join(f"{s} {d}" for s, d in measured.items()) + ".\n")
    if "backlog" in results:
        out.append("\n## Items read per add / per worker run vs backlog (baseline: the PoC's full scan)\n\n")
        out.append(
            _table(
                results["backlog"],
                [
                    "pending",
                    "due_now",
                    "items_per_add",
                    "poc_items_per_add",
                    "reduction_add",
                    "items_per_run",
                    "poc_items_per_run",
                    "reduction_run",
                ],
            )
        )
    if "lifecycle" in results:
        lc = results["lifecycle"]
        out.append("\n## DynamoDB units per one-shot task lifecycle, and cost per million tasks\n\n")
        out.append(
            _table(
                lc["lifecycle"],
                [
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
        )
        out.append(
            f"\nPrices: {lc['prices']}. Baseline: EventBridge Scheduler at "
            f"${lc['prices']['eventbridge_scheduler_per_million']:.2f} per million invocations "
            "(60 s flexible window at best). Lambda cost assumes `second` mode waiting ~70 s per wake-up "
            "(shared by every task due in the same window). With one task per run, the run's fixed reads "
            "dominate: two strongly consistent head reads of one query per shard (16 shards), each billed "
            "at least 1 RRU.\n"
        )
        out.append("\n### PutRule calls per task while creating tasks\n\n")
        out.append(_table(lc["putrule"], ["tasks", "order", "putrule_calls", "per_task"]))
    if "burst" in results:
        b = results["burst"]
        out.append("\n## Burst of tasks due at one instant, 50 ms I/O action (baseline: sequential)\n\n")
        out.append(
            _table(
                [b["sequential"], *b["pooled"]],
                ["tasks", "pool_size", "seconds", "tasks_per_second", "peak_traced_mib"],
            )
        )
        out.append(
            f"\nSpeed-up of the pool over sequential execution: **{b['speedup']}x**. Peak traced memory, "
            f"largest burst / smallest burst: {b['memory_growth']}x.\n\n"
            "Reading these numbers: the emulator runs in this process, so (1) every DynamoDB call costs CPU "
            "here (~20 ms per task for claim, read, complete, delete) instead of overlapping as network I/O "
            "does against AWS: the 50 ms of action I/O is overlapped by the pool, but the emulator's CPU "
            "is not, which caps the speed-up far below the 20x target; and (2) tracemalloc also counts the "
            "emulator's own copy of the table, which grows with the burst. The worker's own memory, "
            "measured against a separate moto server process (tests/integration/test_worker_burst.py, "
            "NEXTTICK_SLOW_TESTS=1), is flat: 2.93 MB at 1,000 tasks, 2.86 MB at 5,000.\n"
        )
    if "lateness" in results:
        lt = results["lateness"]
        out.append(
            "\n## Lateness in the local stack (default EventBridge emulation), "
            "`second` vs `minute` precision\n\n"
            f"{lt['schedule']}, the same on both stacks, run at once: every task is first reached "
            "through the armed rule, which the emulator fires at a random second of its minute plus "
            "0-5 s delivery delay, as EventBridge does. `minute` precision is what arming the due minute "
            "gives (the reference PoC; EventBridge Scheduler's own window is 60 s at best; Sidekiq "
            "polls every ~5 s); `second` waits inside the invocation for each instant and claims 0.5 s "
            "ahead.\n\n"
        )
        rows = [{"precision": p, **lt[p]} for p in ("second", "minute")]
        out.append(
            _table(rows, ["precision", "n", "duplicates", "early", "p50_s", "p90_s", "p99_s", "max_s"])
        )
        bt = lt["burst"]
        out.append(
            f"\nBurst, `second` precision: {bt['tasks']} tasks due at one instant: first delivered "
            f"{bt['first_s']} s after it, last {bt['last_s']} s after it.\n"
        )
        out.append(f"\nIdle CPU, % of a core over 20 s: {lt['idle_cpu_percent_of_a_core']}.\n")
    if "startup" in results:
        st = results["startup"]
        out.append(
            "\n## Start-up time of the local stack vs restored pending tasks (baseline: an empty start)\n\n"
            f"Median of {st['repeats']} start(s) each of the installed `nexttick local` on a fresh copy of a "
            "state directory a clean stop would leave. `ready_s`: launch to the end of the start (local.json "
            "written); `healthy_s`: until the harness saw GET /health answer (0.25 s polling); `cpu_s`: the "
            "stack's CPU at that point; `restore_in_process_s`: restoring the snapshot into an empty "
            "emulated table in-process (no subprocess, no moto server); `restored`: what the banner "
            "printed (checked equal to `tasks`); `stop_s`: Ctrl-C right after ready until exit (state "
            "saved), and how many of those stops gave up on a still-running worker invocation (the "
            "start-up sync) after the 5 s grace.\n\n"
        )
        out.append(
            _table(
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
    if "keeper" in results:
        kp = results["keeper"]
        out.append(
            "\n## The keeper's delay in the local stack: a client that dies after its task write "
            "(baseline: the inline path of a client that lives)\n\n"
            f"{kp['tasks_per_path']} tasks per path, alternating, each due hours ahead and the new earliest "
            "(each moves the rule). Delay until the rule is armed for the task (DescribeRule polled every "
            "10 ms): the keeper's from the task write of a client that died right after it (only the "
            "keeper, fed by the table's stream, can arm the rule); the inline path's from the start of "
            "the create of a client that lives (its own sync arms the rule), and from its task write.\n\n"
        )
        out.append(_table(kp["delays"], ["path", "from", "count", "p50_s", "p90_s", "p99_s", "max_s"]))
    if "cold_start" in results:
        cs = results["cold_start"]
        out.append(
            f"\n## Cold start: asset size and handler import ms (median of {cs['runs']} fresh processes)\n\n"
        )
        out.append(
            f"Asset: {cs['asset_mb']} MB in {cs['asset_files']} files, {cs['asset_zipped_mb']} MB zipped. "
            f"Lambda runs Python {cs['runtime_python']}; this build ran {cs['build_python']}, so the asset "
            f"{'ships' if cs['bytecode_shipped'] else 'does not ship'} bytecode (it is compiled at bundling "
            "only by the runtime's Python version). Import times on this machine, same files, same pinned "
            "requirements:\n\n"
        )
        rows = [{"handler": name, **ms} for name, ms in cs["import_ms_p50"].items()]
        out.append(_table(rows, ["handler", "source_only", "bytecode"]))
    return "".join(out)
