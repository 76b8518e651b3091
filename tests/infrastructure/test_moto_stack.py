"""The local template on moto's CloudFormation: the stack it creates, one task end to end through
the real handlers against those resources, and a redeploy that cannot lose a pending schedule
(invariant I6, docs/reliability.md)."""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from local.lambdas import LambdaContext
from nexttick import constants
from nexttick.aws import parse_rule_minute
from nexttick.config import NextTickSettings
from nexttick.runtime import timing_from
from tests.infrastructure.conftest import CONFIG, only

STACK = "NextTick"
# moto skips the resource types it cannot create (alarms, stage, ...) with this warning.
pytestmark = pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning")


def _create_stack(template: dict[str, Any]) -> dict[str, str]:
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    with warnings.catch_warnings():
        # moto skips the resource types it cannot create (alarms, stage, ...) with a warning.
        warnings.simplefilter("ignore", UserWarning)
        cloudformation.create_stack(
            StackName=STACK, TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_IAM"]
        )
    (stack,) = cloudformation.describe_stacks(StackName=STACK)["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}


def _update_stack(template: dict[str, Any]) -> None:
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cloudformation.update_stack(
            StackName=STACK, TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_IAM"]
        )
    (stack,) = cloudformation.describe_stacks(StackName=STACK)["Stacks"]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"


@pytest.fixture
def outputs(aws: None, local_template: dict[str, Any]) -> dict[str, str]:
    return _create_stack(local_template)


@pytest.fixture
def function_env(outputs: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The environment CloudFormation gave the worker, applied to this process (as Lambda would)."""
    client = boto3.client("lambda", region_name="us-east-1")
    env: dict[str, str] = client.get_function_configuration(FunctionName=outputs["WorkerFunctionName"])[
        "Environment"
    ]["Variables"]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    from nexttick.config import get_settings

    get_settings.cache_clear()
    yield env
    get_settings.cache_clear()


def _rule_minute(name: str) -> datetime | str | None:
    events = boto3.client("events", region_name="us-east-1")
    return parse_rule_minute(events.describe_rule(Name=name)["ScheduleExpression"])


def test_moto_cloudformation_creates_the_stack_from_the_local_template(outputs: dict[str, str]) -> None:
    # Given the local template created on moto's CloudFormation
    # Then the outputs name the resources, and they exist with the data model's shape
    assert (outputs["TableName"], outputs["RuleName"], outputs["WorkerFunctionName"]) == (
        constants.DEFAULT_TABLE_NAME,
        constants.DEFAULT_RULE_NAME,
        constants.DEFAULT_WORKER_FUNCTION_NAME,
    )
    table = boto3.client("dynamodb", region_name="us-east-1").describe_table(TableName=outputs["TableName"])
    assert table["Table"]["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    events = boto3.client("events", region_name="us-east-1")
    rule = events.describe_rule(Name=outputs["RuleName"])
    assert rule["ScheduleExpression"] == constants.EPOCH_EXPRESSION
    lambda_client = boto3.client("lambda", region_name="us-east-1")
    worker_arn = lambda_client.get_function(FunctionName=outputs["WorkerFunctionName"])["Configuration"][
        "FunctionArn"
    ]
    targets = events.list_targets_by_rule(Rule=outputs["RuleName"])["Targets"]
    assert [t["Arn"] for t in targets] == [worker_arn]
    api = lambda_client.get_function_configuration(FunctionName=constants.DEFAULT_API_FUNCTION_NAME)
    assert api["Timeout"] == 29
    assert api["Environment"]["Variables"] == CONFIG.runtime_environment()
    assert boto3.client("sqs", region_name="us-east-1").get_queue_url(QueueName="nexttick-worker-dlq")
    apis = boto3.client("apigateway", region_name="us-east-1").get_rest_apis()["items"]
    assert [a["name"] for a in apis] == ["nexttick-api"]


def _api_event(method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """An API Gateway REST proxy event as the `{proxy+}` method delivers it (IAM-authorised caller)."""
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": {
            "Content-Type": "application/json",
            "Host": "example.execute-api.us-east-1.amazonaws.com",
        },
        "multiValueHeaders": {"Content-Type": ["application/json"]},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": f"/v1{path}",
            "stage": "v1",
            "requestId": uuid.uuid4().hex,
            "accountId": "123456789012",
            "identity": {"sourceIp": "127.0.0.1", "userArn": "arn:aws:iam::123456789012:user/tester"},
        },
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }


def test_one_task_runs_end_to_end_through_the_handlers_on_the_created_stack(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from editor import Editor
    from lambdas.api import handler as api_handler
    from lambdas.api.app import build_app
    from lambdas.worker import handler as worker_handler

    # Given the handlers configured by the stack's environment (fresh per test, as a new container)
    monkeypatch.setattr(api_handler, "app", build_app(Editor.from_env))
    monkeypatch.setattr(worker_handler, "_deps", None)
    # When a client creates a task due now through the API
    created = api_handler.handler(
        _api_event("POST", "/tasks", {"action": "log", "delay_seconds": 0, "payload": {"hello": "moto"}}),
        LambdaContext(constants.DEFAULT_API_FUNCTION_NAME, 29),
    )
    assert created["statusCode"] == 201, created
    task_id = json.loads(created["body"])["id"]
    # ... and the rule fires the worker (a scheduled event)
    result = worker_handler.handler(
        {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}},
        LambdaContext(constants.DEFAULT_WORKER_FUNCTION_NAME, CONFIG.worker_timeout_seconds),
    )
    # Then the task has run and succeeded, and the rule is back at the epoch (nothing pending)
    shown = api_handler.handler(
        _api_event("GET", f"/tasks/{task_id}"), LambdaContext(constants.DEFAULT_API_FUNCTION_NAME, 60)
    )
    assert shown["statusCode"] == 200, shown
    task = json.loads(shown["body"])
    assert task["status"] == "succeeded", (task, result)
    assert task["runs"] == 1
    assert _rule_minute(function_env["NEXTTICK_RULE"]) is None


def _sync_after_deploy(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the post-deploy custom resource does: invoke the worker with the sync event."""
    from lambdas.worker import handler as worker_handler

    monkeypatch.setattr(worker_handler, "_deps", None)
    worker_handler.handler(
        {"source": constants.WORKER_EVENT_SOURCE, "action": constants.WORKER_EVENT_SYNC, "deploy": "2"},
        LambdaContext(constants.DEFAULT_WORKER_FUNCTION_NAME, 60),
    )


def _schedule_in_an_hour() -> datetime:
    from editor import Editor

    due = (datetime.now(UTC) + timedelta(hours=1)).replace(second=30, microsecond=0)
    Editor.from_env().schedule_at("log", due.isoformat(), {"n": 1})
    return due


def test_a_redeploy_that_resets_the_rule_is_repaired_by_the_post_deploy_sync(
    function_env: dict[str, str], local_template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    rule_name = function_env["NEXTTICK_RULE"]
    # Given a task pending in an hour: the rule is armed for it (a minute early in `second` mode)
    due = _schedule_in_an_hour()
    armed = _rule_minute(rule_name)
    assert armed == timing_from(NextTickSettings()).fire_minute(due)
    # When a deploy changes the rule resource, CloudFormation re-applies the epoch expression
    changed = json.loads(json.dumps(local_template))
    _, rule = only(changed, "AWS::Events::Rule")
    rule["Properties"]["Description"] += " (changed)"
    _update_stack(changed)
    assert _rule_minute(rule_name) is None  # the reset a deploy must repair
    # ... and then the post-deploy step runs
    _sync_after_deploy(monkeypatch)
    # Then the rule points at the pending task again
    assert _rule_minute(rule_name) == armed


def test_a_redeploy_that_does_not_change_the_rule_leaves_it_armed(
    function_env: dict[str, str], local_template: dict[str, Any]
) -> None:
    rule_name = function_env["NEXTTICK_RULE"]
    # Given a pending task and the armed rule
    _schedule_in_an_hour()
    armed = _rule_minute(rule_name)
    assert isinstance(armed, datetime)
    # When a deploy changes other resources (moto 5.2.5 cannot update an inline-code function
    # through CloudFormation, so the dashboard stands in for a code/config change)
    changed = json.loads(json.dumps(local_template))
    _, dashboard = only(changed, "AWS::CloudWatch::Dashboard")
    dashboard["Properties"]["DashboardName"] = "nexttick-scheduler-2"
    _update_stack(changed)
    # Then CloudFormation did not touch the rule: still armed, without any sync
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    dashboards = [d["DashboardName"] for d in cloudwatch.list_dashboards()["DashboardEntries"]]
    assert "nexttick-scheduler-2" in dashboards  # the update did happen
    assert _rule_minute(rule_name) == armed
