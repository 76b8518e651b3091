"""The local Lambda: Invoke API over loopback (Event -> queued, RequestResponse -> result), a
Lambda-like context, and Lambda's retry of failed asynchronous invocations."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from local.lambdas import LambdaContext
from nexttick.aws import LambdaWorkerTrigger
from tests.support.local import local_worker


def lambda_client(url: str) -> Any:
    return boto3.session.Session(region_name="us-east-1").client("lambda", endpoint_url=url)


def test_event_invocation_is_accepted_at_once_and_runs_with_a_lambda_context(aws_credentials: None) -> None:
    with local_worker() as (endpoint, _, recorder):
        # When a client invokes asynchronously
        response = lambda_client(endpoint.url).invoke(
            FunctionName="nexttick-worker", InvocationType="Event", Payload=b'{"x": 1}'
        )
        # Then Lambda's 202 comes back and the handler runs with the event and its remaining time
        assert response["StatusCode"] == 202
        assert recorder.wait_for(1)
        event, remaining_ms = recorder.calls[0]
        assert event == {"x": 1}
        assert 299_000 < remaining_ms <= 300_000


def test_request_response_returns_the_result_or_the_function_error(aws_credentials: None) -> None:
    with local_worker(fail_times=1) as (endpoint, _, _):
        client = lambda_client(endpoint.url)
        failed = client.invoke(FunctionName="nexttick-worker", Payload=b"{}")
        assert failed["FunctionError"] == "Unhandled"
        assert json.loads(failed["Payload"].read())["errorMessage"] == "boom"
        ok = client.invoke(FunctionName="nexttick-worker", Payload=b'{"y": 2}')
        assert ok["StatusCode"] == 200 and "FunctionError" not in ok
        assert json.loads(ok["Payload"].read()) == {"ok": True, "echo": {"y": 2}}


def test_unknown_function_is_resource_not_found(aws_credentials: None) -> None:
    with local_worker() as (endpoint, _, _):
        with pytest.raises(ClientError) as caught:
            lambda_client(endpoint.url).invoke(FunctionName="other", InvocationType="Event", Payload=b"{}")
        assert caught.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_failed_async_invocation_is_retried_twice_then_dropped(aws_credentials: None) -> None:
    # Given a handler that always fails
    with local_worker(fail_times=99) as (endpoint, function, recorder):
        lambda_client(endpoint.url).invoke(
            FunctionName="arn:aws:lambda:us-east-1:123456789012:function:nexttick-worker",
            InvocationType="Event",
            Payload=b'{"n": 1}',
        )
        # Then it runs three times in all (Lambda's two retries) with the same event, and no more
        assert recorder.wait_for(3)
        assert function.wait_idle(2.0)
        assert not recorder.wait_for(4, timeout=0.3)
        assert [event for event, _ in recorder.calls] == [{"n": 1}] * 3


def test_nexttick_worker_trigger_reaches_the_local_worker(aws_credentials: None) -> None:
    # Given nexttick's own trigger adapter with a lambda client pointed at the local endpoint
    with local_worker() as (endpoint, _, recorder):
        LambdaWorkerTrigger(lambda_client(endpoint.url), "nexttick-worker").wake("due too soon to arm")
        assert recorder.wait_for(1)
        assert recorder.calls[0][0] == {
            "source": "nexttick",
            "action": "wake",
            "reason": "due too soon to arm",
        }


def test_context_counts_down_from_the_timeout() -> None:
    context = LambdaContext("nexttick-worker", 0.5, "us-east-1")
    assert 0 < context.get_remaining_time_in_millis() <= 500
    assert context.invoked_function_arn == "arn:aws:lambda:us-east-1:123456789012:function:nexttick-worker"
    time.sleep(0.6)
    assert context.get_remaining_time_in_millis() == 0
