"""The `nexttick` CLI against a local stack's endpoints (moto server + local Lambda endpoint), found
through `.nexttick/local.json` as a user's shell would find it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import pytest

from editor import Editor
from local import endpoints
from local.cli.main import main
from local.cli.target import local_stack_environment
from nexttick.config import NextTickSettings
from nexttick.constants import (
    DEFAULT_RULE_NAME,
    DEFAULT_TABLE_NAME,
    MAX_PAYLOAD_BYTES,
    PARTITION_KEY,
    SORT_KEY,
    TASK_SK,
)
from nexttick.store.keys import task_pk
from tests.support.aws import FAKE_AWS_ENV
from tests.support.local import Recorder, client, create_table_and_rule, local_worker, moto_server


@pytest.fixture
def local(aws_credentials: None, tmp_path: Path) -> Iterator[tuple[Path, Recorder, Any]]:
    """A local stack's AWS side, recorded in <tmp>/local.json like `nexttick local` does."""
    with moto_server() as server, local_worker() as (endpoint, _, recorder):
        events = client("events", server)
        create_table_and_rule(server, DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
        env = {
            "NEXTTICK_ENDPOINT_URL": server.url,
            "NEXTTICK_LAMBDA_ENDPOINT_URL": endpoint.url,
            "NEXTTICK_ACTIONS_CONFIG": json.dumps({"log": {"type": "log"}}),
            "NEXTTICK_ACTIONS": json.dumps({"hook": {"type": "webhook", "url": "http://127.0.0.1:9/hook"}}),
            **FAKE_AWS_ENV,
        }
        endpoints.write(tmp_path, {"pid": os.getpid(), "api_url": "http://127.0.0.1:1", "env": env})
        yield tmp_path, recorder, events


def run(state_dir: Path, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in this process with NEXTTICK_STATE_DIR set (and the environment restored after)."""
    with mock.patch.dict(os.environ, {"NEXTTICK_STATE_DIR": str(state_dir)}):
        for name in [n for n in os.environ if n.startswith("NEXTTICK_") and n != "NEXTTICK_STATE_DIR"]:
            del os.environ[name]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def nexttick(state_dir: Path, *argv: str, **shell: str) -> subprocess.CompletedProcess[str]:
    """The installed CLI, as a user runs it, finding the stack through NEXTTICK_STATE_DIR only
    (`shell`: more of the user's environment)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(state_dir), "NEXTTICK_STATE_DIR": str(state_dir), **shell}
    return subprocess.run(
        [str(Path(sys.executable).parent / "nexttick"), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_json(state_dir: Path, *argv: str) -> Any:
    code, out, err = run(state_dir, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_add_show_ls_reschedule_cancel_round_trip(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, _, _ = local
    # Given a task added with a client id and a JSON payload
    task = run_json(
        state_dir, "add", "--action", "log", "--in", "2h", "--payload", '{"to": "ada"}', "--id", "t-1"
    )
    assert task["id"] == "t-1" and task["payload"] == {"to": "ada"} and task["status"] == "pending"
    # When it is shown, listed, rescheduled and cancelled
    code, shown, _ = run(state_dir, "show", "t-1")
    assert code == 0 and "pending" in shown and '{"to": "ada"}' in shown and "(in 1h 59m)" in shown
    code, listed, _ = run(state_dir, "ls")
    assert code == 0 and listed.splitlines()[0].split() == [
        "ID",
        "STATUS",
        "ACTION",
        "DUE",
        "SCHEDULE",
        "RUNS",
    ]
    assert "t-1" in listed and "once" in listed
    moved = run_json(state_dir, "reschedule", "t-1", "--at", "2030-12-01T09:00:00+01:00")
    assert moved["due"] == "2030-12-01T08:00:00Z" and moved["version"] == 2
    code, out, _ = run(state_dir, "cancel", "t-1", "--if-version", "2")
    # Then it ends cancelled and leaves the pending list
    assert code == 0 and "cancelled: t-1" in out
    assert run_json(state_dir, "show", "t-1")["status"] == "cancelled"
    assert run_json(state_dir, "ls")["items"] == []


def test_recurring_tasks_are_listed_with_a_human_schedule(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, _, _ = local
    run_json(
        state_dir, "add", "--action", "log", "--cron", "0 9 * * 5", "--tz", "Europe/Berlin", "--id", "fri"
    )
    run_json(state_dir, "add", "--action", "hook", "--every", "1h30m", "--id", "often")
    code, listed, _ = run(state_dir, "ls")
    assert code == 0
    rows = {line.split()[0]: line for line in listed.splitlines()[1:]}
    assert "At 09:00, only on Friday (Europe/Berlin)" in rows["fri"]
    assert "every 1h30m" in rows["often"] and "(in 1h 29m)" in rows["often"]


def test_a_task_due_now_wakes_the_worker_through_the_lambda_endpoint(
    local: tuple[Path, Recorder, Any],
) -> None:
    state_dir, recorder, _ = local
    run_json(state_dir, "add", "--action", "log", "--in", "0")
    assert recorder.wait_for(1)
    assert recorder.calls[0][0]["action"] == "wake"


def test_ls_pages_with_cursors_and_all_pages(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, _, _ = local
    env = json.loads((state_dir / "local.json").read_text())["env"]
    editor = Editor(
        settings=NextTickSettings(
            endpoint_url=env["NEXTTICK_ENDPOINT_URL"],
            lambda_endpoint_url=env["NEXTTICK_LAMBDA_ENDPOINT_URL"],
            actions_config={"log": {"type": "log"}},
        )
    )
    for i in range(5):
        editor.schedule_in("log", (i + 1) * 3600, id=f"p{i}")
    first = run_json(state_dir, "ls", "--limit", "2")
    assert [t["id"] for t in first["items"]] == ["p0", "p1"] and first["next_cursor"]
    second = run_json(state_dir, "ls", "--limit", "2", "--cursor", first["next_cursor"])
    assert [t["id"] for t in second["items"]] == ["p2", "p3"]
    everything = run_json(state_dir, "ls", "--limit", "2", "--all-pages")
    assert [t["id"] for t in everything["items"]] == ["p0", "p1", "p2", "p3", "p4"]
    assert everything["next_cursor"] is None
    code, out, _ = run(state_dir, "ls", "--limit", "2")
    assert code == 0 and "(or --all-pages)" in out


def test_sync_rederives_the_rule_from_the_table(local: tuple[Path, Recorder, Any]) -> None:
    # Given a pending task and a rule someone reset to the epoch (as a careless deploy would)
    state_dir, _, events = local
    run_json(state_dir, "add", "--action", "log", "--at", "2030-01-07T09:30:00Z")
    events.put_rule(Name=DEFAULT_RULE_NAME, ScheduleExpression="cron(0 0 1 1 ? 1970)", State="ENABLED")
    # When synced
    result = run_json(state_dir, "sync")
    # Then the rule is armed again (second mode: a minute and the delivery margin ahead, 09:28, and
    # that minute's backstop, 09:31)
    assert result["head"] == "2030-01-07T09:30:00Z"
    assert events.describe_rule(Name=DEFAULT_RULE_NAME)["ScheduleExpression"] == "cron(28,31 9 7 1 ? 2030)"
    code, out, _ = run(state_dir, "sync")
    assert code == 0 and out.startswith("synced:")


def test_errors_name_the_field_and_exit_non_zero(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, _, _ = local
    code, _, err = run(state_dir, "add", "--action", "nope", "--in", "5m")
    assert code == 1 and "--action: unknown action 'nope'" in err
    code, _, err = run(state_dir, "add", "--action", "log", "--in", "5m", "--payload", "[1]")
    assert code == 1 and "--payload: must be a JSON object" in err
    code, _, err = run(state_dir, "add", "--action", "log", "--at", "2030-01-01T09:00:00", "--json")
    assert code == 1 and json.loads(err)["field"] == "due"
    code, _, err = run(state_dir, "show", "missing")
    assert code == 1 and "no task 'missing'" in err
    code, _, err = run(state_dir, "reschedule", "missing")
    assert code == 1 and "give one of --at" in err


def test_a_dead_local_stack_is_reported_not_silently_bypassed(tmp_path: Path) -> None:
    # Given a local.json left behind by a stack that was killed
    endpoints.write(tmp_path, {"pid": 2**22 + 12345, "api_url": "x", "env": {}})
    # When the CLI runs
    code, _, err = run(tmp_path, "ls")
    # Then it says so (and how to restart it) instead of turning to AWS
    assert code == 1 and "not running" in err and "make run" in err and "--aws" in err


def test_explicit_targets_bypass_the_local_stack(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, _, _ = local
    env = {"NEXTTICK_STATE_DIR": str(state_dir)}
    assert local_stack_environment(env, endpoint_url=None, aws=False, state_dir=None) is not None
    assert local_stack_environment(env, endpoint_url=None, aws=True, state_dir=None) is None
    assert local_stack_environment(env, endpoint_url="http://127.0.0.1:1", aws=False, state_dir=None) is None
    env["NEXTTICK_ENDPOINT_URL"] = "http://127.0.0.1:1"
    assert local_stack_environment(env, endpoint_url=None, aws=False, state_dir=None) is None


def test_json_errors_carry_the_http_apis_codes(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, _, _ = local

    def error(*argv: str) -> tuple[str, str | None]:
        code, _, err = run(state_dir, *argv, "--json")
        assert code == 1, err
        body = json.loads(err)
        return body["error"], body["field"]

    # Given one task
    run_json(state_dir, "add", "--action", "log", "--in", "1h", "--id", "t-1")
    # When each kind of mistake is made, then the code is the one the HTTP API answers with
    assert error("add", "--action", "nope", "--in", "5m") == ("unknown_action", "action")
    assert error("add", "--action", "log", "--at", "2030-01-01T09:00:00") == ("validation_error", "due")
    big = json.dumps({"blob": "x" * MAX_PAYLOAD_BYTES})
    assert error("add", "--action", "log", "--in", "5m", "--payload", big) == ("payload_too_large", "payload")
    assert error("add", "--action", "log", "--in", "2h", "--id", "t-1") == ("conflict", "id")
    assert error("show", "missing") == ("not_found", "id")
    assert error("cancel", "t-1", "--if-version", "7") == ("version_mismatch", "version")
    run_json(state_dir, "cancel", "t-1")
    assert error("reschedule", "t-1", "--in", "5m") == ("conflict", "status")


def test_times_read_in_the_tasks_own_zone(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, _, _ = local
    berlin_nine = re.compile(r"\d{4}-\d\d-\d\d 09:00:00 CES?T \(in ")
    # Given a Friday-09:00 Berlin task and a UTC one, added through the CLI
    added = nexttick(state_dir, "add", "--action", "log", "--cron", "0 9 * * 5", "--tz", "Europe/Berlin")
    run_json(state_dir, "add", "--action", "log", "--cron", "30 7 * * *", "--id", "utc")
    # When they are listed and shown
    listed = nexttick(state_dir, "ls").stdout.splitlines()
    fri = re.search(r"scheduled: (\S+) ", added.stdout)
    assert fri, added.stdout + added.stderr
    shown = nexttick(state_dir, "show", fri.group(1)).stdout
    # Then the Berlin task's times read 09:00 in its zone, the UTC task's in UTC with a Z
    assert berlin_nine.search(added.stdout), added.stdout
    assert listed[0].split()[3] == "DUE"
    rows = {line.split()[0]: line for line in listed[1:]}
    assert berlin_nine.search(rows[fri.group(1)]) and re.search(r" 07:30:00Z \(in ", rows["utc"])
    due_line = next(line for line in shown.splitlines() if line.startswith("due"))
    assert berlin_nine.search(due_line), shown


def test_reschedule_refuses_to_turn_a_recurring_task_into_a_one_shot(
    local: tuple[Path, Recorder, Any],
) -> None:
    state_dir, _, _ = local
    # Given a cron task, an every task and a one-shot
    run_json(
        state_dir, "add", "--action", "log", "--cron", "0 9 * * 5", "--tz", "Europe/Berlin", "--id", "fri"
    )
    run_json(state_dir, "add", "--action", "log", "--every", "1h30m", "--id", "often")
    run_json(state_dir, "add", "--action", "log", "--in", "2h", "--id", "once")
    # When the recurring ones are given a one-shot time without --once
    cron_refused = nexttick(state_dir, "reschedule", "fri", "--in", "0")
    every_refused = nexttick(state_dir, "reschedule", "often", "--at", "2030-01-01T09:00:00Z")
    # Then they are refused, naming their schedule and the two ways forward, and left unchanged
    assert cron_refused.returncode == 1 and "Traceback" not in cron_refused.stderr
    assert "recurs on cron '0 9 * * 5' in Europe/Berlin" in cron_refused.stderr
    assert "--once" in cron_refused.stderr and "--cron/--every" in cron_refused.stderr
    assert every_refused.returncode == 1 and "recurs every 1h30m" in every_refused.stderr
    assert run_json(state_dir, "show", "fri")["schedule"] == "cron"
    assert run_json(state_dir, "show", "often")["version"] == 1
    # And with --once the conversion is made; a one-shot reschedules as before; a new recurrence too
    converted = run_json(state_dir, "reschedule", "fri", "--in", "3h", "--once")
    assert converted["schedule"] == "once" and converted["cron"] is None
    assert run_json(state_dir, "reschedule", "once", "--in", "3h")["schedule"] == "once"
    assert run_json(state_dir, "reschedule", "often", "--every", "2h")["every_seconds"] == 7200
    code, _, err = run(state_dir, "reschedule", "often", "--cron", "0 9 * * *", "--once")
    assert code == 1 and "--once" in err and "--at or --in" in err


def test_errors_name_the_flag_the_user_typed(local: tuple[Path, Recorder, Any]) -> None:
    # Given a running local stack and commands that are each wrong in one flag
    state_dir, _, _ = local
    add = ("add", "--action", "log")
    cases = {
        "--at": (*add, "--at", "2030-01-01T09:00:00"),
        "--in": (*add, "--in", "soon"),
        "--cron": (*add, "--cron", "every friday"),
        "--tz": (*add, "--cron", "0 9 * * 5", "--tz", "Mars/Olympus"),
        "--every": (*add, "--every", "0s"),
        "--payload": (*add, "--in", "5m", "--payload", "[1]"),
        "--end": (*add, "--in", "5m", "--end", "2030-01-01T00:00:00Z"),
    }
    for flag, argv in cases.items():
        # When a command is given a bad value for a flag
        done = nexttick(state_dir, *argv)
        # Then the one error line starts with that flag, not the API's field name
        assert done.returncode == 1 and done.stderr.startswith(f"error: {flag}: "), (flag, done.stderr)
        assert "Traceback" not in done.stderr
    # And --json keeps the API's field name, the message naming the flag
    body = json.loads(nexttick(state_dir, *add, "--in", "soon", "--json").stderr)
    assert body["field"] == "delay_seconds" and body["message"].startswith("--in: ")


def test_runs_shows_the_history_newest_first_with_lateness(local: tuple[Path, Recorder, Any]) -> None:
    # Given a task that a worker ran (against the local stack's emulator)
    from nexttick.actions import build_registry
    from nexttick.runtime import Runtime
    from nexttick.worker import Worker

    state_dir, _, _ = local
    added = run_json(state_dir, "add", "--action", "log", "--in", "1s", "--id", "ran")
    env = json.loads((state_dir / "local.json").read_text())["env"]
    with mock.patch.dict(os.environ, env):
        settings = NextTickSettings()
        runtime = Runtime.build(settings)
        registry = build_registry(settings.action_definitions(), settings)
        while Editor(runtime=runtime).get("ran").status != "succeeded":
            Worker(runtime, registry, owner="cli-test", remaining_ms=10_000).run()
    # When its history is shown, as JSON and as text
    page = run_json(state_dir, "runs", "ran")
    code, text, _ = run(state_dir, "runs", "ran")
    # Then both show the one run, its outcome and lateness
    (entry,) = page["items"]
    assert entry["outcome"] == "succeeded" and entry["scheduled_for"] == added["due"]
    assert entry["idempotency_key"] == f"ran:{added['due']}"
    assert page["lateness"]["runs"] == 1 and page["lateness"]["last_seconds"] == entry["lateness_seconds"]
    assert code == 0 and "1 runs kept; lateness last" in text and "succeeded" in text
    # And an unknown task is an error naming the id
    assert run(state_dir, "runs", "missing")[0] == 1


def test_upcoming_and_dry_run_show_dst_marks_and_write_nothing(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, _, _ = local
    # Given a cron task in New York that runs both passes of a repeated wall time (7 November: the
    # fold day of 2027; these tests run on the real clock, so that is the next one until then)
    args = ("--action", "log", "--cron", "30 1 7 11 *", "--tz", "America/New_York", "--dst-repeated", "both")
    # When it is dry-run first, then added, and its upcoming runs are listed
    preview = run_json(state_dir, "add", *args, "--id", "fold", "--dry-run")
    assert run(state_dir, "show", "fold")[0] == 1  # nothing was written
    added = run_json(state_dir, "add", *args, "--id", "fold", "--jitter", "5")
    upcoming = run_json(state_dir, "upcoming", "fold", "--count", "2")
    code, text, _ = run(state_dir, "upcoming", "fold", "--count", "2")
    # Then the preview and the list show the two passes of 01:30 on the fold day, marked
    assert [u["dst"] for u in preview["upcoming"][:2]] == ["repeated-first", "repeated-second"]
    assert added["dst_repeated"] == "both" and added["jitter_seconds"] == 5
    assert upcoming["timezone"] == "America/New_York"
    assert [u["local"][-6:] for u in upcoming["items"]] == ["-04:00", "-05:00"]
    assert code == 0 and "DST: first of two passes" in text and "DST: second of two passes" in text
    # And a DST policy on an interval task is an error naming the flag
    code, _, err = run(state_dir, "add", "--action", "log", "--every", "1h", "--dst-skipped", "shift")
    assert code == 1 and "--dst-skipped" in err


def test_doctor_lists_the_cron_schedules_whose_runs_change_under_crontab(
    local: tuple[Path, Recorder, Any],
) -> None:
    state_dir, _, _ = local
    # Given cron tasks as an older release stored them: one whose text now reads differently, one
    # paused with a star-prefixed day of month, one nexttick now refuses, and one that is unchanged
    run_json(
        state_dir, "add", "--action", "log", "--cron", "0 9-9 * * *", "--tz", "Europe/Berlin", "--id", "nine"
    )
    run_json(state_dir, "add", "--action", "log", "--cron", "0 12 */2 * 1-5", "--id", "odd")
    run_json(state_dir, "pause", "odd")
    run_json(state_dir, "add", "--action", "log", "--cron", "0 23 * * *", "--id", "wrap")
    run_json(state_dir, "add", "--action", "log", "--cron", "0 9 * * 1-5", "--id", "fine")
    run_json(state_dir, "add", "--action", "log", "--every", "1h", "--id", "interval")
    stack = endpoints.read(state_dir)
    assert stack is not None
    dynamodb = boto3.session.Session(region_name="us-east-1").client(
        "dynamodb", endpoint_url=stack["env"]["NEXTTICK_ENDPOINT_URL"]
    )
    dynamodb.update_item(
        TableName=DEFAULT_TABLE_NAME,
        Key={PARTITION_KEY: {"S": task_pk("wrap")}, SORT_KEY: {"S": TASK_SK}},
        UpdateExpression="SET cron = :old",
        ExpressionAttributeValues={":old": {"S": "0 23-1 * * *"}},  # croniter read it as 23, 0, 1
    )
    # When the doctor checks them
    code, text, _ = run(state_dir, "doctor")
    report = json.loads(run(state_dir, "doctor", "--json")[1])
    # Then it lists the three whose runs change, with their wall times before and now, and exits 1
    assert code == 1
    changed = {item["id"]: item for item in report["changed"]}
    assert report["checked"] == 4 and sorted(changed) == ["nine", "odd", "wrap"]
    assert {wall[-5:] for wall in changed["nine"]["now"]} == {"09:00"}
    assert len({wall[-5:] for wall in changed["nine"]["was"]}) == 3  # hourly before
    assert changed["odd"]["status"] == "paused"
    assert all(datetime.fromisoformat(wall).weekday() < 5 for wall in changed["odd"]["now"])
    assert changed["wrap"]["now"] == [] and "runs backwards" in changed["wrap"]["refused"]
    assert "3 of 4 cron schedules run differently" in text and "'0 9-9 * * *'" in text
    # And once each is rescheduled to what it means, the doctor is satisfied
    for task_id, expression in (("nine", "0 9 * * *"), ("odd", "0 12 * * 1-5"), ("wrap", "0 23,0,1 * * *")):
        run_json(state_dir, "reschedule", task_id, "--cron", expression)
    assert run(state_dir, "doctor") == (
        0,
        "checked 4 cron schedules: each runs as before under crontab(5)'s reading\n",
        "",
    )


def test_pause_resume_skip_and_run_now(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, recorder, _ = local
    run_json(state_dir, "add", "--action", "log", "--every", "1h", "--id", "steer")
    paused = run_json(state_dir, "pause", "steer", "--if-version", "1")
    assert paused["status"] == "paused"
    assert [t["id"] for t in run_json(state_dir, "ls", "--status", "paused")["items"]] == ["steer"]
    skipped = run_json(state_dir, "skip", "steer", "--count", "2")
    assert skipped["status"] == "paused" and skipped["due"] > paused["due"]
    resumed = run_json(state_dir, "resume", "steer", "--missed", "skip")
    assert resumed["status"] == "pending" and resumed["due"] == skipped["due"]
    now = run_json(state_dir, "run-now", "steer")
    assert now["run_now_at"] is not None and now["due"] == resumed["due"]
    assert recorder.wait_for(1)  # the worker was woken for it
    code, _, err = run(state_dir, "resume", "steer", "--missed", "each", "--max-catch-up", "0")
    assert code == 1 and "--max-catch-up" in err
    code, text, _ = run(state_dir, "pause", "steer")
    assert code == 0 and "paused: steer" in text


def test_lateness_draws_the_histogram(local: tuple[Path, Recorder, Any]) -> None:
    state_dir, _, _ = local
    env = json.loads((state_dir / "local.json").read_text())["env"]
    with mock.patch.dict(os.environ, env):
        from nexttick.runtime import Runtime

        store = Runtime.build(NextTickSettings()).store
        now = datetime.now(UTC)
        for ms in (3.0, 40.0, 40.0, 2000.0):
            store.note_lateness(now, ms)
        store.flush_lateness()
    window = run_json(state_dir, "lateness", "--minutes", "5")
    code, text, _ = run(state_dir, "lateness")
    assert window["runs"] == 4 and window["late_over_1s"] == 1
    assert code == 0 and "4 runs; p50 <= 50ms" in text and "1 over 1 s late" in text
    assert "<= 50ms  " + "#" * 40 + " 2" in text


def test_a_shell_profile_this_machine_lacks_does_not_stop_local_commands(
    local: tuple[Path, Recorder, Any],
) -> None:
    state_dir, _, _ = local
    # Given a shell whose AWS_PROFILE names a profile with no config or credentials file behind it
    shell = {"AWS_PROFILE": "work-account", "AWS_DEFAULT_PROFILE": "work-account"}
    # When the user adds, lists and shows a task on the local stack
    added = nexttick(state_dir, "add", "--action", "log", "--in", "1h", "--id", "p-1", **shell)
    listed = nexttick(state_dir, "ls", **shell)
    shown = nexttick(state_dir, "show", "p-1", **shell)
    # Then each command works: the local stack needs no profile
    for done in (added, listed, shown):
        assert done.returncode == 0, done.stdout + done.stderr
    assert "scheduled: p-1 " in added.stdout
    assert "p-1" in listed.stdout and "pending" in shown.stdout
    # And aimed at AWS, the same shell is told about its profile (nothing was hidden)
    aws = nexttick(state_dir, "--aws", "ls", **shell)
    assert aws.returncode != 0 and "work-account" in aws.stderr, aws.stderr
