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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger("nexttick.local")

STACK_NAME = "nexttick-local"
_REPO_ROOT = Path(__file__).resolve().parents[2]
# What the synthesized template depends on (besides the pinned CDK version).
_TEMPLATE_INPUTS = (
    "infra",
    "app.py",
    "cdk.json",
    "nexttick.config.json",
    "requirements-dev.txt",
    "nexttick/constants.py",
    "nexttick/config.py",
)
# Stack outputs naming the resources (infra/stack.py); resource types are the fallback.
OUTPUT_TABLE, OUTPUT_RULE, OUTPUT_WORKER = "TableName", "RuleName", "WorkerFunctionName"


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
    worker = outputs.get(OUTPUT_WORKER) or _pick(
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
        table=outputs.get(OUTPUT_TABLE)
        or _pick(by_type.get("AWS::DynamoDB::Table", []), defaults.table, "task"),
        rule=outputs.get(OUTPUT_RULE) or _pick(rules, defaults.rule, "next"),
        worker_function=worker,
        source="the CDK app's template, deployed into moto's CloudFormation",
        worker_timeout=int(config["Timeout"]) if config.get("Timeout") else None,
        worker_environment=dict(config.get("Environment", {}).get("Variables", {})),
        reserved_concurrency=int(reserved) if reserved else None,
        async_retries=int(retries) if retries is not None else None,
    )
