"""Several worker invocations on one burst: a fan-out (the first invocation starts a helper for
each other group of shards) and unplanned ones (a rule fire and wakes arriving together). Every
occurrence runs exactly once, none is lost, and the invocations share the burst by shard instead of
fighting over every entry — a claim lost to another invocation hands it that shard."""

from __future__ import annotations

import threading
from collections.abc import Collection
from datetime import UTC, datetime, timedelta

import pytest

from bench.harness import pending_once
from nexttick.actions import ActionRegistry, build_registry
from nexttick.config import NextTickSettings
from nexttick.worker import Worker
from nexttick.worker.report import RunReport
from tests.support.aws import RecordedRuntime, RecordingTrigger
from tests.support.worker import ACTIONS, RECORDER, make_moto_atomic

BURST = 400
SHARDS = 16


@pytest.fixture
def settings() -> NextTickSettings:
    # A short lease: an invocation that finishes its shards while another still runs entries waits
    # for those leases to end (the backstop should their holder die), as it does in production.
    return NextTickSettings(
        queue_shards=SHARDS, actions_config=ACTIONS, pool_size=8, lease_seconds=10, max_invocations=1
    )


def load_burst(runtime: RecordedRuntime) -> list[str]:
    """A burst of tasks due at one instant (real time: leases and yields run on the clock)."""
    now = datetime.now(UTC)
    ids = [f"burst-{i:04d}" for i in range(BURST)]
    runtime.store.bulk_insert(
        [pending_once(i, now - timedelta(seconds=1), now, action="record") for i in ids], now
    )
    return ids


class ThreadHelpers(RecordingTrigger):
    """The worker's trigger with Lambda's asynchronous invoke played by a thread: a helper starts at
    once and runs beside its leader, as concurrent invocations do. Wakes go to the real trigger."""

    def __init__(self, runtime: RecordedRuntime, registry: ActionRegistry) -> None:
        super().__init__(runtime.trigger.inner)
        self.runtime = runtime
        self.registry = registry
        self.threads: list[threading.Thread] = []
        self.reports: list[RunReport] = []

    def help(self, shards: Collection[int], leader: str) -> None:
        def invocation() -> None:
            worker = Worker(
                self.runtime,
                self.registry,
                owner=f"helper-{len(self.threads)}",
                remaining_ms=120_000,
                shards=shards,
                leader=leader,
            )
            self.reports.append(worker.run())

        thread = threading.Thread(target=invocation)
        self.threads.append(thread)
        thread.start()


@pytest.mark.parametrize("invocations", [2, 4])
def test_a_burst_fans_out_over_helpers_that_each_drain_their_own_shards(
    runtime: RecordedRuntime, monkeypatch: pytest.MonkeyPatch, invocations: int
) -> None:
    make_moto_atomic(monkeypatch)
    RECORDER.reset()
    ids = load_burst(runtime)
    registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
    runtime.settings = runtime.settings.model_copy(update={"max_invocations": invocations})
    helpers = ThreadHelpers(runtime, registry)
    runtime.trigger = helpers
    # When the invocation the rule started finds the burst
    leader = Worker(runtime, registry, owner="leader", remaining_ms=120_000).run()
    for thread in helpers.threads:
        thread.join(120)
    reports = [leader, *helpers.reports]
    shown = [r.to_dict() for r in reports]
    # Then it started one helper per other group of shards, and every invocation ran a part
    assert leader.results["helpers"] == invocations - 1 == len(helpers.reports), shown
    assert all(r.results["succeeded"] > 0 for r in reports), shown
    # And every occurrence ran exactly once, recorded as succeeded once
    assert {i: len(RECORDER.calls[i]) for i in ids} == dict.fromkeys(ids, 1)
    assert sum(r.results["succeeded"] for r in reports) == BURST
    # And with disjoint groups there are (almost) no claim fights: at most 0.05 lost claims per fire
    contended = sum(r.results["contended"] for r in reports)
    assert contended <= 0.05 * BURST, shown
    print(f"\nfan-out to {invocations}, {BURST} tasks: {contended} lost claims, {contended / BURST:.3f}/fire")


@pytest.mark.parametrize("workers", [2, 4])
def test_concurrent_workers_share_a_burst_by_shard_and_run_each_occurrence_once(
    runtime: RecordedRuntime, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    make_moto_atomic(monkeypatch)
    RECORDER.reset()
    ids = load_burst(runtime)
    registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
    # When several invocations (no fan-out) start on it at the same moment
    start = threading.Barrier(workers, timeout=30)
    reports: list[RunReport] = []

    def invocation(n: int) -> None:
        start.wait()
        reports.append(Worker(runtime, registry, owner=f"invocation-{n}", remaining_ms=120_000).run())

    threads = [threading.Thread(target=invocation, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    # Then every occurrence ran exactly once, and each was recorded as succeeded once
    assert len(reports) == workers
    assert {i: len(RECORDER.calls[i]) for i in ids} == dict.fromkeys(ids, 1)
    assert sum(r.results["succeeded"] for r in reports) == BURST
    # And the invocations shared it: more than one ran a part (not each: threads of one process
    # on 2 cores start unevenly, and one whose first claims all went to the others may find them
    # covering the rest and end `covered` having run none), and claims were lost far less often
    # than when every invocation tries every entry in the same order (each fire is then lost by
    # all but one: BURST * (workers - 1) failed conditional writes, each billed) — at least 3x
    # less, even on a loaded 2-core machine, where the drain is slower and yields expire more
    # often during it (measured alone: 5-8x less; a planned fan-out, above, loses almost none)
    assert sum(r.results["succeeded"] > 0 for r in reports) >= 2, [r.to_dict() for r in reports]
    contended = sum(r.results["contended"] for r in reports)
    assert contended <= BURST * (workers - 1) / 3, [r.to_dict() for r in reports]
    print(
        f"\n{workers} invocations, {BURST} tasks: {contended} lost claims ({contended / BURST:.3f} per fire)"
    )
