"""Public types of the editor library: what you send (TaskSpec, TaskChanges), what you get (Task)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any

from nexttick.store.records import LastRun
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

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not UNSET}


@dataclass(frozen=True)
class Task:
    """A task as seen by users (`running` is reported while an occurrence holds a live lease)."""

    id: str
    action: str
    payload: dict[str, Any]
    status: str
    schedule: str  # once | cron | every
    due: datetime | None
    cron: str | None
    timezone: str | None
    every_seconds: float | None
    end: datetime | None
    next_attempt_at: datetime | None
    max_attempts: int
    retry_backoff_seconds: float
    misfire_grace_seconds: float | None
    attempts: int
    runs: int
    last_run: LastRun | None
    version: int
    created_at: datetime
    updated_at: datetime

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with RFC 3339 UTC timestamps. Shallow: the payload is JSON already and is
        passed through, so reading a task never recurses over a client's nesting."""
        body = {f.name: _json_value(getattr(self, f.name)) for f in fields(self)}
        if self.last_run is not None:
            body["last_run"] = {
                f.name: _json_value(getattr(self.last_run, f.name)) for f in fields(self.last_run)
            }
        return body


def _json_value(value: Any) -> Any:
    return rfc3339(value) if isinstance(value, datetime) else value


@dataclass(frozen=True)
class CreateResult:
    task: Task
    created: bool  # False when an identical create with the same client id returned the existing task


@dataclass(frozen=True)
class Page:
    items: list[Task]
    next_cursor: str | None
