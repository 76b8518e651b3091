"""Worker run loop against moto: completion, TTL, rule position, retries, misfire, recurrence."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from nexttick.config import NextTickSettings
from nexttick.ruletiming import Timing
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4)


def test_one_shot_runs_once_and_finishes_with_ttl(env: WorkerEnv) -> None:
    # Given a task due in 5 minutes
    due = env.now() + timedelta(minutes=5)
    task = env.editor.schedule_at("record", due, {"n": 1})
    # When the worker runs at its due time
    env.travel_to(due)
    report = env.run()
    # Then it ran once with the documented envelope, and is finished with a TTL
    [call] = RECORDER.calls[task.id]
    assert call.envelope == {
        "task_id": task.id,
        "action": "record",
        "payload": {"n": 1},
        "scheduled_for": "2030-01-07T09:05:30Z",
        "fired_at": "2030-01-07T09:05:30Z",
        "attempt": 1,
        "idempotency_key": f"{task.id}:2030-01-07T09:05:30Z",
    }
    record = env.runtime.store.get_task(task.id)
    assert record.status == "succeeded" and record.due is None and record.queue_key is None
    assert record.runs == 1 and record.last_run.outcome == "succeeded" and record.last_run.error is None
    assert record.expires_at == due + timedelta(days=env.runtime.settings.retention_days)
    assert env.entries_of(task.id) == []
    assert report.results["succeeded"] == 1
    # And the rule rests at the epoch: nothing is pending
    assert env.runtime.rule.current() is None


def test_nothing_runs_before_its_due_time_and_rule_points_at_next_head(env: WorkerEnv) -> None:
    # Given one task due now-ish and one far ahead
    soon = env.editor.schedule_in("record", 30)
    later_due = env.now() + timedelta(hours=2)
    later = env.editor.schedule_at("record", later_due)
    # When the worker runs 10 s before the first is due (it waits for it inside the invocation)
    env.run()
    # Then the first ran exactly at its due time, the second not at all
    [call] = RECORDER.calls[soon.id]
    assert call.at == soon.due
    assert RECORDER.calls[later.id] == []
    # And the rule is armed for the second (second mode: a minute plus margin ahead)
    timing: Timing = env.runtime.rule_sync.timing
    assert env.runtime.rule.current() == timing.fire_minute(later_due)


def test_misfire_beyond_grace_is_skipped_not_run(env: WorkerEnv) -> None:
    # Given a task with a 30 s misfire grace, and a worker that only gets to it 60 s late
    due = env.now() + timedelta(minutes=3)
    task = env.editor.schedule_at("record", due, misfire_grace_seconds=30)
    within = env.editor.schedule_at("record", due, misfire_grace_seconds=120)
    env.travel_to(due + timedelta(seconds=60))
    # When the worker runs
    report = env.run()
    # Then the first is skipped (never delivered), the other, still within grace, runs
    record = env.runtime.store.get_task(task.id)
    assert record.status == "skipped" and record.last_run.outcome == "skipped"
    assert "misfire" in record.last_run.error and record.runs == 0
    assert record.expires_at is not None
    assert RECORDER.calls[task.id] == []
    assert len(RECORDER.calls[within.id]) == 1
    assert report.results["skipped"] == 1 and report.results["succeeded"] == 1


def test_poison_task_retries_with_backoff_ends_failed_and_never_blocks_a_later_task(env: WorkerEnv) -> None:
    # Given a task whose action always fails (the PoC's poison task) and a later, healthy task
    t0 = env.now() + timedelta(minutes=5)
    poison = env.editor.schedule_at("fail", t0, max_attempts=3, retry_backoff_seconds=20)
    healthy_due = t0 + timedelta(seconds=15)
    healthy = env.editor.schedule_at("record", healthy_due)
    # When EventBridge fires for the armed minute and the worker follows the rule from then on, its
    # jittered backoff coming out at its maximum (so that no retry falls within a pool thread's
    # wake of the healthy task's instant: the travelling clock is shared, and a sleeper moving it
    # while a woken thread waits for the CPU would stamp that thread late)
    _follow_rule(env, until=t0 + timedelta(hours=1), rng=_MaxJitter())
    # Then the healthy task started exactly at its due time, between the poison task's attempts
    [call] = RECORDER.calls[healthy.id]
    assert call.at == healthy_due
    # And the poison task was tried max_attempts times, the backoff doubling each time, then failed
    attempts = RECORDER.calls[poison.id]
    assert [c.envelope["attempt"] for c in attempts] == [1, 2, 3]
    assert len({c.envelope["idempotency_key"] for c in attempts}) == 1
    assert [c.at for c in attempts] == [t0, t0 + timedelta(seconds=20), t0 + timedelta(seconds=60)]
    assert attempts[0].at < call.at < attempts[1].at
    record = env.runtime.store.get_task(poison.id)
    assert record.status == "failed" and record.attempts == 3 and record.runs == 3
    assert "poison" in record.last_run.error and record.last_run.outcome == "failed"
    assert record.expires_at is not None
    # And nothing stalls: the rule is back at the epoch
    assert env.runtime.rule.current() is None


def test_retrying_is_visible_on_the_task(env: WorkerEnv) -> None:
    due = env.now() + timedelta(minutes=2)
    task = env.editor.schedule_at("fail", due, max_attempts=2, retry_backoff_seconds=60)
    env.travel_to(due)
    # When the attempt fails and the jittered backoff comes out at its maximum (60 s), more than
    # this invocation has left
    report = env.run(remaining_seconds=30, rng=_MaxJitter())
    # Then the task shows the retry
    assert report.outcome == "reinvoked"  # the retry is too close to arm: a fresh invocation waits
    record = env.runtime.store.get_task(task.id)
    assert record.status == "pending" and record.attempts == 1
    assert record.last_run.outcome == "retrying" and "poison" in record.last_run.error
    assert record.due == due  # the occurrence keeps its scheduled time; the entry holds the retry time
    [entry] = env.entries_of(task.id)
    assert (
        entry.attempt == 2
        and entry.scheduled_for == due
        and due < entry.run_at <= due + timedelta(seconds=60)
    )


def test_every_advances_from_scheduled_time_without_drift(env: WorkerEnv) -> None:
    # Given a task every 10 minutes
    task = env.editor.schedule_every("record", "10m")
    first = task.due
    # When the worker runs 7 s late each time
    for n in range(3):
        env.travel_to(first + timedelta(minutes=10 * n, seconds=7))
        env.run(remaining_seconds=30)
    # Then each occurrence was scheduled exactly 10 minutes after the previous one
    scheduled = [c.envelope["scheduled_for"] for c in RECORDER.calls[task.id]]
    expected = [first + timedelta(minutes=10 * n) for n in range(3)]
    assert scheduled == [e.isoformat().replace("+00:00", "Z") for e in expected]
    record = env.runtime.store.get_task(task.id)
    assert record.due == first + timedelta(minutes=30) and record.status == "pending" and record.runs == 3
    assert len(env.entries_of(task.id)) == 1


def test_outage_coalesces_missed_occurrences_into_one_run(env: WorkerEnv) -> None:
    # Given an hourly cron in Berlin time
    task = env.editor.schedule_cron("record", "0 * * * *", timezone="Europe/Berlin")
    # When the worker was down for 5 hours and 20 minutes
    env.travel_to(task.due + timedelta(hours=5, minutes=20))
    env.run(remaining_seconds=30)
    # Then the missed occurrences ran once, and the next is the next top of the hour
    assert len(RECORDER.calls[task.id]) == 1
    record = env.runtime.store.get_task(task.id)
    assert record.due == task.due + timedelta(hours=6)


def test_cron_in_a_time_zone_across_dst(env: WorkerEnv) -> None:
    # Given a daily 02:30 Berlin cron, around the spring-forward (30 Mar) and fall-back (26 Oct) 2030
    env.travel_to(datetime(2030, 3, 29, 12, 0, tzinfo=UTC))
    spring = env.editor.schedule_cron("record", "30 2 * * *", timezone="Europe/Berlin")
    # When the worker follows the rule for four days
    _follow_rule(env, until=datetime(2030, 4, 2, 12, 0, tzinfo=UTC))
    # Then 31 March (02:30 does not exist in Berlin) did not fire
    fired = [c.envelope["scheduled_for"] for c in RECORDER.calls[spring.id]]
    assert fired == ["2030-03-30T01:30:00Z", "2030-04-01T00:30:00Z", "2030-04-02T00:30:00Z"]
    env.editor.cancel(spring.id)

    # And across fall-back, the repeated 02:30 fires once
    env.travel_to(datetime(2030, 10, 25, 12, 0, tzinfo=UTC))
    autumn = env.editor.schedule_cron("record", "30 2 * * *", timezone="Europe/Berlin")
    _follow_rule(env, until=datetime(2030, 10, 28, 12, 0, tzinfo=UTC))
    fired = [c.envelope["scheduled_for"] for c in RECORDER.calls[autumn.id]]
    assert fired == ["2030-10-26T00:30:00Z", "2030-10-27T00:30:00Z", "2030-10-28T01:30:00Z"]


def test_end_is_respected(env: WorkerEnv) -> None:
    # Given an hourly task that ends 2.5 hours from now
    task = env.editor.schedule_every("record", "1h", end=env.now() + timedelta(hours=2, minutes=30))
    # When the worker follows the rule for a day
    _follow_rule(env, until=env.now() + timedelta(days=1))
    # Then it ran twice and finished
    assert len(RECORDER.calls[task.id]) == 2
    record = env.runtime.store.get_task(task.id)
    assert record.status == "succeeded" and record.due is None and record.expires_at is not None
    assert env.entries_of(task.id) == [] and env.runtime.rule.current() is None


@pytest.mark.parametrize("change", ["reschedule", "cancel", "payload"])
def test_change_during_a_running_occurrence_never_resurrects_the_old_schedule(
    env: WorkerEnv, change: str
) -> None:
    # Given a recurring task whose occurrence is running
    task = env.editor.schedule_every("record", "10m")
    new_due = env.now() + timedelta(days=2)

    def during(_: dict) -> None:
        if change == "reschedule":
            env.editor.reschedule(task.id, due=new_due)
        elif change == "cancel":
            env.editor.cancel(task.id)
        else:
            env.editor.update(task.id, payload={"patched": True})

    RECORDER.during[task.id] = during
    env.travel_to(task.due)
    # When the worker completes the occurrence
    env.run(remaining_seconds=30)
    record = env.runtime.store.get_task(task.id)
    # Then the run is recorded ...
    assert record.runs == 1 and record.last_run.outcome == "succeeded"
    entries = env.entries_of(task.id)
    # ... and the schedule is the one the editor set, not the old one advanced
    if change == "reschedule":
        assert record.status == "pending" and record.due == new_due and record.schedule_kind == "once"
        assert [(e.run_at, e.token) for e in entries] == [(new_due, record.queue_token)]
    elif change == "cancel":
        assert record.status == "cancelled" and record.due is None and entries == []
    else:  # a payload patch keeps the schedule: the next occurrence follows from the fresh record
        assert record.payload == {"patched": True} and record.due == task.due + timedelta(minutes=10)
        assert [e.token for e in entries] == [record.queue_token]


def test_remaining_time_watch_hands_off_and_the_rest_is_picked_up(env: WorkerEnv) -> None:
    # Given 15 tasks due now whose action takes 1 s each, and a worker with 20 s left (margin 10 s)
    due = env.now() + timedelta(minutes=2)
    tasks = [env.editor.schedule_at("record", due) for _ in range(15)]
    for t in tasks:
        RECORDER.during[t.id] = lambda _e: env.clock.traveller.shift(1)
    env.travel_to(due)
    env.runtime.settings.pool_size = 1
    # When it runs
    report = env.worker(remaining_seconds=20).run()
    # Then it stopped claiming in time and re-invoked itself for the rest
    ran = sum(len(RECORDER.calls[t.id]) for t in tasks)
    assert 0 < ran < 15
    assert report.outcome == "reinvoked" and env.runtime.trigger.reasons[-1] == "continue"
    # And the re-invoked worker picks up the rest at once
    env.run()
    assert all(len(RECORDER.calls[t.id]) == 1 for t in tasks)


class _MaxJitter(random.Random):
    def uniform(self, a: float, b: float) -> float:
        return b


def _follow_rule(env: WorkerEnv, until: datetime, rng: random.Random | None = None) -> None:
    """Emulated EventBridge: fire the armed minute (at its 30th second) until `until`."""
    for _ in range(500):
        armed = env.runtime.rule.current()
        if armed is None or armed > until:
            return
        env.travel_to(max(armed + timedelta(seconds=30), env.now()))
        env.run(remaining_seconds=300, rng=rng)
    raise AssertionError("rule never settled")


def test_a_head_beyond_the_invocation_is_waited_for_across_few_invocations(env: WorkerEnv) -> None:
    # Given a task due in 75 s (too close to arm) and workers that live 40 s each
    task = env.editor.schedule_at("record", env.now() + timedelta(seconds=75))
    invocations = 0
    # When each invocation re-invokes the next one
    while not RECORDER.calls[task.id]:
        invocations += 1
        assert invocations < 10, "re-invocation chain does not wait"
        report = env.run(remaining_seconds=40)
        assert report.outcome in ("reinvoked", "armed", "unchanged")
    # Then each invocation used its time (no rapid chain), and the task ran exactly on time
    assert invocations == 3
    assert [c.at for c in RECORDER.calls[task.id]] == [task.due]
