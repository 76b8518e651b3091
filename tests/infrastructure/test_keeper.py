"""Template tests for the keeper (liveness that does not depend on the client surviving): the table's
stream, the keeper function and its least-privilege role, its stream trigger (bounded retries,
bisect, maximum record age, on-failure queue, filters), the alarms, and the moto variant (no
trigger, which moto would run on every write)."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from infra import names
from infra.bundling import build_lambda_asset
from infra.synth import PROJECT_ROOT
from nexttick import constants
from nexttick.store import keys
from nexttick.store.streams import reaches_keeper
from tests.infrastructure.conftest import CONFIG, Synthesized, flatten, only, resources_of
from tests.support.aws import streams_client

KEEPER = "nexttick-keeper"
FAILURE_QUEUE = "nexttick-keeper-failures"


def _keeper(t: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return only(t, "AWS::Lambda::Function", FunctionName=KEEPER)


def _trigger(t: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return only(t, "AWS::Lambda::EventSourceMapping", FunctionName={"Ref": _keeper(t)[0]})


def _statements(t: dict[str, Any]) -> list[dict[str, Any]]:
    role_ref = _keeper(t)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        s
        for policy in resources_of(t, "AWS::IAM::Policy").values()
        if {"Ref": role_ref} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    acts = statement["Action"]
    return sorted([acts] if isinstance(acts, str) else acts)


def test_the_table_streams_new_and_old_images(deploy: Synthesized) -> None:
    # Given the deployable template / Then the table has a stream with both images (the keeper
    # tells a moved due time from a payload update)
    (_, table) = only(deploy.template, "AWS::DynamoDB::Table")
    assert table["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}


def test_keeper_function_runs_the_keeper_handler_with_the_runtime_environment(deploy: Synthesized) -> None:
    t = deploy.template
    (_, fn) = _keeper(t)
    p = fn["Properties"]
    assert p["Handler"] == names.KEEPER_HANDLER == "lambdas/keeper/handler.handler"
    assert p["Runtime"] == "python3.12"
    assert (p["Timeout"], p["MemorySize"]) == (30, 256)
    assert p["Environment"]["Variables"] == CONFIG.runtime_environment()
    assert "ReservedConcurrentExecutions" not in p
    group = t["Resources"][p["LoggingConfig"]["LogGroup"]["Ref"]]["Properties"]
    assert group == {"LogGroupName": f"/aws/lambda/{KEEPER}", "RetentionInDays": 30}
    role_id = p["Role"]["Fn::GetAtt"][0]
    assert "ManagedPolicyArns" not in t["Resources"][role_id]["Properties"]
    assert deploy.template["Outputs"]["KeeperFunctionName"]["Value"] == {"Ref": _keeper(t)[0]}


def test_stream_trigger_retries_a_bounded_number_of_times_bisecting_then_reports_to_its_queue(
    deploy: Synthesized,
) -> None:
    t = deploy.template
    keeper_id, _ = _keeper(t)
    table_id, _ = only(t, "AWS::DynamoDB::Table")
    queue_id, _ = only(t, "AWS::SQS::Queue", QueueName=FAILURE_QUEUE)
    (_, mapping) = _trigger(t)
    p = mapping["Properties"]
    assert p["FunctionName"] == {"Ref": keeper_id}
    assert p["EventSourceArn"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    # The stream is created with the trigger: its beginning is the first commit, nothing older.
    assert p["StartingPosition"] == "TRIM_HORIZON"
    assert (p["BatchSize"], p["MaximumBatchingWindowInSeconds"]) == (100, 0)
    assert p["BisectBatchOnFunctionError"] is True
    assert (p["MaximumRetryAttempts"], p["MaximumRecordAgeInSeconds"]) == (5, 3600)
    assert p["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [queue_id, "Arn"]}}}
    assert "FunctionResponseTypes" not in p  # a failed batch is retried whole (idempotent), bisected


def test_stream_trigger_passes_only_task_and_rule_record_inserts_and_modifications(
    deploy: Synthesized,
) -> None:
    (_, mapping) = _trigger(deploy.template)
    patterns = [json.loads(f["Pattern"]) for f in mapping["Properties"]["FilterCriteria"]["Filters"]]
    # (a task's run records share its partition: the sort key tells them from the task)
    assert patterns == [
        {
            "eventName": ["INSERT", "MODIFY"],
            "dynamodb": {"Keys": {"pk": {"S": [{"prefix": "T#"}]}, "sk": {"S": ["T"]}}},
        },
        {
            "eventName": ["INSERT", "MODIFY"],
            "dynamodb": {"Keys": {"pk": {"S": ["RULE"]}, "sk": {"S": ["STATE"]}}},
        },
        {  # a home item (a queue entry carrying its task) without a lease: created, moved on, ended
            "eventName": ["INSERT", "MODIFY"],
            "dynamodb": {
                "Keys": {"pk": {"S": [{"prefix": "Q#"}]}},
                "NewImage": {"action": {"S": [{"exists": True}]}, "lease_owner": {"S": [{"exists": False}]}},
            },
        },
        {  # ... or with a "run now" occurrence
            "eventName": ["INSERT", "MODIFY"],
            "dynamodb": {
                "Keys": {"pk": {"S": [{"prefix": "Q#"}]}},
                "NewImage": {"action": {"S": [{"exists": True}]}, "extra_key": {"S": [{"exists": True}]}},
            },
        },
        {  # a task removed by its TTL whose payload has an item of its own (deleted with it)
            "eventName": ["REMOVE"],
            "dynamodb": {"OldImage": {"payload_ref": {"S": [{"exists": True}]}}},
        },
    ]
    assert (constants.TASK_PK_PREFIX, constants.TASK_SK) == ("T#", "T")
    assert (constants.RULE_STATE_PK, constants.RULE_STATE_SK) == ("RULE", "STATE")


def _matches(pattern: Any, value: Any) -> bool:
    """An event-filter pattern against a record, as Lambda reads the parts used here: nested
    objects, lists of alternatives (plain values, `prefix`, `exists` on a leaf)."""
    if isinstance(pattern, dict):
        return all(
            _matches(inner, value.get(name) if isinstance(value, dict) else None)
            for name, inner in pattern.items()
        )
    for alternative in pattern:
        if isinstance(alternative, dict) and "exists" in alternative:
            if alternative["exists"] == (value is not None):
                return True
        elif isinstance(alternative, dict) and "prefix" in alternative:
            if isinstance(value, str) and value.startswith(alternative["prefix"]):
                return True
        elif value == alternative:
            return True
    return False


def test_the_local_stacks_keeper_sees_what_the_deployed_filters_pass(deploy: Synthesized) -> None:
    # Given the deployed trigger's patterns and the local stack's rule (reaches_keeper)
    (_, mapping) = _trigger(deploy.template)
    patterns = [json.loads(f["Pattern"]) for f in mapping["Properties"]["FilterCriteria"]["Filters"]]
    home_sk = keys.home_sort_key(keys.new_home_id(datetime(2030, 1, 1, tzinfo=UTC)))
    home = {"pk": {"S": "Q#003"}, "sk": {"S": home_sk}}
    task_attrs = {"action": {"S": "log"}, "status": {"S": "pending"}}
    lease = {"lease_owner": {"S": "w1"}, "lease_until": {"N": "1"}}
    t = {"S": "t"}
    cases = [
        ("INSERT", {"pk": {"S": "T#a"}, "sk": {"S": "T"}}, task_attrs),
        ("MODIFY", {"pk": {"S": "T#a"}, "sk": {"S": "R#0001"}}, {"seq": {"N": "1"}}),
        ("REMOVE", {"pk": {"S": "T#a"}, "sk": {"S": "T"}}, None),
        ("MODIFY", {"pk": {"S": "RULE"}, "sk": {"S": "STATE"}}, {"version": {"N": "2"}}),
        ("INSERT", home, {**task_attrs, "token": t}),
        ("MODIFY", home, {**task_attrs, **lease}),  # a claim
        ("MODIFY", home, {**task_attrs, **lease, "extra_key": {"S": "k"}}),  # "run now" while leased
        ("MODIFY", home, task_attrs),  # moved on
        (
            "INSERT",
            {"pk": {"S": "Q#003"}, "sk": {"S": "2030-01-01T00:00:00.000000Z#a#t"}},
            {"token": {"S": "t"}},
        ),
        ("REMOVE", home, None),
        ("REMOVE", home, {**task_attrs, "payload_ref": {"S": "r"}}),
        ("REMOVE", {"pk": {"S": "T#a"}, "sk": {"S": "T"}}, {**task_attrs, "payload_ref": {"S": "r"}}),
        ("REMOVE", {"pk": {"S": "T#a"}, "sk": {"S": "T"}}, task_attrs),
    ]
    seen = []
    for event, item_keys, new_image in cases:
        change: dict[str, Any] = {"Keys": item_keys}
        if new_image is not None:  # a removal's image is the old one
            change["OldImage" if event == "REMOVE" else "NewImage"] = {**item_keys, **new_image}
        record = {"eventName": event, "dynamodb": change}
        deployed = any(_matches(p, record) for p in patterns)
        # Then both pass the same records
        assert deployed == reaches_keeper(record), (event, item_keys, new_image)
        seen.append(deployed)
    assert seen == [True, False, False, True, True, False, True, True, False, False, True, True, False]


def test_keeper_role_is_least_privilege(deploy: Synthesized) -> None:
    # Given the keeper's role / Then it may read and update the rule record only, read queue items'
    # tokens, read the stream, set the one rule, invoke the worker, report to its queue, and log —
    # nothing else (tracing is off)
    t = deploy.template
    table_id, _ = only(t, "AWS::DynamoDB::Table")
    queue_id, _ = only(t, "AWS::SQS::Queue", QueueName=FAILURE_QUEUE)
    by_actions = {tuple(_actions(s)): s for s in _statements(t)}
    assert set(by_actions) == {
        ("logs:CreateLogStream", "logs:PutLogEvents"),
        ("dynamodb:GetItem", "dynamodb:UpdateItem"),
        ("dynamodb:GetItem",),
        ("dynamodb:DeleteItem",),
        (
            "dynamodb:DescribeStream",
            "dynamodb:GetRecords",
            "dynamodb:GetShardIterator",
            "dynamodb:ListStreams",
        ),
        ("events:DescribeRule", "events:PutRule"),
        ("lambda:InvokeFunction",),
        ("sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"),
    }
    record = by_actions[("dynamodb:GetItem", "dynamodb:UpdateItem")]
    assert record["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
    assert record["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["RULE"]}}
    entries = by_actions[("dynamodb:GetItem",)]  # whether an entry already ran: its token, nothing else
    assert entries["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
    assert entries["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["Q#*"]},
        "ForAllValues:StringEquals": {"dynamodb:Attributes": ["pk", "sk", "token"]},
        "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"},
    }
    payloads = by_actions[("dynamodb:DeleteItem",)]  # a removed task's payload item, in its partition
    assert payloads["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
    assert payloads["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["T#*"]}}
    stream = by_actions[tuple(sorted(names.STREAM_ACTIONS))]
    assert stream["Resource"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
    assert flatten(by_actions[("events:DescribeRule", "events:PutRule")]["Resource"]).endswith(
        f":rule/{constants.DEFAULT_RULE_NAME}"
    )
    assert flatten(by_actions[("lambda:InvokeFunction",)]["Resource"]).endswith(
        f":function:{constants.DEFAULT_WORKER_FUNCTION_NAME}"
    )
    sqs = by_actions[("sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage")]
    assert sqs["Resource"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    for s in _statements(t):
        assert s["Effect"] == "Allow"
        assert s["Resource"] != "*" or s["Action"] == ["xray:PutTelemetryRecords", "xray:PutTraceSegments"]


def test_failure_queue_is_encrypted_kept_14_days_and_alarmed_with_the_keepers_lag(
    deploy: Synthesized,
) -> None:
    t = deploy.template
    queue_id, queue = only(t, "AWS::SQS::Queue", QueueName=FAILURE_QUEUE)
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 86400
    (_, policy) = only(t, "AWS::SQS::QueuePolicy", Queues=[{"Ref": queue_id}])
    assert '"aws:SecureTransport": "false"' in json.dumps(policy, sort_keys=True)
    keeper_id, _ = _keeper(t)
    alarms = {
        k: a["Properties"] for k, a in resources_of(t, "AWS::CloudWatch::Alarm").items() if "Keeper" in k
    }
    (failures,) = [a for k, a in alarms.items() if "Failures" in k]
    assert failures["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert failures["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}]
    assert (failures["Threshold"], failures["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    (lag,) = [a for k, a in alarms.items() if "IteratorAge" in k]
    assert (lag["MetricName"], lag["Namespace"], lag["Statistic"]) == ("IteratorAge", "AWS/Lambda", "Maximum")
    assert lag["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": keeper_id}}]
    assert lag["Threshold"] == 60_000
    topic_id, _ = only(t, "AWS::SNS::Topic")
    assert failures["AlarmActions"] == lag["AlarmActions"] == [{"Ref": topic_id}]


def test_keeper_handler_is_in_the_asset(deploy: Synthesized) -> None:
    asset = build_lambda_asset(PROJECT_ROOT, CONFIG.architecture)
    module, _, function = names.KEEPER_HANDLER.rpartition(".")
    assert f"def {function}(" in (asset.path / f"{module}.py").read_text()


def test_local_variant_has_the_stream_and_keeper_but_no_trigger(local_template: dict[str, Any]) -> None:
    # Given the moto variant / Then it keeps the stream and the keeper function, and leaves out the
    # trigger: moto would invoke the placeholder code on every write (the local stack feeds the stream)
    (_, table) = only(local_template, "AWS::DynamoDB::Table")
    assert table["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    _keeper(local_template)
    assert resources_of(local_template, "AWS::Lambda::EventSourceMapping") == {}


@pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning")
def test_moto_creates_the_local_variant_with_a_readable_stream(
    aws: None, local_template: dict[str, Any]
) -> None:
    # Given the local template created on moto's CloudFormation
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cloudformation.create_stack(
            StackName="NextTick", TemplateBody=json.dumps(local_template), Capabilities=["CAPABILITY_IAM"]
        )
    (stack,) = cloudformation.describe_stacks(StackName="NextTick")["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    assert outputs["KeeperFunctionName"] == KEEPER
    # Then the table streams both images and the keeper's stream can be read
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    described = dynamodb.describe_table(TableName=outputs["TableName"])["Table"]
    assert described["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    streams = streams_client()
    shards = streams.describe_stream(StreamArn=described["LatestStreamArn"])["StreamDescription"]["Shards"]
    assert len(shards) == 1
    assert (
        boto3.client("lambda", region_name="us-east-1").list_event_source_mappings()["EventSourceMappings"]
        == []
    )
