"""bench/bill.py: a month's terms from given usage, EventBridge Scheduler's free tier, provisioned
capacity, Lambda's billed durations."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench import bill
from bench.bill import Deployment, Phase, Usage

DEPLOYMENT = Deployment(
    worker_memory_mb=512,
    keeper_memory_mb=256,
    api_memory_mb=512,
    architecture="arm64",
    gb_s_price=0.0000133334,
    read_capacity=(5, 500),
    write_capacity=(5, 500),
    target_utilization=0.7,
    retention_days=7,
    alarms=6,
    dashboards=1,
)


def _usage(**changes: object) -> Usage:
    quiet = Usage(
        tasks=0,
        rru=0,
        wru=0,
        phases=(Phase(bill.MONTH_SECONDS, 0, 0),),
        phases_per_month=1,
        worker_invocations=0,
        worker_seconds=0,
        keeper_invocations=0,
        keeper_seconds=0,
        api_invocations=0,
        api_seconds=0,
        log_bytes=0,
        metric_hours={},
        stored_bytes_per_task=0,
        eventbridge_calls=0,
    )
    return replace(quiet, **changes)  # type: ignore[arg-type]


def test_the_month_is_thirty_days() -> None:
    assert bill.MONTH_DAYS == 30 and bill.MONTH_SECONDS == 2_592_000 and bill.MONTH_HOURS == 720


def test_eventbridge_scheduler_bills_only_past_its_fourteen_million_free_invocations() -> None:
    assert bill.scheduler(14_000_000) == 0.0
    assert bill.scheduler(15_000_000) == pytest.approx(1.00)
    assert bill.scheduler(259_200_000) == pytest.approx(245.20)
    assert bill.scheduler(3_000_000, free=False) == pytest.approx(3.00)


def test_each_term_is_its_usage_at_its_price() -> None:
    # Given a month of usage
    usage = _usage(
        tasks=1_000_000,
        rru=2_000_000,
        wru=3_000_000,
        worker_invocations=1_000,
        worker_seconds=10_000,
        keeper_invocations=2_000_000,
        keeper_seconds=40_000,
        api_invocations=1_000_000,
        api_seconds=20_000,
        log_bytes=2 * bill.GB,
        metric_hours={"a": 720, "b": 360, "c": 5000},
        stored_bytes_per_task=1024,
        eventbridge_calls=50_000,
    )
    # When it is billed
    usd = bill.bill(usage, DEPLOYMENT)
    # Then each term is its usage at its price
    assert usd["dynamodb_on_demand"] == pytest.approx(2 * 0.125 + 3 * 0.625)
    assert usd["lambda_worker"] == pytest.approx(1_000 * 0.2e-6 + 10_000 * 0.5 * 0.0000133334)
    assert usd["lambda_keeper"] == pytest.approx(2 * 0.20 + 40_000 * 0.25 * 0.0000133334)
    assert usd["lambda_api"] == pytest.approx(0.20 + 20_000 * 0.5 * 0.0000133334)
    assert usd["api_gateway"] == pytest.approx(3.50)
    assert usd["cloudwatch_logs"] == pytest.approx(1.00)
    # a metric is prorated by the hours it is published in, never past the month
    assert usd["cloudwatch_metrics"] == pytest.approx(0.30 + 0.15 + 0.30)
    assert usd["cloudwatch_alarms_dashboards"] == pytest.approx(6 * 0.10 + 3.00)
    assert usd["eventbridge"] == 0.0
    # a million tasks of 1 KiB kept 7 of 30 days, with point-in-time recovery
    assert usd["dynamodb_storage"] == pytest.approx(1_000_000 * 1024 * 7 / 30 / bill.GB * 0.45)
    shared = usd["total_on_demand"] - usd["dynamodb_on_demand"]
    assert usd["total_provisioned"] == pytest.approx(usd["dynamodb_provisioned"] + shared)
    assert usd["scheduler"] == 0.0 and usd["scheduler_without_free_tier"] == pytest.approx(1.00)


def test_provisioned_capacity_is_the_minimum_or_what_the_load_needs_at_the_target_utilization() -> None:
    minimum = 5 * 720 * 0.00013 + 5 * 720 * 0.00065
    # A quiet month pays the minimum
    assert bill.provisioned((Phase(bill.MONTH_SECONDS, 0, 0),), 1, DEPLOYMENT)[0] == pytest.approx(minimum)
    # A steady 70 write units a second need 100 at 70 %, all month
    steady = Phase(bill.MONTH_SECONDS, 0, 70 * bill.MONTH_SECONDS)
    usd, _, peak_wcu = bill.provisioned((steady,), 1, DEPLOYMENT)
    assert peak_wcu == pytest.approx(100)
    assert usd == pytest.approx(5 * 720 * 0.00013 + 100 * 720 * 0.00065)
    # A daily spike within five minutes of the minimum's unused capacity costs nothing more
    small = Phase(10, 0, 5 * 300)
    assert bill.provisioned((small,), 30, DEPLOYMENT)[0] == pytest.approx(minimum)
    # One beyond it pays what it needs above the minimum for its whole hours, each day
    burst = Phase(1800, 0, 1800 * 70)
    usd, _, peak_wcu = bill.provisioned((burst,), 30, DEPLOYMENT)
    assert peak_wcu == pytest.approx(100)
    assert usd == pytest.approx(minimum + (100 - 5) * 1 * 30 * 0.00065)


def test_lambda_bills_each_invocation_by_the_millisecond_and_cpu_by_the_memorys_share() -> None:
    assert bill.lambda_seconds(0.0101) == pytest.approx(0.011)
    assert bill.lambda_seconds(0.010) == pytest.approx(0.010)
    assert bill.cpu_seconds(1.0, 512) == pytest.approx(1769 / 512)
    assert bill.cpu_seconds(1.0, 3538) == 1.0
