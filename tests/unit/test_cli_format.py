"""CLI presentation: relative times, durations, human cron descriptions, tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nexttick.cli import build_parser, describe_schedule, format_duration, relative, render_table

NOW = datetime(2030, 1, 7, 9, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.4, "0.4s"),
        (45, "45s"),
        (170, "2m 50s"),
        (180, "3m"),
        (600, "10m"),
        (5400, "1h 30m"),
        (7200, "2h"),
        (40000, "11h"),
        (90000, "1d 1h"),
        (20 * 86400, "20d"),
    ],
)
def test_durations_are_compact(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_relative_times_read_naturally() -> None:
    assert relative(NOW + timedelta(minutes=3), NOW) == "in 3m"
    assert relative(NOW - timedelta(hours=2), NOW) == "2h ago"
    assert relative(NOW + timedelta(milliseconds=300), NOW) == "now"
    assert relative(None, NOW) == "-"


def test_schedules_are_described_for_humans() -> None:
    assert describe_schedule({"schedule": "cron", "cron": "0 9 * * 5", "timezone": "Europe/Berlin"}) == (
        "At 09:00, only on Friday (Europe/Berlin)"
    )
    assert describe_schedule({"schedule": "cron", "cron": "@hourly", "timezone": "UTC"}) == "Every hour (UTC)"
    assert describe_schedule({"schedule": "every", "every_seconds": 5400.0}) == "every 1h30m"
    assert describe_schedule({"schedule": "once"}) == "once"


def test_tables_align_columns() -> None:
    tasks = [
        {
            "id": "a",
            "status": "pending",
            "action": "log",
            "due": "2030-01-07T09:03:00Z",
            "schedule": "once",
            "runs": 0,
        },
        {"id": "long-id", "status": "running", "action": "hook", "due": None, "schedule": "once", "runs": 12},
    ]
    lines = render_table(tasks, NOW).splitlines()
    assert lines[1].startswith("a        pending  log     2030-01-07 09:03:00Z (in 3m)")
    assert lines[0].index("STATUS") == lines[1].index("pending") == lines[2].index("running")


def test_time_options_are_exclusive_and_json_goes_anywhere() -> None:
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["add", "--action", "log", "--in", "5m", "--at", "2030-01-01T00:00:00Z"])
    assert parser.parse_args(["--json", "ls"]).json is True
    assert parser.parse_args(["ls", "--json"]).json is True
    assert parser.parse_args(["ls"]).__dict__.get("json") is None
