"""timeutil: RFC 3339 instants (offset required, UTC inside, 1970-2199) and durations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from nexttick.errors import ValidationError
from nexttick.timeutil import (
    floor_minute,
    format_instant,
    from_epoch,
    parse_duration,
    parse_instant,
    parse_stored_instant,
    to_epoch,
)

# ---------------------------------------------------------------- parse_instant: accepted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2030-01-01T09:00:00Z", datetime(2030, 1, 1, 9, 0, tzinfo=UTC)),
        ("2030-01-01T09:00:00z", datetime(2030, 1, 1, 9, 0, tzinfo=UTC)),
        ("2030-01-01t09:00:00+00:00", datetime(2030, 1, 1, 9, 0, tzinfo=UTC)),
        ("2030-01-01 09:00:00-00:00", datetime(2030, 1, 1, 9, 0, tzinfo=UTC)),
        ("2030-01-01T09:00:00+01:00", datetime(2030, 1, 1, 8, 0, tzinfo=UTC)),
        ("2030-01-01T09:00:00+05:30", datetime(2030, 1, 1, 3, 30, tzinfo=UTC)),
        ("2030-01-01T01:00:00-08:00", datetime(2030, 1, 1, 9, 0, tzinfo=UTC)),
        # crossing the date line backwards and the year boundary forwards
        ("2030-01-01T00:30:00+14:00", datetime(2029, 12, 31, 10, 30, tzinfo=UTC)),
        ("2029-12-31T23:30:00-11:00", datetime(2030, 1, 1, 10, 30, tzinfo=UTC)),
        ("2030-06-01T12:00:00.5Z", datetime(2030, 6, 1, 12, 0, 0, 500000, tzinfo=UTC)),
        ("2030-06-01T12:00:00.123456+02:00", datetime(2030, 6, 1, 10, 0, 0, 123456, tzinfo=UTC)),
        # nanoseconds: digits past microseconds are dropped (truncated, not rounded)
        ("2030-06-01T12:00:00.123456789-03:00", datetime(2030, 6, 1, 15, 0, 0, 123456, tzinfo=UTC)),
        ("  2030-06-01T12:00:00Z  ", datetime(2030, 6, 1, 12, 0, tzinfo=UTC)),
        ("1970-01-01T00:00:00Z", datetime(1970, 1, 1, tzinfo=UTC)),
        ("2199-12-31T23:59:59.999999Z", datetime(2199, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2028-02-29T00:00:00Z", datetime(2028, 2, 29, tzinfo=UTC)),
    ],
)
def test_parse_instant_accepts_rfc3339_with_offset_and_returns_utc(text: str, expected: datetime) -> None:
    # When
    parsed = parse_instant(text)
    # Then
    assert parsed == expected
    assert parsed.tzinfo is UTC
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "value",
    [
        datetime(2030, 3, 31, 2, 30, tzinfo=ZoneInfo("America/New_York")),
        datetime(2030, 10, 27, 2, 30, tzinfo=ZoneInfo("Europe/Berlin"), fold=1),
        datetime(2030, 1, 1, 9, tzinfo=timezone(timedelta(hours=-3, minutes=-30))),
    ],
)
def test_parse_instant_converts_aware_datetimes_to_utc(value: datetime) -> None:
    parsed = parse_instant(value)
    assert parsed.tzinfo is UTC
    # same instant (compared as timestamps: PEP 495 makes ambiguous inter-zone == always False)
    assert parsed.timestamp() == value.timestamp()


def test_parse_instant_respects_fold_of_a_repeated_wall_time() -> None:
    # Given the repeated 02:30 on the day Berlin leaves summer time
    first = datetime(2030, 10, 27, 2, 30, tzinfo=ZoneInfo("Europe/Berlin"), fold=0)
    second = first.replace(fold=1)
    # Then the two passes are one hour apart in UTC
    assert parse_instant(first) == datetime(2030, 10, 27, 0, 30, tzinfo=UTC)
    assert parse_instant(second) == datetime(2030, 10, 27, 1, 30, tzinfo=UTC)


# ---------------------------------------------------------------- parse_instant: rejected


@pytest.mark.parametrize(
    "text",
    [
        "2030-01-01T09:00:00",  # naive
        "2030-01-01 09:00:00",
        "2030-01-01",
        "2030-01-01T09:00Z",  # no seconds
        "2030-01-01T09:00:00+0100",  # offset without colon
        "2030-01-01T09:00:00+01",
        "2030-01-01T09:00:00 Z",
        "2030-01-01T09:00:00.Z",
        "2030-01-01T09:00:00.1234567890Z",  # more than nanoseconds
        "2030-02-30T09:00:00Z",  # no such day
        "2030-13-01T09:00:00Z",
        "2030-01-01T24:00:00Z",
        "2030-01-01T23:59:60Z",  # leap second
        "2030-01-01T09:00:00+24:00",  # offset out of range
        "30-01-01T09:00:00Z",
        "next tuesday",
        "",
        "1700000000",
    ],
)
def test_parse_instant_rejects_malformed_or_naive_text_naming_the_field(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_instant(text, "due")
    assert caught.value.field == "due"
    assert caught.value.message.startswith("due:")


@pytest.mark.parametrize("value", [None, 1700000000, 17.5, ["2030-01-01T09:00:00Z"], b"2030-01-01T09:00:00Z"])
def test_parse_instant_rejects_non_strings(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_instant(value, "end")  # type: ignore[arg-type]
    assert caught.value.field == "end"


def test_parse_instant_rejects_naive_datetime_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="offset") as caught:
        parse_instant(datetime(2030, 1, 1, 9), "end")
    assert caught.value.field == "end"


@pytest.mark.parametrize(
    "value",
    [
        "2200-01-01T00:00:00Z",
        "2199-12-31T23:30:00-01:00",  # 2200 in UTC
        "1969-12-31T23:59:59Z",
        "1970-01-01T00:30:00+01:00",  # 1969 in UTC
        "9999-12-31T23:59:59-01:00",  # beyond datetime.max once in UTC
        "0001-01-01T00:00:00+01:00",  # before datetime.min once in UTC
        "0000-01-01T00:00:00Z",
        datetime.max.replace(tzinfo=UTC),
        datetime(2300, 1, 1, tzinfo=ZoneInfo("Asia/Tokyo")),
    ],
)
def test_parse_instant_rejects_years_outside_1970_to_2199(value: str | datetime) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_instant(value, "due")
    assert caught.value.field == "due"


# ---------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("90s", 90),
        ("1h30m", 5400),
        ("1h30m15s", 5415),
        ("2d", 172800),
        ("1d12h", 129600),
        ("250ms", 0.25),
        ("1m500ms", 60.5),
        ("1.5h", 5400),
        (" 45m ", 2700),
        ("PT1H", 3600),
        ("pt1h30m", 5400),
        ("PT90S", 90),
        ("P1D", 86400),
        ("P1DT1H", 90000),
        ("PT0.5S", 0.5),
        (90, 90),
        (1.5, 1.5),
        (timedelta(minutes=5), 300),
    ],
)
def test_parse_duration_accepts_go_iso_and_numbers(value: str | float | timedelta, seconds: float) -> None:
    assert parse_duration(value).total_seconds() == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "90",  # a bare number as text is ambiguous
        "1h 30m",
        "90 s",
        "1y",
        "-5s",
        "h",
        "PT",
        "P",
        "PTXH",
        "every minute",
        "0s",
        "PT0S",
        0,
        -1,
        -0.5,
        timedelta(0),
        timedelta(seconds=-1),
        True,
        None,
        [90],
        float("nan"),
        float("inf"),
        float("-inf"),
        1e30,  # beyond timedelta's range
        "99999999999999d",
    ],
)
def test_parse_duration_rejects_invalid_values_naming_the_field(value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_duration(value, "every")  # type: ignore[arg-type]
    assert caught.value.field == "every"


# ---------------------------------------------------------------- stored form


def test_format_instant_is_fixed_width_sortable_utc_and_round_trips() -> None:
    # Given instants in different offsets, out of order
    instants = [
        datetime(2030, 1, 1, 9, tzinfo=timezone(timedelta(hours=2))),
        datetime(2030, 1, 1, 8, 0, 0, 1, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2199, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ]
    # When formatted
    texts = [format_instant(i) for i in instants]
    # Then every text has the same width, ends in Z, sorts like the instants and round-trips
    assert {len(t) for t in texts} == {len("2030-01-01T09:00:00.000000Z")}
    assert all(t.endswith("Z") for t in texts)
    assert sorted(texts) == [format_instant(i) for i in sorted(instants)]
    assert [parse_stored_instant(t) for t in texts] == instants
    assert texts[0] == "2030-01-01T07:00:00.000000Z"


def test_floor_minute_and_epoch_helpers() -> None:
    at = datetime(2030, 1, 7, 9, 0, 59, 999999, tzinfo=UTC)
    assert floor_minute(at) == datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
    assert from_epoch(to_epoch(at)) == at
    assert from_epoch(0) == datetime(1970, 1, 1, tzinfo=UTC)
