"""The handlers' Powertools wiring built on its public API: the Lambda context keys on each line,
the event logged on request, and metrics dropped rather than kept when they are switched off."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from local.lambdas import LambdaContext
from nexttick.observability import MetricUnit, inject_lambda_context, logger, metrics


def test_a_handlers_keys_are_powertools_lambda_context_keys_and_the_event_is_logged_on_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a handler under `inject_lambda_context`, with the event logged on request
    monkeypatch.setenv("POWERTOOLS_LOGGER_LOG_EVENT", "true")
    logged: list[Any] = []
    monkeypatch.setattr(logger, "info", logged.append)
    keys: list[dict[str, Any]] = []

    @inject_lambda_context(correlation_id_path="id")
    def handler(event: dict[str, Any], context: Any) -> None:
        keys.append(logger.thread_safe_get_current_keys())

    context = LambdaContext("nexttick-worker", 60, "us-east-1")
    # When it runs twice
    handler({"id": "first"}, context)
    monkeypatch.setenv("POWERTOOLS_LOGGER_LOG_EVENT", "0")
    handler({"id": "second"}, context)
    # Then the event is logged only while asked for, and its lines carry Powertools' standard keys
    assert logged == [{"id": "first"}]
    assert keys[0] == {
        "cold_start": True,
        "function_name": "nexttick-worker",
        "function_memory_size": context.memory_limit_in_mb,
        "function_arn": context.invoked_function_arn,
        "function_request_id": context.aws_request_id,
        "correlation_id": "first",
    }
    assert (keys[1]["cold_start"], keys[1]["correlation_id"]) == (False, "second")
    # And they are gone once it returns
    assert logger.thread_safe_get_current_keys() == {}


def test_with_metrics_off_an_invocation_that_adds_none_warns_nothing_and_one_that_adds_keeps_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    metrics.clear_metrics()

    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> None:
        if event.get("add"):
            metrics.add_metric(name="invocations", unit=MetricUnit.Count, value=1)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        handler({}, None)
        handler({"add": True}, None)
    assert metrics.metric_set == {}
    assert capsys.readouterr().out == ""
