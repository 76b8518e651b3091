"""Claims and crash safety (I1, I3): no occurrence runs twice concurrently; a crashed claim runs
again after its lease with the same idempotency key; nothing else is lost or delayed."""

from __future__ import annotations

import random
import threading
import time
from datetime import datetime, timedelta

import pytest

from nexttick.config import NextTickSettings
from nexttick.store.records import QueueEntry
from nexttick.worker import RunReport
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4, lease_seconds=60)


class Crash(BaseException):
    """The invocation dies here (Lambda timeout / kill): nothing after this line runs."""


def test_two_concurrent_workers_never_run_the_same_occurrence(env: WorkerEnv) -> None:
    rng = random.Random(7)
    contended = 0
    for round_ in range(6):
        # Given 24 tasks due at the same instant
        due = env.now() + timedelta(minutes=2)
        tasks = [env.editor.schedule_at("record", due) for _ in range(24)]
        env.travel_to(due)
        # When two workers read the same due page before either claims (forced race), then claim
        # in random interleavings
        barrier = threading.Barrier(2, timeout=10)
        reports: list[RunReport] = []
        threads = [
            threading.Thread(target=_race, args=(env, barrier, rng, random.Random(round_), reports))
            for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        # Then every occurrence was delivered exactly once
        assert len(reports) == 2
        assert {t.id: len(RECORDER.calls[t.id]) for t in tasks} == {t.id: 1 for t in tasks}
        assert sum(r.results["succeeded"] for r in reports) == 24
        contended += sum(r.results["contended"] for r in reports)
    # And the race really happened (claims were lost to the other worker)
    assert contended > 0


def _race(
    env: WorkerEnv,
    barrier: threading.Barrier,
    jitter: random.Random,
    rng: random.Random,
    out: list[RunReport],
) -> None:
    """One worker whose first claim waits until the other worker has read the same page too."""
    first = threading.Event()

    def hook(step: str, _entry: QueueEntry) -> None:
        if step != "claim":
            return
        if not first.is_set():
            first.set()
            barrier.wait()  # both have read the page; nothing is claimed yet
        time.sleep(jitter.random() * 0.002)

    out.append(env.worker(hook=hook, rng=rng).run())


def test_crashed_claim_runs_again_after_its_lease_with_the_same_key(env: WorkerEnv) -> None:
    # Given a task whose worker dies right after running it (before recording anything)
    due = env.now() + timedelta(minutes=2)
    task = env.editor.schedule_at("record", due)
    env.travel_to(due)

    def die_after_run(step: str, entry: QueueEntry) -> None:
        if step == "ran":
            raise Crash

    with pytest.raises(Crash):
        env.run(hook=die_after_run)
    assert len(RECORDER.calls[task.id]) == 1
    # When another worker comes before the lease expired, it leaves the occurrence alone
    report = env.run(remaining_seconds=20)
    assert len(RECORDER.calls[task.id]) == 1
    # And the lease's end, too close to arm for, is handed to a fresh invocation, with the rule
    # armed as its backstop: as the task's minute left it, it fires again after the lease's end (at
    # that minute's backstop), no later than a backstop may (I2)
    lease_end = due + timedelta(seconds=60)
    assert report.outcome == "reinvoked"
    timing = env.runtime.rule_sync.timing
    current = env.runtime.rule.current()
    assert isinstance(current, datetime)
    firing = timing.next_firing(current, env.now())
    assert firing is not None and lease_end <= firing <= timing.latest_backstop(lease_end, env.now())
    # When a worker comes after the lease
    env.travel_to(due + timedelta(seconds=61))
    env.run()
    # Then the occurrence ran again, with the same idempotency key, and finished
    keys = RECORDER.keys(task.id)
    assert len(keys) == 2 and keys[0] == keys[1] == f"{task.id}:{due.isoformat().replace('+00:00', 'Z')}"
    record = env.runtime.store.get_task(task.id)
    assert record.status == "succeeded" and env.entries_of(task.id) == []


STEPS = ["claim", "claimed", "task-read", "ran", "entry-put", "task-replaced", "entry-deleted"]
# Deliveries of the crashed occurrence in total, by the step the worker died at.
DELIVERED_TWICE = {"ran", "entry-put"}


@pytest.mark.parametrize("client_id", [False, True], ids=["home-item", "client-id"])
@pytest.mark.parametrize("kind", ["once", "every"])
def test_crash_at_each_step_boundary_loses_nothing(env: WorkerEnv, kind: str, client_id: bool) -> None:
    for step in STEPS:
        if kind == "once" and step == "entry-put":
            continue  # a succeeding one-shot writes no new entry
        if not client_id and step == "entry-deleted":
            continue  # a home item's entry ends in the task write
        RECORDER.reset()
        # Given a victim (in its home item, or under a client's id) and two bystanders due at the
        # same instant
        due = env.now() + timedelta(minutes=3)
        victim_id = f"victim-{step}" if client_id else None
        if kind == "once":
            victim = env.editor.schedule_at("record", due, id=victim_id)
        else:
            victim = env.editor.schedule_every("record", "10m", id=victim_id)
            due = victim.due
        others = [env.editor.schedule_at("record", due) for _ in range(2)]
        env.travel_to(due)

        def crash(at: str, entry: QueueEntry, step: str = step, victim_id: str = victim.id) -> None:
            if at == step and entry.task_id == victim_id:
                raise Crash

        # When the worker dies at this step while handling the victim
        with pytest.raises(Crash):
            env.run(hook=crash)
        # And a retry of the invocation arrives at once (async invokes are retried)
        env.run(remaining_seconds=20)
        # Then the bystanders ran exactly once, on time
        for other in others:
            [call] = RECORDER.calls[other.id]
            assert call.at == due, step
        # When a worker runs after the victim's lease
        env.travel_to(due + timedelta(seconds=61))
        env.run(remaining_seconds=20)
        # Then the victim's occurrence ran (again) with one idempotency key
        keys = RECORDER.keys(victim.id)
        expected = 2 if step in DELIVERED_TWICE else 1
        assert len(keys) == expected and len(set(keys)) == 1, step
        record = env.runtime.store.get_task(victim.id)
        assert record.runs >= 1, step
        if kind == "once":
            assert record.status == "succeeded" and env.entries_of(victim.id) == [], step
        else:
            assert record.status == "pending" and record.due == due + timedelta(minutes=10), step
            # The next occurrence runs exactly once (an orphan entry from the crash never runs)
            env.travel_to(record.due)
            env.run(remaining_seconds=20)
            nxt = [
                c
                for c in RECORDER.calls[victim.id]
                if c.envelope["scheduled_for"] != keys[0].split(":", 1)[1]
            ]
            assert len(nxt) == 1, step
            live = [e for e in env.entries_of(victim.id) if e.run_at <= env.now() + timedelta(minutes=10)]
            assert [e.token for e in live] == [env.runtime.store.get_task(victim.id).queue_token], step
            env.editor.cancel(victim.id)
