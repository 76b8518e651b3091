"""What the CLI prints for people: durations, times in a task's own zone, cron descriptions, the task
table and one task's detail."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from nexttick.cron import MACROS


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
        return str(
            ExpressionDescriptor(MACROS.get(expression.lower(), expression), options).get_description()
        )
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


def format_when(value: str | None, now: datetime, zone: str | None = None) -> str:
    """An RFC 3339 time from a task as `format_time` shows it, and how far from now; '-' if unset."""
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
            format_when(t.get("due"), now, t.get("timezone")),
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
        return format_when(value, now, zone)

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


def render_runs(page: Mapping[str, Any], now: datetime) -> str:
    """A task's run history as an aligned table (UTC times) under its lateness summary."""
    lateness = page["lateness"]
    if not lateness["runs"]:
        return "no runs yet"
    summary = (
        f"{lateness['runs']} runs kept; lateness last {lateness['last_seconds']:.3f}s, "
        f"p99 {lateness['p99_seconds']:.3f}s"
    )
    header = ("#", "SCHEDULED FOR", "ATTEMPT", "OUTCOME", "STARTED", "LATENESS", "ERROR")
    rows = [
        (
            str(run["number"]),
            format_time(_parse_time(run["scheduled_for"]) or now),
            str(run["attempt"]),
            run["outcome"],
            format_when(run["started_at"], now),
            f"{run['lateness_seconds']:.3f}s",
            (run["error"] or "")[:60],
        )
        for run in page["items"]
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join([summary, *lines])


_DST_NOTES = {
    "shifted": "DST gap: runs after it",
    "repeated-first": "DST: first of two passes",
    "repeated-second": "DST: second of two passes",
}


def render_upcoming(items: Sequence[Mapping[str, Any]], now: datetime) -> str:
    """Next occurrences, one per line: local wall time with offset, UTC, how far, and DST notes."""
    if not items:
        return "no upcoming occurrences"
    lines = []
    for run in items:
        for wall in run["skipped"]:
            lines.append(f"{wall}  skipped (DST gap)")
        note = _DST_NOTES.get(run["dst"] or "", "")
        start = format_when(run["run_at"], now) if run["run_at"] != run["scheduled_for"] else ""
        line = f"{run['local']}  {format_when(run['scheduled_for'], now)}"
        line += f"  starts {start}" if start else ""
        lines.append(line + (f"  [{note}]" if note else ""))
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:g}s" if value >= 1000 else f"{value:g}ms"


def render_lateness(window: Mapping[str, Any]) -> str:
    """The lateness histogram as text bars, one per bucket, under its figures."""
    if not window["runs"]:
        return "no runs in this window"
    lines = [
        f"{window['runs']} runs; p50 <= {_ms(window['p50_ms'])}, p90 <= {_ms(window['p90_ms'])}, "
        f"p99 <= {_ms(window['p99_ms'])}, max <= {_ms(window['max_ms'])}; "
        f"{window['late_over_1s']} over 1 s late"
    ]
    widest = max(bucket["count"] for bucket in window["buckets"])
    lower = "0"
    for bucket in window["buckets"]:
        label = f"<= {_ms(bucket['le_ms'])}" if bucket["le_ms"] is not None else f"> {lower}"
        bar = "#" * max(1 if bucket["count"] else 0, round(40 * bucket["count"] / widest))
        lines.append(f"{label:>10}  {bar} {bucket['count']}")
        lower = _ms(bucket["le_ms"])
    return "\n".join(lines)


def render_doctor(checked: int, changed: Sequence[Mapping[str, Any]]) -> str:
    """`nexttick doctor`: each schedule whose runs change, its next wall times before and now."""
    if not changed:
        return f"checked {checked} cron schedules: each runs as before under crontab(5)'s reading"
    lines = [f"{len(changed)} of {checked} cron schedules run differently under crontab(5)'s reading:"]
    for item in changed:
        zone = item["timezone"] or "UTC"
        lines.append(f"  {item['id']}  {item['cron']!r}  ({zone} wall times, {item['status']})")
        lines.append(f"    ran at:   {', '.join(item['was']) or '-'}")
        if item["refused"]:
            lines.append(f"    now:      refused ({item['refused']}); its next run ends the series, failed")
        else:
            lines.append(f"    runs at:  {', '.join(item['now']) or '-'}")
    lines.append("reschedule each with the expression you mean (nexttick reschedule ID --cron EXPR)")
    return "\n".join(lines)
