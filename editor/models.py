"""Public types of the editor library: what you send (TaskSpec, TaskChanges), what you get (Task)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from nexttick.actions.base import idempotency_key
from nexttick.schedules import ScheduleKind, UpcomingRun
from nexttick.store.lateness import LatenessHistogram
from nexttick.store.records import RunRecord, TaskFields, TaskRecord, TaskStatus
from nexttick.timeutil import format_instant, rfc3339

UNSET: Any = object()  # "field not given" in TaskChanges (None may be a meaningful value)


@dataclass
class TaskSpec:
    """A task to create. Exactly one of `due`, `delay_seconds`, `cron`, `every` must be given."""

    action: str
    due: str | datetime | None = None
    delay_seconds: float | None = None
    cron: str | None = None
    timezone: str | None = None
    every: str | float | timedelta | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    max_attempts: int = 3
    retry_backoff_seconds: float = 30.0
    misfire_grace_seconds: float | None = None
    end: str | datetime | None = None
    dst_skipped: str | None = None  # cron only: "skip" (default) or "shift"
    dst_repeated: str | None = None  # cron only: "first" (default), "last" or "both"
    jitter_seconds: float | None = None

    def canonical(self) -> dict[str, Any]:
        """The body as given, for comparing repeated creates under one client id. Shallow: the
        payload is not copied (nor recursed into) here."""
        body = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("due", "end"):
            if isinstance(body[key], datetime):
                body[key] = format_instant(body[key])
        if isinstance(body["every"], timedelta):
            body["every"] = body["every"].total_seconds()
        return {k: v for k, v in body.items() if v is not None}


@dataclass
class TaskChanges:
    """A change to a pending task; fields left UNSET are kept. At most one time field group."""

    due: Any = UNSET
    delay_seconds: Any = UNSET
    cron: Any = UNSET
    timezone: Any = UNSET
    every: Any = UNSET
    end: Any = UNSET
    payload: Any = UNSET
    max_attempts: Any = UNSET
    retry_backoff_seconds: Any = UNSET
    misfire_grace_seconds: Any = UNSET
    dst_skipped: Any = UNSET
    dst_repeated: Any = UNSET
    jitter_seconds: Any = UNSET

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not UNSET}


@dataclass(kw_only=True)
class Task(TaskFields):
    """A task as users see it: its own fields, with `status` `running` while an occurrence holds a
    live lease, `timezone` and the DST policies only for a cron schedule, and the time a retry is
    scheduled for."""

    next_attempt_at: datetime | None = None
    run_now_at: datetime | None = None  # a "run now" occurrence waits (or retries) for this time
    # Only in a cancel's answer: whether an occurrence may still run (one a worker could already
    # have claimed completes and shows in `last_run`; nothing after it runs). Not part of equality
    # or of `to_dict`: the cancelled task reads back equal to it.
    occurrence_may_run: bool | None = field(default=None, compare=False)

    @property
    def schedule(self) -> ScheduleKind:
        return self.schedule_kind

    @classmethod
    def of(
        cls,
        record: TaskRecord,
        *,
        status: TaskStatus,
        next_attempt_at: datetime | None,
        run_now_at: datetime | None = None,
    ) -> Task:
        own = {f.name: getattr(record, f.name) for f in fields(TaskFields)}
        cron = record.schedule_kind is ScheduleKind.CRON
        own.update(
            status=status,
            timezone=record.timezone if cron else None,
            dst_skipped=record.dst_skipped if cron else None,
            dst_repeated=record.dst_repeated if cron else None,
        )
        return cls(**own, next_attempt_at=next_attempt_at, run_now_at=run_now_at)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with RFC 3339 UTC timestamps, `schedule_kind` named `schedule`. Shallow:
        the payload is JSON already and is passed through, so reading a task never recurses over a
        client's nesting."""
        body = {_PUBLIC_NAMES.get(f.name, f.name): _json_value(getattr(self, f.name)) for f in fields(self)}
        del body["occurrence_may_run"]  # the cancel's side answer, not the task's (the API: 202/204)
        if self.last_run is not None:
            body["last_run"] = {
                f.name: _json_value(getattr(self.last_run, f.name)) for f in fields(self.last_run)
            }
        return body


# Public names where they differ from the record's (what the API and the CLI call them).
_PUBLIC_NAMES = {"schedule_kind": "schedule"}


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return rfc3339(value)
    return value.value if isinstance(value, Enum) else value


@dataclass(frozen=True)
class CreateResult:
    task: Task
    created: bool  # False when an identical create with the same client id returned the existing task


@dataclass(frozen=True)
class Page:
    items: list[Task]
    next_cursor: str | None


@dataclass(frozen=True)
class Run:
    """One attempt of one occurrence, from the task's run history: `number` counts the task's runs
    from 1. `lateness_seconds`: how long after its due instant (`run_at`: the occurrence's time, or
    a retry's) the attempt started."""

    number: int
    scheduled_for: datetime
    run_at: datetime
    fired_at: datetime
    started_at: datetime
    finished_at: datetime
    attempt: int
    outcome: str
    error: str | None
    idempotency_key: str
    lateness_seconds: float

    @classmethod
    def of(cls, record: RunRecord) -> Run:
        return cls(
            number=record.seq,
            scheduled_for=record.scheduled_for,
            run_at=record.run_at,
            fired_at=record.fired_at,
            started_at=record.started_at,
            finished_at=record.finished_at,
            attempt=record.attempt,
            outcome=record.outcome,
            error=record.error,
            idempotency_key=idempotency_key(record.task_id, record.scheduled_for),
            lateness_seconds=round(record.lateness_seconds, 6),
        )

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _json_value(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class Lateness:
    """Lateness over a task's kept runs: the newest run's, and the 99th percentile (nearest rank)."""

    runs: int
    last_seconds: float | None
    p99_seconds: float | None

    @classmethod
    def of(cls, runs: list[Run]) -> Lateness:
        """`runs` newest first."""
        if not runs:
            return cls(0, None, None)
        ordered = sorted(run.lateness_seconds for run in runs)
        rank = max(1, -(-99 * len(ordered) // 100))  # ceil(0.99 n)
        return cls(len(runs), runs[0].lateness_seconds, ordered[rank - 1])


@dataclass(frozen=True)
class RunPage:
    items: list[Run]
    next_cursor: str | None
    lateness: Lateness  # over every kept run, not only this page

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": [run.to_dict() for run in self.items],
            "next_cursor": self.next_cursor,
            "lateness": {f.name: getattr(self.lateness, f.name) for f in fields(self.lateness)},
        }


@dataclass(frozen=True)
class Upcoming:
    """One future occurrence: its scheduled instant, when it starts (`run_at`: with the task's
    jitter), the same instant on the wall clock of the task's zone, and its DST mark: `shifted`,
    `repeated-first`, `repeated-second`, or None; `skipped`: wall times the `skip` policy dropped
    since the occurrence before it."""

    scheduled_for: datetime
    run_at: datetime
    local: datetime
    dst: str | None
    skipped: tuple[datetime, ...]

    @classmethod
    def of(cls, run: UpcomingRun, run_at: datetime) -> Upcoming:
        return cls(run.at, run_at, run.local, run.dst.value if run.dst else None, run.skipped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheduled_for": rfc3339(self.scheduled_for),
            "run_at": rfc3339(self.run_at),
            "local": self.local.isoformat(),
            "dst": self.dst,
            "skipped": [wall.isoformat() for wall in self.skipped],
        }


@dataclass(frozen=True)
class UpcomingRuns:
    """A task's next occurrences and the zone their `local` times are in."""

    timezone: str
    items: list[Upcoming]

    def to_dict(self) -> dict[str, Any]:
        return {"timezone": self.timezone, "items": [run.to_dict() for run in self.items]}


@dataclass(frozen=True)
class Preview:
    """What a create would make, written nowhere: the task and its next occurrences."""

    task: Task
    upcoming: list[Upcoming]

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task.to_dict(), "upcoming": [run.to_dict() for run in self.upcoming]}


@dataclass(frozen=True)
class LatenessWindow:
    """How late every run that started in [`since`, `until`) was, in fixed buckets (all tasks).
    Percentiles and the maximum are bucket upper edges (an upper bound of the true value)."""

    since: datetime
    until: datetime
    histogram: LatenessHistogram

    def to_dict(self) -> dict[str, Any]:
        h = self.histogram

        def finite(ms: float | None) -> float | None:
            return None if ms is None or ms == float("inf") else ms

        return {
            "since": rfc3339(self.since),
            "until": rfc3339(self.until),
            "runs": h.total,
            "mean_ms": h.mean_ms,
            "p50_ms": finite(h.percentile(50)),
            "p90_ms": finite(h.percentile(90)),
            "p99_ms": finite(h.percentile(99)),
            "max_ms": finite(h.max_bound()),
            "late_over_1s": h.late_over(1),
            "buckets": [
                {"le_ms": finite(edge), "count": count} for edge, count in zip(h.edges, h.counts, strict=True)
            ],
        }
