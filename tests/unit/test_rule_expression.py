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

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws
from pyawscron import AWSCron

from nexttick.aws import EventBridgeRule, parse_rule_minute, rule_firings
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


def check_backstop(minute: datetime, timing: Timing) -> None:
    """`second` mode's rule fires at its armed minute, then at the minute's backstop, with nothing in
    between; any other combination of its fields' values is past or later still, and
    `rule_firings` (what the emulators fire) lists exactly what pyawscron finds."""
    expression = timing.rule_expression(minute)
    backstop = timing.backstop_of(minute)
    assert backstop is not None and backstop > minute
    assert parse_rule_minute(expression) == minute
    assert next_firing(expression, minute - timedelta(seconds=1)) == minute
    assert next_firing(expression, minute) == backstop
    firings = rule_firings(expression)
    assert minute in firings and backstop in firings
    assert all(f < minute or f > backstop for f in firings if f not in (minute, backstop))
    found: list[datetime] = []
    after = firings[0] - timedelta(seconds=1)
    while (following := next_firing(expression, after)) is not None:
        found.append(following)
        after = following
    assert found == firings
    # every due time armed for the minute is due by its backstop: a wait for it is backed up
    latest_due = minute + timing.lead + timedelta(seconds=59, microseconds=999999)
    assert timing.fire_minute(latest_due) == minute and latest_due <= backstop


@pytest.mark.parametrize("timing", TIMINGS[:2], ids=["second-10s", "second-0s"])
def test_second_mode_names_the_backstop_and_pyawscron_agrees(timing: Timing) -> None:
    rng = random.Random(2026_12_01)
    span = int((LAST - FIRST).total_seconds() // 60) - 10
    edges = [
        datetime(2030, 1, 7, 9, 58, tzinfo=UTC),  # the next hour
        datetime(2030, 1, 7, 23, 59, tzinfo=UTC),  # the next day
        datetime(2030, 2, 28, 23, 57, tzinfo=UTC),  # the next month, from a short one
        datetime(2032, 2, 29, 23, 58, tzinfo=UTC),  # a leap day
        datetime(2030, 12, 31, 23, 59, tzinfo=UTC),  # the next year
    ]
    for minute in edges + [FIRST + timedelta(minutes=rng.randrange(span)) for _ in range(400)]:
        check_backstop(minute, timing)


def test_minute_mode_names_one_minute() -> None:
    timing = Timing(Precision.MINUTE)
    minute = datetime(2030, 1, 7, 9, 58, tzinfo=UTC)
    assert timing.backstop_of(minute) is None and timing.firings(minute) == (minute,)
    assert_fires_exactly_once_at(timing.rule_expression(minute), minute)


@mock_aws
def test_the_rules_reading_back_names_a_missing_backstop_as_drift() -> None:
    events = boto3.client("events", region_name="us-east-1")
    timing = Timing()
    rule = EventBridgeRule(events, "nexttick-next-due", timing)
    minute = datetime(2030, 1, 7, 9, 58, tzinfo=UTC)
    rule.put(minute)
    assert rule.current() == minute
    # Given the rule put for the minute without its backstop (an older release, a hand edit)
    single = rule_expression(minute)
    events.put_rule(Name=rule.name, ScheduleExpression=single, State="ENABLED")
    # Then it does not read back as the armed minute: the drift check republishes it
    assert rule.current() == single
    rule.put(None)
    assert rule.current() is None
