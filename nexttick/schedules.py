"""Recurrence (cron in an IANA zone, fixed intervals) and the EventBridge side of time.

Occurrences are always computed from the *scheduled* time, never from "now", so a recurring task
does not drift. Cron is evaluated on local wall-clock times of its zone: a wall time that
a DST change skips does not fire, one that it repeats fires once (the first time).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from nexttick.config import Precision
from nexttick.constants import EPOCH_EXPRESSION, MAX_YEAR
from nexttick.errors import ValidationError
from nexttick.timeutil import floor_minute

_MAX_CRON_STEPS = 10_000  # guards against expressions that never match (e.g. 30 February)


class ScheduleKind(StrEnum):
    ONCE = "once"
    CRON = "cron"
    EVERY = "every"


def load_zone(name: str, field: str = "timezone") -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValidationError(f"{field}: unknown IANA time zone {name!r}", field=field) from exc


def validate_cron(expression: str, field: str = "cron") -> str:
    """A standard 5-field croniter expression (or @hourly-style alias); raises naming the field."""
    text = " ".join(expression.split()) if isinstance(expression, str) else ""
    if not text or len(text.split(" ")) not in (1, 5) or not croniter.is_valid(text):
        raise ValidationError(
            f"{field}: invalid cron expression {expression!r} (5 fields: minute hour day month weekday)",
            field=field,
        )
    return text


@dataclass(frozen=True)
class Recurrence:
    """How a recurring task repeats: a cron expression in a zone, or a fixed interval."""

    kind: ScheduleKind
    cron: str | None = None
    timezone: str = "UTC"
    every_seconds: float | None = None

    def next_after(self, after: datetime) -> datetime | None:
        """The first occurrence strictly after `after` (UTC), or None past year 2199."""
        result: datetime | None
        if self.kind is ScheduleKind.EVERY:
            assert self.every_seconds is not None
            result = after + timedelta(seconds=self.every_seconds)
        elif self.kind is ScheduleKind.CRON:
            assert self.cron is not None
            result = _next_cron(self.cron, load_zone(self.timezone), after)
        else:
            return None
        if result is None or result.year > MAX_YEAR:
            return None
        return result

    def next_due_from(self, scheduled: datetime, now: datetime) -> datetime | None:
        """Next occurrence after `scheduled` that is later than `now` (missed ones coalesce)."""
        if self.kind is ScheduleKind.EVERY:
            assert self.every_seconds is not None
            step = timedelta(seconds=self.every_seconds)
            missed = max(0, int((now - scheduled) / step))
            candidate: datetime | None = scheduled + step * (missed + 1)
            while candidate is not None and candidate <= now:
                candidate = candidate + step
            return candidate if candidate is not None and candidate.year <= MAX_YEAR else None
        return self.next_after(max(scheduled, now))


def _next_cron(expression: str, zone: ZoneInfo, after: datetime) -> datetime | None:
    local_start = after.astimezone(zone).replace(tzinfo=None)
    iterator = croniter(expression, local_start)
    for _ in range(_MAX_CRON_STEPS):
        try:
            wall = iterator.get_next(datetime)
        except CroniterBadDateError:  # a date that never exists, e.g. "0 0 30 2 *"
            return None
        if wall.year > MAX_YEAR:
            return None
        aware = wall.replace(tzinfo=zone, fold=0)
        utc = aware.astimezone(UTC)
        if utc.astimezone(zone).replace(tzinfo=None) != wall:
            continue  # skipped by a DST gap: this wall time does not exist
        if utc <= after:
            continue  # the first pass of a repeated hour we are already past (fires once)
        return utc
    return None


@dataclass(frozen=True)
class Timing:
    """Maps due times to rule firing minutes and decides what is too close to arm
    (docs/architecture.md, "Time and precision")."""

    precision: Precision = Precision.SECOND
    delivery_margin_seconds: int = 10
    settle_seconds: int = 10
    # The stated bound on how far any host's clock may be from AWS's (and so from any other host's
    # by twice that). Armability relies on it (settle_seconds covers it plus PutRule propagation);
    # so does a worker taking over from a waiter whose wake time has come.
    clock_skew_seconds: int = 5

    @property
    def lead(self) -> timedelta:
        """How far ahead of the due time the rule's minute must start."""
        if self.precision is Precision.SECOND:
            return timedelta(seconds=60 + self.delivery_margin_seconds)
        return timedelta(0)

    def fire_minute(self, due: datetime) -> datetime:
        """The rule minute for a task due at `due`: in `second` mode the whole minute plus the delivery
        margin lies before `due`; in `minute` mode it is the minute that contains `due`."""
        return floor_minute(due - self.lead)

    def armable(self, minute: datetime, now: datetime) -> bool:
        """True when a PutRule now for `minute` is sure to fire: a future minute, far enough away."""
        return minute > floor_minute(now) and (minute - now).total_seconds() >= self.settle_seconds

    @property
    def clock_skew(self) -> timedelta:
        return timedelta(seconds=self.clock_skew_seconds)

    def backstop_minute(self, wake: datetime, now: datetime) -> datetime:
        """The earliest minute that starts at or after `wake` and is armable at `now`. Armed while a
        worker sleeps until `wake`, it fires only after that wake, so if the sleeper died a worker
        still starts within about a minute of it."""
        one = timedelta(minutes=1)
        start = floor_minute(wake)
        if start < wake:
            start += one
        minute = max(start, floor_minute(now) + one)
        while not self.armable(minute, now):  # at most once more: settle_seconds < 60
            minute += one
        return minute


def rule_expression(minute: datetime | None) -> str:
    """EventBridge cron for one UTC minute (six fields with a year); the epoch when nothing is due."""
    if minute is None:
        return EPOCH_EXPRESSION
    m = minute.astimezone(UTC)
    return f"cron({m.minute} {m.hour} {m.day} {m.month} ? {m.year})"
