"""The handlers' tracer: X-Ray only in Lambda with tracing on; otherwise the X-Ray SDK is never
imported (it builds an X-Ray client at import: cold-start time, and a failure when AWS_PROFILE names
a missing profile). Each case is a fresh interpreter, as a cold start is."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.aws import FAKE_AWS_ENV

HANDLERS = ("lambdas.worker.handler", "lambdas.api.handler", "lambdas.keeper.handler")
_PROBE = (
    "import json, sys; __import__(sys.argv[1]); from nexttick.observability import tracer; "
    "print(json.dumps({'xray': 'aws_xray_sdk.core' in sys.modules, 'disabled': tracer.disabled, "
    "'provider': type(tracer.provider).__module__}))"
)


def _cold_import(handler: str, **environment: str) -> dict[str, object]:
    env = {
        "PATH": os.environ["PATH"],
        "AWS_REGION": "us-east-1",
        **FAKE_AWS_ENV,
        "NEXTTICK_TABLE": "t",
        "NEXTTICK_RULE": "r",
        "NEXTTICK_WORKER_FUNCTION": "w",
        **environment,
    }
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, handler], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("handler", HANDLERS)
def test_with_tracing_off_no_handler_imports_the_xray_sdk(handler: str) -> None:
    # Given a function deployed with tracing off, under a profile this machine lacks
    probe = _cold_import(
        handler, LAMBDA_TASK_ROOT="/var/task", POWERTOOLS_TRACE_DISABLED="true", AWS_PROFILE="absent"
    )
    # Then its cold start does without the X-Ray SDK, and the tracer records nothing
    assert probe == {"xray": False, "disabled": True, "provider": "nexttick.observability"}


def test_outside_lambda_nothing_is_traced_whatever_the_setting() -> None:
    probe = _cold_import(HANDLERS[0], POWERTOOLS_TRACE_DISABLED="false")
    assert probe["xray"] is False and probe["disabled"] is True


def test_with_tracing_on_in_lambda_the_tracer_records_to_xray() -> None:
    # Given a function deployed with tracing on
    probe = _cold_import(HANDLERS[0], LAMBDA_TASK_ROOT="/var/task", POWERTOOLS_TRACE_DISABLED="false")
    # Then Powertools' tracer records through the X-Ray SDK
    assert probe["xray"] is True and probe["disabled"] is False
    assert str(probe["provider"]).startswith("aws_xray_sdk")
