"""`nexttick`: the command line. `local` starts the local stack; `add`, `ls`, `show`, `reschedule`,
`cancel` and `sync` manage tasks through the editor library, against the local stack or AWS.

Target: flags (`--endpoint-url`, `--table`, `--rule`, `--worker-function`, `--region`) win, then the
`NEXTTICK_*` / `AWS_*` environment. Without `--endpoint-url`, `--aws` or NEXTTICK_ENDPOINT_URL, a
running local stack recorded in `<state dir>/local.json` (`.nexttick/` by default) is used; with no
stack running, AWS only when the environment names a table (NEXTTICK_TABLE), else an error saying how
to start one. Every failure ends as one `error:` line (with `--json`: the HTTP API's error object).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from nexttick.constants import DEFAULT_REGION
from nexttick.errors import ErrorCode, NextTickError, ValidationError

# ---------------------------------------------------------------------- formatting


def format_duration(seconds: float) -> str:
    """Compact duration: 45s, 3m, 2m 50s, 1h30m style pieces (two units below ten of the larger)."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 1 or seconds == 0 else f"{seconds:.1f}s"
    units = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
    for index, (unit, size) in enumerate(units[:-1]):
        if seconds >= size:
            whole = int(seconds // size)
            rest_unit, rest_size = units[index + 1]
            rest = int((seconds - whole * size) // rest_size)
            return f"{whole}{unit} {rest}{rest_unit}" if whole < 10 and rest else f"{whole}{unit}"
    return f"{seconds:.0f}s"  # pragma: no cover - unreachable


def relative(when: datetime | None, now: datetime) -> str:
    """'in 3m', '2h ago', 'now'."""
    if when is None:
        return "-"
    delta = (when - now).total_seconds()
    if abs(delta) < 1:
        return "now"
    return f"in {format_duration(delta)}" if delta > 0 else f"{format_duration(delta)} ago"


_CRON_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def describe_cron(expression: str) -> str:
    """Human description of a cron expression ('At 09:00, only on Friday'); the expression itself
    when cron-descriptor is not installed or cannot read it."""
    try:
        from cron_descriptor import ExpressionDescriptor, Options
    except ImportError:  # the CLI works without it (it is a development dependency)
        return expression
    options = Options()
    options.use_24hour_time_format = True
    try:
        return str(ExpressionDescriptor(_CRON_ALIASES.get(expression, expression), options).get_description())
    except Exception:
        return expression


def describe_schedule(task: Mapping[str, Any]) -> str:
    if task.get("schedule") == "cron" and task.get("cron"):
        return f"{describe_cron(task['cron'])} ({task.get('timezone') or 'UTC'})"
    if task.get("schedule") == "every" and task.get("every_seconds"):
        return f"every {format_duration(float(task['every_seconds'])).replace(' ', '')}"
    return "once"


def _parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def format_time(at: datetime, zone: str | None = None) -> str:
    """An instant on the wall clock of `zone` - a task's own time zone, so that its 09:00 Berlin
    reads 09:00 CET - or in UTC with a `Z`."""
    if zone and zone != "UTC":
        return at.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M:%S %Z")
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") + "Z"


def _when(value: str | None, now: datetime, zone: str | None = None) -> str:
    at = _parse_time(value)
    if at is None:
        return "-"
    return f"{format_time(at, zone)} ({relative(at, now)})"


def render_table(tasks: Sequence[Mapping[str, Any]], now: datetime) -> str:
    """Tasks as an aligned text table, each due time in its task's zone."""
    header = ("ID", "STATUS", "ACTION", "DUE", "SCHEDULE", "RUNS")
    rows = [
        (
            t["id"],
            t["status"],
            t["action"],
            _when(t.get("due"), now, t.get("timezone")),
            describe_schedule(t),
            str(t.get("runs", 0)),
        )
        for t in tasks
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join(lines)


def render_task(task: Mapping[str, Any], now: datetime) -> str:
    """One task as 'field: value' lines, its times in its own zone."""
    last = task.get("last_run") or {}
    zone = task.get("timezone")

    def when(value: str | None) -> str:
        return _when(value, now, zone)

    lines = [
        ("id", task["id"]),
        ("status", task["status"]),
        ("action", task["action"]),
        ("schedule", describe_schedule(task) + (f"  [{task['cron']}]" if task.get("cron") else "")),
        ("due", when(task.get("due"))),
        ("next attempt", when(task.get("next_attempt_at")) if task.get("next_attempt_at") else None),
        ("end", when(task.get("end")) if task.get("end") else None),
        ("payload", json.dumps(task.get("payload", {}), sort_keys=True)),
        (
            "runs / attempts",
            f"{task.get('runs', 0)} / {task.get('attempts', 0)} (max {task.get('max_attempts')})",
        ),
        (
            "last run",
            f"{last.get('outcome')} at {when(last.get('started_at'))}"
            + (f": {last['error']}" if last.get("error") else "")
            if last
            else None,
        ),
        ("version", str(task.get("version"))),
        ("created", when(task.get("created_at"))),
        ("updated", when(task.get("updated_at"))),
    ]
    width = max(len(name) for name, _ in lines)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in lines if value is not None)


# ---------------------------------------------------------------------- target


class TargetError(Exception):
    """Nothing to talk to: no running local stack (or a dead one) and no AWS target chosen. Reported
    like a failed AWS call: one line saying what to do (`--json`: `service_unavailable`)."""


_START_HINT = "start it with `make run`, or pass --aws"


def local_stack_environment(
    environ: Mapping[str, str], *, endpoint_url: str | None, aws: bool, state_dir: str | None
) -> dict[str, str] | None:
    """The environment of a running local stack (from its `local.json`) to run the editor with, or
    None to use the environment as it is: with `--aws`, `--endpoint-url` or NEXTTICK_ENDPOINT_URL,
    or a table named by NEXTTICK_TABLE. TargetError otherwise: without a stack a newcomer's command
    would reach for AWS credentials they do not have."""
    from nexttick.local import endpoints
    from nexttick.local.options import state_dir_from

    if aws or endpoint_url or environ.get("NEXTTICK_ENDPOINT_URL"):
        return None
    directory = state_dir_from(environ, state_dir)
    try:
        info = endpoints.read(directory)
    except endpoints.StaleLocalStack as exc:
        raise TargetError(f"{exc}; {_START_HINT}") from None
    if info is not None:
        return dict(info["env"])
    if environ.get("NEXTTICK_TABLE"):
        return None
    raise TargetError(f"no local stack is running in {directory}; {_START_HINT}")


def describe_aws_failure(
    exc: Exception, *, endpoint_flag: str | None, region_flag: str | None, environ: Mapping[str, str]
) -> str | None:
    """One line for a failed AWS call - where it went, what failed, what to do - or None when `exc`
    is no AWS failure (a bug, which keeps its traceback)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, ReadTimeoutError
    from botocore.exceptions import ConnectionError as AwsConnectionError
    from pynamodb.exceptions import PynamoDBException

    cause = exc.cause if isinstance(exc, PynamoDBException) and exc.cause is not None else exc
    if not isinstance(cause, BotoCoreError | ClientError | PynamoDBException):
        return None
    endpoint = endpoint_flag or environ.get("NEXTTICK_ENDPOINT_URL")
    region = region_flag or environ.get("AWS_REGION") or DEFAULT_REGION
    target = endpoint or f"AWS ({region})"
    if isinstance(cause, AwsConnectionError | ReadTimeoutError):
        url = cause.kwargs.get("endpoint_url") or target
        if endpoint_flag:
            return f"cannot connect to {url}; check --endpoint-url"
        if endpoint:
            return (
                f"cannot connect to {url}: no local stack answers there; start it with `make run`, "
                "or unset NEXTTICK_ENDPOINT_URL (a sourced .nexttick/env of a stopped stack sets it)"
            )
        return f"cannot connect to {url}; check your network and AWS_REGION"
    if isinstance(cause, NoCredentialsError):
        return (
            f"{target}: no AWS credentials found; configure them (`aws configure`, AWS_PROFILE), "
            "or start the local stack with `make run`"
        )
    if isinstance(cause, ClientError):
        error = cause.response.get("Error", {})
        return (
            f"{target} refused the call ({error.get('Code')}: {error.get('Message')}); check the "
            "names (--table, --rule, --worker-function or NEXTTICK_*) and your credentials' permissions"
        )
    return f"AWS call to {target} failed: {cause}"


def build_editor(args: argparse.Namespace) -> Any:
    """An Editor for the resolved target (the local stack or AWS), flags applied on top."""
    local = local_stack_environment(
        os.environ,
        endpoint_url=getattr(args, "endpoint_url", None),
        aws=getattr(args, "aws", False),
        state_dir=getattr(args, "state_dir", None),
    )
    if local is not None:  # this process exists for this one command: its environment is ours
        for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
            os.environ.pop(name, None)
        os.environ.update(local)
    from editor import Editor
    from nexttick.config import NextTickSettings

    return Editor(
        settings=NextTickSettings(),
        table_name=getattr(args, "table", None),
        rule_name=getattr(args, "rule", None),
        worker_function=getattr(args, "worker_function", None),
        region=getattr(args, "region", None),
        endpoint_url=getattr(args, "endpoint_url", None),
    )


# ---------------------------------------------------------------------- commands


def _payload(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"payload: not valid JSON ({exc.msg})", field="payload") from None
    if not isinstance(value, dict):
        raise ValidationError("payload: must be a JSON object", field="payload")
    return value


def _delay(text: str | None) -> float | None:
    """`--in`: a duration ('90s', '5m', '1h30m', 'PT1H') or a number of seconds (0 = now)."""
    if text is None:
        return None
    from nexttick.timeutil import parse_duration

    if text.strip() in ("0", "0s", "now"):
        return 0.0
    return parse_duration(text, "delay_seconds").total_seconds()


def _time_fields(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "due": args.at,
        "delay_seconds": _delay(args.in_),
        "cron": args.cron,
        "timezone": args.tz,
        "every": args.every,
    }


def cmd_add(args: argparse.Namespace, out: Output) -> int:
    from editor import TaskSpec

    fields = {k: v for k, v in _time_fields(args).items() if v is not None}
    options = {
        "id": args.id,
        "max_attempts": args.max_attempts,
        "retry_backoff_seconds": args.retry_backoff,
        "misfire_grace_seconds": args.misfire_grace,
        "end": args.end,
    }
    spec = TaskSpec(
        action=args.action,
        payload=_payload(args.payload) or {},
        **fields,
        **{k: v for k, v in options.items() if v is not None},
    )
    result = build_editor(args).create(spec)
    task = result.task.to_dict()
    verb = "scheduled" if result.created else "already exists (identical repeat)"
    due = _when(task.get("due"), out.now(), task.get("timezone"))
    out.task(task, f"{verb}: {task['id']} ({task['action']}), due {due}")
    return 0


def cmd_ls(args: argparse.Namespace, out: Output) -> int:
    editor = build_editor(args)
    items: list[dict[str, Any]] = []
    cursor = args.cursor
    while True:
        page = editor.list(status=args.status, limit=args.limit, cursor=cursor)
        items.extend(t.to_dict() for t in page.items)
        cursor = page.next_cursor
        if not (args.all_pages and cursor):
            break
    if out.json:
        out.emit({"items": items, "next_cursor": cursor})
        return 0
    out.line(render_table(items, out.now()) if items else "no pending tasks")
    if cursor:
        out.line(f"more: nexttick ls --cursor {cursor}   (or --all-pages)")
    return 0


def cmd_show(args: argparse.Namespace, out: Output) -> int:
    task = build_editor(args).get(args.id).to_dict()
    out.task(task, render_task(task, out.now()))
    return 0


def cmd_reschedule(args: argparse.Namespace, out: Output) -> int:
    """A one-shot time (`--at`, `--in`) for a recurring task would silently end its recurrence:
    refused unless `--once` says that is meant."""
    fields = _time_fields(args)
    if all(v is None for v in fields.values()):
        raise ValidationError(
            "give one of --at, --in, --cron, --every (or --tz for a cron task)", field="due"
        )
    one_shot = next((name for name in ("due", "delay_seconds") if fields[name] is not None), None)
    if args.once and one_shot is None:
        raise ValidationError("--once: makes the task a one-shot at a new time; give it with --at or --in")
    editor = build_editor(args)
    if one_shot and not args.once:
        current = editor.get(args.id)
        if current.schedule != "once":
            schedule = (
                f"on cron '{current.cron}' in {current.timezone or 'UTC'}"
                if current.cron
                else describe_schedule(current.to_dict())
            )
            raise ValidationError(
                f"{one_shot}: task {args.id!r} recurs {schedule} and would become a one-shot; "
                "pass --once to convert it, or --cron/--every to change its recurrence",
                field=one_shot,
            )
    task = editor.reschedule(args.id, expected_version=args.if_version, **fields).to_dict()
    out.task(
        task, f"rescheduled: {task['id']}, due {_when(task.get('due'), out.now(), task.get('timezone'))}"
    )
    return 0


def cmd_cancel(args: argparse.Namespace, out: Output) -> int:
    task = build_editor(args).cancel(args.id, expected_version=args.if_version).to_dict()
    out.task(task, f"cancelled: {task['id']}")
    return 0


def cmd_sync(args: argparse.Namespace, out: Output) -> int:
    """Re-derive the rule from the table (as after a deploy); wake the worker if work is due now."""
    from nexttick.rulesync import Outcome

    runtime = build_editor(args).runtime
    result = runtime.rule_sync.sync()
    if result.outcome is Outcome.DUE_SOON:
        runtime.trigger.wake("nexttick sync: work is due")
    rule = runtime.rule.current()
    body = {
        "outcome": result.outcome.value,
        "head": result.head.isoformat().replace("+00:00", "Z") if result.head else None,
        "armed_minute": result.armed_minute.isoformat().replace("+00:00", "Z")
        if result.armed_minute
        else None,
        "rule": rule.isoformat().replace("+00:00", "Z") if isinstance(rule, datetime) else rule,
    }
    now = out.now()
    armed = _when(body["armed_minute"], now) if body["armed_minute"] else "the epoch (nothing pending)"
    text = f"synced: {result.outcome.value}; next due {_when(body['head'], now)}; rule armed for {armed}"
    if result.outcome is Outcome.DUE_SOON:
        text += "; worker invoked"
    out.task(body, text)
    return 0


def cmd_local(args: argparse.Namespace, out: Output) -> int:
    from nexttick.local.options import LocalOptions

    try:
        from nexttick.local.stack import run
    except ImportError as exc:  # moto[server] is a development dependency
        raise SystemExit(
            f"error: the local stack needs the development dependencies ({exc}); run `make run`"
        ) from None
    options = LocalOptions.from_env(
        api_port=args.port,
        moto_port=args.moto_port,
        state_dir=getattr(args, "state_dir", None),
        restore=False if args.fresh else None,
        jitter=False if args.no_jitter else None,
        max_delivery_delay=args.max_delivery_delay,
        worker_timeout=args.worker_timeout,
        log_format=args.log_format,
        metrics=args.metrics,
    )
    code = run(options)
    # Worker invocations still running (e.g. waiting for a due instant) are abandoned like a Lambda
    # at its timeout; the state is saved. Exit now rather than wait for their threads.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# ---------------------------------------------------------------------- output and parser


class Output:
    """Human text or JSON (`--json`) on stdout; errors on stderr."""

    def __init__(self, as_json: bool, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.json = as_json
        self.now = now

    def emit(self, value: Any) -> None:
        print(json.dumps(value, indent=2, sort_keys=True))

    def line(self, text: str) -> None:
        print(text)

    def task(self, value: Any, text: str) -> None:
        if self.json:
            self.emit(value)
        else:
            self.line(text)

    def error(self, code: ErrorCode, message: str, field: str | None = None) -> None:
        """`--json`: the HTTP API's error object (same codes, `field` the API's name)."""
        if self.json:
            print(json.dumps({"error": code.value, "message": message, "field": field}), file=sys.stderr)
        else:
            print(f"error: {message}", file=sys.stderr)


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
        name: str, handler: Callable[[argparse.Namespace, Output], int], help: str, *, targets: bool = True
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

    p = command("ls", cmd_ls, "list pending and running tasks in due order")
    p.add_argument("--status", choices=("pending", "running"))
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--cursor", help="continue after a previous page")
    p.add_argument("--all-pages", action="store_true", help="follow the cursors to the last page")

    p = command("show", cmd_show, "show one task")
    p.add_argument("id")

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
    try:
        code: int = args.handler(args, out)
        return code
    except NextTickError as exc:
        out.error(exc.code, flag_message(exc.message, exc.field), exc.field)
        return 1
    except TargetError as exc:
        out.error(ErrorCode.UNAVAILABLE, str(exc))
        return 1
    except Exception as exc:
        message = describe_aws_failure(
            exc,
            endpoint_flag=getattr(args, "endpoint_url", None),
            region_flag=getattr(args, "region", None),
            environ=os.environ,
        )
        if message is None:
            raise
        out.error(ErrorCode.UNAVAILABLE, message)
        return 1


if __name__ == "__main__":
    sys.exit(main())
