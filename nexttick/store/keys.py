"""Key layout of the single table (docs/architecture.md, "Data model")."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

from nexttick.constants import (
    LATENESS_PK_PREFIX,
    PARKED_PK_PREFIX,
    QUEUE_PK_PREFIX,
    RUN_SK_PREFIX,
    TASK_PK_PREFIX,
)
from nexttick.timeutil import format_instant, parse_stored_instant


def task_pk(task_id: str) -> str:
    return f"{TASK_PK_PREFIX}{task_id}"


def shard_of(task_id: str, shards: int) -> int:
    """Stable shard of a task's queue entries (crc32: the same in every process and release)."""
    return zlib.crc32(task_id.encode()) % shards


def queue_pk(shard: int, *, parked: bool = False) -> str:
    """A queue shard's partition, or with `parked` its twin that holds paused tasks' entries."""
    return f"{PARKED_PK_PREFIX if parked else QUEUE_PK_PREFIX}{shard:03d}"


def queue_sort_key(run_at: datetime, task_id: str, token: str) -> str:
    """`<run_at>#<id>#<token>`: due order first, and unique per entry (the token is fresh for every
    entry), so no entry's write can land on another's key. Task ids cannot contain `#`."""
    return f"{format_instant(run_at)}#{task_id}#{token}"


def split_queue_sort_key(key: str) -> tuple[datetime, str]:
    """(run time, task id) of a sort key. Also reads `<run_at>#<id>`, the form written before
    entries carried their token in the key (saved local-stack state still holds it)."""
    instant, _, rest = key.partition("#")
    return parse_stored_instant(instant), rest.partition("#")[0]


def upper_bound_for(instant: datetime) -> str:
    """A sort key greater than every entry due at or before `instant` ('$' sorts after '#')."""
    return f"{format_instant(instant)}$"


def cursor_at(instant: datetime) -> str:
    """A shard cursor at `instant`: sorts before every entry due at or after it."""
    return format_instant(instant)


def run_sort_key(slot: int) -> str:
    """`R#<slot>`: a run record's place in its task's ring (sorts before the task's own `T`)."""
    return f"{RUN_SK_PREFIX}{slot:04d}"


def lateness_key(minute: datetime) -> tuple[str, str]:
    """(`L#<YYYY-MM-DDTHH>`, `<MM>`): a UTC minute's lateness histogram item; the hour's minutes
    share a partition, so one Query reads an hour."""
    utc = minute.astimezone(UTC)
    return f"{LATENESS_PK_PREFIX}{utc:%Y-%m-%dT%H}", f"{utc:%M}"
