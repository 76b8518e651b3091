"""What the editor library answers (Task, its pages, runs and occurrences): also the API's response
models and the CLI's `--json`. What you send is in editor/inputs.py."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PlainSerializer, TypeAdapter

from nexttick.actions.base import idempotency_key
from nexttick.schedules import ScheduleKind, UpcomingRun
from nexttick.store.lateness import LatenessHistogram
from nexttick.store.records import PUBLIC_SHAPE, RunRecord, TaskFields, TaskRecord, TaskStatus

# The editor's answers are the public shape of the library, the HTTP API and the CLI's `--json`:
# pydantic renders them (`as_json`) and documents them (the API's OpenAPI document) from their
# declarations here and in the store's TaskFields, so a field is declared once.
# Public names where they differ from the record's (what the API and the CLI call them).
_PUBLIC_NAMES = {"schedule_kind": "schedule"}
RunResult = Literal["succeeded", "failed", "retrying", "skipped"]


@dataclass(kw_only=True)
class Task(TaskFields):
    """A task as users see it: its own fields, with `status` `running` while an occurrence holds a
    live lease, `timezone` and the DST policies only for a cron schedule, and the time a retry is
    scheduled for. `version` is also sent as the ETag."""

    __pydantic_config__ = ConfigDict(
        **PUBLIC_SHAPE,
        alias_generator=lambda name: _PUBLIC_NAMES.get(name, name),
        serialize_by_alias=True,
    )

    next_attempt_at: Annotated[
        datetime | None,
        Field(
            description="When the pending attempt starts, if not at `due`: a retry's time, or `due` "
            "plus its jitter (UTC)."
        ),
    ] = None
    run_now_at: Annotated[
        datetime | None,
        Field(description="A run-now occurrence is waiting (or retrying) for this time (UTC)."),
    ] = None
    # Only in a cancel's answer: whether an occurrence may still run (one a worker could already
    # have claimed completes and shows in `last_run`; nothing after it runs). Not part of equality
    # or of the rendered task: the cancelled task reads back equal to it (the API: 202/204).
    occurrence_may_run: Annotated[bool | None, Field(exclude=True)] = field(default=None, compare=False)

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


@dataclass(frozen=True)
class CreateResult:
    task: Task
    created: bool  # False when an identical create with the same client id returned the existing task


@dataclass(frozen=True)
class Page:
    """One page of tasks."""

    __pydantic_config__ = PUBLIC_SHAPE

    items: list[Task]
    next_cursor: Annotated[
        str | None, Field(description="Pass as `cursor` for the next page; null on the last page.")
    ]


@dataclass(frozen=True)
class Run:
    """One attempt of one occurrence, from the task's run history."""

    __pydantic_config__ = PUBLIC_SHAPE

    number: Annotated[
        int, Field(description="The task's run number, counting from 1; the newest is highest.")
    ]
    scheduled_for: Annotated[datetime, Field(description="The occurrence this attempt belongs to (UTC).")]
    run_at: Annotated[
        datetime, Field(description="When the attempt was due: the occurrence's time, or its retry's.")
    ]
    fired_at: Annotated[datetime, Field(description="When a worker claimed it.")]
    started_at: datetime
    finished_at: datetime
    attempt: int
    outcome: Annotated[
        RunResult,
        Field(
            description="`retrying`: this attempt failed and another is scheduled; `skipped`: started "
            "after the misfire grace, so not run."
        ),
    ]
    error: str | None
    idempotency_key: Annotated[
        str, Field(description="The key every attempt of this occurrence was delivered with.")
    ]
    lateness_seconds: Annotated[float, Field(description="`started_at` - `run_at`.")]

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
            outcome=record.outcome,  # type: ignore[arg-type]  # stored as the word
            error=record.error,
            idempotency_key=idempotency_key(record.task_id, record.scheduled_for),
            lateness_seconds=round(record.lateness_seconds, 6),
        )


@dataclass(frozen=True)
class Lateness:
    """Lateness over every kept run of the task (not only the page)."""

    __pydantic_config__ = PUBLIC_SHAPE

    runs: Annotated[int, Field(description="Runs kept (the newest `run_history` of the deployment).")]
    last_seconds: Annotated[float | None, Field(description="The newest run's lateness; null without runs.")]
    p99_seconds: Annotated[
        float | None, Field(description="99th percentile (nearest rank); null without runs.")
    ]

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
    """One page of a task's run history, newest first."""

    __pydantic_config__ = PUBLIC_SHAPE

    items: Annotated[list[Run], Field(description="Newest first.")]
    next_cursor: Annotated[
        str | None, Field(description="Pass as `cursor` for the next page; null on the last page.")
    ]
    lateness: Lateness


@dataclass(frozen=True)
class Upcoming:
    """One future occurrence."""

    __pydantic_config__ = PUBLIC_SHAPE

    scheduled_for: Annotated[
        datetime, Field(description="The occurrence's instant (UTC); its idempotency key's time.")
    ]
    run_at: Annotated[
        datetime, Field(description="When it starts: `scheduled_for` plus the task's jitter (UTC).")
    ]
    local: Annotated[
        datetime,
        # Its numeric offset even in UTC (+00:00): a wall time, read beside the zone's other ones.
        PlainSerializer(datetime.isoformat, return_type=str, when_used="json"),
        Field(description="`scheduled_for` on the wall clock of the task's zone, with its offset."),
    ]
    dst: Annotated[
        Literal["shifted", "repeated-first", "repeated-second"] | None,
        Field(
            description="`shifted`: its wall time fell in a DST gap and it runs after it (policy `shift`); "
            "`repeated-first` / `repeated-second`: its wall time occurs twice that day, this is that pass."
        ),
    ]
    skipped: Annotated[
        tuple[datetime, ...],
        Field(
            description="Wall times (local, no offset) a DST gap skipped since the occurrence before this "
            "one, under policy `skip`: they do not run."
        ),
    ]

    @classmethod
    def of(cls, run: UpcomingRun, run_at: datetime) -> Upcoming:
        dst = run.dst.value if run.dst else None
        return cls(run.at, run_at, run.local, dst, run.skipped)  # type: ignore[arg-type]


@dataclass(frozen=True)
class UpcomingRuns:
    """A task's next occurrences and the zone their `local` times are in."""

    __pydantic_config__ = PUBLIC_SHAPE

    timezone: Annotated[str, Field(description="The zone `local` is in (UTC except for cron schedules).")]
    items: Annotated[list[Upcoming], Field(description="Earliest first; empty once the task is finished.")]


@dataclass(frozen=True)
class Preview:
    """A dry-run create: the task as it would be, and its next occurrences. Nothing was written."""

    __pydantic_config__ = PUBLIC_SHAPE

    task: Task
    upcoming: list[Upcoming]


@dataclass(frozen=True)
class LatenessBucket:
    __pydantic_config__ = PUBLIC_SHAPE

    le_ms: Annotated[float | None, Field(description="Upper edge in ms (null: unbounded).")]
    count: int


@dataclass(frozen=True)
class LatenessWindow:
    """How late the runs of every task that started in [`since`, `until`) were, in fixed buckets.
    Percentiles and the maximum are bucket upper edges (an upper bound of the true value)."""

    __pydantic_config__ = PUBLIC_SHAPE

    since: datetime
    until: datetime
    runs: int
    mean_ms: float | None
    p50_ms: Annotated[
        float | None,
        Field(description="Upper edge of the bucket holding the median (null: none, or unbounded)."),
    ]
    p90_ms: float | None
    p99_ms: float | None
    max_ms: Annotated[float | None, Field(description="Upper edge of the highest non-empty bucket.")]
    late_over_1s: Annotated[int, Field(description="Runs that started more than 1 s late.")]
    buckets: list[LatenessBucket]

    @classmethod
    def of(cls, since: datetime, until: datetime, h: LatenessHistogram) -> LatenessWindow:
        def finite(ms: float | None) -> float | None:
            return None if ms is None or ms == float("inf") else ms

        return cls(
            since=since,
            until=until,
            runs=h.total,
            mean_ms=h.mean_ms,
            p50_ms=finite(h.percentile(50)),
            p90_ms=finite(h.percentile(90)),
            p99_ms=finite(h.percentile(99)),
            max_ms=finite(h.max_bound()),
            late_over_1s=h.late_over(1),
            buckets=[
                LatenessBucket(finite(edge), count) for edge, count in zip(h.edges, h.counts, strict=True)
            ],
        )


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def as_json(answer: Any) -> Any:
    """An editor answer (a Task, a page, ...) as JSON-ready data: RFC 3339 UTC times, enums as
    their values, public names. The payload is passed through, never recursed into by hand."""
    kind = type(answer)
    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind].dump_python(answer, mode="json")
