"""What `nexttick local` prints: by default one short line per event for a person at a terminal
(`--log-format human`); with `--log-format json` the handlers' Powertools JSON, as in Lambda.

Only the local stack calls `configure`: in Lambda the handlers log Powertools JSON untouched.

    08:03:30.002 api POST /tasks 201 12 ms
    08:03:33.120 delivered hello (log) +85 ms  {"hello": "world"}
    08:03:34.500 WARNING rule drifted from its record; re-publishing
"""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from aws_lambda_powertools.logging.filters import SuppressFilter
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from nexttick.observability import logger as powertools_logger

if TYPE_CHECKING:
    from aws_lambda_powertools.logging.types import LogRecord

HUMAN = "human"
# Powertools' %F is milliseconds.
TIME_FORMAT = "%H:%M:%S.%F"
# A payload or a field longer than this is cut: a line stays one terminal line, more or less.
MAX_VALUE_CHARS = 160
# What every handler line carries (Lambda context, service, source location, trace ids): the human
# line leaves it out; `--log-format json` shows it.
CONTEXT_KEYS = frozenset(
    {
        "level",
        "location",
        "message",
        "timestamp",
        "service",
        "sampling_rate",
        "cold_start",
        "function_name",
        "function_memory_size",
        "function_arn",
        "function_request_id",
        "correlation_id",
        "xray_trace_id",
        "exception",
        "exception_name",
        "exception_notes",
        "stack_trace",
    }
)
_MARKED_LEVELS = frozenset({"WARNING", "ERROR", "CRITICAL"})


class WholeLines(io.TextIOBase):
    """A stream many threads print to that only ever passes whole lines on, each flushed at once.

    `print` writes its text and its newline as two writes, and Powertools prints a metrics blob
    with `print` while another thread's logger writes its line: without this, the two land on one
    line. Each thread's text waits in its own buffer until it ends a line; lines go out under one
    lock shared by stdout and stderr (which may be the same file)."""

    def __init__(self, target: TextIO, lock: threading.Lock) -> None:
        super().__init__()
        self._target, self._lock, self._pending = target, lock, threading.local()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._target.encoding

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._target.fileno()

    def isatty(self) -> bool:
        return self._target.isatty()

    def write(self, text: str) -> int:
        lines, newline, rest = (getattr(self._pending, "text", "") + text).rpartition("\n")
        self._pending.text = rest
        if newline:
            with self._lock:
                self._target.write(lines + newline)
                self._target.flush()
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._target.flush()


def configure(log_format: str) -> None:
    """The process's output for the local stack (before any handler runs): whole lines only on
    stdout and stderr, root logging for the stack's own lines, and the handlers' Powertools logger
    in `log_format`."""
    lines = threading.Lock()
    sys.stdout, sys.stderr = WholeLines(sys.stdout, lines), WholeLines(sys.stderr, lines)
    handler = powertools_logger.registered_handler
    if isinstance(handler, logging.StreamHandler):
        handler.setStream(sys.stdout)
    root = logging.StreamHandler()
    # The Powertools logger prints its tree's records itself (what Powertools does to the root
    # handlers it finds when it is created — there were none yet).
    root.addFilter(SuppressFilter(powertools_logger.service))
    if log_format == HUMAN:
        root.setFormatter(StackFormatter())
        human_format(powertools_logger.registered_handler)
    else:
        root.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[root])


def human_format(handler: logging.Handler) -> None:
    """Make a handler of the Powertools logger write human lines."""
    handler.setFormatter(HumanFormatter(service=powertools_logger.service))
    handler.addFilter(OneLinePerDelivery())


def _marked(level: str) -> str:
    return f"{level} " if level in _MARKED_LEVELS else ""


def _cut(text: str) -> str:
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _value(value: Any) -> str:
    if isinstance(value, str) and value and " " not in value:
        return _cut(value)
    return _cut(json.dumps(value, default=str, ensure_ascii=False))


def _text(message: Any) -> str:
    return message if isinstance(message, str) else _value(message)


def _fields(fields: Mapping[str, Any]) -> str:
    """`key=value ...` for what a line adds to its message (nested objects one level flat)."""
    flat: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, dict) and value:
            flat.update(value)
        elif value not in (None, "", [], {}):
            flat[key] = value
    return "  " + " ".join(f"{k}={_value(v)}" for k, v in flat.items()) if flat else ""


def _late(ms: Any) -> str:
    return f" {float(ms):+.0f} ms" if isinstance(ms, int | float) else ""


def _instant(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def _delivered(f: dict[str, Any]) -> str:
    delivery = f.get("delivery") or {}
    scheduled, fired = _instant(delivery.get("scheduled_for")), _instant(delivery.get("fired_at"))
    late = _late((fired - scheduled).total_seconds() * 1000) if scheduled and fired else ""
    attempt = delivery.get("attempt")
    again = f" attempt {attempt}" if isinstance(attempt, int) and attempt > 1 else ""
    payload = _value(delivery.get("payload", {}))
    return f"delivered {delivery.get('task_id')} ({delivery.get('action')}){late}{again}  {payload}"


def _finished(f: dict[str, Any]) -> str:
    error = f"  error: {_cut(str(f['error']))}" if f.get("error") else ""
    return f"{f.get('result')} {f.get('task_id')} ({f.get('action')}){_late(f.get('lateness_ms'))}{error}"


def _api(f: dict[str, Any]) -> str:
    return f"api {f.get('method')} {f.get('path')} {f.get('status')} {f.get('duration_ms'):.0f} ms"


def _invoked(f: dict[str, Any]) -> str:
    reason = f" ({f['reason']})" if f.get("reason") else ""
    return f"worker invoked: {f.get('event_kind')}{reason}"


def _run_finished(f: dict[str, Any]) -> str:
    report = dict(f.get("report") or {})
    outcome = report.pop("outcome", "")
    return f"worker finished: {outcome}{_fields({**report, 'reason': f.get('reason')})}"


# The events a person watches for, each in its own words; any other line is `message  key=value`.
EVENTS: dict[str, Callable[[dict[str, Any]], str]] = {
    "task delivered": _delivered,
    "occurrence finished": _finished,
    "api request": _api,
    "worker invoked": _invoked,
    "worker run finished": _run_finished,
}


class HumanFormatter(LambdaPowertoolsFormatter):
    """Powertools' formatter — the same keys: shared, per invocation and per record — written as
    one line: time, what happened, its key fields (a traceback follows an exception's line)."""

    def __init__(self, **keys: Any) -> None:
        super().__init__(datefmt=TIME_FORMAT, serialize_stacktrace=False, **keys)

    def serialize(self, log: LogRecord) -> str:
        record: dict[str, Any] = dict(log)
        fields = {k: v for k, v in record.items() if k not in CONTEXT_KEYS}
        message = record.get("message")
        render = EVENTS.get(message) if isinstance(message, str) else None
        try:
            text = render(fields) if render else f"{_text(message)}{_fields(fields)}"
        except (TypeError, ValueError):  # an event logged with other fields than expected
            text = f"{_text(message)}{_fields(fields)}"
        line = f"{record.get('timestamp')} {_marked(str(record.get('level')))}{text}"
        exception = record.get("exception")
        return f"{line}\n{exception}" if exception else line


class StackFormatter(logging.Formatter):
    """The local stack's own lines (emulator, Lambda endpoint, shutdown) in the handlers' shape."""

    def __init__(self) -> None:
        super().__init__(datefmt="%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        when = f"{self.formatTime(record, self.datefmt)}.{int(record.msecs):03d}"
        return f"{when} {_marked(record.levelname)}{super().format(record)}"


class OneLinePerDelivery(logging.Filter):
    """A `log` action's own line already says its occurrence was delivered: drop the worker's
    "occurrence finished ... succeeded" that follows it in the same thread."""

    def __init__(self) -> None:
        super().__init__()
        self._last = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        echo = getattr(self._last, "message", None) == "task delivered"
        self._last.message = record.msg
        return not (
            echo and record.msg == "occurrence finished" and getattr(record, "result", None) == "succeeded"
        )
