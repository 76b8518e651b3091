"""Cron expressions mean what crontab(5) says: the readings croniter gets wrong, each extension's
meaning, and the refusals (a 422 naming `cron` and saying why)."""

from __future__ import annotations

import calendar
import itertools
from datetime import UTC, date, datetime, timedelta

import pytest

from nexttick.cron import MACROS, CronError, legacy_walls, parse_cron
from nexttick.schedules import Recurrence, ScheduleKind

START = datetime(2026, 1, 1)


def walls(expression: str, count: int = 6, start: datetime = START) -> list[datetime]:
    return list(itertools.islice(parse_cron(expression).walls_after(start), count))


def test_a_one_value_hour_range_fires_once_a_day_not_hourly() -> None:
    # Given `0 9-9 * * *`, which croniter 7.0.0 alone runs at 01:00, 02:00, 03:00 ...
    assert next(legacy_walls("0 9-9 * * *", START)) == datetime(2026, 1, 1, 1, 0)
    # Then nexttick runs it at 09:00 every day, in UTC and in a zone
    assert walls("0 9-9 * * *", 3) == [datetime(2026, 1, d, 9) for d in (1, 2, 3)]
    berlin = Recurrence(ScheduleKind.CRON, cron="0 9-9 * * *", timezone="Europe/Berlin")
    assert [run.local.hour for run in berlin.upcoming(datetime(2026, 1, 1, tzinfo=UTC), 5)] == [9] * 5


@pytest.mark.parametrize(
    ("expression", "first"),
    [
        ("0 0 * 5-5 *", datetime(2026, 5, 1)),  # May, not January
        ("* 12-22 * 1 6-6", datetime(2026, 1, 3, 12)),  # Saturday 3 January, not Friday the 2nd
        ("5-5/10 * * * *", datetime(2026, 1, 1, 0, 5)),  # :05 only, not :10, :20 ...
    ],
)
def test_one_value_ranges_elsewhere_mean_their_value(expression: str, first: datetime) -> None:
    assert walls(expression, 1) == [first]


def test_a_step_on_a_one_value_range_is_that_value_alone() -> None:
    assert walls("5-5/10 * * * *", 3) == [datetime(2026, 1, 1, h, 5) for h in (0, 1, 2)]


def test_a_star_prefixed_day_of_month_is_anded_with_the_weekdays() -> None:
    # Given `0 12 */2 * 1-5`: `*/2` starts with `*`, so crontab(5) runs it on odd days that are weekdays
    runs = walls("0 12 */2 * 1-5", 40)
    assert runs[:4] == [datetime(2026, 1, d, 12) for d in (1, 5, 7, 9)]
    assert all(run.day % 2 == 1 and run.weekday() < 5 for run in runs)
    # and Saturday 3 January 2026 (odd, but a Saturday) is not among them; croniter alone runs it
    assert datetime(2026, 1, 3, 12) not in runs
    assert datetime(2026, 1, 3, 12) in itertools.islice(legacy_walls("0 12 */2 * 1-5", START), 5)


def test_both_day_fields_restricted_means_either_matches() -> None:
    runs = walls("0 0 13 * 5", 8)  # the 13th, and every Friday
    assert all(run.day == 13 or run.weekday() == calendar.FRIDAY for run in runs)
    assert datetime(2026, 1, 2) in runs and datetime(2026, 1, 13) in runs


def test_the_last_day_or_the_last_friday_are_both_runs() -> None:
    # croniter alone misses the last day of January 2026 here (a Saturday)
    assert walls("0 0 L * 5L", 4) == [
        datetime(2026, 1, 30),
        datetime(2026, 1, 31),
        datetime(2026, 2, 27),
        datetime(2026, 2, 28),
    ]


@pytest.mark.parametrize(
    ("expression", "first_three"),
    [
        ("0 0 L * *", [date(2026, 1, 31), date(2026, 2, 28), date(2026, 3, 31)]),
        ("0 0 * * 5L", [date(2026, 1, 30), date(2026, 2, 27), date(2026, 3, 27)]),
        ("0 0 * * L5", [date(2026, 1, 30), date(2026, 2, 27), date(2026, 3, 27)]),  # croniter's spelling
        ("0 0 * * friL", [date(2026, 1, 30), date(2026, 2, 27), date(2026, 3, 27)]),
        ("0 0 * * 1#1", [date(2026, 1, 5), date(2026, 2, 2), date(2026, 3, 2)]),
        ("0 0 * * mon#1,5L", [date(2026, 1, 5), date(2026, 1, 30), date(2026, 2, 2)]),
        ("0 0 * * 5#5", [date(2026, 1, 30), date(2026, 5, 29), date(2026, 7, 31)]),
        ("0 0 * * 7", [date(2026, 1, 4), date(2026, 1, 11), date(2026, 1, 18)]),  # 7 is Sunday
        ("0 0 * * 5-7", [date(2026, 1, 2), date(2026, 1, 3), date(2026, 1, 4)]),
        ("0 0 1 jan-MAR/2 *", [date(2026, 3, 1), date(2027, 1, 1), date(2027, 3, 1)]),
        ("0 0 ? * 1", [date(2026, 1, 5), date(2026, 1, 12), date(2026, 1, 19)]),
    ],
)
def test_extensions_have_their_documented_meaning(expression: str, first_three: list[date]) -> None:
    assert [wall.date() for wall in walls(expression, 3, START.replace(hour=1))] == first_three


def test_a_step_on_a_single_value_runs_to_the_end_of_the_field() -> None:
    assert [w.minute for w in walls("30/15 * * * *", 3)] == [30, 45, 30]


def _nearest_weekday(year: int, month: int, day: int) -> date:
    """The weekday nearest `day` (the month's last day in a shorter month), within its month."""
    last = calendar.monthrange(year, month)[1]
    day = min(day, last)
    target = date(year, month, day)
    if target.weekday() == calendar.SATURDAY:
        return target - timedelta(days=1) if day > 1 else target + timedelta(days=2)
    if target.weekday() == calendar.SUNDAY:
        return target + timedelta(days=1) if day < last else target - timedelta(days=2)
    return target


@pytest.mark.parametrize("day", [1, 2, 14, 15, 28, 29, 30, 31])
def test_nearest_weekday_stays_in_its_month(day: int) -> None:
    runs = walls(f"0 0 {day}W * *", 36, datetime(2025, 12, 31, 23))
    months = itertools.product((2026, 2027, 2028), range(1, 13))
    expected = [_nearest_weekday(year, month, day) for year, month in months]
    assert [run.date() for run in runs] == expected


@pytest.mark.parametrize(("macro", "fields"), sorted(MACROS.items()))
def test_macros_mean_their_crontab_fields(macro: str, fields: str) -> None:
    assert walls(macro, 5) == walls(fields, 5)
    assert parse_cron(macro.upper()).text == macro.upper()


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("@reboot", "not a schedule macro"),
        ("0 23-1 * * *", "runs backwards"),
        ("0 0 * * sat-sun", "runs backwards"),
        ("0 0 LW * *", "LW (last weekday of the month) is not supported"),
        ("0 0 L-2 * *", "L-n (days before the last) is not supported"),
        ("H * * * *", "expected a number from 0 to 59"),
        ("~ * * * *", "not a number, name, range or step"),
        ("0 9 * * 5 2030", "has 6 fields; cron takes 5"),
        ("0 0 1 1 ? 1970", "has 6 fields"),
        ("* * * *", "has 4 fields"),
        ("? * * * *", "only allowed in the day fields"),
        ("*/0 * * * *", "a step must be at least 1"),
        ("61 * * * *", "61 is outside 0-59"),
        ("0 0 * * 5#6", "must be 1 to 5"),
        ("0 0 32W * *", "32 is outside 1-31"),
        ("0 0 * foo *", "or a name (jan..dec)"),
        ("0 0 L * L", "L alone is not a day of the week (dL: the last weekday d of the month)"),
        ("*-5 * * * *", "`*` cannot start a range"),
        ("", "a cron expression is required"),
    ],
)
def test_expressions_without_one_crontab_meaning_are_refused_naming_cron(expression: str, why: str) -> None:
    with pytest.raises(CronError) as caught:
        parse_cron(expression)
    assert caught.value.field == "cron"
    assert caught.value.message.startswith("cron: ")
    assert why in caught.value.message


@pytest.mark.parametrize("value", [None, 5, ["0 9 * * *"], {"cron": "x"}])
def test_a_cron_that_is_not_text_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(CronError) as caught:
        parse_cron(value, "schedule.cron")
    assert caught.value.field == "schedule.cron"


def test_an_expression_that_never_matches_yields_no_wall_time() -> None:
    assert walls("0 0 30 2 *") == []
    assert walls("0 0 31 2,4 *") == []
