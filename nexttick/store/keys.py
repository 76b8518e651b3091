"""Key layout of the single table (docs/architecture.md, "Data model")."""

from __future__ import annotations

import secrets
import zlib
from datetime import UTC, datetime, timedelta

from nexttick.constants import (
    LATENESS_PK_PREFIX,
    PARKED_PK_PREFIX,
    PAYLOAD_SK_PREFIX,
    QUEUE_PK_PREFIX,
    RUN_SK_PREFIX,
    TASK_PK_PREFIX,
    TASK_SK,
)
from nexttick.timeutil import format_instant, parse_stored_instant


def task_pk(task_id: str) -> str:
    return f"{TASK_PK_PREFIX}{task_id}"


# A generated task id names its home item: the queue entry of its first occurrence, which carries the
# task itself. `<12 base32hex digits: microseconds since the epoch of that occurrence><16 hex: its
# token>`, so the id alone gives the item's key, and ids sort by their first due time.
_HOME_DIGITS = 12
_HOME_TOKEN_CHARS = 16
_BASE32HEX = "0123456789abcdefghijklmnopqrstuv"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def new_home_id(run_at: datetime) -> str:
    """A fresh id for a task whose first occurrence (claimable at `run_at`) is its home item."""
    micros = (run_at - _EPOCH) // _MICROSECOND
    digits = "".join(_BASE32HEX[(micros >> (5 * i)) & 31] for i in reversed(range(_HOME_DIGITS)))
    return digits + secrets.token_hex(_HOME_TOKEN_CHARS // 2)


def is_home_id(task_id: str) -> bool:
    """Whether `task_id` has the form `new_home_id` gives (client ids of this form are refused)."""
    return (
        len(task_id) == _HOME_DIGITS + _HOME_TOKEN_CHARS
        and all(c in _BASE32HEX for c in task_id[:_HOME_DIGITS])
        and all(c in "0123456789abcdef" for c in task_id[_HOME_DIGITS:])
    )


def home_sort_key(task_id: str) -> str:
    """The sort key of a home id's home item: its first occurrence's entry key."""
    micros = 0
    for c in task_id[:_HOME_DIGITS]:
        micros = micros * 32 + _BASE32HEX.index(c)
    return queue_sort_key(_EPOCH + micros * _MICROSECOND, task_id, home_token(task_id))


def home_token(task_id: str) -> str:
    """The token of a home id's first entry (the home item's, while it is live)."""
    return task_id[_HOME_DIGITS:]


def is_home_key(key: str) -> bool:
    """Whether a queue sort key is a home item's (the entry that carries its task)."""
    task_id = key.split("#")[1] if key.count("#") == 2 else ""
    return is_home_id(task_id) and key == home_sort_key(task_id)


def task_key(task_id: str, shards: int) -> tuple[str, str]:
    """(partition, sort key) of the item that holds the task: its home item for a generated id,
    `T#<id>`/`T` for a client's."""
    if is_home_id(task_id):
        return queue_pk(shard_of(task_id, shards)), home_sort_key(task_id)
    return task_pk(task_id), TASK_SK


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


def payload_sort_key(ref: str) -> str:
    """`P#<ref>`: a large payload's own item, in its task's `T#<id>` partition (`ref`: its digest)."""
    return f"{PAYLOAD_SK_PREFIX}{ref}"


def run_sort_key(slot: int) -> str:
    """`R#<slot>`: a run record's place in its task's ring (sorts before the task's own `T`)."""
    return f"{RUN_SK_PREFIX}{slot:04d}"


def lateness_key(minute: datetime) -> tuple[str, str]:
    """(`L#<YYYY-MM-DDTHH>`, `<MM>`): a UTC minute's lateness histogram item; the hour's minutes
    share a partition, so one Query reads an hour."""
    utc = minute.astimezone(UTC)
    return f"{LATENESS_PK_PREFIX}{utc:%Y-%m-%dT%H}", f"{utc:%M}"
