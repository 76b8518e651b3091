"""Pure completion rules: retries with backoff and jitter, misfire, recurrence advance, TTL."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nexttick.store.records import LastRun, TaskRecord, latest_run
from nexttick.worker import Attempt, RunOutcome, WorkerEvent, classify_event, plan_completion, retry_delay
from nexttick.worker.completion import (
    MAX_HISTORY_KEEP,
    Plan,
    history_expiry,
    misfired,
    record_only,
)

T0 = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
RETENTION = timedelta(days=7)


def task(**overrides: object) -> TaskRecord:
    fields: dict = dict(
        id="t1",
        action="log",
        payload={},
        status="pending",
        schedule_kind="once",
        due=T0,
        created_at=T0 - timedelta(days=1),
        updated_at=T0 - timedelta(days=1),
        version=3,
        queue_key="k",
        queue_token="tok",
    )
    fields.update(overrides)
    return TaskRecord(**fields)


def attempt(outcome: RunOutcome, n: int = 1, scheduled: datetime = T0, error: str | None = None) -> Attempt:
    started, finished = T0 + timedelta(seconds=2), T0 + timedelta(seconds=3)
    return Attempt(scheduled, n, started, finished, outcome, error, run_at=scheduled, fired_at=T0)


NOW = T0 + timedelta(seconds=3)


def plan(t: TaskRecord, a: Attempt, rng: random.Random | None = None) -> Plan:
    return plan_completion(t, a, NOW, retention=RETENTION, rng=rng or random.Random(1))


def test_one_shot_success_finishes_with_ttl_and_no_queue_pointer() -> None:
    p = plan(task(), attempt(RunOutcome.SUCCEEDED))
    r = p.record
    assert p.next_run is None and p.result == "succeeded"
    assert (r.status, r.due, r.queue_key, r.queue_token) == ("succeeded", None, None, None)
    assert r.runs == 1 and r.version == 4 and r.updated_at == NOW and r.expires_at == NOW + RETENTION
    assert r.last_run is not None
    assert r.last_run.outcome == "succeeded" and r.last_run.scheduled_for == T0 and r.last_run.attempt == 1


def test_failure_with_attempts_left_retries_the_same_occurrence() -> None:
    p = plan(task(max_attempts=3, retry_backoff_seconds=10), attempt(RunOutcome.FAILED, 2, error="boom"))
    assert p.result == "retrying" and p.next_run is not None
    assert p.next_run.scheduled_for == T0 and p.next_run.attempt == 3
    assert NOW + timedelta(seconds=1) <= p.next_run.run_at <= NOW + timedelta(seconds=20)
    r = p.record
    assert r.status == "pending" and r.due == T0 and r.attempts == 2 and r.runs == 1
    assert r.last_run is not None
    assert r.last_run.outcome == "retrying" and r.last_run.error == "boom" and r.expires_at is None


def test_exhausted_one_shot_fails_with_the_error_and_ttl() -> None:
    p = plan(task(max_attempts=2), attempt(RunOutcome.FAILED, 2, error="boom"))
    assert p.next_run is None and p.record.status == "failed"
    assert p.record.last_run is not None and p.record.last_run.error == "boom"
    assert p.record.attempts == 2 and p.record.expires_at == NOW + RETENTION


def test_misfired_one_shot_is_skipped_without_counting_a_run() -> None:
    t = task(misfire_grace_seconds=30)
    assert misfired(t, T0, T0 + timedelta(seconds=31)) and not misfired(t, T0, T0 + timedelta(seconds=30))
    assert not misfired(task(), T0, T0 + timedelta(days=9))
    p = plan(t, attempt(RunOutcome.SKIPPED, error="misfire"))
    assert p.record.status == "skipped" and p.record.runs == 0 and p.record.expires_at == NOW + RETENTION


def test_a_retry_that_would_start_after_the_misfire_deadline_ends_failed() -> None:
    t = task(max_attempts=5, retry_backoff_seconds=3600, misfire_grace_seconds=5)
    p = plan(t, attempt(RunOutcome.FAILED, 1, error="boom"), rng=random.Random(3))
    assert p.next_run is None and p.record.status == "failed"


def test_recurring_advances_from_the_scheduled_time_and_coalesces() -> None:
    t = task(schedule_kind="every", every_seconds=600.0)
    # the worker is 3 occurrences and a bit late: one run, next is the first one after now
    late = T0 + timedelta(minutes=31)
    p = plan_completion(t, attempt(RunOutcome.SUCCEEDED), late, retention=RETENTION, rng=random.Random(1))
    assert p.next_run is not None and p.next_run.run_at == T0 + timedelta(minutes=40)
    assert (
        p.record.due == T0 + timedelta(minutes=40) and p.record.attempts == 0 and p.record.status == "pending"
    )


def test_recurring_failure_exhausted_moves_on_and_end_finishes() -> None:
    t = task(schedule_kind="cron", cron="0 * * * *", max_attempts=1)
    p = plan(t, attempt(RunOutcome.FAILED, error="boom"))
    assert p.result == "failed" and p.record.due == T0 + timedelta(hours=1) and p.record.status == "pending"
    ended = plan(
        task(schedule_kind="cron", cron="0 * * * *", end=T0 + timedelta(minutes=59)),
        attempt(RunOutcome.SUCCEEDED),
    )
    assert (
        ended.next_run is None and ended.record.status == "succeeded" and ended.record.expires_at is not None
    )


def test_a_stored_cron_that_is_now_refused_ends_the_series_failed_with_the_reason() -> None:
    # Given a cron task stored when a wrap-around range (croniter's 23,0,1) was still accepted
    t = task(schedule_kind="cron", cron="0 23-1 * * *")
    # When its occurrence succeeds
    p = plan(t, attempt(RunOutcome.SUCCEEDED))
    # Then the series ends failed, saying why, instead of running with another meaning
    assert p.next_run is None
    assert p.record.status == "failed"
    assert p.record.last_run is not None and "runs backwards" in (p.record.last_run.error or "")


def test_recurring_retry_never_reaches_the_next_occurrence() -> None:
    t = task(schedule_kind="every", every_seconds=5.0, max_attempts=3, retry_backoff_seconds=60)
    p = plan(t, attempt(RunOutcome.FAILED, error="boom"), rng=random.Random(0))
    if p.next_run is not None and p.result == "retrying":
        assert p.next_run.run_at < T0 + timedelta(seconds=5)
    else:
        assert p.record.due == T0 + timedelta(seconds=5)


def test_record_only_keeps_the_schedule_fields() -> None:
    t = task(status="cancelled", due=None, queue_key=None, queue_token=None)
    r = record_only(t, attempt(RunOutcome.SUCCEEDED), NOW)
    assert (r.status, r.due, r.queue_key, r.queue_token) == ("cancelled", None, None, None)
    assert (
        r.runs == 1
        and r.last_run is not None
        and r.last_run.outcome == "succeeded"
        and r.version == t.version + 1
    )


@pytest.mark.parametrize("n", [1, 2, 5, 12])
def test_retry_delay_is_full_jitter_within_exponential_bounds(n: int) -> None:
    rng = random.Random(n)
    delays = [retry_delay(10.0, n, rng) for _ in range(500)]
    cap = 10.0 * 2 ** (n - 1)
    assert all(1.0 <= d <= cap for d in delays)
    assert max(delays) > cap * 0.8 and min(delays) < max(1.0, cap * 0.2)  # spread over the range
    assert retry_delay(0.0, 3, rng) == 0.0 and retry_delay(1e9, 99, rng) <= 7 * 86400


def test_events_are_classified() -> None:
    assert classify_event({"source": "aws.events", "detail-type": "Scheduled Event"}) is WorkerEvent.SCHEDULED
    assert classify_event({"source": "nexttick", "action": "wake", "reason": "x"}) is WorkerEvent.WAKE
    assert classify_event({"source": "nexttick", "action": "sync"}) is WorkerEvent.SYNC
    others: list[Any] = [{}, {"source": "nexttick", "action": "drop"}, {"source": "aws.s3"}, [], "x", None]
    for other in others:
        assert classify_event(other) is WorkerEvent.UNKNOWN


def test_the_task_item_keeps_the_newest_run_whole_numbered_after_the_one_before() -> None:
    a = attempt(RunOutcome.FAILED, n=2, error="x" * 5000)
    a = Attempt(
        a.scheduled_for, 2, a.started_at, a.finished_at, a.outcome, a.error, T0 + timedelta(seconds=1), T0
    )
    record = plan(task(run_seq=7, max_attempts=3), a).record
    run = latest_run(TaskRecord(**{**record.__dict__, "run_seq": 8}))
    assert run is not None
    assert (run.task_id, run.seq, run.attempt, run.outcome) == ("t1", 8, 2, "retrying")
    assert (run.scheduled_for, run.run_at, run.fired_at) == (T0, T0 + timedelta(seconds=1), T0)
    assert run.lateness_seconds == 1.0  # started at T0 + 2 s, due at T0 + 1 s
    assert run.error is not None and len(run.error) == 1000


def test_a_last_run_written_before_items_kept_whole_runs_is_left_to_the_ring() -> None:
    # Given a task item whose last run has no entry or claim time (an older release's)
    older = LastRun(started_at=T0, finished_at=T0, outcome="succeeded", scheduled_for=T0)
    # Then it is not read as a run of its own: that release wrote it to the ring as well
    assert latest_run(task(run_seq=4, last_run=older)) is None
    assert latest_run(task()) is None


@pytest.mark.parametrize(
    ("next_due", "slots", "kept"),
    [
        (None, 100, RETENTION),  # one-shot or last run: the retention period
        (T0, 100, RETENTION),  # a retry of the same occurrence
        (T0 + timedelta(minutes=1), 100, RETENTION),  # the ring turns over within the retention
        (T0 + timedelta(days=1), 100, timedelta(days=100)),  # daily: 100 runs back
        (T0 + timedelta(days=365), 100, MAX_HISTORY_KEEP),  # yearly: capped
    ],
)
def test_a_run_record_expires_after_the_retention_or_when_its_ring_would_turn_over(
    next_due: datetime | None, slots: int, kept: timedelta
) -> None:
    run = latest_run(plan(task(run_seq=1), attempt(RunOutcome.SUCCEEDED)).record)
    assert run is not None
    assert history_expiry(run, next_due, retention=RETENTION, slots=slots) == run.finished_at + kept
