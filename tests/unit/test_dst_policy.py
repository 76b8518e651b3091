"""DST policies for cron in a zone (skip/shift gaps, first/last/both folds), upcoming runs and jitter,
checked against the real zone database over the transitions of 2030."""

from __future__ import annotations

import functools
import math
from dataclasses import FrozenInstanceError, dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from nexttick.errors import ValidationError
from nexttick.schedules import (
    DstMark,
    DstRepeated,
    DstSkipped,
    Recurrence,
    ScheduleKind,
    UpcomingRun,
    jittered,
    parse_dst_repeated,
    parse_dst_skipped,
    validate_jitter,
)

SKIP, SHIFT = DstSkipped.SKIP, DstSkipped.SHIFT
FIRST, LAST, BOTH = DstRepeated.FIRST, DstRepeated.LAST, DstRepeated.BOTH
POLICIES = [(skipped, repeated) for skipped in DstSkipped for repeated in DstRepeated]
ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe")
MINUTE = timedelta(minutes=1)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def cron(expression: str, zone: str, skipped: DstSkipped = SKIP, repeated: DstRepeated = FIRST) -> Recurrence:
    return Recurrence(
        ScheduleKind.CRON, cron=expression, timezone=zone, dst_skipped=skipped, dst_repeated=repeated
    )


def chain(schedule: Recurrence, start: datetime, end: datetime) -> list[datetime]:
    """Every occurrence in (start, end], following next_after."""
    got: list[datetime] = []
    at = schedule.next_after(start)
    while at is not None and at <= end:
        got.append(at)
        at = schedule.next_after(at)
    return got


# ---------------------------------------------------------------- transitions, from the zone database


@dataclass(frozen=True)
class Transition:
    at: datetime  # the UTC instant the offset changes
    before: timedelta
    after: timedelta

    @property
    def is_gap(self) -> bool:
        return self.after > self.before

    @property
    def size(self) -> timedelta:
        return abs(self.after - self.before)

    @property
    def gap_walls(self) -> tuple[datetime, datetime]:
        """[start, end) of the naive wall times a gap skips."""
        start = (self.at + self.before).replace(tzinfo=None)
        return start, start + self.size

    @property
    def fold_walls(self) -> tuple[datetime, datetime]:
        """[start, end) of the naive wall times a fold repeats."""
        end = (self.at + self.before).replace(tzinfo=None)
        return end - self.size, end


def _offset(zone: ZoneInfo, at: datetime) -> timedelta:
    offset = at.astimezone(zone).utcoffset()
    assert offset is not None
    return offset


YEAR = (utc(2030, 1, 1), utc(2031, 1, 1))


@functools.cache
def transitions(zone_name: str) -> tuple[Transition, ...]:
    """Offset changes during 2030: scan every 30 minutes, then bisect to the second."""
    zone = ZoneInfo(zone_name)
    start, end = YEAR
    found = []
    step = timedelta(minutes=30)
    at, offset = start, _offset(zone, start)
    while at < end:
        nxt = at + step
        new = _offset(zone, nxt)
        if new != offset:
            low, high = at, nxt  # offset(low) is the old one, offset(high) the new one
            while high - low > timedelta(seconds=1):
                mid = low + timedelta(seconds=(high - low).total_seconds() // 2)
                if _offset(zone, mid) == offset:
                    low = mid
                else:
                    high = mid
            found.append(Transition(high, offset, new))
        at, offset = nxt, new
    return tuple(found)


def test_the_zone_database_gives_one_spring_gap_and_one_autumn_fold_per_zone_in_2030() -> None:
    h, m = timedelta(hours=1), timedelta(minutes=1)
    assert transitions("Europe/Berlin") == (
        Transition(utc(2030, 3, 31, 1), 1 * h, 2 * h),
        Transition(utc(2030, 10, 27, 1), 2 * h, 1 * h),
    )
    assert transitions("America/New_York") == (
        Transition(utc(2030, 3, 10, 7), -5 * h, -4 * h),
        Transition(utc(2030, 11, 3, 6), -4 * h, -5 * h),
    )
    assert transitions("Australia/Lord_Howe") == (
        Transition(utc(2030, 4, 6, 15), 11 * h, 10 * h + 30 * m),
        Transition(utc(2030, 10, 5, 15, 30), 10 * h + 30 * m, 11 * h),
    )


# ---------------------------------------------------------------- literal expectations


@pytest.mark.parametrize(
    ("zone", "expression", "after", "skipped", "repeated", "expected"),
    [
        # Berlin springs forward 2030-03-31 02:00 CET -> 03:00 CEST (01:00 UTC)
        ("Europe/Berlin", "30 2 * * *", utc(2030, 3, 30, 12), SKIP, FIRST, [utc(2030, 4, 1, 0, 30)]),
        # shift: 02:30 fires at 03:30 CEST, 30 minutes after the transition
        (
            "Europe/Berlin",
            "30 2 * * *",
            utc(2030, 3, 30, 12),
            SHIFT,
            FIRST,
            [utc(2030, 3, 31, 1, 30), utc(2030, 4, 1, 0, 30)],
        ),
        # after the transition but before the shifted instant: it still fires
        ("Europe/Berlin", "30 2 * * *", utc(2030, 3, 31, 1, 10), SHIFT, BOTH, [utc(2030, 3, 31, 1, 30)]),
        # shifted 02:00 coincides with the real 03:00: once
        (
            "Europe/Berlin",
            "0 2,3 * * *",
            utc(2030, 3, 30, 22),
            SHIFT,
            FIRST,
            [utc(2030, 3, 31, 1), utc(2030, 4, 1, 0), utc(2030, 4, 1, 1)],
        ),
        # shifted 02:30 coincides with the real 03:30: once
        (
            "Europe/Berlin",
            "30 2,3 * * *",
            utc(2030, 3, 30, 22),
            SHIFT,
            FIRST,
            [utc(2030, 3, 31, 1, 30), utc(2030, 4, 1, 0, 30)],
        ),
        # Berlin falls back 2030-10-27 03:00 CEST -> 02:00 CET (01:00 UTC): 02:30 happens twice
        (
            "Europe/Berlin",
            "30 2 * * *",
            utc(2030, 10, 26, 12),
            SKIP,
            FIRST,
            [utc(2030, 10, 27, 0, 30), utc(2030, 10, 28, 1, 30)],
        ),
        (
            "Europe/Berlin",
            "30 2 * * *",
            utc(2030, 10, 26, 12),
            SHIFT,
            LAST,
            [utc(2030, 10, 27, 1, 30), utc(2030, 10, 28, 1, 30)],
        ),
        (
            "Europe/Berlin",
            "30 2 * * *",
            utc(2030, 10, 26, 12),
            SKIP,
            BOTH,
            [utc(2030, 10, 27, 0, 30), utc(2030, 10, 27, 1, 30), utc(2030, 10, 28, 1, 30)],
        ),
        # from inside the first pass (02:40 CEST): `last` and `both` still fire the second 02:30
        ("Europe/Berlin", "30 2 * * *", utc(2030, 10, 27, 0, 40), SKIP, LAST, [utc(2030, 10, 27, 1, 30)]),
        ("Europe/Berlin", "30 2 * * *", utc(2030, 10, 27, 0, 40), SKIP, BOTH, [utc(2030, 10, 27, 1, 30)]),
        ("Europe/Berlin", "30 2 * * *", utc(2030, 10, 27, 0, 40), SKIP, FIRST, [utc(2030, 10, 28, 1, 30)]),
        # New York springs forward 2030-03-10 02:00 EST -> 03:00 EDT (07:00 UTC)
        ("America/New_York", "30 2 * * *", utc(2030, 3, 9, 12), SKIP, BOTH, [utc(2030, 3, 11, 6, 30)]),
        (
            "America/New_York",
            "30 2 * * *",
            utc(2030, 3, 9, 12),
            SHIFT,
            FIRST,
            [utc(2030, 3, 10, 7, 30), utc(2030, 3, 11, 6, 30)],
        ),
        # New York falls back 2030-11-03 02:00 EDT -> 01:00 EST (06:00 UTC)
        (
            "America/New_York",
            "30 1 * * *",
            utc(2030, 11, 2, 12),
            SHIFT,
            FIRST,
            [utc(2030, 11, 3, 5, 30), utc(2030, 11, 4, 6, 30)],
        ),
        (
            "America/New_York",
            "30 1 * * *",
            utc(2030, 11, 2, 12),
            SKIP,
            LAST,
            [utc(2030, 11, 3, 6, 30), utc(2030, 11, 4, 6, 30)],
        ),
        (
            "America/New_York",
            "30 1 * * *",
            utc(2030, 11, 2, 12),
            SKIP,
            BOTH,
            [utc(2030, 11, 3, 5, 30), utc(2030, 11, 3, 6, 30), utc(2030, 11, 4, 6, 30)],
        ),
        # Lord Howe springs forward half an hour 2030-10-06 02:00 -> 02:30 (2030-10-05 15:30 UTC)
        ("Australia/Lord_Howe", "15 2 * * *", utc(2030, 10, 5, 12), SKIP, FIRST, [utc(2030, 10, 6, 15, 15)]),
        (
            "Australia/Lord_Howe",
            "15 2 * * *",
            utc(2030, 10, 5, 12),
            SHIFT,
            FIRST,
            [utc(2030, 10, 5, 15, 45), utc(2030, 10, 6, 15, 15)],
        ),
        # the shifted 02:15 (02:45 local) fires after the real 02:40, in instant order
        (
            "Australia/Lord_Howe",
            "15,40 2 * * *",
            utc(2030, 10, 5, 12),
            SHIFT,
            FIRST,
            [utc(2030, 10, 5, 15, 40), utc(2030, 10, 5, 15, 45), utc(2030, 10, 6, 15, 15)],
        ),
        # the shifted 02:10 is the real 02:40: once
        (
            "Australia/Lord_Howe",
            "10,40 2 * * *",
            utc(2030, 10, 5, 12),
            SHIFT,
            FIRST,
            [utc(2030, 10, 5, 15, 40), utc(2030, 10, 6, 15, 10)],
        ),
        # Lord Howe falls back half an hour 2030-04-07 02:00 -> 01:30 (2030-04-06 15:00 UTC)
        (
            "Australia/Lord_Howe",
            "45 1 * * *",
            utc(2030, 4, 6, 12),
            SKIP,
            FIRST,
            [utc(2030, 4, 6, 14, 45), utc(2030, 4, 7, 15, 15)],
        ),
        (
            "Australia/Lord_Howe",
            "45 1 * * *",
            utc(2030, 4, 6, 12),
            SKIP,
            LAST,
            [utc(2030, 4, 6, 15, 15), utc(2030, 4, 7, 15, 15)],
        ),
        (
            "Australia/Lord_Howe",
            "45 1 * * *",
            utc(2030, 4, 6, 12),
            SHIFT,
            BOTH,
            [utc(2030, 4, 6, 14, 45), utc(2030, 4, 6, 15, 15), utc(2030, 4, 7, 15, 15)],
        ),
    ],
)
def test_policies_fire_at_the_documented_instants(
    zone: str,
    expression: str,
    after: datetime,
    skipped: DstSkipped,
    repeated: DstRepeated,
    expected: list[datetime],
) -> None:
    schedule = cron(expression, zone, skipped, repeated)
    assert chain(schedule, after, expected[-1]) == expected


# ---------------------------------------------------------------- every transition of 2030, every policy

EXPRESSIONS = ("*/15 * * * *", "0,30 * * * *", "10 1-3 * * *", "45 1,2 * * *", "15,40 2 * * *")
WINDOW = timedelta(hours=4)


@functools.cache
def _passes(zone_name: str, transition: Transition) -> dict[datetime, list[datetime]]:
    """Every existing naive wall minute near the transition with the UTC instants it occurs at,
    found by walking UTC minutes (independent of how the schedule reads wall times)."""
    zone = ZoneInfo(zone_name)
    passes: dict[datetime, list[datetime]] = {}
    at = transition.at - WINDOW + MINUTE
    while at <= transition.at + WINDOW:
        passes.setdefault(at.astimezone(zone).replace(tzinfo=None), []).append(at)
        at += MINUTE
    return passes


def _values(field: str, top: int) -> frozenset[int]:
    """A cron minute or hour field ("*", "*/n", "a-b", "a,b"): its own small parser, so that the
    oracle does not share croniter's reading of the expression."""
    values: set[int] = set()
    for part in field.split(","):
        if part.startswith("*"):
            values.update(range(0, top, int(part[2:]) if part.startswith("*/") else 1))
        elif "-" in part:
            low, high = part.split("-")
            values.update(range(int(low), int(high) + 1))
        else:
            values.add(int(part))
    return frozenset(values)


def _matches(expression: str, wall: datetime) -> bool:
    minute, hour, *rest = expression.split()
    assert rest == ["*", "*", "*"]
    return wall.minute in _values(minute, 60) and wall.hour in _values(hour, 24) and wall.second == 0


@functools.cache
def _matching(expression: str, walls: tuple[datetime, ...]) -> frozenset[datetime]:
    return frozenset(wall for wall in walls if _matches(expression, wall))


def _oracle(
    expression: str, zone_name: str, transition: Transition, skipped: DstSkipped, repeated: DstRepeated
) -> list[datetime]:
    passes = _passes(zone_name, transition)
    fires: set[datetime] = set()
    for wall in _matching(expression, tuple(passes)):
        instants = passes[wall]
        if len(instants) == 1:
            fires.add(instants[0])
        else:
            first, second = instants
            fires.update({FIRST: [first], LAST: [second], BOTH: [first, second]}[repeated])
    if transition.is_gap and skipped is SHIFT:
        start, end = transition.gap_walls
        wall = start
        while wall < end:
            if _matches(expression, wall):
                fires.add(transition.at + (wall - start))
            wall += MINUTE
    return sorted(fires)


TRANSITION_CASES = [(zone, t) for zone in ZONES for t in transitions(zone)]


def _minutes(start: datetime, end: datetime) -> tuple[datetime, ...]:
    return tuple(start + MINUTE * i for i in range(int((end - start) / MINUTE)))


@pytest.mark.parametrize(("zone", "transition"), TRANSITION_CASES)
@pytest.mark.parametrize(("skipped", "repeated"), POLICIES)
def test_every_transition_of_the_year_fires_exactly_as_documented(
    zone: str, transition: Transition, skipped: DstSkipped, repeated: DstRepeated
) -> None:
    tz = ZoneInfo(zone)
    size = timedelta(minutes=30) if zone == "Australia/Lord_Howe" else timedelta(hours=1)
    assert transition.size == size
    start, end = transition.at - WINDOW, transition.at + WINDOW
    for expression in EXPRESSIONS:
        got = chain(cron(expression, zone, skipped, repeated), start, end)
        # exactly the documented instants, each once, strictly increasing
        assert got == _oracle(expression, zone, transition, skipped, repeated), expression
        assert all(a < b for a, b in pairwise(got))
        walls = [at.astimezone(tz).replace(tzinfo=None) for at in got]
        off_wall = [at for at, wall in zip(got, walls, strict=True) if not _matches(expression, wall)]
        if transition.is_gap:
            gap_start, gap_end = transition.gap_walls
            shifted = {
                transition.at + (wall - gap_start)
                for wall in _matching(expression, _minutes(gap_start, gap_end))
            }
            if skipped is SKIP:
                # every run is a real pass of a matching wall time: no absent wall time fires
                assert off_wall == []
            else:
                # each skipped wall time fires once, at the gap's end + (wall - gap start)
                assert all(got.count(at) == 1 for at in shifted)
                assert set(off_wall) <= shifted
        else:
            assert off_wall == []
            fold_start, fold_end = transition.fold_walls
            for wall in _matching(expression, _minutes(fold_start, fold_end)):
                fired = [at for at, w in zip(got, walls, strict=True) if w == wall]
                first = (wall - transition.before).replace(tzinfo=UTC)
                second = (wall - transition.after).replace(tzinfo=UTC)
                assert fired == {FIRST: [first], LAST: [second], BOTH: [first, second]}[repeated]
                assert second - first == size


@pytest.mark.parametrize(("zone", "transition"), TRANSITION_CASES)
@pytest.mark.parametrize(("skipped", "repeated"), [(SKIP, FIRST), (SHIFT, LAST), (SHIFT, BOTH)])
def test_next_after_any_instant_near_a_transition_is_the_next_documented_instant(
    zone: str, transition: Transition, skipped: DstSkipped, repeated: DstRepeated
) -> None:
    # Given instants every 7 minutes across the transition (inside folds, gaps and shifted ranges)
    for expression in ("*/20 * * * *", "15,40 2 * * *", "45 1,2 * * *"):
        expected = _oracle(expression, zone, transition, skipped, repeated)
        schedule = cron(expression, zone, skipped, repeated)
        after = transition.at - timedelta(hours=2)
        while after < transition.at + timedelta(hours=2):
            # Then next_after is the first documented instant strictly after it
            upcoming = [at for at in expected if at > after]
            if upcoming:
                assert schedule.next_after(after) == upcoming[0], (expression, after)
            after += timedelta(minutes=7)


# ---------------------------------------------------------------- upcoming runs


@pytest.mark.parametrize(
    "schedule",
    [
        cron("*/20 1-3 * * *", "Europe/Berlin", SHIFT, BOTH),
        cron("30 2 * * *", "Europe/Berlin"),
        cron("15,40 1,2 * * *", "Australia/Lord_Howe", SHIFT, LAST),
        cron("30 1,2 * * *", "America/New_York", SKIP, BOTH),
        Recurrence(ScheduleKind.EVERY, every_seconds=97.5),
    ],
)
@pytest.mark.parametrize("after", [utc(2030, 3, 9), utc(2030, 10, 4, 12), utc(2030, 10, 26, 18)])
def test_upcoming_is_the_chain_of_next_after(schedule: Recurrence, after: datetime) -> None:
    runs = schedule.upcoming(after, 100)
    expected = []
    at: datetime | None = after
    for _ in range(100):
        assert at is not None
        at = schedule.next_after(at)
        expected.append(at)
    assert [run.at for run in runs] == expected
    zone = ZoneInfo(schedule.timezone) if schedule.kind is ScheduleKind.CRON else UTC
    for run in runs:
        assert run.at.tzinfo is UTC
        # (an ambiguous wall time never equals an instant in another zone: compare in UTC)
        assert run.local.astimezone(UTC) == run.at and run.local.tzinfo is zone
        assert run.local.utcoffset() == run.at.astimezone(zone).utcoffset()


def berlin(year: int, month: int, day: int, hour: int, minute: int, fold: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo("Europe/Berlin"), fold=fold)


def test_upcoming_lists_the_wall_times_skip_dropped_next_to_the_following_run() -> None:
    runs = cron("30 2 * * *", "Europe/Berlin").upcoming(utc(2030, 3, 30, 12), 2)
    assert runs == [
        UpcomingRun(utc(2030, 4, 1, 0, 30), berlin(2030, 4, 1, 2, 30), None, (datetime(2030, 3, 31, 2, 30),)),
        UpcomingRun(utc(2030, 4, 2, 0, 30), berlin(2030, 4, 2, 2, 30), None, ()),
    ]
    # Given a quarter-hourly schedule, the whole skipped hour is listed next to 03:00 CEST
    runs = cron("*/15 1-3 * * *", "Europe/Berlin").upcoming(utc(2030, 3, 31, 0, 40), 3)
    assert [(run.at, run.skipped) for run in runs] == [
        (utc(2030, 3, 31, 0, 45), ()),
        (utc(2030, 3, 31, 1), tuple(datetime(2030, 3, 31, 2, m) for m in (0, 15, 30, 45))),
        (utc(2030, 3, 31, 1, 15), ()),
    ]
    # Lord Howe's half-hour gap skips 02:00-02:29
    runs = cron("*/10 2 * * *", "Australia/Lord_Howe").upcoming(utc(2030, 10, 5, 12), 1)
    assert runs[0].at == utc(2030, 10, 5, 15, 30)
    assert runs[0].skipped == tuple(datetime(2030, 10, 6, 2, m) for m in (0, 10, 20))
    # From after the transition nothing is reported as skipped any more
    runs = cron("30 2 * * *", "Europe/Berlin").upcoming(utc(2030, 3, 31, 1, 10), 1)
    assert runs[0].skipped == ()


def test_upcoming_marks_shifted_and_repeated_runs() -> None:
    shifted = cron("30 2 * * *", "Europe/Berlin", SHIFT).upcoming(utc(2030, 3, 30, 12), 2)
    assert shifted == [
        UpcomingRun(utc(2030, 3, 31, 1, 30), berlin(2030, 3, 31, 3, 30), DstMark.SHIFTED, ()),
        UpcomingRun(utc(2030, 4, 1, 0, 30), berlin(2030, 4, 1, 2, 30), None, ()),
    ]
    assert shifted[0].local.utcoffset() == timedelta(hours=2)
    # a shifted time that is also a real wall time of the cron fires once, as the real one
    merged = cron("0 2,3 * * *", "Europe/Berlin", SHIFT).upcoming(utc(2030, 3, 30, 23, 30), 1)
    assert merged == [UpcomingRun(utc(2030, 3, 31, 1), berlin(2030, 3, 31, 3, 0), None, ())]

    after = utc(2030, 10, 26, 12)
    assert [(r.at, r.dst) for r in cron("30 2 * * *", "Europe/Berlin").upcoming(after, 2)] == [
        (utc(2030, 10, 27, 0, 30), DstMark.REPEATED_FIRST),
        (utc(2030, 10, 28, 1, 30), None),
    ]
    # with `last`, the dropped first pass is not "skipped": the run is marked repeated-second
    last = cron("30 2 * * *", "Europe/Berlin", SKIP, LAST).upcoming(after, 1)
    second = berlin(2030, 10, 27, 2, 30, fold=1)
    assert last == [UpcomingRun(utc(2030, 10, 27, 1, 30), second, DstMark.REPEATED_SECOND, ())]
    assert last[0].local.fold == 1 and last[0].local.utcoffset() == timedelta(hours=1)
    both = cron("45 1 * * *", "Australia/Lord_Howe", SKIP, BOTH).upcoming(utc(2030, 4, 6, 12), 3)
    assert [(r.at, r.dst, r.local.strftime("%H:%M%z")) for r in both] == [
        (utc(2030, 4, 6, 14, 45), DstMark.REPEATED_FIRST, "01:45+1100"),
        (utc(2030, 4, 6, 15, 15), DstMark.REPEATED_SECOND, "01:45+1030"),
        (utc(2030, 4, 7, 15, 15), None, "01:45+1030"),
    ]


def test_upcoming_for_intervals_one_shots_and_schedules_that_end() -> None:
    runs = Recurrence(ScheduleKind.EVERY, every_seconds=90, dst_skipped=SHIFT).upcoming(utc(2030, 3, 31), 2)
    assert runs == [
        UpcomingRun(utc(2030, 3, 31, 0, 1, 30), utc(2030, 3, 31, 0, 1, 30), None, ()),
        UpcomingRun(utc(2030, 3, 31, 0, 3), utc(2030, 3, 31, 0, 3), None, ()),
    ]
    assert runs[0].local.tzinfo is UTC
    assert Recurrence(ScheduleKind.ONCE).upcoming(utc(2030, 1, 1), 5) == []
    assert cron("0 0 30 2 *", "Europe/Berlin").upcoming(utc(2030, 1, 1), 5) == []
    assert [r.at for r in cron("0 0 1 1 *", "UTC").upcoming(utc(2198, 6, 1), 5)] == [utc(2199, 1, 1)]


@pytest.mark.parametrize("count", [0, -1, 101, True, 1.5, "3", None])
def test_upcoming_count_must_be_1_to_100(count: object) -> None:
    for schedule in (cron("0 9 * * *", "Europe/Berlin"), Recurrence(ScheduleKind.ONCE)):
        with pytest.raises(ValidationError) as caught:
            schedule.upcoming(utc(2030, 1, 1), count)  # type: ignore[arg-type]
        assert caught.value.field == "count"
        assert "count" in caught.value.message


def test_upcoming_accepts_the_bounds_of_count() -> None:
    schedule = cron("0 9 * * *", "Europe/Berlin")
    assert len(schedule.upcoming(utc(2030, 1, 1), 1)) == 1
    assert len(schedule.upcoming(utc(2030, 1, 1), 100)) == 100


# ---------------------------------------------------------------- policies: parsing and defaults


def test_defaults_keep_the_historic_behaviour_and_recurrence_stays_frozen() -> None:
    schedule = Recurrence(ScheduleKind.CRON, cron="30 2 * * *", timezone="Europe/Berlin")
    assert (schedule.dst_skipped, schedule.dst_repeated) == (SKIP, FIRST)
    with pytest.raises(FrozenInstanceError):
        schedule.dst_skipped = SHIFT  # type: ignore[misc]
    # interval schedules have no wall times: the policies change nothing
    plain = Recurrence(ScheduleKind.EVERY, every_seconds=3600)
    tuned = Recurrence(ScheduleKind.EVERY, every_seconds=3600, dst_skipped=SHIFT, dst_repeated=BOTH)
    at = utc(2030, 3, 31, 0, 30)
    assert tuned.next_after(at) == plain.next_after(at) == utc(2030, 3, 31, 1, 30)
    assert tuned.next_due_from(at, utc(2030, 3, 31, 3)) == plain.next_due_from(at, utc(2030, 3, 31, 3))


def test_next_due_from_honours_the_policies() -> None:
    shift = cron("30 2 * * *", "Europe/Berlin", SHIFT)
    scheduled = utc(2030, 3, 30, 1, 30)
    assert shift.next_due_from(scheduled, scheduled + timedelta(seconds=5)) == utc(2030, 3, 31, 1, 30)
    both = cron("30 2 * * *", "Europe/Berlin", SKIP, BOTH)
    scheduled = utc(2030, 10, 27, 0, 30)
    assert both.next_due_from(scheduled, scheduled + timedelta(seconds=2)) == utc(2030, 10, 27, 1, 30)


@pytest.mark.parametrize(
    ("text", "expected"), [("skip", SKIP), ("shift", SHIFT), (" SHIFT ", SHIFT), (SHIFT, SHIFT)]
)
def test_parse_dst_skipped(text: str, expected: DstSkipped) -> None:
    assert parse_dst_skipped(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"), [("first", FIRST), ("Last", LAST), ("both", BOTH), (BOTH, BOTH)]
)
def test_parse_dst_repeated(text: str, expected: DstRepeated) -> None:
    assert parse_dst_repeated(text) is expected


@pytest.mark.parametrize("text", ["", "later", "first", None, 1])
def test_parse_dst_skipped_rejects_other_values_naming_the_field_and_the_choices(text: object) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_dst_skipped(text)
    assert caught.value.field == "dst_skipped"
    assert caught.value.message.startswith("dst_skipped: ") and "skip, shift" in caught.value.message


@pytest.mark.parametrize("text", ["", "second", "skip", None, 2])
def test_parse_dst_repeated_rejects_other_values_naming_the_field_and_the_choices(text: object) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_dst_repeated(text)
    assert caught.value.field == "dst_repeated"
    assert caught.value.message.startswith("dst_repeated: ") and "first, last, both" in caught.value.message


# ---------------------------------------------------------------- jitter

JITTER_PIN = datetime(2030, 1, 7, 9, 5, 25, 890803, tzinfo=UTC)


def test_jitter_is_deterministic_for_a_key() -> None:
    due = utc(2030, 1, 7, 9)
    key = "task-42@2030-01-07T09:00:00Z"
    assert jittered(due, 600, key) == jittered(due, 600.0, key)
    # pinned, so that a change of hash (which would move every jittered run) is noticed
    assert jittered(due, 600, key) == JITTER_PIN
    assert jittered(due, 600, "task-43@2030-01-07T09:00:00Z") != jittered(due, 600, key)


def test_jitter_spreads_keys_over_the_whole_range_and_never_runs_early() -> None:
    due = utc(2030, 1, 7, 9)
    jitter = 300.0
    fractions = []
    for i in range(1000):
        delay = jittered(due, jitter, f"task-{i}@2030-01-07T09:00:00Z") - due
        assert timedelta(0) <= delay < timedelta(seconds=jitter)
        fractions.append(delay / timedelta(seconds=jitter))
    assert len({int(f * 10) for f in fractions}) >= 8
    assert 0.4 < sum(fractions) / len(fractions) < 0.6


@pytest.mark.parametrize("jitter", [None, 0, 0.0])
def test_no_jitter_leaves_the_run_time_unchanged(jitter: float | None) -> None:
    due = utc(2030, 1, 7, 9, 0, 0)
    assert jittered(due, jitter, "task") == due


def test_jitter_is_whole_microseconds_within_a_tiny_range() -> None:
    due = utc(2030, 1, 7, 9)
    delays = {jittered(due, 0.000005, f"k{i}") - due for i in range(200)}
    assert delays <= {timedelta(microseconds=us) for us in range(5)}


@pytest.mark.parametrize("seconds", [-1, -0.001, 3600.5, math.inf, -math.inf, math.nan, True, "5", None])
def test_validate_jitter_rejects_out_of_range_naming_the_field(seconds: object) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_jitter(seconds)
    assert caught.value.field == "jitter_seconds"
    assert caught.value.message.startswith("jitter_seconds: ")
    with pytest.raises(ValidationError) as named:
        validate_jitter(seconds, field="jitter")
    assert named.value.field == "jitter"


@pytest.mark.parametrize("seconds", [0, 0.5, 60, 3600, 3600.0])
def test_validate_jitter_accepts_0_to_3600_seconds(seconds: float) -> None:
    assert validate_jitter(seconds) == float(seconds)


@pytest.mark.parametrize("seconds", [-5, 7200, math.nan])
def test_jittered_refuses_an_invalid_jitter(seconds: float) -> None:
    with pytest.raises(ValidationError) as caught:
        jittered(utc(2030, 1, 7, 9), seconds, "task")
    assert caught.value.field == "jitter_seconds"
