"""Start-up time of `nexttick local` with a restored backlog, side by side with an empty start.

Each start launches the installed entry point on a fresh copy of a prepared state directory (a
clean stop rewrites state.json) and measures the wall time until the stack is ready: until
`local.json` is written at the end of its start (its `started_at`), and until the harness sees it
healthy (`LocalStackProcess.start`, which polls every 0.25 s). The state directories hold N pending
tasks due hours ahead, written by the real code: `TaskStore.bulk_insert` into in-process moto, copied
out with the state module's own `snapshot` and `save`, exactly what a clean stop leaves behind. The
stack's "restored N tasks" banner must report N. The in-process part (`LocalState.recover` into an
empty emulated table: load, replay, restore; no subprocess, no moto server) is measured apart.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.harness import bulk_load, emulated_aws
from bench.localstack import LocalStackProcess, cpu_seconds, stack_environment
from local import state
from local.motoserver import EmulatedState
from nexttick.store.streams import ItemKind, item_kind

START_TIMEOUT = 300.0  # the first start may synthesize the CDK app's template
STOP_TIMEOUT = 120.0
DUE_AHEAD = timedelta(hours=3)  # nothing comes due while measuring
DUE_SPREAD = timedelta(hours=2)
IN_PROCESS_REPEATS = 3
_RESTORED = re.compile(r"nexttick local stack is running \((?:restored (\d+) tasks? from |started empty)")


def prepare(root: Path, count: int) -> tuple[Path, int]:
    """A state directory holding `count` pending tasks, as a clean stop of the stack leaves it;
    also the number of queue shards the tasks were written for."""
    directory = root / f"template-{count}"
    with emulated_aws() as runtime:
        if count:
            bulk_load(runtime.store, count, datetime.now(UTC) + DUE_AHEAD, DUE_SPREAD, "startup")
        settings = runtime.settings
        emulated = EmulatedState(settings.region, settings.table_name, settings.rule_name)
        # The rule is left out: the stack's own rule (from its template) and its start-up sync apply.
        snapshot = state.snapshot(emulated, threading.Lock(), journal_seq=0)
        snapshot["rule"] = {"expression": None, "description": "", "state": "ENABLED"}
        shards = runtime.store.shards
    tasks = sum(1 for i in snapshot["items"] if item_kind(i) is ItemKind.TASK)
    assert tasks == count, (tasks, count)
    state.save(directory / state.STATE_FILE, snapshot)
    return directory, shards


def restore_in_process(template: Path, scratch: Path, count: int) -> float:
    """Seconds `LocalState.recover` takes to restore the directory into an empty emulated table."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(template, scratch)
    with emulated_aws() as runtime:
        settings = runtime.settings
        local = state.LocalState(
            scratch, EmulatedState(settings.region, settings.table_name, settings.rule_name), threading.Lock()
        )
        started = time.perf_counter()
        restored = local.recover(time.time())
        seconds = time.perf_counter() - started
        local.close()
    assert restored == count, (restored, count)
    return seconds


def start_once(template: Path, work: Path, count: int, shards: int) -> dict[str, float]:
    """Start the stack on a fresh copy of `template`, measure, stop it with Ctrl-C (SIGINT) as soon
    as it is ready (so the stop may find the start-up sync invocation still running)."""
    if work.exists():
        shutil.rmtree(work)
    state_dir = work / "state"
    shutil.copytree(template, state_dir)
    stack = LocalStackProcess(
        state_dir, stack_environment(state_dir, POWERTOOLS_LOG_LEVEL="WARNING"), work / "stack.log"
    )
    launched = time.time()
    try:
        stack.start(START_TIMEOUT)
        healthy = time.time() - launched
        cpu = cpu_seconds(stack.pid)
        info = json.loads((state_dir / "local.json").read_text())
        published = datetime.fromisoformat(info["started_at"]).timestamp() - launched
        assert stack.process is not None
        stack.process.send_signal(signal.SIGINT)
        stopping = time.monotonic()
        code = stack.process.wait(STOP_TIMEOUT)
        stopped = time.monotonic() - stopping
    finally:
        stack.kill()
    output = stack.output()
    assert code == 0, f"nexttick local exited {code}:\n{output[-4000:]}"
    found = _RESTORED.search(output)
    assert found is not None, f"no start banner:\n{output[-4000:]}"
    restored = int(found.group(1) or 0)
    assert restored == count, f"the stack restored {restored} tasks, expected {count}:\n{output[-4000:]}"
    stack_shards = info["env"].get("NEXTTICK_QUEUE_SHARDS")
    assert stack_shards in (None, str(shards)), (stack_shards, shards)
    return {
        "ready_s": published,
        "healthy_s": healthy,
        "cpu_s": cpu,
        "stop_s": stopped,
        "restored": restored,
        # The stop waited its whole grace for a worker invocation (the start-up sync) and abandoned it.
        "abandoned": float("invocations still delivering at shutdown are abandoned" in output),
    }


def run(quick: bool) -> dict[str, Any]:
    sizes = (0, 1_000) if quick else (0, 1_000, 10_000)
    repeats = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="nexttick-startup-") as tmp:
        root = Path(tmp)
        prepared: dict[int, tuple[Path, int]] = {}
        prepare_s: dict[int, float] = {}
        state_mib: dict[int, float] = {}
        for n in sizes:
            began = time.perf_counter()
            prepared[n] = prepare(root, n)
            prepare_s[n] = time.perf_counter() - began
            state_mib[n] = (prepared[n][0] / state.STATE_FILE).stat().st_size / (1 << 20)
        in_process = {
            n: statistics.median(
                restore_in_process(prepared[n][0], root / "scratch", n) for _ in range(IN_PROCESS_REPEATS)
            )
            for n in sizes
        }
        # Unmeasured: the first start may synthesize and cache the CDK app's template.
        warmup = start_once(prepared[0][0], root / "warmup", 0, prepared[0][1])
        samples: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
        for _ in range(repeats):  # interleaved, so drift on the machine hits every size alike
            for n in sizes:
                samples[n].append(start_once(prepared[n][0], root / "run", n, prepared[n][1]))
    rows: list[dict[str, Any]] = []
    for n in sizes:
        median = {
            k: statistics.median(s[k] for s in samples[n])
            for k in ("ready_s", "healthy_s", "cpu_s", "stop_s")
        }
        rows.append(
            {
                "tasks": n,
                "restored": samples[n][0]["restored"],
                "starts": len(samples[n]),
                "ready_s": round(median["ready_s"], 3),
                "healthy_s": round(median["healthy_s"], 3),
                "cpu_s": round(median["cpu_s"], 3),
                "stop_s": round(median["stop_s"], 3),
                "stops_abandoning_worker": int(sum(x["abandoned"] for x in samples[n])),
                "restore_in_process_s": round(in_process[n], 3),
                "state_mib": round(state_mib[n], 2),
                "all_ready_s": [round(s["ready_s"], 3) for s in samples[n]],
                "prepare_s": round(prepare_s[n], 1),
            }
        )
    empty = next(r for r in rows if r["tasks"] == 0)
    for row in rows:
        row["ratio_to_empty"] = round(row["ready_s"] / empty["ready_s"], 2)
        row["added_s"] = round(row["ready_s"] - empty["ready_s"], 3)
    return {"repeats": repeats, "warmup_ready_s": round(warmup["ready_s"], 3), "sizes": rows}
