"""Recurrence (cron in an IANA zone, fixed intervals), upcoming runs and jitter.

Occurrences are always computed from the *scheduled* time, never from "now", so a recurring task
does not drift. Cron is evaluated on local wall-clock times of its zone; where a DST change (or any
offset change in the zone database) skips or repeats wall times, a per-schedule policy decides:

* a wall time skipped by a gap (clocks jump forward by L, from gap start G to G + L):
  - `skip` (default): it does not fire;
  - `shift`: it fires at transition + (wall - G), i.e. the wall time read with the offset in force
    before the gap, which is the wall time moved later by L (Berlin 02:30 on the spring-forward day
    fires at 03:30 CEST = 01:30 UTC; Lord Howe 02:15 on its 30-minute gap fires at 02:45). This keeps
    each skipped time's distance from the transition, so different skipped times stay different.
    A shifted time that coincides with a real wall time the cron also matches fires once (as the
    real one), e.g. "0 2,3 * * *" fires once at 03:00 that day.
* a wall time repeated by a fold (clocks fall back): `first` (default) fires at its first pass,
  `last` only at its second, `both` at each (the two are L apart: 1 h, or 30 min on Lord Howe).

Whatever the policies, the occurrences of a schedule are one set of UTC instants and `next_after`
returns the smallest one strictly after its argument, so runs are strictly increasing and never
repeat an instant already fired. Interval and one-shot schedules have no wall times and ignore them.

Jitter (`jittered`) delays a run by an offset in [0, jitter) derived from a hash of a key naming the
occurrence: deterministic, never early.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nexttick.constants import MAX_YEAR
from nexttick.cron import parse_cron
from nexttick.errors import ValidationError

_MAX_CRON_STEPS = 10_000  # bounds a walk over matching wall times
# Wall-clock order and instant order disagree only near an offset change, by at most its size
# (a day at most, as when Samoa crossed the date line). Offsets are sampled every two hours, which
# assumes a zone does not change its offset twice within that time.
_MAX_SPREAD = timedelta(hours=30)
_OFFSET_SAMPLE_STEP = timedelta(hours=2)
MAX_UPCOMING = 100
MAX_JITTER_SECONDS = 3600


class ScheduleKind(StrEnum):
    ONCE = "once"
    CRON = "cron"
    EVERY = "every"


class DstSkipped(StrEnum):
    """What a cron wall time that a DST gap skips does: nothing (`skip`), or it runs after the gap,
    at the wall time read with the offset before the change (`shift`)."""

    SKIP = "skip"
    SHIFT = "shift"


class DstRepeated(StrEnum):
    """What a cron wall time that a DST fold repeats does: it runs at its `first` pass, its `last`,
    or `both`."""

    FIRST = "first"
    LAST = "last"
    BOTH = "both"


class DstMark(StrEnum):
    """Why an upcoming run is not a plain single pass of its wall time."""

    SHIFTED = "shifted"
    REPEATED_FIRST = "repeated-first"
    REPEATED_SECOND = "repeated-second"


_E = TypeVar("_E", DstSkipped, DstRepeated)


def load_zone(name: str, field: str = "timezone") -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValidationError(f"{field}: unknown IANA time zone {name!r}", field=field) from exc


def validate_cron(expression: object, field: str = "cron") -> str:
    """A cron expression nexttick runs with its crontab(5) meaning (nexttick.cron), whitespace
    collapsed; raises naming the field and saying why otherwise."""
    return parse_cron(expression, field).text


def _parse_policy(kind: type[_E], value: object, field: str) -> _E:
    text = value.strip().lower() if isinstance(value, str) else None
    for member in kind:
        if text == member.value:
            return member
    allowed = ", ".join(member.value for member in kind)
    raise ValidationError(f"{field}: unknown DST policy {value!r} (allowed: {allowed})", field=field)


def parse_dst_skipped(value: object, field: str = "dst_skipped") -> DstSkipped:
    """User text ("skip" / "shift", any case) as a policy; raises naming the field and the choices."""
    return _parse_policy(DstSkipped, value, field)


def parse_dst_repeated(value: object, field: str = "dst_repeated") -> DstRepeated:
    """User text ("first" / "last" / "both", any case) as a policy; raises naming the field."""
    return _parse_policy(DstRepeated, value, field)


@dataclass(frozen=True)
class UpcomingRun:
    """One future run as a user would want to see it listed."""

    at: datetime  # UTC
    local: datetime  # the same instant in the schedule's zone (UTC for interval schedules)
    dst: DstMark | None = None
    # naive wall times the `skip` policy dropped since the previous listed run (or `after`)
    skipped: tuple[datetime, ...] = ()


@dataclass(frozen=True)
class _Fire:
    at: datetime
    mark: DstMark | None


@dataclass(frozen=True)
class Recurrence:
    """How a recurring task repeats: a cron expression in a zone, or a fixed interval."""

    kind: ScheduleKind
    cron: str | None = None
    timezone: str = "UTC"
    every_seconds: float | None = None
    dst_skipped: DstSkipped = DstSkipped.SKIP
    dst_repeated: DstRepeated = DstRepeated.FIRST

    def next_after(self, after: datetime) -> datetime | None:
        """The first occurrence strictly after `after` (UTC), or None past year 2199."""
        fire = self._next_fire(after)
        return None if fire is None else fire.at

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

    def upcoming(self, after: datetime, count: int) -> list[UpcomingRun]:
        """The next `count` runs strictly after `after`, exactly the chain of `next_after`, each with
        its DST mark and the wall times skipped before it, so a user can preview what will happen.
        Fewer when the schedule ends (year 2199, or an expression that never matches); none for a
        one-shot schedule, whose single due time the caller already has."""
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_UPCOMING:
            raise ValidationError(
                f"count: must be a whole number from 1 to {MAX_UPCOMING}, got {count!r}", field="count"
            )
        if self.kind is ScheduleKind.ONCE:
            return []
        zone = load_zone(self.timezone) if self.kind is ScheduleKind.CRON else UTC
        runs: list[UpcomingRun] = []
        previous = after
        for _ in range(count):
            fire = self._next_fire(previous)
            if fire is None:
                break
            skipped: tuple[datetime, ...] = ()
            if self.kind is ScheduleKind.CRON and self.dst_skipped == DstSkipped.SKIP:
                assert self.cron is not None and isinstance(zone, ZoneInfo)
                skipped = _skipped_walls(self.cron, zone, previous, fire.at)
            runs.append(UpcomingRun(fire.at, fire.at.astimezone(zone), fire.mark, skipped))
            previous = fire.at
        return runs

    def _next_fire(self, after: datetime) -> _Fire | None:
        result: _Fire | None
        if self.kind is ScheduleKind.EVERY:
            assert self.every_seconds is not None
            result = _Fire(after + timedelta(seconds=self.every_seconds), None)
        elif self.kind is ScheduleKind.CRON:
            assert self.cron is not None
            zone = load_zone(self.timezone)
            result = _next_cron(self.cron, zone, after, self.dst_skipped, self.dst_repeated)
        else:
            return None
        if result is None or result.at.year > MAX_YEAR:
            return None
        return result


def _offset(local: datetime) -> timedelta:
    offset = local.utcoffset()
    assert offset is not None
    return offset


def _offset_range(zone: ZoneInfo, start: datetime, end: datetime) -> tuple[timedelta, timedelta]:
    """The smallest and largest UTC offsets of `zone` between instants `start` and `end`."""
    offsets = [_offset(end.astimezone(zone))]
    at = start
    while at < end:
        offsets.append(_offset(at.astimezone(zone)))
        at += _OFFSET_SAMPLE_STEP
    return min(offsets), max(offsets)


def _wall_fires(wall: datetime, zone: ZoneInfo, skipped: DstSkipped, repeated: DstRepeated) -> list[_Fire]:
    """The instants at which a wall time the cron matches fires. zoneinfo (PEP 495) reads a wall
    time with fold=0 at the offset before a transition and fold=1 at the one after: equal for an
    ordinary time, fold=1 earlier in a gap (fold=0 is then transition + (wall - gap start)), later
    in a fold (the second pass)."""
    before = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    after = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    if before == after:
        return [_Fire(before, None)]
    if after < before:  # skipped by a gap
        return [_Fire(before, DstMark.SHIFTED)] if skipped == DstSkipped.SHIFT else []
    first, second = _Fire(before, DstMark.REPEATED_FIRST), _Fire(after, DstMark.REPEATED_SECOND)
    if repeated == DstRepeated.BOTH:
        return [first, second]
    return [second] if repeated == DstRepeated.LAST else [first]


def _next_cron(
    expression: str, zone: ZoneInfo, after: datetime, skipped: DstSkipped, repeated: DstRepeated
) -> _Fire | None:
    """The smallest fire instant strictly after `after`.

    Near a transition, wall order and instant order differ (on a 30-minute gap a shifted 02:15
    fires after a real 02:40; in a fold the second pass of 02:00 follows the first of 02:30). A wall
    at or before `after`'s fires after it only through an offset lower than `after`'s, so the walk
    starts that much earlier; a wall later than the best instant's fires no later than it only
    through an offset higher than the best's, so the walk stops that much later."""
    local = after.astimezone(zone)
    offset = _offset(local)
    lowest = _offset_range(zone, after - _MAX_SPREAD, after + _MAX_SPREAD)[0]
    if lowest < offset:  # a fold ahead or a gap behind: narrow to the instants that can matter
        reach = offset - lowest
        lowest = _offset_range(zone, after - reach, after + reach)[0]
    walls = parse_cron(expression).walls_after(local.replace(tzinfo=None) - (offset - lowest))
    best: _Fire | None = None
    horizon: datetime | None = None  # walls later than this fire later than `best`
    for wall, _ in zip(walls, range(_MAX_CRON_STEPS), strict=False):  # none for a date that never exists
        if wall.year > MAX_YEAR or (horizon is not None and wall > horizon):
            break
        for fire in _wall_fires(wall, zone, skipped, repeated):
            if fire.at <= after or (best is not None and fire.at > best.at):
                continue
            if best is None or fire.at < best.at or fire.mark is None:  # a real wall time wins a tie
                best = fire
                highest = _offset_range(zone, max(after, best.at - _MAX_SPREAD), best.at)[1]
                horizon = (best.at + highest).replace(tzinfo=None)
    return best


def _skipped_walls(expression: str, zone: ZoneInfo, after: datetime, until: datetime) -> tuple[datetime, ...]:
    """Matching wall times in gaps whose transition falls in (after, until]: those lie between the
    two instants' wall times, since a gap's walls follow every earlier wall and precede later ones."""
    start = after.astimezone(zone).replace(tzinfo=None)
    end = until.astimezone(zone).replace(tzinfo=None)
    walls: list[datetime] = []
    if end <= start:
        return ()
    for wall, _ in zip(parse_cron(expression).walls_after(start), range(_MAX_CRON_STEPS), strict=False):
        if wall > end:
            break
        if not _wall_fires(wall, zone, DstSkipped.SKIP, DstRepeated.FIRST):
            walls.append(wall)
    return tuple(walls)


def validate_jitter(seconds: object, field: str = "jitter_seconds") -> float:
    """A jitter of 0 to 3600 seconds (finite); raises naming the field."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not 0 <= seconds <= MAX_JITTER_SECONDS
        or not math.isfinite(seconds)
    ):
        raise ValidationError(
            f"{field}: jitter must be a number of seconds from 0 to {MAX_JITTER_SECONDS}, got {seconds!r}",
            field=field,
        )
    return float(seconds)


def jittered(run_at: datetime, jitter_seconds: float | None, key: str) -> datetime:
    """`run_at` delayed by a deterministic offset in [0, jitter_seconds), whole microseconds.

    Many recurring tasks on the same cron minute would all start at once; a hash of `key` (name the
    occurrence, e.g. task id and scheduled time) spreads them evenly, and because the offset depends
    on nothing else, a retry or a recomputation of the same occurrence lands on the same instant.
    Never earlier than `run_at`, so nothing runs before its due time; None or 0 leaves it as is."""
    if not jitter_seconds:
        return run_at
    span = round(validate_jitter(jitter_seconds) * 1_000_000)
    digest = hashlib.blake2b(key.encode(), digest_size=8, person=b"nexttick-jitter").digest()
    return run_at + timedelta(microseconds=(int.from_bytes(digest, "big") * span) >> 64)
