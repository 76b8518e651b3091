"""What you send to the editor library: a task to create (TaskSpec) and a change (TaskChanges)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any

from nexttick.timeutil import format_instant

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
