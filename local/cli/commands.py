"""The commands: `local` starts the local stack; `add`, `ls`, `show`, `runs`, `upcoming`, `reschedule`,
`pause`, `resume`, `skip`, `run-now`, `cancel`, `lateness`, `doctor` and `sync` manage tasks through the
editor library (or, for `sync`, the runtime) at the command's target."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from local.cli.format import (
    describe_schedule,
    format_when,
    render_doctor,
    render_lateness,
    render_runs,
    render_table,
    render_task,
    render_upcoming,
)
from local.cli.target import Target
from nexttick.errors import ErrorCode, ValidationError
from nexttick.timeutil import rfc3339

if TYPE_CHECKING:
    from editor import Editor


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


def _editor(target: Target) -> Editor:
    from editor import Editor

    return Editor(runtime=target.runtime())


def _json(answer: Any) -> Any:
    """An editor answer as the JSON the API answers (`--json` prints it as it is)."""
    from editor import as_json

    return as_json(answer)


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


def cmd_add(args: argparse.Namespace, target: Target, out: Output) -> int:
    from editor import TaskSpec

    fields = {k: v for k, v in _time_fields(args).items() if v is not None}
    options = {
        "id": args.id,
        "max_attempts": args.max_attempts,
        "retry_backoff_seconds": args.retry_backoff,
        "misfire_grace_seconds": args.misfire_grace,
        "end": args.end,
        "dst_skipped": args.dst_skipped,
        "dst_repeated": args.dst_repeated,
        "jitter_seconds": args.jitter,
    }
    spec = TaskSpec(
        action=args.action,
        payload=_payload(args.payload) or {},
        **fields,
        **{k: v for k, v in options.items() if v is not None},
    )
    editor = _editor(target)
    if args.dry_run:
        preview = _json(editor.preview(spec))
        out.task(preview, "dry run, nothing written:\n" + render_upcoming(preview["upcoming"], out.now()))
        return 0
    result = editor.create(spec)
    task = _json(result.task)
    verb = "scheduled" if result.created else "already exists (identical repeat)"
    due = format_when(task.get("due"), out.now(), task.get("timezone"))
    out.task(task, f"{verb}: {task['id']} ({task['action']}), due {due}")
    return 0


def cmd_ls(args: argparse.Namespace, target: Target, out: Output) -> int:
    editor = _editor(target)
    items: list[dict[str, Any]] = []
    cursor = args.cursor
    while True:
        page = editor.list(status=args.status, limit=args.limit, cursor=cursor)
        items.extend(_json(t) for t in page.items)
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


def cmd_show(args: argparse.Namespace, target: Target, out: Output) -> int:
    task = _json(_editor(target).get(args.id))
    out.task(task, render_task(task, out.now()))
    return 0


def cmd_runs(args: argparse.Namespace, target: Target, out: Output) -> int:
    page = _json(_editor(target).runs(args.id, limit=args.limit, cursor=args.cursor))
    if out.json:
        out.emit(page)
        return 0
    out.line(render_runs(page, out.now()))
    if page["next_cursor"]:
        out.line(f"more: nexttick runs {args.id} --cursor {page['next_cursor']}")
    return 0


def cmd_upcoming(args: argparse.Namespace, target: Target, out: Output) -> int:
    upcoming = _json(_editor(target).upcoming(args.id, count=args.count))
    out.task(upcoming, render_upcoming(upcoming["items"], out.now()))
    return 0


def cmd_reschedule(args: argparse.Namespace, target: Target, out: Output) -> int:
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
    editor = _editor(target)
    if one_shot and not args.once:
        current = editor.get(args.id)
        if current.schedule != "once":
            schedule = (
                f"on cron '{current.cron}' in {current.timezone or 'UTC'}"
                if current.cron
                else describe_schedule(_json(current))
            )
            raise ValidationError(
                f"{one_shot}: task {args.id!r} recurs {schedule} and would become a one-shot; "
                "pass --once to convert it, or --cron/--every to change its recurrence",
                field=one_shot,
            )
    task = _json(editor.reschedule(args.id, expected_version=args.if_version, **fields))
    due = format_when(task.get("due"), out.now(), task.get("timezone"))
    out.task(task, f"rescheduled: {task['id']}, due {due}")
    return 0


def cmd_cancel(args: argparse.Namespace, target: Target, out: Output) -> int:
    task = _json(_editor(target).cancel(args.id, expected_version=args.if_version))
    out.task(task, f"cancelled: {task['id']}")
    return 0


def cmd_pause(args: argparse.Namespace, target: Target, out: Output) -> int:
    task = _json(_editor(target).pause(args.id, expected_version=args.if_version))
    out.task(task, f"paused: {task['id']}, keeps its place (due {format_when(task.get('due'), out.now())})")
    return 0


def cmd_resume(args: argparse.Namespace, target: Target, out: Output) -> int:
    editor = _editor(target)
    task = _json(
        editor.resume(
            args.id, missed=args.missed, max_catch_up=args.max_catch_up, expected_version=args.if_version
        )
    )
    due = format_when(task.get("due"), out.now(), task.get("timezone"))
    out.task(task, f"resumed: {task['id']}, {task['status']}, due {due}")
    return 0


def cmd_skip(args: argparse.Namespace, target: Target, out: Output) -> int:
    task = _json(_editor(target).skip(args.id, count=args.count, expected_version=args.if_version))
    due = format_when(task.get("due"), out.now(), task.get("timezone"))
    out.task(task, f"skipped {args.count}: {task['id']}, {task['status']}, due {due}")
    return 0


def cmd_run_now(args: argparse.Namespace, target: Target, out: Output) -> int:
    task = _json(_editor(target).run_now(args.id, expected_version=args.if_version))
    out.task(task, f"running now: {task['id']} (its schedule is unchanged)")
    return 0


def cmd_lateness(args: argparse.Namespace, target: Target, out: Output) -> int:
    window = _json(_editor(target).lateness(minutes=args.minutes))
    out.task(window, render_lateness(window))
    return 0


def cmd_doctor(args: argparse.Namespace, target: Target, out: Output) -> int:
    """List the pending and paused cron schedules whose runs change under crontab(5)'s reading (or
    that nexttick now refuses); exit 1 when there is any, so a script can stop on it."""
    from nexttick.cron import meaning_change

    editor = _editor(target)
    checked, changed = 0, []
    for status in (None, "paused"):
        cursor = None
        while True:
            page = editor.list(status=status, limit=100, cursor=cursor)
            for task in page.items:
                if task.cron is None:
                    continue
                checked += 1
                local_now = out.now().astimezone(ZoneInfo(task.timezone or "UTC"))
                change = meaning_change(task.cron, local_now.replace(tzinfo=None, second=0, microsecond=0))
                if change is not None:
                    changed.append(
                        {
                            "id": task.id,
                            "cron": task.cron,
                            "timezone": task.timezone,
                            "status": str(task.status),
                            "was": [wall.isoformat(timespec="minutes") for wall in change.was],
                            "now": [wall.isoformat(timespec="minutes") for wall in change.now],
                            "refused": change.refused,
                        }
                    )
            cursor = page.next_cursor
            if not cursor:
                break
    if out.json:
        out.emit({"checked": checked, "changed": changed})
    else:
        out.line(render_doctor(checked, changed))
    return 1 if changed else 0


def cmd_sync(args: argparse.Namespace, target: Target, out: Output) -> int:
    """Re-derive the rule from the table (as after a deploy); wake the worker if work is due now."""
    from nexttick.rulearm import Outcome

    runtime = target.runtime()
    result = runtime.rule_sync.sync()
    if result.outcome is Outcome.DUE_SOON:
        runtime.trigger.wake("nexttick sync: work is due")
    rule = runtime.rule.current()
    body = {
        "outcome": result.outcome.value,
        "head": rfc3339(result.head) if result.head else None,
        "armed_minute": rfc3339(result.armed_minute) if result.armed_minute else None,
        "rule": rfc3339(rule) if isinstance(rule, datetime) else rule,
    }
    now = out.now()
    armed = format_when(body["armed_minute"], now) if body["armed_minute"] else "the epoch (nothing pending)"
    text = (
        f"synced: {result.outcome.value}; next due {format_when(body['head'], now)}; rule armed for {armed}"
    )
    if result.outcome is Outcome.DUE_SOON:
        text += "; worker invoked"
    out.task(body, text)
    return 0


def cmd_local(args: argparse.Namespace, target: Target, out: Output) -> int:
    """The local stack is what other commands target: it has no target of its own."""
    from local.options import LocalOptions

    try:
        from local.foreground import run
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
        stop_grace=args.stop_grace,
        log_format=args.log_format,
        metrics=args.metrics,
    )
    code = run(options)
    # Worker invocations still running (e.g. waiting for a due instant) are abandoned like a Lambda
    # at its timeout; the state is saved. Exit now rather than wait for their threads.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
