"""The stack's resources inside moto: the CDK-synthesized template deployed into moto's
CloudFormation (the same definitions `cdk deploy` uses), with the template cached under the state
directory, keyed by a hash of the CDK sources so a restart does not synthesize again."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger("nexttick.local")

STACK_NAME = "nexttick-local"
_REPO_ROOT = Path(__file__).resolve().parents[2]
# What the synthesized template depends on (besides the pinned CDK version).
_TEMPLATE_INPUTS = ("infra", "app.py", "cdk.json", "nexttick/constants.py", "nexttick/config.py")


@dataclass(frozen=True)
class StackNames:
    table: str
    rule: str
    worker_function: str
    worker_timeout: int | None
    source: str  # how the resources were created (printed at start)


def template_key(root: Path = _REPO_ROOT) -> str:
    """A hash of every file the synthesized template is built from."""
    digest = hashlib.sha256()
    for name in _TEMPLATE_INPUTS:
        path = root / name
        files = (
            sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
            if path.is_dir()
            else [path]
        )
        for file in files:
            if file.exists():
                digest.update(str(file.relative_to(root)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def cached_template(
    cache_dir: Path, synth: Callable[[], dict[str, Any] | None], key: str
) -> dict[str, Any] | None:
    """The template from the cache, or synthesized once and cached (atomically); None if `synth`
    has none to offer."""
    path = cache_dir / f"template-{key}.json"
    if path.exists():
        cached: dict[str, Any] = json.loads(path.read_text())
        return cached
    template = synth()
    if template is None:
        return None
    cache_dir.mkdir(parents=True, exist_ok=True)
    for stale in cache_dir.glob("template-*.json"):
        stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".template-", dir=cache_dir)
    with os.fdopen(fd, "w") as handle:
        json.dump(template, handle)
    os.replace(tmp, path)
    return template


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
    if len(hinted) == 1 or (len(candidates) != 1 and hinted):
        return hinted[0]
    if len(candidates) == 1:
        return candidates[0]
    raise RuntimeError(f"cannot tell which of {candidates} is the {hint} resource")


def names_from_stack(by_type: dict[str, list[str]], lambda_client: Any, defaults: StackNames) -> StackNames:
    """The table, rule and worker the template created (its names may be CDK-generated)."""
    rules = [r.split("/")[-1].split("|")[0] for r in by_type.get("AWS::Events::Rule", [])]
    worker = _pick(by_type.get("AWS::Lambda::Function", []), defaults.worker_function, "worker")
    timeout = lambda_client.get_function_configuration(FunctionName=worker).get("Timeout")
    return StackNames(
        table=_pick(by_type.get("AWS::DynamoDB::Table", []), defaults.table, "task"),
        rule=_pick(rules, defaults.rule, "next"),
        worker_function=worker,
        worker_timeout=int(timeout) if timeout else None,
        source="CDK template deployed into moto CloudFormation",
    )


def create_without_template(dynamodb: Any, events: Any, defaults: StackNames) -> StackNames:
    """Fallback while the CDK app cannot synthesize a template here: the table (keys, TTL) and the
    rule at the epoch, as the CDK constructs define them. The worker runs in-process either way."""
    from nexttick.constants import EPOCH_EXPRESSION, PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE

    dynamodb.create_table(
        TableName=defaults.table,
        KeySchema=[
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": SORT_KEY, "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.update_time_to_live(
        TableName=defaults.table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
    )
    events.put_rule(Name=defaults.rule, ScheduleExpression=EPOCH_EXPRESSION, State="ENABLED")
    return StackNames(
        defaults.table, defaults.rule, defaults.worker_function, None, "created with boto3 (no CDK template)"
    )
