"""Action definitions fail fast, naming the action; envelope and idempotency key format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from nexttick.actions import ActionConfigError, Delivery, build_registry, idempotency_key
from nexttick.actions.webhook import parse_allowlist, url_allowed
from nexttick.config import NextTickSettings

SETTINGS = NextTickSettings()


@pytest.mark.parametrize(
    ("definition", "field", "message"),
    [
        ("log", "actions.bad", "must be an object"),
        ({}, "actions.bad.type", "unknown or missing 'type'"),
        ({"type": "ftp"}, "actions.bad.type", "one of: eventbridge, lambda, log, python, sns, sqs, webhook"),
        ({"type": "log", "colour": "red"}, "actions.bad.colour", "unknown key 'colour'"),
        ({"type": "log", "level": "LOUD"}, "actions.bad.level", "must be one of"),
        ({"type": "webhook"}, "actions.bad.url", "'url' is required"),
        ({"type": "webhook", "url": "ftp://127.0.0.1/x"}, "actions.bad.url", "must be an http"),
        (
            {"type": "webhook", "url": "http://127.0.0.1", "timeout_seconds": 0},
            "actions.bad.timeout_seconds",
            "seconds in",
        ),
        (
            {"type": "webhook", "url": "http://127.0.0.1", "headers": {"a": 1}},
            "actions.bad.headers",
            "string headers",
        ),
        ({"type": "python", "target": "no_colon"}, "actions.bad.target", "package.module:function"),
        ({"type": "python", "target": "no.such.module:f"}, "actions.bad.target", "cannot import"),
        ({"type": "python", "target": "json:nope"}, "actions.bad.target", "not a callable"),
        ({"type": "sqs"}, "actions.bad.queue_url", "required"),
        (
            {"type": "lambda", "function": "f", "invocation_type": "DryRun"},
            "actions.bad.invocation_type",
            "must be one of",
        ),
    ],
)
def test_invalid_definitions_fail_fast_naming_the_action(
    definition: object, field: str, message: str
) -> None:
    with pytest.raises(ActionConfigError, match=message) as caught:
        build_registry({"good": {"type": "log"}, "bad": definition}, SETTINGS)
    assert caught.value.field == field and field in str(caught.value)


def test_valid_definitions_build_and_size_the_time_margin() -> None:
    registry = build_registry(
        {
            "log": {"type": "log"},
            "hook": {"type": "webhook", "url": "http://localhost:9000/x", "timeout_seconds": 25},
            "py": {"type": "python", "target": "json:dumps"},
        },
        SETTINGS,
    )
    assert set(registry.actions) == {"log", "hook", "py"} and "hook" in registry
    assert registry.max_timeout_seconds == 25


def test_url_allow_list_matches_at_boundaries() -> None:
    allowed = parse_allowlist(None)
    assert allowed == ("http://127.0.0.1", "http://localhost")
    assert url_allowed("http://127.0.0.1:8080/hook", allowed) and url_allowed("http://localhost/x", allowed)
    assert not url_allowed("http://127.0.0.1.example.com/", allowed)
    assert not url_allowed("http://localhost@example.com/", allowed)
    assert parse_allowlist(" https://a.example/, http://b ") == ("https://a.example/", "http://b")
    assert url_allowed("https://a.example/x", ("https://a.example/",))
    assert not url_allowed("https://a.example.evil/x", ("https://a.example",))


def test_envelope_and_idempotency_key() -> None:
    berlin = timezone(timedelta(hours=1))
    scheduled = datetime(2030, 1, 7, 10, 0, tzinfo=berlin)
    d = Delivery("t:1", "hook", {"a": 1}, scheduled, datetime(2030, 1, 7, 9, 0, 0, 250000, tzinfo=UTC), 2)
    assert d.envelope() == {
        "task_id": "t:1",
        "action": "hook",
        "payload": {"a": 1},
        "scheduled_for": "2030-01-07T09:00:00Z",
        "fired_at": "2030-01-07T09:00:00.250000Z",
        "attempt": 2,
        "idempotency_key": "t:1:2030-01-07T09:00:00Z",
    }
    assert idempotency_key("t:1", scheduled) == d.idempotency_key
