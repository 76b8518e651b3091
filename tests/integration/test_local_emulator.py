"""The emulated EventBridge against a moto server: fires like AWS, at every minute the rule names
(in `second` precision the armed minute and its backstop), at most once per minute, never for a past
minute, and sleeps until the rule changes instead of polling."""

from __future__ import annotations

import json
import random
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from local.emulator import EventBridgeEmulator, FiringPolicy
from nexttick.aws import EventBridgeRule
from nexttick.config import Precision
from nexttick.ruletiming import Timing
from tests.support.local import SettableClock, client, moto_server

RULE = "nexttick-next-due"
START = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)
ONE_MINUTE = Timing(Precision.MINUTE)  # the rule names the armed minute alone


@pytest.fixture
def events(aws_credentials: None) -> Any:
    with moto_server() as server:
        events = client("events", server)
        events.put_rule(Name=RULE, ScheduleExpression="cron(0 0 1 1 ? 1970)", State="ENABLED")
        yield events, server


def make(
    events: Any, clock: SettableClock, **policy: Any
) -> tuple[EventBridgeEmulator, list[tuple[dict, float]]]:
    delivered: list[tuple[dict[str, Any], float]] = []
    emulator = EventBridgeEmulator(
        events,
        RULE,
        lambda event, delay: delivered.append((event, delay)),
        policy=FiringPolicy(**policy),
        clock=clock,
        rng=random.Random(7),
    )
    return emulator, delivered


def test_fires_once_inside_the_armed_minute_after_a_delivery_delay(events: Any) -> None:
    # Given the rule armed for 09:02 while it is 09:00:30
    client_, _ = events
    clock = SettableClock(START)
    EventBridgeRule(client_, RULE, ONE_MINUTE).put(datetime(2030, 1, 7, 9, 2, tzinfo=UTC))
    emulator, delivered = make(client_, clock)
    # When the emulator sleeps as long as it asks each time until it delivers
    while True:
        wait = emulator.step()
        if delivered:
            break
        clock.advance(wait)
    # Then it delivered once, inside 09:02, with a 0-5 s delivery delay
    assert datetime(2030, 1, 7, 9, 2, tzinfo=UTC) <= clock.now() < datetime(2030, 1, 7, 9, 3, tzinfo=UTC)
    assert len(delivered) == 1
    event, delay = delivered[0]
    assert 0 <= delay <= 5
    assert event["detail-type"] == "Scheduled Event" and event["source"] == "aws.events"
    assert event["time"] == "2030-01-07T09:02:00Z"
    # And never again for the same minute, however often it looks
    for _ in range(3):
        clock.advance(20)
        emulator.step()
    assert len(delivered) == 1


def test_never_fires_for_a_minute_that_was_past_when_set(events: Any) -> None:
    # Given the rule is set to a minute that has already gone by (as after a restart)
    client_, _ = events
    clock = SettableClock(START)
    EventBridgeRule(client_, RULE, ONE_MINUTE).put(datetime(2030, 1, 7, 8, 59, tzinfo=UTC))
    emulator, delivered = make(client_, clock)
    # When time goes on for two hours
    for _ in range(240):
        emulator.step()
        clock.advance(30)
    # Then it never fires (a year-pinned cron in the past never fires on AWS), and it is reported
    # missed once, not again each time the rule is read after the emulator forgot it
    assert delivered == []
    assert emulator.missed == [datetime(2030, 1, 7, 8, 59, tzinfo=UTC)]


def test_a_second_mode_rule_fires_at_its_armed_minute_and_again_at_its_backstop(events: Any) -> None:
    # Given the rule armed for 09:02 in second precision (it names its backstop, 09:05, too)
    client_, _ = events
    clock = SettableClock(START)
    EventBridgeRule(client_, RULE, Timing()).put(datetime(2030, 1, 7, 9, 2, tzinfo=UTC))
    emulator, delivered = make(client_, clock)
    # When nothing re-puts it and the emulator sleeps as long as it asks each time, until 09:30
    times: list[datetime] = []
    while clock.now() < datetime(2030, 1, 7, 9, 30, tzinfo=UTC):
        wait = emulator.step()
        times += [clock.now()] * (len(delivered) - len(times))
        clock.advance(wait)
    # Then it fired inside 09:02, then inside 09:05, and never again
    assert [event["time"] for event, _ in delivered] == ["2030-01-07T09:02:00Z", "2030-01-07T09:05:00Z"]
    assert [(t.hour, t.minute) for t in times] == [(9, 2), (9, 5)]


def test_a_past_armed_minute_does_not_fire_but_its_backstop_still_does(events: Any) -> None:
    # Given the rule armed in second precision for the current minute 09:00 (backstop 09:03) at 09:00:30
    client_, _ = events
    clock = SettableClock(START)
    EventBridgeRule(client_, RULE, Timing()).put(datetime(2030, 1, 7, 9, 0, tzinfo=UTC))
    emulator, delivered = make(client_, clock, jitter=False)
    # When time goes on past the backstop
    for _ in range(10):
        emulator.step()
        clock.advance(30)
    # Then the armed minute was missed and the backstop fired
    assert emulator.missed == [datetime(2030, 1, 7, 9, 0, tzinfo=UTC)]
    assert [event["time"] for event, _ in delivered] == ["2030-01-07T09:03:00Z"]


def test_a_past_combination_of_a_two_hour_rule_is_neither_missed_nor_logged(
    events: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Given the rule armed at 09:30 for 09:58, whose backstop 10:01 makes it name 09:01 and 10:58 too
    client_, _ = events
    clock = SettableClock(datetime(2030, 1, 7, 9, 30, tzinfo=UTC))
    EventBridgeRule(client_, RULE, Timing()).put(datetime(2030, 1, 7, 9, 58, tzinfo=UTC))
    emulator, delivered = make(client_, clock, jitter=False)
    # When time goes on for two hours and nothing re-puts the rule
    with caplog.at_level("INFO", logger="local-stack"):
        for _ in range(240):
            emulator.step()
            clock.advance(30)
    # Then the armed minute, its backstop and the later combination 10:58 fired (as on AWS), while
    # 09:01, gone by before the rule was set, is not reported as a minute armed too late, then or
    # after the emulator has forgotten it
    fired = ["2030-01-07T09:58:00Z", "2030-01-07T10:01:00Z", "2030-01-07T10:58:00Z"]
    assert [event["time"] for event, _ in delivered] == fired
    assert emulator.missed == []
    assert "too late" not in caplog.text


def test_a_minute_set_after_its_firing_instant_does_not_fire(events: Any) -> None:
    # Given the current minute, set at second 59 (without jitter the rule evaluates at second 0)
    client_, _ = events
    clock = SettableClock(datetime(2030, 1, 7, 9, 0, 59, tzinfo=UTC))
    EventBridgeRule(client_, RULE, ONE_MINUTE).put(datetime(2030, 1, 7, 9, 0, tzinfo=UTC))
    emulator, delivered = make(client_, clock, jitter=False)
    # When it looks, then and later
    emulator.step()
    clock.advance(120)
    emulator.step()
    # Then nothing fires
    assert delivered == []


def test_without_jitter_fires_at_second_zero_with_no_delay(events: Any) -> None:
    client_, _ = events
    clock = SettableClock(START)
    EventBridgeRule(client_, RULE, Timing()).put(datetime(2030, 1, 7, 9, 1, tzinfo=UTC))
    emulator, delivered = make(client_, clock, jitter=False)
    assert emulator.step() == pytest.approx(30.0)
    clock.current = datetime(2030, 1, 7, 9, 1, tzinfo=UTC)
    emulator.step()
    assert [delay for _, delay in delivered] == [0.0]


def test_epoch_and_disabled_rules_never_fire(events: Any) -> None:
    client_, _ = events
    clock = SettableClock(START)
    emulator, delivered = make(client_, clock)
    emulator.step()  # the epoch
    client_.put_rule(Name=RULE, ScheduleExpression="cron(1 9 7 1 ? 2030)", State="DISABLED")
    clock.advance(120)
    emulator.step()
    assert delivered == []


def test_rearming_to_another_minute_moves_the_firing(events: Any) -> None:
    # Given the rule armed for 09:05, then lowered to 09:02 before 09:05 comes
    client_, _ = events
    clock = SettableClock(START)
    rule = EventBridgeRule(client_, RULE, ONE_MINUTE)
    rule.put(datetime(2030, 1, 7, 9, 5, tzinfo=UTC))
    emulator, delivered = make(client_, clock, jitter=False)
    emulator.step()
    rule.put(datetime(2030, 1, 7, 9, 2, tzinfo=UTC))
    # When 09:02 and then 09:05 come
    clock.current = datetime(2030, 1, 7, 9, 2, tzinfo=UTC)
    emulator.step()
    clock.current = datetime(2030, 1, 7, 9, 5, tzinfo=UTC)
    emulator.step()
    # Then only the minute the rule pointed at when it came fires
    assert [e["time"] for e, _ in delivered] == ["2030-01-07T09:02:00Z"]


def test_rearming_drops_the_firings_the_new_expression_does_not_name(events: Any) -> None:
    # Given the rule armed in second precision for 09:02 (and 09:05), then re-put for 09:03 (and 09:06)
    client_, _ = events
    clock = SettableClock(START)
    rule = EventBridgeRule(client_, RULE, Timing())
    rule.put(datetime(2030, 1, 7, 9, 2, tzinfo=UTC))
    emulator, delivered = make(client_, clock, jitter=False)
    emulator.step()
    rule.put(datetime(2030, 1, 7, 9, 3, tzinfo=UTC))
    # When every minute up to 09:10 comes
    for _ in range(10):
        clock.advance(60)
        emulator.step()
    # Then only the new expression's minutes fired
    assert [e["time"] for e, _ in delivered] == ["2030-01-07T09:03:00Z", "2030-01-07T09:06:00Z"]


def test_delivers_the_targets_constant_input(events: Any) -> None:
    client_, _ = events
    client_.put_targets(
        Rule=RULE,
        Targets=[
            {"Id": "worker", "Arn": "arn:aws:lambda:us-east-1:123456789012:function:w", "Input": '{"a": 1}'}
        ],
    )
    clock = SettableClock(START)
    EventBridgeRule(client_, RULE, Timing()).put(datetime(2030, 1, 7, 9, 1, tzinfo=UTC))
    emulator, delivered = make(client_, clock, jitter=False)
    clock.current = datetime(2030, 1, 7, 9, 1, tzinfo=UTC)
    emulator.step()
    assert [event for event, _ in delivered] == [json.loads('{"a": 1}')]


def test_sleeps_while_idle_and_wakes_on_a_rule_change(events: Any) -> None:
    # Given a running emulator on the real clock, subscribed to the moto server's rule changes
    client_, server = events
    reads: list[float] = []
    client_.meta.events.register("after-call.events.DescribeRule", lambda **_: reads.append(time.monotonic()))
    emulator = EventBridgeEmulator(client_, RULE, lambda e, d: None)
    server.notifier.subscribe(emulator.notify)
    emulator.start()
    try:
        deadline = time.monotonic() + 5
        while not reads and time.monotonic() < deadline:
            time.sleep(0.01)
        # When nothing changes for a second, then it does not read the rule again (no polling)
        time.sleep(1.0)
        assert len(reads) == 1
        # When another client (as a CLI in another process would) changes the rule
        changed = threading.Event()
        client_.meta.events.register("after-call.events.DescribeRule", lambda **_: changed.set())
        other = client("events", server)
        other.put_rule(Name=RULE, ScheduleExpression="cron(0 9 1 1 ? 2199)", State="ENABLED")
        # Then the emulator re-reads it at once
        assert changed.wait(2.0)
    finally:
        emulator.stop()
