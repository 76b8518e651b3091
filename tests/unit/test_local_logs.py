"""The local stack's human log lines, its log and metrics options, and metrics switched off locally."""

from __future__ import annotations

import io
import logging
import re
import threading
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from lambdas.api import handler as api_handler
from local.cli.main import build_parser
from local.lambdas import LambdaContext
from local.logs import StackFormatter, WholeLines, human_format
from local.options import LocalOptions, handler_environment
from nexttick.observability import inject_lambda_context
from nexttick.observability import metrics as powertools_metrics
from tests.support.api import LambdaApi

TIME = r"\d\d:\d\d:\d\d\.\d{3}"
NAMES = {"table": "t", "rule": "r", "worker_function": "w"}


@pytest.fixture
def human() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger whose handler writes human lines, as `nexttick local` sets up the handlers' logger."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    human_format(handler)
    log = logging.getLogger(f"human-lines-{uuid.uuid4().hex}")
    log.propagate = False
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    yield log, buffer
    log.removeHandler(handler)


def test_warnings_and_errors_are_marked_with_their_message_and_fields(
    human: tuple[logging.Logger, io.StringIO],
) -> None:
    log, buffer = human
    # When a warning with a field and an error with a traceback are logged
    log.warning("rule drifted from its record; re-publishing", extra={"rule": "nexttick-next-due"})
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("occurrence abandoned; it runs again after its lease", extra={"task_id": "t1"})
    # Then each says its level, message and fields on its line; the traceback follows the error
    lines = buffer.getvalue().splitlines()
    assert re.fullmatch(
        rf"{TIME} WARNING rule drifted from its record; re-publishing  rule=nexttick-next-due", lines[0]
    )
    assert re.fullmatch(
        rf"{TIME} ERROR occurrence abandoned; it runs again after its lease  task_id=t1", lines[1]
    )
    assert lines[2] == "Traceback (most recent call last):" and lines[-1] == "RuntimeError: boom"


def test_a_handlers_lambda_context_stays_off_the_line(human: tuple[logging.Logger, io.StringIO]) -> None:
    log, buffer = human

    # Given a handler logging under its Lambda context (function name, ARN, request id)
    @inject_lambda_context()
    def handler(event: dict[str, Any], context: Any) -> None:
        log.info("worker invoked", extra={"event_kind": "wake", "reason": "due too soon to arm"})
        log.info("stale queue entry deleted", extra={"entry": "0#2030-01-07T09:00:00Z#t1"})

    # When it runs
    handler({}, LambdaContext("nexttick-worker", 60, "us-east-1"))
    # Then the lines say what happened, not which container said it
    lines = buffer.getvalue().splitlines()
    assert re.fullmatch(rf"{TIME} worker invoked: wake \(due too soon to arm\)", lines[0])
    assert re.fullmatch(rf"{TIME} stale queue entry deleted  entry=0#2030-01-07T09:00:00Z#t1", lines[1])


def test_long_values_are_cut_so_a_line_stays_short(human: tuple[logging.Logger, io.StringIO]) -> None:
    log, buffer = human
    # When a delivery with a large payload and a line with a long field are logged
    delivery = {
        "task_id": "t1",
        "action": "log",
        "payload": {"blob": "x" * 5000},
        "scheduled_for": "2030-01-07T09:00:00Z",
        "fired_at": "2030-01-07T09:00:00.085Z",
        "attempt": 1,
    }
    log.info("task delivered", extra={"delivery": delivery})
    log.info("worker run finished", extra={"report": {"outcome": "armed", "note": "y" * 5000}})
    # Then both stay one short line
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 2 and all(len(line) <= 300 for line in lines), [len(line) for line in lines]
    assert re.match(rf'{TIME} delivered t1 \(log\) \+85 ms  \{{"blob": "xxx', lines[0])
    assert lines[0].endswith("…")


def test_the_workers_success_line_after_a_log_actions_own_line_is_not_repeated(
    human: tuple[logging.Logger, io.StringIO],
) -> None:
    log, buffer = human
    delivery = {
        "task_id": "t1",
        "action": "log",
        "payload": {},
        "scheduled_for": "2030-01-07T09:00:00Z",
        "fired_at": "2030-01-07T09:00:01Z",
        "attempt": 2,
    }
    # When the log action's line is followed by the worker's success line, and another task fails
    log.info("task delivered", extra={"delivery": delivery})
    finished = {"action": "log", "result": "succeeded", "lateness_ms": 1000.0, "error": None}
    log.info("occurrence finished", extra={"task_id": "t1", **finished})
    failed = {"action": "hook", "result": "retrying", "lateness_ms": 12.4, "error": "DeliveryError: 500"}
    log.info("occurrence finished", extra={"task_id": "t2", **failed})
    # Then the delivery is one line; the other occurrence has its own
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(rf"{TIME} delivered t1 \(log\) \+1000 ms attempt 2  \{{\}}", lines[0])
    assert re.fullmatch(rf"{TIME} retrying t2 \(hook\) \+12 ms  error: DeliveryError: 500", lines[1])


def test_the_stacks_own_lines_have_the_same_shape() -> None:
    # Given the local stack's own logger with the human format
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(StackFormatter())
    log = logging.getLogger(f"local-stack-{uuid.uuid4().hex}")
    log.propagate = False
    log.addHandler(handler)
    # When it logs an event and a warning
    log.warning("eventbridge emulator: rule fired for %s", "2030-01-07T09:01:00+00:00")
    log.error("nexttick-worker: asynchronous invocation failed (attempt %d)", 1)
    log.removeHandler(handler)
    # Then they read like the handlers' lines
    lines = buffer.getvalue().splitlines()
    assert re.fullmatch(
        rf"{TIME} WARNING eventbridge emulator: rule fired for 2030-01-07T09:01:00\+00:00", lines[0]
    )
    assert re.fullmatch(
        rf"{TIME} ERROR nexttick-worker: asynchronous invocation failed \(attempt 1\)", lines[1]
    )


def test_log_format_and_metrics_come_from_flags_or_the_environment() -> None:
    # Given no setting, then environment variables, then flags over them
    assert (LocalOptions.from_env({}).log_format, LocalOptions.from_env({}).metrics) == ("human", False)
    env = {"NEXTTICK_LOG_FORMAT": "JSON", "NEXTTICK_LOCAL_METRICS": "1"}
    assert (LocalOptions.from_env(env).log_format, LocalOptions.from_env(env).metrics) == ("json", True)
    assert LocalOptions.from_env(env, log_format="human").log_format == "human"
    # And the command line passes its flags (absent: None, so the environment decides)
    args = build_parser().parse_args(["local", "--log-format", "json", "--metrics"])
    assert (args.log_format, args.metrics) == ("json", True)
    args = build_parser().parse_args(["local"])
    assert (args.log_format, args.metrics) == (None, None)


@pytest.mark.parametrize(
    ("env", "flags", "message"),
    [
        (
            {"NEXTTICK_LOG_FORMAT": "xml"},
            {},
            "error: NEXTTICK_LOG_FORMAT / --log-format must be human or json, got 'xml'",
        ),
        (
            {},
            {"log_format": "text"},
            "error: NEXTTICK_LOG_FORMAT / --log-format must be human or json, got 'text'",
        ),
        (
            {"NEXTTICK_LOCAL_METRICS": "maybe"},
            {},
            "error: NEXTTICK_LOCAL_METRICS must be 1 or 0, got 'maybe'",
        ),
    ],
)
def test_a_bad_log_format_or_metrics_switch_is_refused_in_one_line(
    env: dict[str, str], flags: dict[str, Any], message: str
) -> None:
    with pytest.raises(SystemExit) as refused:
        LocalOptions.from_env(env, **flags)
    assert str(refused.value) == message


def test_the_handlers_metrics_are_off_locally_unless_asked_for() -> None:
    def environment(options: LocalOptions) -> dict[str, str]:
        return handler_environment(
            options, moto_url="http://m", lambda_url="http://l", names=NAMES, function_env={}, environ={}
        )

    assert environment(LocalOptions())["POWERTOOLS_METRICS_DISABLED"] == "true"
    assert environment(LocalOptions(metrics=True))["POWERTOOLS_METRICS_DISABLED"] == "false"


def test_with_metrics_off_the_api_handler_prints_no_metrics_and_warns_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the API handler with metrics off, as the local stack runs it by default
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    powertools_metrics.clear_metrics()
    api = LambdaApi(api_handler.handler)
    capsys.readouterr()
    # When it answers more requests than the 100 values Powertools keeps per metric
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(150):
            assert api.get("/health").status == 200
    # Then nothing was printed (Powertools alone prints the kept values at the 100th)
    assert capsys.readouterr().out == ""
    # And with metrics on, each request prints its EMF line again
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    api.get("/health")
    assert '"_aws"' in capsys.readouterr().out


def test_a_line_half_printed_by_one_thread_is_not_split_by_another_threads_line() -> None:
    # Given the stack's stdout, and a thread that has printed its text but not yet its newline
    # (as `print` does: two writes), like Powertools printing a metrics blob
    target = io.StringIO()
    stdout = WholeLines(target, threading.Lock())
    stdout.write('{"_aws": {}}')
    # When another thread's logger writes its whole line meanwhile
    other = threading.Thread(target=stdout.write, args=('{"message": "worker invoked"}\n',))
    other.start()
    other.join()
    stdout.write("\n")
    # Then each line is whole: the other thread's line first, then the blob, never one glued line
    assert target.getvalue().splitlines() == ['{"message": "worker invoked"}', '{"_aws": {}}']
