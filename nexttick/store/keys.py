"""Key layout of the single table (docs/architecture.md, "Data model")."""

from __future__ import annotations

import zlib
from datetime import datetime

from nexttick.constants import QUEUE_PK_PREFIX, RUN_SK_PREFIX, TASK_PK_PREFIX
from nexttick.timeutil import format_instant, parse_stored_instant


def task_pk(task_id: str) -> str:
    return f"{TASK_PK_PREFIX}{task_id}"


def shard_of(task_id: str, shards: int) -> int:
    """Stable shard of a task's queue entries (crc32: the same in every process and release)."""
    return zlib.crc32(task_id.encode()) % shards


def queue_pk(shard: int) -> str:
    return f"{QUEUE_PK_PREFIX}{shard:03d}"


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


def run_sort_key(slot: int) -> str:
    """`R#<slot>`: a run record's place in its task's ring (sorts before the task's own `T`)."""
    return f"{RUN_SK_PREFIX}{slot:04d}"
