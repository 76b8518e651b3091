"""Recurrence (cron in IANA zones across DST, fixed intervals without drift) and Timing."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from nexttick.config import Precision
from nexttick.errors import ValidationError
from nexttick.ruletiming import Timing
from nexttick.schedules import Recurrence, ScheduleKind, load_zone, validate_cron
from nexttick.timeutil import floor_minute


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, microsecond: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, microsecond, tzinfo=UTC)


def cron(expression: str, zone: str = "UTC") -> Recurrence:
    return Recurrence(ScheduleKind.CRON, cron=expression, timezone=zone)


def every(seconds: float) -> Recurrence:
    return Recurrence(ScheduleKind.EVERY, every_seconds=seconds)


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "expression", ["0 9 * * 5", "*/15 * * * *", "0 0 1 1 *", "@hourly", "@daily", "  0   9 * * 1-5 "]
)
def test_validate_cron_accepts_standard_expressions(expression: str) -> None:
    assert validate_cron(expression) == " ".join(expression.split())


@pytest.mark.parametrize(
    "expression",
    ["", "* * * *", "0 9 * * 5 2030", "0 0 1 1 ? 1970", "61 * * * *", "* 25 * * *", "bogus", None, 5],
)
def test_validate_cron_rejects_other_expressions_naming_the_field(expression: object) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_cron(expression)
    assert caught.value.field == "cron"


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "../etc/passwd", "UTC+1"])
def test_load_zone_rejects_unknown_zones(name: str) -> None:
    with pytest.raises(ValidationError) as caught:
        load_zone(name)
    assert caught.value.field == "timezone"


# ---------------------------------------------------------------- cron: plain and in zones


def test_cron_next_after_is_strictly_after() -> None:
    weekly = cron("0 9 * * 5")  # Fridays 09:00 UTC; 2030-01-11 is a Friday
    assert weekly.next_after(utc(2030, 1, 7, 9, 0, 30)) == utc(2030, 1, 11, 9)
    assert weekly.next_after(utc(2030, 1, 11, 9)) == utc(2030, 1, 18, 9)
    assert weekly.next_after(utc(2030, 1, 11, 8, 59, 59, 999999)) == utc(2030, 1, 11, 9)


def test_cron_in_a_zone_is_evaluated_on_local_wall_time() -> None:
    # 09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC in summer
    berlin = cron("0 9 * * *", "Europe/Berlin")
    assert berlin.next_after(utc(2030, 1, 7, 0)) == utc(2030, 1, 7, 8)
    assert berlin.next_after(utc(2030, 7, 7, 0)) == utc(2030, 7, 7, 7)
    tokyo = cron("0 9 * * *", "Asia/Tokyo")  # +09:00: the local day starts on the UTC evening before
    assert tokyo.next_after(utc(2030, 1, 6, 23, 30)) == utc(2030, 1, 7, 0)


@pytest.mark.parametrize(
    ("zone", "expression", "after", "expected"),
    [
        # Berlin springs forward 2030-03-31 02:00 -> 03:00: 02:30 does not exist that day
        ("Europe/Berlin", "30 2 * * *", utc(2030, 3, 30, 12), [utc(2030, 4, 1, 0, 30)]),
        # New York springs forward 2030-03-10 02:00 -> 03:00
        ("America/New_York", "30 2 * * *", utc(2030, 3, 9, 12), [utc(2030, 3, 11, 6, 30)]),
        # Lord Howe springs forward half an hour 2030-10-06 02:00 -> 02:30
        ("Australia/Lord_Howe", "15 2 * * *", utc(2030, 10, 5, 12), [utc(2030, 10, 6, 15, 15)]),
    ],
)
def test_cron_wall_time_skipped_by_dst_does_not_fire(
    zone: str, expression: str, after: datetime, expected: list[datetime]
) -> None:
    schedule = cron(expression, zone)
    got = []
    at = after
    for _ in expected:
        nxt = schedule.next_after(at)
        assert nxt is not None
        got.append(nxt)
        at = nxt
    assert got == expected


@pytest.mark.parametrize(
    ("zone", "expression", "after", "expected"),
    [
        # Berlin falls back 2030-10-27 03:00 -> 02:00: 02:30 happens twice, fires at the first
        (
            "Europe/Berlin",
            "30 2 * * *",
            utc(2030, 10, 26, 12),
            [utc(2030, 10, 27, 0, 30), utc(2030, 10, 28, 1, 30)],
        ),
        # New York falls back 2030-11-03 02:00 -> 01:00
        (
            "America/New_York",
            "30 1 * * *",
            utc(2030, 11, 2, 12),
            [utc(2030, 11, 3, 5, 30), utc(2030, 11, 4, 6, 30)],
        ),
        # Lord Howe falls back half an hour 2030-04-07 02:00 -> 01:30: 01:45 happens twice
        (
            "Australia/Lord_Howe",
            "45 1 * * *",
            utc(2030, 4, 6, 12),
            [utc(2030, 4, 6, 14, 45), utc(2030, 4, 7, 15, 15)],
        ),
    ],
)
def test_cron_wall_time_repeated_by_dst_fires_once(
    zone: str, expression: str, after: datetime, expected: list[datetime]
) -> None:
    schedule = cron(expression, zone)
    first = schedule.next_after(after)
    assert first is not None
    second = schedule.next_after(first)
    assert [first, second] == expected


def test_cron_after_the_first_pass_of_a_repeated_hour_does_not_fire_in_the_second_pass() -> None:
    # Given we are in the second 02:10 of Berlin's fall-back night (01:10 UTC, +01:00)
    schedule = cron("30 2 * * *", "Europe/Berlin")
    # Then the second 02:30 does not fire; the next run is the following night
    assert schedule.next_after(utc(2030, 10, 27, 1, 10)) == utc(2030, 10, 28, 1, 30)


def _brute_force_firings(expression: str, zone: ZoneInfo, start: datetime, end: datetime) -> list[datetime]:
    """Independent oracle: walk every UTC minute; fire when the local wall time matches the cron
    and it is the first pass of that wall time (fold == 0)."""
    firings = []
    at = floor_minute(start) + timedelta(minutes=1)
    while at <= end:
        local = at.astimezone(zone)
        if local.fold == 0 and croniter.match(expression, local.replace(tzinfo=None)):
            firings.append(at)
        at += timedelta(minutes=1)
    return firings


@pytest.mark.parametrize(
    ("zone", "around"),
    [
        ("Europe/Berlin", utc(2030, 3, 31, 1)),
        ("Europe/Berlin", utc(2030, 10, 27, 1)),
        ("America/New_York", utc(2030, 3, 10, 7)),
        ("America/New_York", utc(2030, 11, 3, 6)),
        ("Australia/Lord_Howe", utc(2030, 4, 6, 15)),
        ("Australia/Lord_Howe", utc(2030, 10, 5, 15, 30)),
    ],
)
@pytest.mark.parametrize("expression", ["*/15 * * * *", "0,30 * * * *", "10 1-3 * * *", "45 1,2 * * *"])
def test_cron_chain_matches_a_brute_force_oracle_across_dst_transitions(
    zone: str, around: datetime, expression: str
) -> None:
    # Given a window of 6 hours either side of a DST transition
    start, end = around - timedelta(hours=6), around + timedelta(hours=6)
    expected = _brute_force_firings(expression, ZoneInfo(zone), start, end)
    # When we follow next_after from the start
    schedule = cron(expression, zone)
    got = []
    at: datetime | None = start
    while True:
        assert at is not None
        at = schedule.next_after(at)
        if at is None or at > end:
            break
        got.append(at)
    # Then we fire exactly at the oracle's instants: no skipped-time firing, no double firing
    assert got == expected
    assert len(set(got)) == len(got)


def test_cron_that_never_matches_has_no_next_occurrence() -> None:
    assert cron("0 0 30 2 *").next_after(utc(2030, 1, 1)) is None


def test_cron_stops_at_the_end_of_2199() -> None:
    new_year = cron("0 0 1 1 *")
    assert new_year.next_after(utc(2198, 6, 1)) == utc(2199, 1, 1)
    assert new_year.next_after(utc(2199, 1, 1)) is None
    leap_day = cron("0 0 29 2 *")  # 2200 is not a leap year
    assert leap_day.next_after(utc(2196, 3, 1)) is None


# ---------------------------------------------------------------- every: no drift, coalescing


def test_every_first_occurrence_is_one_interval_after() -> None:
    assert every(90).next_after(utc(2030, 1, 7, 9, 0, 30)) == utc(2030, 1, 7, 9, 2)


def test_every_chained_from_scheduled_times_does_not_drift() -> None:
    # Given an interval that is not a whole number of minutes
    schedule = every(97.125)
    start = utc(2030, 1, 7, 9, 0, 0)
    # When we follow 10,000 occurrences, each computed from the previous *scheduled* time
    at = start
    for _ in range(10_000):
        nxt = schedule.next_after(at)
        assert nxt is not None
        at = nxt
    # Then the last one is exactly start + n * interval (no accumulated error)
    assert at == start + timedelta(seconds=97.125) * 10_000


def test_every_late_run_stays_on_the_grid_of_scheduled_times() -> None:
    # Given an occurrence scheduled at 09:00:00 that actually ran at 09:00:07
    schedule = every(60)
    scheduled = utc(2030, 1, 7, 9, 0, 0)
    # Then the next is 09:01:00, not 09:01:07
    assert schedule.next_due_from(scheduled, utc(2030, 1, 7, 9, 0, 7)) == utc(2030, 1, 7, 9, 1, 0)


def test_every_missed_occurrences_coalesce_into_one() -> None:
    # Given an hourly task scheduled at 09:00 and a worker back only at 12:30
    schedule = every(3600)
    scheduled = utc(2030, 1, 7, 9)
    # Then 10:00, 11:00 and 12:00 are coalesced: the next is 13:00, on the grid
    assert schedule.next_due_from(scheduled, utc(2030, 1, 7, 12, 30)) == utc(2030, 1, 7, 13)


def test_every_next_due_is_strictly_later_than_now_on_a_grid_point() -> None:
    schedule = every(3600)
    assert schedule.next_due_from(utc(2030, 1, 7, 9), utc(2030, 1, 7, 12)) == utc(2030, 1, 7, 13)


def test_every_next_due_before_the_scheduled_time_is_one_interval_later() -> None:
    schedule = every(3600)
    assert schedule.next_due_from(utc(2030, 1, 7, 9), utc(2030, 1, 7, 8)) == utc(2030, 1, 7, 10)


def test_every_next_due_is_always_on_the_grid_and_after_now() -> None:
    rng = random.Random(20301207)
    for _ in range(2000):
        step = rng.choice([1, 7.5, 60, 90, 3600, 86400 * 3])
        scheduled = utc(2030, 1, 1) + timedelta(seconds=rng.uniform(0, 86400 * 365))
        now = scheduled + timedelta(seconds=rng.uniform(-step, step * 1000))
        nxt = every(step).next_due_from(scheduled, now)
        assert nxt is not None
        assert nxt > now
        assert nxt - timedelta(seconds=step) <= max(now, scheduled)  # the first grid point after now
        periods = (nxt - scheduled) / timedelta(seconds=step)
        assert periods == pytest.approx(round(periods), abs=1e-6) and round(periods) >= 1


def test_cron_missed_occurrences_coalesce_into_one() -> None:
    # Given a daily 09:00 Berlin task scheduled on 7 January, processed only three days later
    schedule = cron("0 9 * * *", "Europe/Berlin")
    scheduled = utc(2030, 1, 7, 8)
    # Then the next due is the next 09:00 after now, not the missed 8th and 9th
    assert schedule.next_due_from(scheduled, utc(2030, 1, 10, 9)) == utc(2030, 1, 11, 8)
    # And on time it is simply the next day
    assert schedule.next_due_from(scheduled, utc(2030, 1, 7, 8, 0, 5)) == utc(2030, 1, 8, 8)


def test_every_stops_at_the_end_of_2199() -> None:
    schedule = every(7200)
    assert schedule.next_after(utc(2199, 12, 31, 21)) == utc(2199, 12, 31, 23)
    assert schedule.next_after(utc(2199, 12, 31, 23)) is None
    assert schedule.next_due_from(utc(2199, 12, 31, 21), utc(2199, 12, 31, 23, 30)) is None


def test_a_one_shot_schedule_has_no_next_occurrence() -> None:
    once = Recurrence(ScheduleKind.ONCE)
    assert once.next_after(utc(2030, 1, 1)) is None
    assert once.next_due_from(utc(2030, 1, 1), utc(2030, 1, 2)) is None


# ---------------------------------------------------------------- Timing


def test_second_precision_arms_a_whole_minute_plus_the_delivery_margin_early() -> None:
    timing = Timing(Precision.SECOND, delivery_margin_seconds=10, settle_seconds=10)
    assert timing.lead == timedelta(seconds=70)
    assert timing.fire_minute(utc(2030, 1, 7, 9, 5, 30)) == utc(2030, 1, 7, 9, 4)
    assert timing.fire_minute(utc(2030, 1, 7, 9, 5, 9, 999999)) == utc(2030, 1, 7, 9, 3)
    assert timing.fire_minute(utc(2030, 1, 7, 9, 5, 10)) == utc(2030, 1, 7, 9, 4)


def test_fire_minute_is_the_latest_minute_that_ends_a_margin_before_due() -> None:
    rng = random.Random(7)
    for margin in (0, 10, 60):
        timing = Timing(Precision.SECOND, delivery_margin_seconds=margin)
        for _ in range(2000):
            due = utc(2030, 1, 1) + timedelta(microseconds=rng.randrange(10**12 * 30))
            minute = timing.fire_minute(due)
            assert minute == floor_minute(minute)
            end_of_window = minute + timedelta(seconds=60 + margin)
            assert end_of_window <= due  # the firing plus delivery delay is over before due
            assert end_of_window + timedelta(minutes=1) > due  # and not a minute earlier than needed


def test_minute_precision_fires_in_the_minute_that_contains_due() -> None:
    timing = Timing(Precision.MINUTE)
    assert timing.lead == timedelta(0)
    assert timing.fire_minute(utc(2030, 1, 7, 9, 5, 59)) == utc(2030, 1, 7, 9, 5)
    assert timing.fire_minute(utc(2030, 1, 7, 9, 5)) == utc(2030, 1, 7, 9, 5)


@pytest.mark.parametrize(
    ("minute", "now", "armable"),
    [
        (utc(2030, 1, 7, 9, 1), utc(2030, 1, 7, 9, 0, 30), True),  # next minute, 30 s away
        (utc(2030, 1, 7, 9, 1), utc(2030, 1, 7, 9, 0, 50), True),  # exactly settle_seconds away
        (utc(2030, 1, 7, 9, 1), utc(2030, 1, 7, 9, 0, 50, 1), False),  # inside the settle time
        (utc(2030, 1, 7, 9, 0), utc(2030, 1, 7, 9, 0, 0), False),  # the current minute
        (utc(2030, 1, 7, 8, 59), utc(2030, 1, 7, 9, 0, 30), False),  # a past minute
        (utc(2030, 1, 8, 0, 0), utc(2030, 1, 7, 9, 0, 30), True),
    ],
)
def test_armable_requires_a_future_minute_at_least_settle_seconds_away(
    minute: datetime, now: datetime, armable: bool
) -> None:
    timing = Timing(Precision.SECOND, delivery_margin_seconds=10, settle_seconds=10)
    assert timing.armable(minute, now) is armable
