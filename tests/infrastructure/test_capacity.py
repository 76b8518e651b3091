"""`capacity=provisioned`: the table is provisioned at the ranges' minimums, and reads and writes
each scale between their range by target tracking on utilization; on demand has none of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.config import CapacityRange, ConfigError, InfraConfig, load_config
from infra.synth import build_app, synthesize
from tests.infrastructure.conftest import CONFIG, Synthesized


def _of_type(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def test_provisioned_capacity_scales_reads_and_writes_on_utilization(tmp_path: Path) -> None:
    # Given a deployment choosing provisioned capacity
    config = CONFIG.model_copy(
        update={
            "capacity": "provisioned",
            "read_capacity": CapacityRange(min=10, max=300),
            "write_capacity": CapacityRange(min=20, max=600),
            "capacity_target_utilization": 60,
        }
    )
    built = build_app(config=config, local=False, outdir=str(tmp_path), context={"nexttick:syncToken": "t"})
    template = synthesize(built).get_stack_by_name(built.stack.stack_name).template
    # Then the table is provisioned at the minimums
    [table] = _of_type(template, "AWS::DynamoDB::Table")
    assert "BillingMode" not in table or table["BillingMode"] == "PROVISIONED"
    assert table["ProvisionedThroughput"] == {"ReadCapacityUnits": 10, "WriteCapacityUnits": 20}
    # And each dimension scales within its range, tracking 60 % utilization
    targets = {t["ScalableDimension"]: (t["MinCapacity"], t["MaxCapacity"]) for t in _of_type(
        template, "AWS::ApplicationAutoScaling::ScalableTarget"
    )}  # fmt: skip
    assert targets == {
        "dynamodb:table:ReadCapacityUnits": (10, 300),
        "dynamodb:table:WriteCapacityUnits": (20, 600),
    }
    policies = [p["TargetTrackingScalingPolicyConfiguration"] for p in _of_type(
        template, "AWS::ApplicationAutoScaling::ScalingPolicy"
    )]  # fmt: skip
    assert sorted(p["PredefinedMetricSpecification"]["PredefinedMetricType"] for p in policies) == [
        "DynamoDBReadCapacityUtilization",
        "DynamoDBWriteCapacityUtilization",
    ]
    assert {p["TargetValue"] for p in policies} == {60}


def test_on_demand_is_the_default_and_has_no_scaling(deploy: Synthesized) -> None:
    [table] = _of_type(deploy.template, "AWS::DynamoDB::Table")
    assert table["BillingMode"] == "PAY_PER_REQUEST" and "ProvisionedThroughput" not in table
    assert _of_type(deploy.template, "AWS::ApplicationAutoScaling::ScalableTarget") == []


def test_a_capacity_range_is_checked_when_the_config_loads(tmp_path: Path) -> None:
    context = {"nexttick:capacity": "provisioned", "nexttick:read_capacity": '{"min": 50, "max": 10}'}
    with pytest.raises(ConfigError) as caught:
        load_config(context, tmp_path)
    assert caught.value.field == "read_capacity" and "max must be at least min" in str(caught.value)
    assert load_config({"nexttick:capacity": "provisioned"}, tmp_path).capacity == "provisioned"
    assert InfraConfig().capacity == "on_demand"
