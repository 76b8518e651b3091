"""Template tests for the wait hand-over: the queue the woken worker sends its one delayed message
to (encrypted, TLS only, a visibility timeout Lambda accepts, a dead-letter queue), the trigger that
invokes the worker with it, the worker's variable and grants (it alone may use the queue), the
dead-letter alarm, cdk-nag with no acknowledgement, and the moto variant (queue and variable, no
trigger)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import boto3
import pytest

from infra import names
from tests.infrastructure.conftest import CONFIG, Synthesized, flatten, only, resources_of

NAMES = CONFIG.resource_names
QUEUE = NAMES.handover_queue
DLQ = NAMES.handover_dead_letter_queue


def _queue(t: dict[str, Any], name: str = QUEUE) -> tuple[str, dict[str, Any]]:
    return only(t, "AWS::SQS::Queue", QueueName=name)


def _function(t: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    return only(t, "AWS::Lambda::Function", FunctionName=name)


def _statements_by_role(t: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every policy statement, by the logical id of the role it is attached to."""
    by_role: dict[str, list[dict[str, Any]]] = {}
    for policy in resources_of(t, "AWS::IAM::Policy").values():
        for role in policy["Properties"]["Roles"]:
            by_role.setdefault(role["Ref"], []).extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return by_role


def _grants_on(statements: list[dict[str, Any]], arn: dict[str, Any]) -> set[str]:
    """The actions `statements` allow on the resource `arn`."""
    granted: set[str] = set()
    for s in statements:
        resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        if arn in resources:
            assert s["Effect"] == "Allow" and "Condition" not in s
            granted |= {s["Action"]} if isinstance(s["Action"], str) else set(s["Action"])
    return granted


def test_queue_is_encrypted_tls_only_visible_again_after_the_worker_timeout_with_a_dead_letter_queue(
    deploy: Synthesized,
) -> None:
    t = deploy.template
    queue_id, queue = _queue(t)
    dlq_id, dlq = _queue(t, DLQ)
    (_, worker) = _function(t, NAMES.worker_function)
    p = queue["Properties"]
    assert p["SqsManagedSseEnabled"] is True
    # Lambda refuses a trigger on a queue whose visibility timeout is below the function's timeout
    assert p["VisibilityTimeout"] >= worker["Properties"]["Timeout"] == CONFIG.worker_timeout_seconds
    assert "DelaySeconds" not in p  # each message carries its own delay
    assert p["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": 3,
    }
    # A message lives its longest delay (15 min) plus a visibility timeout per receive: it reaches
    # the dead-letter queue before it could expire
    assert p["MessageRetentionPeriod"] >= 900 + 3 * p["VisibilityTimeout"]
    assert p["MessageRetentionPeriod"] <= 6 * 3600
    assert dlq["Properties"]["SqsManagedSseEnabled"] is True
    assert dlq["Properties"]["MessageRetentionPeriod"] == 14 * 86400
    assert "RedrivePolicy" not in dlq["Properties"]
    for each in (queue_id, dlq_id):
        (_, policy) = only(t, "AWS::SQS::QueuePolicy", Queues=[{"Ref": each}])
        (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
        assert (deny["Effect"], deny["Action"], deny["Principal"]) == ("Deny", "sqs:*", {"AWS": "*"})
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        assert deny["Resource"] == {"Fn::GetAtt": [each, "Arn"]}


def test_trigger_invokes_the_worker_with_one_message_at_a_time_once_it_may_consume(
    deploy: Synthesized,
) -> None:
    t = deploy.template
    queue_id, _ = _queue(t)
    worker_id, worker = _function(t, NAMES.worker_function)
    (_, mapping) = only(
        t, "AWS::Lambda::EventSourceMapping", EventSourceArn={"Fn::GetAtt": [queue_id, "Arn"]}
    )
    p = mapping["Properties"]
    assert p["FunctionName"] == {"Ref": worker_id}
    assert (p["BatchSize"], p["MaximumBatchingWindowInSeconds"]) == (1, 0)
    assert set(p) == {"EventSourceArn", "FunctionName", "BatchSize", "MaximumBatchingWindowInSeconds"}
    # Lambda checks the role when the trigger is created: the worker (which the trigger references)
    # is created after the policy letting it receive and delete the queue's messages
    role_id = worker["Properties"]["Role"]["Fn::GetAtt"][0]
    (policy_id,) = [
        k
        for k, v in resources_of(t, "AWS::IAM::Policy").items()
        if {"Ref": role_id} in v["Properties"]["Roles"]
    ]
    assert policy_id in worker["DependsOn"]
    statements = resources_of(t, "AWS::IAM::Policy")[policy_id]["Properties"]["PolicyDocument"]["Statement"]
    assert set(names.HANDOVER_CONSUME_ACTIONS) <= _grants_on(statements, {"Fn::GetAtt": [queue_id, "Arn"]})


def test_worker_alone_names_the_queue_and_may_send_to_it(deploy: Synthesized) -> None:
    t = deploy.template
    queue_id, _ = _queue(t)
    dlq_id, _ = _queue(t, DLQ)
    by_role = _statements_by_role(t)
    for name in (NAMES.worker_function, NAMES.api_function, NAMES.keeper_function):
        (_, fn) = _function(t, name)
        env = fn["Properties"]["Environment"]["Variables"]
        statements = by_role[fn["Properties"]["Role"]["Fn::GetAtt"][0]]
        on_queue = _grants_on(statements, {"Fn::GetAtt": [queue_id, "Arn"]})
        if name == NAMES.worker_function:
            # Then the worker reads the queue's URL from its variable, sends to it, and its trigger consumes
            assert env[names.HANDOVER_QUEUE_URL_ENV] == {"Ref": queue_id}
            assert on_queue == {
                "sqs:SendMessage",
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:GetQueueAttributes",
            }
        else:
            assert names.HANDOVER_QUEUE_URL_ENV not in env
            assert on_queue == set()
        # (SQS itself moves a message to the dead-letter queue: no role is granted anything on it)
        assert _grants_on(statements, {"Fn::GetAtt": [dlq_id, "Arn"]}) == set()
    assert names.HANDOVER_QUEUE_URL_ENV == "NEXTTICK_HANDOVER_QUEUE_URL"


def test_dead_letters_are_alarmed_and_graphed(deploy: Synthesized) -> None:
    t = deploy.template
    dlq_id, _ = _queue(t, DLQ)
    queue_name = {"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}
    (alarm,) = [
        a["Properties"]
        for a in resources_of(t, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Dimensions") == [queue_name]
    ]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
        "Maximum",
        0,
        "GreaterThanThreshold",
    )
    assert alarm["TreatMissingData"] == "notBreaching"
    topic_id, _ = only(t, "AWS::SNS::Topic")
    assert alarm["AlarmActions"] == [{"Ref": topic_id}]
    (_, dashboard) = only(t, "AWS::CloudWatch::Dashboard")
    assert "${" + dlq_id + ".QueueName}" in flatten(dashboard["Properties"]["DashboardBody"])


def test_cdk_nag_passes_the_handover_without_an_acknowledgement(deploy: Synthesized) -> None:
    # Given the deployable stack (its synth raises on any unacknowledged finding)
    report = json.loads((Path(deploy.outdir) / "validation-report.json").read_text())
    (nag,) = [r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    # Then nothing of the hand-over needed a reason to pass
    paths = [c["constructPath"] for v in nag["suppressedViolations"] for c in v["violatingConstructs"]]
    assert paths
    assert [p for p in paths if p.startswith(f"{CONFIG.stack_name}/Handover/")] == []


def test_local_variant_keeps_the_queue_and_the_variable_but_no_trigger(
    local_template: dict[str, Any],
) -> None:
    # Given the moto variant / Then the worker still names the queue (for the local stack to feed
    # to the worker), and nothing consumes it: no trigger, and no grant for one
    t = local_template
    queue_id, _ = _queue(t)
    _queue(t, DLQ)
    (_, worker) = _function(t, NAMES.worker_function)
    assert worker["Properties"]["Environment"]["Variables"][names.HANDOVER_QUEUE_URL_ENV] == {"Ref": queue_id}
    assert resources_of(t, "AWS::Lambda::EventSourceMapping") == {}
    statements = _statements_by_role(t)[worker["Properties"]["Role"]["Fn::GetAtt"][0]]
    assert _grants_on(statements, {"Fn::GetAtt": [queue_id, "Arn"]}) == {"sqs:SendMessage"}


@pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning")
def test_moto_creates_the_queue_the_worker_names(aws: None, local_template: dict[str, Any]) -> None:
    # Given the local template created on moto's CloudFormation
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cloudformation.create_stack(
            StackName="NextTick", TemplateBody=json.dumps(local_template), Capabilities=["CAPABILITY_IAM"]
        )
    # Then the worker's variable is the created queue's URL, whose messages go to the dead-letter
    # queue after three receives
    env = boto3.client("lambda", region_name="us-east-1").get_function_configuration(
        FunctionName=NAMES.worker_function
    )["Environment"]["Variables"]
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = env[names.HANDOVER_QUEUE_URL_ENV]
    assert url == sqs.get_queue_url(QueueName=QUEUE)["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    dlq_url = sqs.get_queue_url(QueueName=DLQ)["QueueUrl"]
    dlq = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]
    dlq_arn = dlq["QueueArn"]
    assert json.loads(attributes["RedrivePolicy"]) == {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3}
    assert int(attributes["VisibilityTimeout"]) == CONFIG.worker_timeout_seconds
