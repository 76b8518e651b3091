"""Template tests: the properties the design depends on."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk.assertions import Match, Template

from infra import names
from nexttick import constants
from tests.infrastructure.conftest import (
    CONFIG,
    Synthesized,
    flatten,
    only,
    policy_statements,
    rendered,
    resources_of,
)

WORKER = constants.DEFAULT_WORKER_FUNCTION_NAME
API = constants.DEFAULT_API_FUNCTION_NAME
HANDOVER_QUEUE = CONFIG.resource_names.handover_queue


def _function(t: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    return only(t, "AWS::Lambda::Function", FunctionName=name)


def _role_statements(t: dict[str, Any], function_name: str) -> list[dict[str, Any]]:
    """All statements of the policies attached to a function's role."""
    role_ref = _function(t, function_name)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = []
    for policy in resources_of(t, "AWS::IAM::Policy").values():
        if {"Ref": role_ref} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _actions(statement: dict[str, Any]) -> list[str]:
    acts = statement["Action"]
    return [acts] if isinstance(acts, str) else list(acts)


def _statement_for(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    return [s for s in statements if action in _actions(s)]


# ---------------------------------------------------------------- task store
def test_table_has_the_data_model_keys_ttl_pitr_and_is_protected(
    template: Template, deploy: Synthesized
) -> None:
    # Given the synthesized stack / When we look at the table / Then it matches the data model
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "TableName": constants.DEFAULT_TABLE_NAME,
                "KeySchema": [
                    {"AttributeName": constants.PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": constants.SORT_KEY, "KeyType": "RANGE"},
                ],
                "AttributeDefinitions": [
                    {"AttributeName": constants.PARTITION_KEY, "AttributeType": "S"},
                    {"AttributeName": constants.SORT_KEY, "AttributeType": "S"},
                ],
                "BillingMode": "PAY_PER_REQUEST",
                "TimeToLiveSpecification": {"AttributeName": constants.TTL_ATTRIBUTE, "Enabled": True},
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "DeletionProtectionEnabled": True,
                "SSESpecification": {"SSEEnabled": True},
            },
        },
    )
    (_, table) = only(deploy.template, "AWS::DynamoDB::Table")
    assert "GlobalSecondaryIndexes" not in table["Properties"]
    assert "LocalSecondaryIndexes" not in table["Properties"]


# ---------------------------------------------------------------- rule + worker
def test_exactly_one_rule_created_at_the_epoch_targeting_the_worker(deploy: Synthesized) -> None:
    t = deploy.template
    (_, rule) = only(t, "AWS::Events::Rule")
    worker_id, _ = _function(t, WORKER)
    props = rule["Properties"]
    assert props["Name"] == constants.DEFAULT_RULE_NAME
    assert props["ScheduleExpression"] == constants.EPOCH_EXPRESSION
    assert props["State"] == "ENABLED"
    assert [target["Arn"] for target in props["Targets"]] == [{"Fn::GetAtt": [worker_id, "Arn"]}]
    (_, permission) = only(t, "AWS::Lambda::Permission", Principal="events.amazonaws.com")
    assert permission["Properties"]["FunctionName"] == {"Fn::GetAtt": [worker_id, "Arn"]}


def test_worker_timeout_memory_concurrency_and_environment(deploy: Synthesized) -> None:
    (_, worker) = _function(deploy.template, WORKER)
    p = worker["Properties"]
    assert p["Handler"] == names.WORKER_HANDLER
    assert p["Runtime"] == "python3.12"
    assert p["Architectures"] == ["arm64"]
    assert p["Timeout"] == 300  # second mode waits up to ~2.5 min for the due instant
    assert p["MemorySize"] == 512
    assert p["ReservedConcurrentExecutions"] == 10
    env = p["Environment"]["Variables"]
    handover_id, _ = only(deploy.template, "AWS::SQS::Queue", QueueName=HANDOVER_QUEUE)
    # (the hand-over queue's URL is the worker's alone: test_handover.py)
    assert env == {**CONFIG.runtime_environment(), names.HANDOVER_QUEUE_URL_ENV: {"Ref": handover_id}}
    assert env["NEXTTICK_TABLE"] == constants.DEFAULT_TABLE_NAME
    assert env["NEXTTICK_RULE"] == constants.DEFAULT_RULE_NAME
    assert env["NEXTTICK_WORKER_FUNCTION"] == WORKER
    assert env["NEXTTICK_PRECISION"] == "second"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "nexttick"
    assert '"queue":{"queue_url"' in env["NEXTTICK_ACTIONS_CONFIG"]
    assert env["NEXTTICK_WEBHOOK_ALLOWLIST"] == "https://hooks.example.com/"


def test_worker_async_failures_go_to_an_encrypted_dead_letter_queue_after_two_retries(
    deploy: Synthesized,
) -> None:
    t = deploy.template
    dlq_id, dlq = only(t, "AWS::SQS::Queue", QueueName="nexttick-worker-dlq")
    assert dlq["Properties"]["SqsManagedSseEnabled"] is True
    assert dlq["Properties"]["MessageRetentionPeriod"] == 14 * 86400
    (_, invoke_config) = only(t, "AWS::Lambda::EventInvokeConfig")
    p = invoke_config["Properties"]
    assert p["FunctionName"] == {"Ref": _function(t, WORKER)[0]}
    assert p["MaximumRetryAttempts"] == 2
    assert p["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [dlq_id, "Arn"]}
    (_, queue_policy) = only(t, "AWS::SQS::QueuePolicy", Queues=[{"Ref": dlq_id}])
    assert '"aws:SecureTransport": "false"' in rendered(queue_policy)


def test_api_function_has_29s_timeout_and_the_same_runtime_environment(deploy: Synthesized) -> None:
    (_, api) = _function(deploy.template, API)
    p = api["Properties"]
    assert p["Handler"] == names.API_HANDLER
    assert p["Timeout"] == 29
    assert p["Environment"]["Variables"] == CONFIG.runtime_environment()
    assert "ReservedConcurrentExecutions" not in p


def test_both_functions_log_to_their_own_group_with_retention(deploy: Synthesized) -> None:
    t = deploy.template
    for name in (WORKER, API):
        (_, fn) = _function(t, name)
        group_id = fn["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        group = t["Resources"][group_id]["Properties"]
        assert group == {"LogGroupName": f"/aws/lambda/{name}", "RetentionInDays": 30}


# ---------------------------------------------------------------- IAM
def test_no_role_has_a_wildcard_action_resource_or_scan(deploy: Synthesized) -> None:
    statements = policy_statements(deploy.template)
    assert statements
    for s in statements:
        assert all("*" not in a for a in _actions(s)), s
        assert "dynamodb:Scan" not in _actions(s)
        assert s.get("Resource") != "*", s


def test_function_roles_have_no_managed_policies(deploy: Synthesized) -> None:
    t = deploy.template
    for name in (WORKER, API):
        role_id = _function(t, name)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
        assert "ManagedPolicyArns" not in t["Resources"][role_id]["Properties"]


def test_both_roles_get_exactly_the_table_rule_and_worker_permissions(deploy: Synthesized) -> None:
    t = deploy.template
    table_id, _ = only(t, "AWS::DynamoDB::Table")
    for name in (WORKER, API):
        statements = _role_statements(t, name)
        (table,) = _statement_for(statements, "dynamodb:GetItem")
        assert sorted(_actions(table)) == sorted(names.TABLE_ACTIONS)
        assert table["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
        (rule,) = _statement_for(statements, "events:PutRule")
        assert sorted(_actions(rule)) == ["events:DescribeRule", "events:PutRule"]
        assert rendered(rule["Resource"]).endswith(f':rule/{constants.DEFAULT_RULE_NAME}"]]}}')
        invokes = _statement_for(statements, "lambda:InvokeFunction")
        worker_arns = [s["Resource"] for s in invokes if f":function:{WORKER}" in rendered(s["Resource"])]
        assert len(worker_arns) == 1
        for s in statements:
            assert s["Effect"] == "Allow"


def test_action_targets_are_granted_exactly_on_the_worker_only(deploy: Synthesized) -> None:
    t = deploy.template
    worker = _role_statements(t, WORKER)

    def resources(action: str) -> list[str]:
        """Resources (flattened) of the statements granting `action` alone."""
        found: list[str] = []
        for s in worker:
            if _actions(s) == [action]:
                res = s["Resource"]
                found += [flatten(r) for r in (res if isinstance(res, list) else [res])]
        return sorted(found)

    handover_id, _ = only(t, "AWS::SQS::Queue", QueueName=HANDOVER_QUEUE)
    assert resources("sqs:SendMessage") == [  # (and the hand-over queue: test_handover.py)
        "${" + handover_id + ".Arn}",
        "arn:aws:sqs:eu-west-1:111122223333:orders",
    ]
    assert resources("sns:Publish") == ["arn:aws:sns:eu-west-1:111122223333:alerts"]
    assert resources("events:PutEvents") == [
        "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/orders-bus"
    ]
    assert resources("lambda:InvokeFunction") == [
        "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + WORKER,
        "arn:aws:lambda:eu-west-1:111122223333:function:ship",
    ]
    api = _role_statements(t, API)
    for action in ("sqs:SendMessage", "sns:Publish", "events:PutEvents"):
        assert [s for s in api if action in _actions(s)] == []


# ---------------------------------------------------------------- API
def test_every_api_method_requires_iam_authorisation(deploy: Synthesized) -> None:
    methods = resources_of(deploy.template, "AWS::ApiGateway::Method")
    assert len(methods) == 2  # ANY / and ANY /{proxy+}
    for method in methods.values():
        assert method["Properties"]["AuthorizationType"] == "AWS_IAM"


def test_stage_v1_is_throttled_and_access_logged(template: Template) -> None:
    template.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": names.API_STAGE,
            "AccessLogSetting": {
                "DestinationArn": Match.any_value(),
                "Format": Match.string_like_regexp("requestId"),
            },
            "MethodSettings": [
                Match.object_like(
                    {
                        "HttpMethod": "*",
                        "ResourcePath": "/*",
                        "ThrottlingRateLimit": CONFIG.api_throttle_rate,
                        "ThrottlingBurstLimit": CONFIG.api_throttle_burst,
                        "LoggingLevel": "ERROR",
                        "DataTraceEnabled": False,
                    }
                )
            ],
        },
    )


def test_outputs_name_the_api_url_table_rule_and_worker(deploy: Synthesized) -> None:
    outputs = deploy.template["Outputs"]
    assert {"ApiUrl", "TableName", "RuleName", "WorkerFunctionName"} <= outputs.keys()
    stage_id, _ = only(deploy.template, "AWS::ApiGateway::Stage", StageName=names.API_STAGE)
    assert flatten(outputs["ApiUrl"]["Value"]).endswith("/${" + stage_id + "}/")
    table_id, _ = only(deploy.template, "AWS::DynamoDB::Table")
    assert outputs["TableName"]["Value"] == {"Ref": table_id}


# ---------------------------------------------------------------- monitoring
def test_dashboard_shows_lateness_percentiles_occurrences_and_worker_health(deploy: Synthesized) -> None:
    t = deploy.template
    (_, dashboard) = only(t, "AWS::CloudWatch::Dashboard")
    body = json.loads(flatten(dashboard["Properties"]["DashboardBody"]))
    graphed = set()
    for widget in body["widgets"]:
        for metric in widget["properties"]["metrics"]:
            *ident, options = metric if isinstance(metric[-1], dict) else (*metric, {})
            graphed.add((ident[0], ident[1], options.get("stat")))
    worker_ref = "${" + _function(t, WORKER)[0] + "}"
    assert {
        ("nexttick", "lateness", "p50"),
        ("nexttick", "lateness", "p90"),
        ("nexttick", "lateness", "p99"),
        ("nexttick", "lateness", "Maximum"),
        ("nexttick", "late_runs", "Sum"),
        ("nexttick", "runs", "Sum"),
        ("nexttick", "failures", "Sum"),
        ("nexttick", "skips", "Sum"),
        ("nexttick", "batch_size", "Maximum"),
        ("AWS/Lambda", "Errors", "Sum"),
        ("AWS/Lambda", "Duration", "p50"),
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum"),
    } <= graphed
    assert worker_ref in flatten(dashboard["Properties"]["DashboardBody"])
    # Powertools adds the service dimension to every metric it emits.
    assert '"nexttick","lateness","service","nexttick"' in flatten(dashboard["Properties"]["DashboardBody"])
    # The lateness widget shows the dimensionless (service only) metric's four statistics, and the
    # late-runs widget the count of runs over 1 s late
    by_title = {
        widget["properties"].get("title"): widget["properties"]["metrics"] for widget in body["widgets"]
    }
    assert [(m[1], m[2:4], m[-1]["stat"]) for m in by_title["Lateness (start - due), ms"]] == [
        ("lateness", ["service", "nexttick"], stat) for stat in ("p50", "p90", "p99", "Maximum")
    ]
    assert [(m[1], m[2:4], m[-1]["stat"]) for m in by_title["Runs late > 1 s"]] == [
        ("late_runs", ["service", "nexttick"], "Sum")
    ]


def test_alarms_on_lateness_failures_dead_letters_and_worker_errors_notify_by_email(
    deploy: Synthesized,
) -> None:
    t = deploy.template
    # (the keeper's two alarms are asserted in test_keeper.py, the hand-over's in test_handover.py)
    alarms = {
        a["Properties"]["MetricName"]: a["Properties"]
        for logical_id, a in resources_of(t, "AWS::CloudWatch::Alarm").items()
        if "Keeper" not in logical_id and "Handover" not in logical_id
    }
    assert set(alarms) == {"lateness", "failures", "ApproximateNumberOfMessagesVisible", "Errors"}
    assert alarms["lateness"]["ExtendedStatistic"] == "p99"
    assert alarms["lateness"]["Threshold"] == 2000
    assert alarms["lateness"]["Namespace"] == "nexttick"
    assert alarms["lateness"]["Dimensions"] == [{"Name": "service", "Value": "nexttick"}]
    assert alarms["failures"]["Threshold"] == 0
    assert alarms["Errors"]["Dimensions"] == [
        {"Name": "FunctionName", "Value": {"Ref": _function(t, WORKER)[0]}}
    ]
    topic_id, topic = only(t, "AWS::SNS::Topic")
    assert "KmsMasterKeyId" in topic["Properties"]
    for alarm in alarms.values():
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
    (_, subscription) = only(t, "AWS::SNS::Subscription")
    assert subscription["Properties"]["Endpoint"] == "ops@example.com"


# ------------------------------------------------------- a deploy re-derives the rule (template half)
def test_post_deploy_sync_invokes_the_worker_after_rule_and_worker_exist(deploy: Synthesized) -> None:
    t = deploy.template
    _, sync = only(t, "Custom::AWS")
    rule_id, _ = only(t, "AWS::Events::Rule")
    worker_id, _ = _function(t, WORKER)
    depends = set(sync["DependsOn"])
    assert {rule_id, worker_id} <= depends
    # ... and after the worker's policy and async config, so the sync runs with full permissions.
    assert any(d.startswith("SchedulerWorkerRoleDefaultPolicy") for d in depends)
    for phase in ("Create", "Update"):
        call = json.loads(flatten(sync["Properties"][phase]))
        assert (call["service"], call["action"]) == ("Lambda", "invoke")
        assert call["parameters"]["FunctionName"] == WORKER
        assert call["parameters"]["InvocationType"] == "Event"
        payload = json.loads(call["parameters"]["Payload"])
        # The per-deploy token changes the resource on every deploy, so every deploy re-syncs.
        assert payload == {"source": "nexttick", "action": "sync", "deploy": "test-deploy-1"}


def test_rule_properties_do_not_depend_on_the_deploy(
    deploy: Synthesized, local_template: dict[str, Any]
) -> None:
    # Given two synths with different sync tokens and variants / Then the rule resource is identical,
    # so a redeploy never makes CloudFormation update (and so reset) the rule.
    (deploy_id, deploy_rule) = only(deploy.template, "AWS::Events::Rule")
    (local_id, local_rule) = only(local_template, "AWS::Events::Rule")
    assert (deploy_id, deploy_rule) == (local_id, local_rule)


def test_dashboard_and_alarm_metric_names_are_the_ones_the_worker_emits() -> None:
    # Given the worker's source (its add_metric calls name a constant or a literal; the counts it
    # adds once per pass are tallied under a constant first; lateness goes out by dimension set)
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = list((root / "nexttick" / "worker").glob("*.py"))
    texts = [path.read_text() for path in sources]
    literals = {m for text in texts for m in re.findall(r'add_metric\(\s*name="(\w+)"', text)}
    emitting = r"(?:add_metric\(\s*name=|_counts\[|emit_by_dimensions\()constants\.(\w+)"
    named = {m for text in texts for m in re.findall(emitting, text)}
    emitted = literals | {getattr(constants, m) for m in named}
    # Then every scheduler metric the dashboard/alarms read is emitted by the worker
    wanted = {
        constants.METRIC_RUNS,
        constants.METRIC_FAILURES,
        constants.METRIC_SKIPS,
        constants.METRIC_LATENESS,
        constants.METRIC_BATCH_SIZE,
        constants.METRIC_LATE_RUNS,
    }
    assert wanted <= emitted
