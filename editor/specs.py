"""The values of a create, a change or a list query, checked against the limits of
nexttick.constants (the API's models declare the same ones; library callers never pass the API)
and parsed, each error naming its field."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from typing import Any

from nexttick.constants import (
    MAX_ATTEMPTS,
    MAX_MISFIRE_GRACE_SECONDS,
    MAX_PAGE_SIZE,
    MAX_PAYLOAD_BYTES,
    MAX_PAYLOAD_DEPTH,
    MAX_RETRY_BACKOFF_SECONDS,
    MAX_RUNS_PAGE_SIZE,
    MAX_SPAN_SECONDS,
    MIN_ATTEMPTS,
    MIN_EVERY_SECONDS,
    TASK_ID_PATTERN,
)
from nexttick.errors import PayloadTooLargeError, UnknownActionError, ValidationError
from nexttick.schedules import (
    MAX_UPCOMING,
    DstRepeated,
    DstSkipped,
    Recurrence,
    ScheduleKind,
    load_zone,
    parse_dst_repeated,
    parse_dst_skipped,
    validate_cron,
    validate_jitter,
)
from nexttick.store import TaskStatus
from nexttick.store.keys import is_home_id, split_queue_sort_key
from nexttick.timeutil import parse_duration, parse_instant

_TASK_ID = re.compile(TASK_ID_PATTERN)
LISTABLE_STATUSES = (TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.PAUSED)
# What `Editor.list` answers when no status is asked for: the tasks due to run, or running.
QUEUED_STATUSES = (TaskStatus.PENDING, TaskStatus.RUNNING)
TIME_FIELDS = ("due", "delay_seconds", "cron", "every")
# Fields that only a cron schedule takes: they shape its wall-clock times.
CRON_FIELDS = ("timezone", "dst_skipped", "dst_repeated")


def resolve_time(fields: dict[str, Any], now: datetime) -> tuple[ScheduleKind, Recurrence, datetime]:
    chosen = [k for k in TIME_FIELDS if fields.get(k) is not None]
    if len(chosen) != 1:
        name = chosen[1] if chosen[1:] else "due"
        raise ValidationError(f"{name}: give exactly one of due, delay_seconds, cron, every", field=name)
    kind_field = chosen[0]
    for name in CRON_FIELDS:
        if fields.get(name) is not None and kind_field != "cron":
            raise ValidationError(f"{name}: only applies to a cron schedule", field=name)
    if kind_field == "due":
        due = parse_instant(fields["due"], "due")
        return ScheduleKind.ONCE, Recurrence(ScheduleKind.ONCE), due
    if kind_field == "delay_seconds":
        delay = fields["delay_seconds"]
        if (
            isinstance(delay, bool)
            or not isinstance(delay, int | float)
            or not 0 <= delay <= MAX_SPAN_SECONDS
        ):
            raise ValidationError("delay_seconds: must be a number of seconds >= 0", field="delay_seconds")
        due = parse_instant(now + timedelta(seconds=delay), "delay_seconds")
        return ScheduleKind.ONCE, Recurrence(ScheduleKind.ONCE), due
    if kind_field == "cron":
        expression = validate_cron(fields["cron"])
        zone = fields.get("timezone") or "UTC"
        load_zone(zone)
        skipped, repeated = fields.get("dst_skipped"), fields.get("dst_repeated")
        recurrence = Recurrence(
            ScheduleKind.CRON,
            cron=expression,
            timezone=zone,
            dst_skipped=parse_dst_skipped(skipped) if skipped is not None else DstSkipped.SKIP,
            dst_repeated=parse_dst_repeated(repeated) if repeated is not None else DstRepeated.FIRST,
        )
        cron_due = recurrence.next_after(now)
        if cron_due is None:
            raise ValidationError("cron: expression never fires before 2200", field="cron")
        return ScheduleKind.CRON, recurrence, cron_due
    interval = parse_duration(fields["every"], "every")
    if not timedelta(seconds=MIN_EVERY_SECONDS) <= interval <= timedelta(seconds=MAX_SPAN_SECONDS):
        raise ValidationError("every: interval must be between 1s and 200 years", field="every")
    recurrence = Recurrence(ScheduleKind.EVERY, every_seconds=interval.total_seconds())
    return ScheduleKind.EVERY, recurrence, parse_instant(now + interval, "every")


def check_task_id(task_id: Any) -> None:
    if not isinstance(task_id, str) or not _TASK_ID.match(task_id):
        raise ValidationError(f"id: must match {TASK_ID_PATTERN[1:-1]}", field="id")
    if is_home_id(task_id):
        raise ValidationError(
            "id: 12 base32hex digits and 16 hex digits is the form of generated ids; choose another",
            field="id",
        )


def check_action(action: Any, actions: Collection[str]) -> None:
    if not isinstance(action, str) or not action:
        raise ValidationError("action: required, the name of a configured action", field="action")
    if action not in actions:
        known = ", ".join(sorted(actions)) or "none configured"
        raise UnknownActionError(f"action: unknown action {action!r} (known: {known})", field="action")


def check_payload(payload: Any) -> dict[str, Any]:
    if payload is None:
        return {}
    if not isinstance(payload, dict):
        raise ValidationError("payload: must be a JSON object", field="payload")
    if nesting_exceeds(payload, MAX_PAYLOAD_DEPTH):  # before anything recurses over it
        raise ValidationError(f"payload: nested deeper than {MAX_PAYLOAD_DEPTH} levels", field="payload")
    try:
        size = len(json.dumps(payload, separators=(",", ":"), allow_nan=False).encode())
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"payload: not serialisable as JSON ({exc})", field="payload") from exc
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadTooLargeError(
            f"payload: {size} bytes serialised, limit is {MAX_PAYLOAD_BYTES}", field="payload"
        )
    return payload


def check_end(end: Any, kind: ScheduleKind, first_due: datetime) -> datetime | None:
    if end is None:
        return None
    if kind is ScheduleKind.ONCE:
        raise ValidationError("end: only applies to recurring (cron / every) tasks", field="end")
    parsed = parse_instant(end, "end")
    if parsed < first_due:
        raise ValidationError("end: is before the first occurrence", field="end")
    return parsed


def check_integer(name: str, value: Any, low: int, high: int) -> int:
    """`value` if it is an integer from `low` to `high` (a bool is not), else a ValidationError
    naming field `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(f"{name}: must be an integer between {low} and {high}", field=name)
    return value


def check_policy(max_attempts: Any, backoff: Any, grace: Any) -> dict[str, Any]:
    check_integer("max_attempts", max_attempts, MIN_ATTEMPTS, MAX_ATTEMPTS)
    if (
        isinstance(backoff, bool)
        or not isinstance(backoff, int | float)
        or not 0 <= backoff <= MAX_RETRY_BACKOFF_SECONDS
    ):
        raise ValidationError(
            f"retry_backoff_seconds: must be a number from 0 to {MAX_RETRY_BACKOFF_SECONDS}",
            field="retry_backoff_seconds",
        )
    if grace is not None and (
        isinstance(grace, bool)
        or not isinstance(grace, int | float)
        or not 0 <= grace <= MAX_MISFIRE_GRACE_SECONDS
    ):
        raise ValidationError(
            "misfire_grace_seconds: must be a number of seconds >= 0", field="misfire_grace_seconds"
        )
    return {
        "max_attempts": max_attempts,
        "retry_backoff_seconds": float(backoff),
        "misfire_grace_seconds": float(grace) if grace is not None else None,
    }


def nesting_exceeds(value: Any, limit: int) -> bool:
    """True when objects/arrays nest more than `limit` levels (`value` is level 1). Iterative: the
    depth is the client's, so it must not become ours on the call stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    return False


def check_page(status: str | None, limit: Any, cursor: str | None) -> str | None:
    """Check a list query; returns the sort key its cursor continues after."""
    if status is not None and status not in LISTABLE_STATUSES:
        raise ValidationError(
            f"status: can list {', '.join(LISTABLE_STATUSES)}; finished tasks are read by id",
            field="status",
        )
    check_integer("limit", limit, 1, MAX_PAGE_SIZE)
    return decode_cursor(cursor) if cursor else None


def _encode(name: str, value: str | int) -> str:
    """A page cursor: `{name: value}` as unpadded URL-safe base64 JSON."""
    return base64.urlsafe_b64encode(json.dumps({name: value}).encode()).decode().rstrip("=")


def _decode(cursor: str, name: str, check: Callable[[Any], None]) -> Any:
    """The `name` value of a cursor `_encode` made, checked by `check` (raises on a bad value)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))[name]
        check(value)
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise ValidationError("cursor: not a cursor returned by this API", field="cursor") from exc
    return value


def encode_cursor(key: str) -> str:
    return _encode("after", key)


def decode_cursor(cursor: str) -> str:
    def check(key: Any) -> None:
        if not isinstance(key, str):
            raise TypeError("cursor key is not a string")
        split_queue_sort_key(key)

    return str(_decode(cursor, "after", check))


def check_runs_page(limit: Any, cursor: str | None) -> int | None:
    """Check a run-history query; returns the run number its cursor continues before."""
    check_integer("limit", limit, 1, MAX_RUNS_PAGE_SIZE)
    if not cursor:
        return None

    def check(before: Any) -> None:
        if not isinstance(before, int) or isinstance(before, bool) or before < 1:
            raise TypeError("cursor run number is not a positive integer")

    return int(_decode(cursor, "before", check))


def encode_runs_cursor(before: int) -> str:
    return _encode("before", before)


def check_jitter(seconds: Any) -> float | None:
    """None (no jitter) or 0 to 3600 seconds."""
    return None if seconds is None else validate_jitter(seconds)


def check_count(count: Any) -> int:
    """How many upcoming occurrences to list: 1 to 100."""
    return check_integer("count", count, 1, MAX_UPCOMING)
