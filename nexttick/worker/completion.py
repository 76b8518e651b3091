"""What a finished attempt does to its task — pure functions, no I/O (unit-tested directly).

* one-shot success → `succeeded`; failure with attempts left → a retry entry (exponential backoff
  with full jitter, same occurrence); attempts exhausted → `failed`; misfire → `skipped`.
  Finished one-shot tasks get `expires_at` (TTL) after the retention period.
* recurring → the next occurrence from the *scheduled* time (missed ones coalesce), or finished
  (`succeeded`) past `end`, or `failed` when a stored cron expression is one nexttick now refuses
  (an older release accepted it with another meaning; `nexttick doctor` lists them); a failure
  with attempts left retries first unless the retry would reach the next occurrence.
* a "run now" occurrence (`plan_extra`) is recorded and retried like any other, and changes
  nothing of the schedule. A task resumed with "each" runs the occurrences it missed one by one
  (`catch_up_until`) before coalescing again.
* every attempt is recorded whole in the task's `last_run`; the worker moves the run it replaces
  into the task's ring of runs, where it expires `retention` after the run, or — for a recurring
  task — when the ring would have overwritten it at the schedule's pace, whichever is later
  (`history_expiry`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from nexttick.cron import CronError
from nexttick.schedules import ScheduleKind
from nexttick.store.records import (
    LastRun,
    Occurrence,
    RunRecord,
    TaskRecord,
    TaskStatus,
    occurrence_of,
    recurrence_of,
)

MIN_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 7 * 86400.0
MAX_ERROR_CHARS = 1000
# However slow a schedule, a run record is gone after this long (a yearly cron keeps about 10 runs).
MAX_HISTORY_KEEP = timedelta(days=3660)


class RunOutcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Attempt:
    """What happened to one attempt of one occurrence."""

    scheduled_for: datetime
    attempt: int
    started_at: datetime
    finished_at: datetime
    outcome: RunOutcome
    error: str | None = None
    run_at: datetime | None = None  # its queue entry's instant (a retry's own time)
    fired_at: datetime | None = None  # the worker claimed it


@dataclass(frozen=True)
class Plan:
    record: TaskRecord  # the task to write (queue_key/queue_token still to be set if next_run)
    next_run: Occurrence | None
    result: str  # succeeded | failed | retrying | skipped (last_run.outcome)


def misfire_deadline(task: TaskRecord, scheduled_for: datetime) -> datetime | None:
    """The latest start allowed by `misfire_grace_seconds`, counted from the occurrence's jittered
    start (None: no deadline)."""
    if task.misfire_grace_seconds is None:
        return None
    return occurrence_of(task, scheduled_for).run_at + timedelta(seconds=task.misfire_grace_seconds)


def misfired(task: TaskRecord, scheduled_for: datetime, start: datetime) -> bool:
    deadline = misfire_deadline(task, scheduled_for)
    return deadline is not None and start > deadline


def retry_delay(backoff_seconds: float, attempt: int, rng: random.Random) -> float:
    """Full jitter: uniform in [0, backoff * 2^(attempt-1)], at least 1 s (or the whole base when
    it is below 1 s), at most a week."""
    base = min(MAX_RETRY_SECONDS, backoff_seconds * 2 ** min(attempt - 1, 30))
    return max(min(MIN_RETRY_SECONDS, base), rng.uniform(0, base))


def _last_run(a: Attempt, result: str) -> LastRun:
    return LastRun(
        started_at=a.started_at,
        finished_at=a.finished_at,
        outcome=result,
        error=a.error[:MAX_ERROR_CHARS] if a.error else None,
        scheduled_for=a.scheduled_for,
        attempt=a.attempt,
        run_at=a.run_at,
        fired_at=a.fired_at,
    )


def record_only(task: TaskRecord, a: Attempt, now: datetime) -> TaskRecord:
    """The task was rescheduled / cancelled while the attempt ran: record the run, touch nothing
    of its schedule (never resurrect the old one)."""
    result = a.outcome.value
    return replace(
        task,
        runs=task.runs + (0 if a.outcome is RunOutcome.SKIPPED else 1),
        last_run=_last_run(a, result),
        version=task.version + 1,
        updated_at=now,
    )


def plan_completion(
    task: TaskRecord, a: Attempt, now: datetime, *, retention: timedelta, rng: random.Random
) -> Plan:
    """The new task record (and next queue entry, if any) after attempt `a` of a pending task."""
    ran = a.outcome is not RunOutcome.SKIPPED
    base = replace(task, runs=task.runs + (1 if ran else 0), version=task.version + 1, updated_at=now)
    recurring = task.schedule_kind is not ScheduleKind.ONCE
    next_due: datetime | None = None
    schedule_error: str | None = None
    try:
        if recurring and task.catch_up_until is not None and a.scheduled_for < task.catch_up_until:
            next_due = recurrence_of(task).next_after(a.scheduled_for)  # resumed with "each": one by one
        elif recurring:
            next_due = recurrence_of(task).next_due_from(a.scheduled_for, now)
    except CronError as error:  # stored before nexttick refused its expression: the series ends failed
        schedule_error = error.message
    if next_due is not None and task.end is not None and next_due > task.end:
        next_due = None
    if task.catch_up_until is not None and (next_due is None or next_due > task.catch_up_until):
        base = replace(base, catch_up_until=None)

    if a.outcome is RunOutcome.FAILED and a.attempt < task.max_attempts:
        retry_at = now + timedelta(seconds=retry_delay(task.retry_backoff_seconds, a.attempt, rng))
        deadline = misfire_deadline(task, a.scheduled_for)
        if (deadline is None or retry_at <= deadline) and (next_due is None or retry_at < next_due):
            record = replace(base, due=a.scheduled_for, attempts=a.attempt, last_run=_last_run(a, "retrying"))
            return Plan(record, Occurrence(retry_at, a.scheduled_for, a.attempt + 1), "retrying")

    result = a.outcome.value
    if next_due is not None:  # recurring: on to the next occurrence, whatever this one did
        record = replace(base, due=next_due, attempts=0, last_run=_last_run(a, result))
        return Plan(record, occurrence_of(task, next_due), result)

    status = TaskStatus(result) if not recurring else TaskStatus.SUCCEEDED  # a finished series succeeded
    last_run = _last_run(a, result)
    if schedule_error is not None:
        status, last_run = TaskStatus.FAILED, replace(last_run, error=schedule_error)
    record = replace(
        base,
        status=status,
        due=None,
        queue_key=None,
        queue_token=None,
        attempts=a.attempt if ran else task.attempts,
        last_run=last_run,
        expires_at=now + retention,
    )
    return Plan(record, None, result)


def history_expiry(
    run: RunRecord, next_due: datetime | None, *, retention: timedelta, slots: int
) -> datetime:
    """When a run record expires: `retention` after the run, or later for a recurring task whose
    ring covers more than that (`slots` runs at the pace of this occurrence to `next_due`)."""
    keep = retention
    if next_due is not None and next_due > run.scheduled_for:
        keep = max(keep, (next_due - run.scheduled_for) * slots)
    return run.finished_at + min(keep, MAX_HISTORY_KEEP)


def plan_extra(
    task: TaskRecord, a: Attempt, now: datetime, *, retention: timedelta, rng: random.Random
) -> Plan:
    """After attempt `a` of a "run now" occurrence: recorded like any run (retried while attempts
    are left), and the task's schedule left exactly as it is — except that a failed task whose
    retry succeeded has succeeded."""
    ran = a.outcome is not RunOutcome.SKIPPED
    base = replace(task, runs=task.runs + (1 if ran else 0), version=task.version + 1, updated_at=now)
    if a.outcome is RunOutcome.FAILED and a.attempt < task.max_attempts:
        retry_at = now + timedelta(seconds=retry_delay(task.retry_backoff_seconds, a.attempt, rng))
        deadline = misfire_deadline(task, a.scheduled_for)
        if deadline is None or retry_at <= deadline:
            record = replace(base, last_run=_last_run(a, "retrying"))
            return Plan(record, Occurrence(retry_at, a.scheduled_for, a.attempt + 1), "retrying")
    result = a.outcome.value
    record = replace(base, last_run=_last_run(a, result), extra_key=None, extra_token=None)
    if task.status == TaskStatus.FAILED and a.outcome is RunOutcome.SUCCEEDED:
        record = replace(record, status=TaskStatus.SUCCEEDED, expires_at=now + retention)
    return Plan(record, None, result)
