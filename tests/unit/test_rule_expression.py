"""EventBridge cron for the single rule: six fields, UTC, year-pinned; checked against pyawscron.

pyawscron is an independent implementation of AWS's cron dialect. For a due time given in any
zone, the rule's next firing (per pyawscron) from one second before our minute must be exactly our
minute, it must never fire again after it, and the minute must lie a whole lead before the due time.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyawscron import AWSCron

from nexttick.aws import parse_rule_minute
from nexttick.config import Precision
from nexttick.constants import EPOCH_EXPRESSION
from nexttick.ruletiming import Timing, rule_expression
from nexttick.timeutil import floor_minute, parse_instant

SIX_FIELDS_PINNED = re.compile(r"^cron\((\d{1,2}) (\d{1,2}) (\d{1,2}) (\d{1,2}) \? (\d{4})\)$")
DST_ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]
TIMINGS = [
    Timing(Precision.SECOND, delivery_margin_seconds=10),
    Timing(Precision.SECOND, delivery_margin_seconds=0),
    Timing(Precision.MINUTE),
]
FIRST = datetime(1970, 1, 1, 0, 5, tzinfo=UTC)  # leaves room for the lead after the epoch minute
LAST = datetime(2199, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


def next_firing(expression: str, after: datetime) -> datetime | None:
    """The first minute strictly after `after` at which EventBridge fires `expression` (pyawscron)."""
    assert expression.startswith("cron(") and expression.endswith(")")
    return AWSCron(expression[len("cron(") : -1]).occurrence(after).next()


def assert_fires_exactly_once_at(expression: str, minute: datetime) -> None:
    match = SIX_FIELDS_PINNED.match(expression)
    assert match, expression
    fields = [int(g) for g in match.groups()]
    assert fields == [minute.minute, minute.hour, minute.day, minute.month, minute.year]
    assert next_firing(expression, minute - timedelta(seconds=1)) == minute
    assert next_firing(expression, minute - timedelta(days=400)) == minute
    assert next_firing(expression, minute) is None  # year-pinned: it never fires again


def check_due(due: datetime, timing: Timing) -> None:
    minute = timing.fire_minute(due)
    expression = rule_expression(minute)
    assert_fires_exactly_once_at(expression, minute)
    # the firing minute lies a whole lead before the due time (second mode) or contains it (minute)
    assert minute + timing.lead <= due
    if timing.precision is Precision.SECOND:
        assert minute + timedelta(seconds=60) + timedelta(seconds=timing.delivery_margin_seconds) <= due
    else:
        assert minute <= due < minute + timedelta(minutes=1)
    # read back from the rule (1970 is reserved for the epoch position: such minutes are long past)
    assert parse_rule_minute(expression) == (minute if minute.year > 1970 else None)


def test_epoch_expression_when_nothing_is_pending() -> None:
    assert rule_expression(None) == EPOCH_EXPRESSION == "cron(0 0 1 1 ? 1970)"
    assert parse_rule_minute(EPOCH_EXPRESSION) is None
    # It only ever "fires" in the first minute of 1970, so it never fires from any real instant
    assert next_firing(EPOCH_EXPRESSION, datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC)) == datetime(
        1970, 1, 1, tzinfo=UTC
    )
    for now in (datetime(1970, 1, 1, 0, 0, 30, tzinfo=UTC), datetime(2030, 1, 7, 9, tzinfo=UTC)):
        assert next_firing(EPOCH_EXPRESSION, now) is None


def test_rule_expression_uses_utc_fields_whatever_the_input_offset() -> None:
    # Given a minute expressed in Berlin summer time (the fields come from its own offset)
    berlin = datetime(2030, 7, 1, 0, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    # Then the cron carries the UTC date and hour (the previous day, 22:30)
    assert rule_expression(berlin) == "cron(30 22 30 6 ? 2030)"


def test_year_boundaries_of_eventbridge() -> None:
    for minute in (datetime(1970, 1, 1, 0, 1, tzinfo=UTC), datetime(2199, 12, 31, 23, 59, tzinfo=UTC)):
        assert_fires_exactly_once_at(rule_expression(minute), minute)


def test_foreign_rule_expressions_are_returned_as_text() -> None:
    assert parse_rule_minute("rate(5 minutes)") == "rate(5 minutes)"
    assert parse_rule_minute("cron(0 12 * * ? *)") == "cron(0 12 * * ? *)"


@pytest.mark.parametrize("timing", TIMINGS, ids=["second-10s", "second-0s", "minute"])
def test_random_utc_due_times_match_pyawscron(timing: Timing) -> None:
    rng = random.Random(1970_2199)
    span = int((LAST - FIRST).total_seconds() * 1_000_000)
    for _ in range(1500):
        due = FIRST + timedelta(microseconds=rng.randrange(span))
        check_due(due, timing)


@pytest.mark.parametrize("zone", DST_ZONES)
def test_due_times_given_in_dst_zones_around_transitions_match_pyawscron(zone: str) -> None:
    # Given wall-clock due times within three hours of every DST transition of a few years,
    # written as RFC 3339 with the zone's offset at that instant (as a client would send them)
    tz = ZoneInfo(zone)
    rng = random.Random(zone)
    transitions = []
    at = datetime(2029, 1, 1, tzinfo=UTC)
    previous = at.astimezone(tz).utcoffset()
    while at < datetime(2033, 1, 1, tzinfo=UTC):
        offset = at.astimezone(tz).utcoffset()
        if offset != previous:
            transitions.append(at)
            previous = offset
        at += timedelta(minutes=30)
    assert len(transitions) == 8  # two a year
    checked = 0
    for transition in transitions:
        for _ in range(250):
            instant = transition + timedelta(seconds=rng.uniform(-3 * 3600, 3 * 3600))
            local = instant.astimezone(tz)
            text = local.isoformat()  # e.g. 2030-10-27T02:30:12.345678+01:00
            due = parse_instant(text)
            assert due == instant.replace(microsecond=local.microsecond)
            for timing in TIMINGS:
                check_due(due, timing)
                checked += 1
    assert checked == 8 * 250 * len(TIMINGS)


@settings(max_examples=400, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(1970, 1, 2),
        max_value=datetime(2199, 12, 30),
        timezones=st.sampled_from([ZoneInfo(z) for z in [*DST_ZONES, "Asia/Kathmandu", "Pacific/Chatham"]]),
    ),
    st.sampled_from(TIMINGS),
)
def test_any_aware_due_time_maps_to_a_pinned_utc_cron(due: datetime, timing: Timing) -> None:
    # Aware datetimes in any zone (including imaginary and ambiguous wall times) go through UTC
    utc_due = parse_instant(due)
    check_due(utc_due, timing)
    assert timing.fire_minute(utc_due) == floor_minute(utc_due - timing.lead)
