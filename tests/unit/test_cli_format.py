"""CLI presentation: relative times, durations, human cron descriptions, tables, options, codes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lambdas.api import models
from local.cli.format import describe_schedule, format_duration, relative, render_table, render_task
from local.cli.main import build_parser, main
from nexttick import errors

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
    tasks: list[dict[str, Any]] = [
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


def test_a_task_with_a_time_zone_is_shown_in_it() -> None:
    # Given a Berlin cron task due Friday 09:00 local (08:00 UTC in winter) and a UTC one-shot
    berlin = {
        "id": "fri",
        "status": "pending",
        "action": "log",
        "due": "2030-12-06T08:00:00Z",
        "schedule": "cron",
        "cron": "0 9 * * 5",
        "timezone": "Europe/Berlin",
        "end": "2031-07-04T07:00:00Z",
        "runs": 0,
    }
    utc = {**berlin, "id": "utc", "due": "2030-12-06T08:00:00Z", "timezone": "UTC", "end": None}
    # When rendered as a table and as a task
    lines = render_table([berlin, utc], NOW).splitlines()
    shown = dict(line.split(None, 1) for line in render_task(berlin, NOW).splitlines() if line[0] != " ")
    # Then the zone's wall clock (and its abbreviation, summer time included) is shown; UTC keeps its Z
    assert lines[0].split()[3] == "DUE"
    assert "2030-12-06 09:00:00 CET (in 332d)" in lines[1]
    assert "2030-12-06 08:00:00Z (in 332d)" in lines[2]
    assert shown["end"].startswith("2031-07-04 09:00:00 CEST")


def test_local_takes_only_its_own_options(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    # When `local --help` is read
    with pytest.raises(SystemExit):
        parser.parse_args(["local", "--help"])
    shown = capsys.readouterr().out
    # Then it lists the state directory but none of the task commands' target options
    assert "--state-dir" in shown
    for option in ("--json", "--aws", "--table", "--endpoint-url", "--region", "--rule", "--worker-function"):
        assert option not in shown, option
    # And such an option is refused after `local` as before it (where the top-level parser takes it)
    refusals = {
        ("local", "--aws"): "unrecognized arguments: --aws",
        ("--json", "local"): "--json does not apply to `local`",
        ("--table", "t", "local"): "--table does not apply to `local`",
    }
    for argv, refusal in refusals.items():
        with pytest.raises(SystemExit) as exited:
            main(list(argv))
        assert exited.value.code == 2 and refusal in capsys.readouterr().err
    assert parser.parse_args(["local", "--state-dir", "x"]).state_dir == "x"


def test_ls_follows_cursors_with_all_pages_only() -> None:
    parser = build_parser()
    assert parser.parse_args(["ls", "--all-pages"]).all_pages is True
    with pytest.raises(SystemExit):  # not an abbreviation of --all-pages ("all" reads as "all statuses")
        parser.parse_args(["ls", "--all"])


def test_domain_errors_carry_the_http_apis_codes() -> None:
    # The API's error codes are the ones the domain errors carry (one enum, one mapping)
    assert models.ErrorCode is errors.ErrorCode
    assert errors.ValidationError("x").code == "validation_error"
    assert errors.UnknownActionError("x").code == "unknown_action"
    assert errors.PayloadTooLargeError("x").code == "payload_too_large"
    assert errors.TaskNotFoundError("x").code == "not_found"
    assert errors.ConflictError("x").code == "conflict"
    assert errors.VersionMismatchError("x").code == "version_mismatch"
