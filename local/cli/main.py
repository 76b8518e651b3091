"""`nexttick`'s parser and entry point: each command's flags, and every failure as one `error:` line
(with `--json`: the HTTP API's error object), flags named as the user typed them."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

from local.cli.commands import (
    Output,
    cmd_add,
    cmd_cancel,
    cmd_doctor,
    cmd_lateness,
    cmd_local,
    cmd_ls,
    cmd_pause,
    cmd_reschedule,
    cmd_resume,
    cmd_run_now,
    cmd_runs,
    cmd_show,
    cmd_skip,
    cmd_sync,
    cmd_upcoming,
)
from local.cli.target import Target, TargetError
from nexttick.errors import ErrorCode, NextTickError

# The editor's (and the API's) field names as the CLI's flags spell them: errors name what was typed.
FLAGS = {
    "action": "--action",
    "due": "--at",
    "delay_seconds": "--in",
    "cron": "--cron",
    "timezone": "--tz",
    "every": "--every",
    "payload": "--payload",
    "end": "--end",
    "max_attempts": "--max-attempts",
    "retry_backoff_seconds": "--retry-backoff",
    "misfire_grace_seconds": "--misfire-grace",
    "dst_skipped": "--dst-skipped",
    "dst_repeated": "--dst-repeated",
    "jitter_seconds": "--jitter",
    "count": "--count",
    "missed": "--missed",
    "minutes": "--minutes",
    "max_catch_up": "--max-catch-up",
    "version": "--if-version",
    "limit": "--limit",
    "cursor": "--cursor",
}


def flag_message(message: str, field: str | None) -> str:
    """An editor message starts with its field (`due: ...`); the user typed a flag (`--at: ...`)."""
    flag = FLAGS.get(field or "")
    if flag and field and message.startswith(f"{field}: "):
        return flag + message[len(field) :]
    return message


# Destinations of the target options: they choose where a task command's editor points.
_TARGET_OPTIONS = ("json", "endpoint_url", "region", "table", "rule", "worker_function", "aws")


def _target_options(parser: argparse.ArgumentParser) -> None:
    s = argparse.SUPPRESS
    parser.add_argument("--json", action="store_true", default=s, help="machine-readable output")
    parser.add_argument("--endpoint-url", default=s, help="AWS endpoint (e.g. a moto server); default: AWS")
    parser.add_argument("--region", default=s, help="AWS region (default: AWS_REGION)")
    parser.add_argument("--table", default=s, help="task table (default: NEXTTICK_TABLE)")
    parser.add_argument("--rule", default=s, help="EventBridge rule (default: NEXTTICK_RULE)")
    parser.add_argument(
        "--worker-function", default=s, help="worker Lambda (default: NEXTTICK_WORKER_FUNCTION)"
    )
    parser.add_argument("--aws", action="store_true", default=s, help="ignore a running local stack")


def _state_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir",
        default=argparse.SUPPRESS,
        help="local stack directory (default: NEXTTICK_STATE_DIR or .nexttick)",
    )


def _time_options(parser: argparse.ArgumentParser, required: bool) -> None:
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--at", help="once, at an RFC 3339 time with offset (2030-12-01T09:00:00+01:00)")
    group.add_argument(
        "--in", dest="in_", metavar="DURATION", help="once, after a delay: 90s, 5m, 1h30m, PT1H"
    )
    group.add_argument("--cron", help="5-field cron expression, e.g. '0 9 * * 5' (with --tz)")
    group.add_argument("--every", metavar="DURATION", help="every interval: 5s, 1h30m, PT1H")
    parser.add_argument("--tz", help="IANA time zone of --cron (default UTC)")


def build_parser() -> argparse.ArgumentParser:
    # No abbreviations: a renamed option (`ls --all` -> `--all-pages`) must not live on as a prefix.
    parser = argparse.ArgumentParser(
        prog="nexttick",
        description="nexttick: schedule work for a future time (local stack or AWS).",
        epilog="Targets a running `nexttick local` (.nexttick/local.json) unless --aws or --endpoint-url.",
        allow_abbrev=False,
    )
    _target_options(parser)
    _state_dir_option(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str,
        handler: Callable[[argparse.Namespace, Target, Output], int],
        help: str,
        *,
        targets: bool = True,
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help, allow_abbrev=False)
        if targets:
            _target_options(p)
        _state_dir_option(p)
        p.set_defaults(handler=handler)
        return p

    p = command(
        "local",
        cmd_local,
        "start the local stack (moto + API + emulated EventBridge + worker)",
        targets=False,
    )
    p.add_argument("--port", type=int, help="API port (default NEXTTICK_PORT or 8000; 0 = any free port)")
    p.add_argument(
        "--moto-port", type=int, help="moto server port (default NEXTTICK_MOTO_PORT or the API port + 1)"
    )
    p.add_argument(
        "--fresh", action="store_true", help="start empty: discard the saved state and its journal"
    )
    p.add_argument(
        "--no-jitter", action="store_true", help="fire the rule at second 0 with no delivery delay"
    )
    p.add_argument("--max-delivery-delay", type=float, help="seconds, uniform 0..max (default 5)")
    p.add_argument("--worker-timeout", type=int, help="worker timeout in seconds (default: the deployed one)")
    p.add_argument(
        "--stop-grace", type=float, help="seconds Ctrl-C waits for deliveries in flight (default 5)"
    )
    p.add_argument(
        "--log-format",
        metavar="{human,json}",
        help="human: one line per event (default); json: the handlers' Powertools JSON, as in Lambda",
    )
    p.add_argument(
        "--metrics",
        action="store_true",
        default=None,
        help="print the handlers' CloudWatch EMF metric lines (default NEXTTICK_LOCAL_METRICS or off)",
    )

    p = command("add", cmd_add, "schedule a task")
    p.add_argument("--action", required=True, help="a configured action name (e.g. log)")
    _time_options(p, required=True)
    p.add_argument("--payload", help="JSON object delivered with the task")
    p.add_argument("--id", help="client id: repeating an identical add is a no-op")
    p.add_argument("--max-attempts", type=int, help="attempts before the task fails (default 3)")
    p.add_argument("--retry-backoff", type=float, help="base retry backoff in seconds (default 30)")
    p.add_argument("--misfire-grace", type=float, help="skip a run starting later than due + this")
    p.add_argument("--end", help="recurring tasks: no occurrence after this RFC 3339 time")
    p.add_argument("--dst-skipped", choices=("skip", "shift"), help="cron: a wall time a DST gap skips")
    p.add_argument(
        "--dst-repeated", choices=("first", "last", "both"), help="cron: a wall time a DST fold repeats"
    )
    p.add_argument("--jitter", type=float, help="start each occurrence up to this many seconds late")
    p.add_argument(
        "--dry-run", action="store_true", help="validate and show the next occurrences; write nothing"
    )

    p = command("ls", cmd_ls, "list pending and running tasks in due order")
    p.add_argument("--status", choices=("pending", "running", "paused"))
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--cursor", help="continue after a previous page")
    p.add_argument("--all-pages", action="store_true", help="follow the cursors to the last page")

    p = command("show", cmd_show, "show one task")
    p.add_argument("id")

    p = command("runs", cmd_runs, "show a task's run history, newest first, with its lateness")
    p.add_argument("id")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--cursor", help="continue after a previous page")

    p = command("upcoming", cmd_upcoming, "show a task's next occurrences, with DST marks")
    p.add_argument("id")
    p.add_argument("--count", type=int, default=10)

    p = command("reschedule", cmd_reschedule, "move a pending task to a new time or recurrence")
    p.add_argument("id")
    _time_options(p, required=False)
    p.add_argument(
        "--once", action="store_true", help="with --at / --in: turn a recurring task into a one-shot"
    )
    p.add_argument("--if-version", type=int, help="only if the task is still at this version")

    p = command("cancel", cmd_cancel, "cancel a pending task")
    p.add_argument("id")
    p.add_argument("--if-version", type=int, help="only if the task is still at this version")

    p = command("pause", cmd_pause, "pause a pending task (it keeps its place and its history)")
    p.add_argument("id")
    p.add_argument("--if-version", type=int, help="only if the task is still at this version")

    p = command("resume", cmd_resume, "resume a paused task")
    p.add_argument("id")
    p.add_argument(
        "--missed",
        choices=("skip", "once", "each"),
        default="once",
        help="what fell due while paused: skip it, run the newest once (default), or each of the newest",
    )
    p.add_argument("--max-catch-up", type=int, default=10, help="with --missed each: how many (default 10)")
    p.add_argument("--if-version", type=int, help="only if the task is still at this version")

    p = command("skip", cmd_skip, "skip the next occurrences of a pending or paused task")
    p.add_argument("id")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--if-version", type=int, help="only if the task is still at this version")

    p = command("run-now", cmd_run_now, "run one extra occurrence now (the schedule is unchanged)")
    p.add_argument("id")
    p.add_argument("--if-version", type=int, help="only if the task is still at this version")

    p = command("lateness", cmd_lateness, "how late the runs of the last minutes started (all tasks)")
    p.add_argument("--minutes", type=int, default=60)

    command(
        "doctor",
        cmd_doctor,
        "list the cron schedules whose runs changed under crontab(5)'s reading (exit 1 if any)",
    )
    command("sync", cmd_sync, "re-derive the rule from the table (and wake the worker if work is due)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "local":  # given before the command, where the top-level parser takes them
        misplaced = [name for name in _TARGET_OPTIONS if name in vars(args)]
        if misplaced:
            parser.error(f"--{misplaced[0].replace('_', '-')} does not apply to `local`")
    out = Output(as_json=getattr(args, "json", False))
    target = Target(args, os.environ)
    try:
        code: int = args.handler(args, target, out)
        return code
    except NextTickError as exc:
        out.error(exc.code, flag_message(exc.message, exc.field), exc.field)
        return 1
    except TargetError as exc:
        out.error(ErrorCode.UNAVAILABLE, str(exc))
        return 1
    except Exception as exc:
        message = target.describe_failure(exc)
        if message is None:
            raise
        out.error(ErrorCode.UNAVAILABLE, message)
        return 1
