"""What a create or a change makes of a task record (no I/O: the Editor reads and writes)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime
from typing import Any

from editor.models import TaskChanges, TaskSpec
from editor.specs import (
    TIME_FIELDS,
    check_action,
    check_end,
    check_payload,
    check_policy,
    check_task_id,
    resolve_time,
)
from nexttick.errors import ConflictError, ValidationError, VersionMismatchError
from nexttick.schedules import ScheduleKind
from nexttick.store import TaskRecord, TaskStatus

_UPDATABLE = ("payload", "max_attempts", "retry_backoff_seconds", "misfire_grace_seconds", "end")
# What a change can set: a repeated change finds these as it asks when its first attempt committed.
_CHANGEABLE = (
    "schedule_kind",
    "cron",
    "timezone",
    "every_seconds",
    "due",
    "end",
    "payload",
    "max_attempts",
    "retry_backoff_seconds",
    "misfire_grace_seconds",
)


def new_record(spec: TaskSpec, actions: Collection[str], now: datetime) -> TaskRecord:
    """The pending task `spec` asks for, with the hash a repeated create under its id is told by."""
    task_id = spec.id if spec.id is not None else uuid.uuid4().hex
    check_task_id(task_id)
    check_action(spec.action, actions)
    payload = check_payload(spec.payload)
    kind, recurrence, due = resolve_time({k: getattr(spec, k) for k in (*TIME_FIELDS, "timezone")}, now)
    end = check_end(spec.end, kind, due)
    policy = check_policy(spec.max_attempts, spec.retry_backoff_seconds, spec.misfire_grace_seconds)
    digest = hashlib.sha256(json.dumps(spec.canonical(), sort_keys=True, default=str).encode()).hexdigest()
    return TaskRecord(
        id=task_id,
        action=spec.action,
        payload=payload,
        status=TaskStatus.PENDING,
        schedule_kind=kind,
        due=due,
        created_at=now,
        updated_at=now,
        version=1,
        cron=recurrence.cron,
        timezone=recurrence.timezone,
        every_seconds=recurrence.every_seconds,
        end=end,
        request_hash=digest,
        **policy,
    )


def apply_changes(
    current: TaskRecord, given: dict[str, Any], now: datetime
) -> tuple[TaskRecord, datetime | None]:
    """The changed task, and its new due time when the change moves it (None: same entry)."""
    updated = replace(current, version=current.version + 1, updated_at=now)
    time_fields: dict[str, Any] = {k: given[k] for k in TIME_FIELDS if k in given}
    new_due: datetime | None = None
    if time_fields or "timezone" in given:
        if not time_fields:
            if current.schedule_kind is not ScheduleKind.CRON:
                raise ValidationError("timezone: only applies to a cron schedule", field="timezone")
            time_fields = {"cron": current.cron}
        if "cron" in time_fields:
            time_fields["timezone"] = given.get("timezone", current.timezone)
        elif "timezone" in given:  # with a due / delay / every: rejected by resolve_time
            time_fields["timezone"] = given["timezone"]
        kind, recurrence, due = resolve_time(time_fields, now)
        updated.schedule_kind = kind
        updated.cron, updated.timezone = recurrence.cron, recurrence.timezone
        updated.every_seconds = recurrence.every_seconds
        updated.due = due
        updated.attempts = 0
        new_due = due
    if "payload" in given:
        updated.payload = check_payload(given["payload"])
    if "end" in given:
        assert updated.due is not None
        updated.end = check_end(given["end"], updated.schedule_kind, updated.due)
    elif updated.end is not None and updated.schedule_kind is ScheduleKind.ONCE:
        updated.end = None
    elif updated.end is not None and new_due is not None:
        # a new recurrence must still start before the end it keeps
        assert updated.due is not None
        check_end(updated.end, updated.schedule_kind, updated.due)
    policy = check_policy(
        given.get("max_attempts", current.max_attempts),
        given.get("retry_backoff_seconds", current.retry_backoff_seconds),
        given.get("misfire_grace_seconds", current.misfire_grace_seconds),
    )
    return replace(updated, **policy), new_due


def updatable(fields: dict[str, Any]) -> TaskChanges:
    """The changes `Editor.update` may make: payload and policy, not the time."""
    unknown = set(fields) - set(_UPDATABLE)
    if unknown:
        name = sorted(unknown)[0]
        raise ValidationError(f"{name}: not an updatable field", field=name)
    return TaskChanges(**fields)


def require_pending(current: TaskRecord) -> None:
    if current.status != TaskStatus.PENDING:
        raise ConflictError(f"status: task is {current.status}, not pending", field="status")


def version_mismatch(current: TaskRecord, expected_version: int) -> VersionMismatchError:
    return VersionMismatchError(
        f"version: task is at version {current.version}, not {expected_version}", field="version"
    )


def already_applied(current: TaskRecord, given: dict[str, Any], now: datetime) -> bool:
    """Whether applying `given` now would leave every field a change can set as it is."""
    if current.status != TaskStatus.PENDING:
        return False
    try:
        updated, _ = apply_changes(current, given, now)
    except ValidationError:
        return False
    return all(getattr(updated, name) == getattr(current, name) for name in _CHANGEABLE)
