"""The stack's resources inside moto: the CDK app's template (`infra.synth_template(local=True)`,
which caches it by configuration and sources) deployed into moto's CloudFormation — the same
definitions `cdk deploy` uses."""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3

from infra import names, synth_template
from nexttick import constants
from nexttick.config import NextTickSettings
from nexttick.store import TaskStore

STACK_NAME = "nexttick-local"


@dataclass(frozen=True)
class StackNames:
    """What the local stack needs to know about the deployed resources."""

    table: str
    rule: str
    worker_function: str
    source: str  # how the resources were created (printed at start)
    worker_timeout: int | None = None
    worker_environment: dict[str, str] = field(default_factory=dict)  # as the CDK app configures it
    reserved_concurrency: int | None = None
    async_retries: int | None = None  # MaximumRetryAttempts of asynchronous invocations


def deploy_template(cloudformation: Any, template: dict[str, Any]) -> dict[str, str]:
    """Create the stack in moto's CloudFormation; returns its outputs."""
    cloudformation.create_stack(
        StackName=STACK_NAME,
        TemplateBody=json.dumps(template),
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    stack = cloudformation.describe_stacks(StackName=STACK_NAME)["Stacks"][0]
    if stack["StackStatus"] != "CREATE_COMPLETE":
        raise RuntimeError(
            f"local stack deploy ended {stack['StackStatus']}: {stack.get('StackStatusReason')}"
        )
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def stack_resources(cloudformation: Any) -> dict[str, list[str]]:
    """Physical ids of the stack's resources, by resource type."""
    by_type: dict[str, list[str]] = {}
    pages = cloudformation.get_paginator("list_stack_resources").paginate(StackName=STACK_NAME)
    for page in pages:
        for resource in page["StackResourceSummaries"]:
            by_type.setdefault(resource["ResourceType"], []).append(resource["PhysicalResourceId"])
    return by_type


def _pick(candidates: list[str], preferred: str, hint: str) -> str:
    if preferred in candidates:
        return preferred
    hinted = [c for c in candidates if hint in c.lower()]
    if hinted:
        return hinted[0]
    if len(candidates) == 1:
        return candidates[0]
    raise RuntimeError(f"cannot tell which of {candidates} is the {hint} resource")


def names_from_stack(
    cloudformation: Any, lambda_client: Any, outputs: dict[str, str], defaults: StackNames
) -> StackNames:
    """The table, rule and worker the template created (its outputs name them), and how the worker
    is configured: environment, timeout, reserved concurrency, async retries."""
    by_type = stack_resources(cloudformation)
    worker = outputs.get(names.OUTPUT_WORKER) or _pick(
        by_type.get("AWS::Lambda::Function", []), defaults.worker_function, "worker"
    )
    config = lambda_client.get_function_configuration(FunctionName=worker)
    try:
        reserved = lambda_client.get_function_concurrency(FunctionName=worker).get(
            "ReservedConcurrentExecutions"
        )
    except lambda_client.exceptions.ClientError:
        reserved = None
    try:
        retries = lambda_client.get_function_event_invoke_config(FunctionName=worker).get(
            "MaximumRetryAttempts"
        )
    except lambda_client.exceptions.ClientError:
        retries = None
    rules = [r.split("/")[-1].split("|")[0] for r in by_type.get("AWS::Events::Rule", [])]
    return StackNames(
        table=outputs.get(names.OUTPUT_TABLE)
        or _pick(by_type.get("AWS::DynamoDB::Table", []), defaults.table, "task"),
        rule=outputs.get(names.OUTPUT_RULE) or _pick(rules, defaults.rule, "next"),
        worker_function=worker,
        source="the CDK app's template, deployed into moto's CloudFormation",
        worker_timeout=int(config["Timeout"]) if config.get("Timeout") else None,
        worker_environment=dict(config.get("Environment", {}).get("Variables", {})),
        reserved_concurrency=int(reserved) if reserved else None,
        async_retries=int(retries) if retries is not None else None,
    )


def deploy_local_template(
    cloudformation: Any, lambda_client: Any, progress: Callable[[str], None]
) -> StackNames:
    """Deploy the CDK app's template for the emulator (synthesized once, then cached by the CDK
    app) into moto; the names it created."""
    defaults = StackNames(
        table=os.environ.get("NEXTTICK_TABLE") or constants.DEFAULT_TABLE_NAME,
        rule=os.environ.get("NEXTTICK_RULE") or constants.DEFAULT_RULE_NAME,
        worker_function=os.environ.get("NEXTTICK_WORKER_FUNCTION") or constants.DEFAULT_WORKER_FUNCTION_NAME,
        source="",
    )
    template = synth_template(local=True, announce=progress)
    progress("deploying the template into the emulator ...")
    outputs = deploy_template(cloudformation, template)
    return names_from_stack(cloudformation, lambda_client, outputs, defaults)


def create_resources(settings: NextTickSettings) -> None:
    """Table, the epoch rule and a placeholder worker function, as the CDK stack would create them,
    without CloudFormation: the quick set-up of tests and the bench against an emulator."""

    TaskStore.from_settings(settings).create_table()
    events = boto3.client("events", region_name=settings.region)
    events.put_rule(Name=settings.rule_name, ScheduleExpression=constants.EPOCH_EXPRESSION, State="ENABLED")
    iam = boto3.client("iam", region_name=settings.region)
    role = iam.create_role(
        RoleName="nexttick-worker-test",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return None\n")
    boto3.client("lambda", region_name=settings.region).create_function(
        FunctionName=settings.worker_function,
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": buffer.getvalue()},
    )
