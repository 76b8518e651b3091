"""Synthesize once per session (jsii is slow): the deployable template (real bundling, cdk-nag on)
and the local variant moto's CloudFormation can create. Every test here shares the "cdk" group."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import infra  # noqa: F401  (jsii environment)
from infra.config import InfraConfig

# Every action kind, so the IAM grants for action targets are exercised.
ACTIONS: dict[str, dict[str, Any]] = {
    "log": {"type": "log"},
    "hook": {"type": "webhook", "url": "https://hooks.example.com/nexttick"},
    "queue": {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/111122223333/orders"},
    "topic": {"type": "sns", "topic_arn": "arn:aws:sns:eu-west-1:111122223333:alerts"},
    "bus": {"type": "eventbridge", "event_bus_name": "orders-bus"},
    "fn": {"type": "lambda", "function": "arn:aws:lambda:eu-west-1:111122223333:function:ship"},
    "py": {"type": "python", "target": "json:dumps"},
}
CONFIG = InfraConfig(
    actions=ACTIONS,
    webhook_allowlist=["https://hooks.example.com/"],
    alarm_email="ops@example.com",
)
SYNC_TOKEN = "test-deploy-1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.xdist_group("cdk"))


@dataclass(frozen=True)
class Synthesized:
    template: dict[str, Any]
    outdir: Path


@pytest.fixture(scope="session")
def deploy(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The deployable stack: bundled asset, post-deploy sync, cdk-nag (raises on any finding)."""
    from infra.synth import build_app, synthesize

    outdir = tmp_path_factory.mktemp("cdk-deploy")
    built = build_app(
        config=CONFIG, local=False, outdir=str(outdir), context={"nexttick:syncToken": SYNC_TOKEN}
    )
    assembly = synthesize(built)
    return Synthesized(assembly.get_stack_by_name(built.stack.stack_name).template, outdir)


@pytest.fixture(scope="session")
def local_template() -> dict[str, Any]:
    from infra import synth_template

    return synth_template(CONFIG, local=True)


@pytest.fixture(scope="session")
def template(deploy: Synthesized) -> Iterator[Any]:
    from aws_cdk.assertions import Template

    yield Template.from_json(deploy.template)


def resources_of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def only(template: dict[str, Any], kind: str, **properties: Any) -> tuple[str, dict[str, Any]]:
    """The one resource of `kind` whose Properties include `properties` (logical id, resource)."""
    found = [
        (k, v)
        for k, v in resources_of(template, kind).items()
        if all(v.get("Properties", {}).get(p) == val for p, val in properties.items())
    ]
    assert len(found) == 1, f"expected one {kind} with {properties}, found {[k for k, _ in found]}"
    return found[0]


def policy_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    """Every statement of every IAM policy and role in the template."""
    return [
        s
        for kind in ("AWS::IAM::Policy", "AWS::IAM::Role")
        for resource in resources_of(template, kind).values()
        for doc in [resource["Properties"].get("PolicyDocument")]
        + [p["PolicyDocument"] for p in resource["Properties"].get("Policies", [])]
        if doc
        for s in doc["Statement"]
    ]


def rendered(value: Any) -> str:
    """A property rendered to text (Fn::Join etc. flattened) for substring assertions."""
    return json.dumps(value, sort_keys=True)


def flatten(value: Any) -> str:
    """Fn::Join / Ref / GetAtt / pseudo parameters rendered to one string (`${Ref}` placeholders)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(flatten(p) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return "${" + value["Ref"] + "}"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    raise AssertionError(f"cannot flatten {value!r}")
