"""bench/bill.py and bench/monthly.py's scaling: a month's terms from given usage, EventBridge
Scheduler's and SQS's free tiers, provisioned capacity, the waiting's share of the bill, and a
window's figures scaled to the 30-day month (per task by tasks, per wake by wakes, the hand-over
queue's idle polls by the month)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bench import bill, monthly
from bench.accounts import API, WORKER, Account
from bench.bill import Deployment, Phase, Usage
from bench.handover import HANDOVER
from bench.sparse import idle_seconds
from bench.timeline import Measured, Plan, Run
from nexttick.config import Precision

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
START = datetime(2031, 3, 3, 8, 0, tzinfo=UTC)


def _usage(**changes: object) -> Usage:
    quiet = Usage(
        tasks=0,
        rru=0,
        wru=0,
        phases=(Phase(bill.MONTH_SECONDS, 0, 0),),
        phases_per_month=1,
        worker_invocations=0,
        worker_seconds=0,
        worker_idle_seconds=0,
        handover_invocations=0,
        keeper_invocations=0,
        keeper_seconds=0,
        api_invocations=0,
        api_seconds=0,
        log_bytes=0,
        metric_hours={},
        stored_bytes_per_task=0,
        eventbridge_calls=0,
        sqs_requests=0,
    )
    return replace(quiet, **changes)  # type: ignore[arg-type]


def test_the_month_is_thirty_days_and_the_loads_count_their_tasks_over_it() -> None:
    assert bill.MONTH_SECONDS == 2_592_000 and bill.MONTH_HOURS == 720
    tasks = {load.name: load.tasks_per_month for load in monthly.LOADS}
    assert tasks == {
        "1/day": 30,
        "1/minute": 43_200,
        "1/second": 2_592_000,
        "100/second": 259_200_000,
        "daily burst of 100,000": 3_000_000,
    }


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
        sqs_requests=3_000_000,
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
    assert usd["sqs"] == pytest.approx(3 * 0.40)
    # a million tasks of 1 KiB kept 7 of 30 days, with point-in-time recovery
    assert usd["dynamodb_storage"] == pytest.approx(1_000_000 * 1024 * 7 / 30 / bill.GB * 0.45)
    shared = usd["total_on_demand"] - usd["dynamodb_on_demand"]
    assert usd["total_provisioned"] == pytest.approx(usd["dynamodb_provisioned"] + shared)
    assert usd["scheduler"] == 0.0 and usd["scheduler_without_free_tier"] == pytest.approx(1.00)


def test_sqs_bills_every_request_and_its_free_tier_only_past_a_million_a_month() -> None:
    assert bill.sqs(1_000_000) == pytest.approx(0.40)
    assert bill.sqs(1_000_000, free=True) == 0.0
    assert bill.sqs(3_500_000, free=True) == pytest.approx(1.00)
    # the month's terms are list prices: the free tier is shown beside them, not taken off
    usd = bill.bill(_usage(sqs_requests=1_000_000), DEPLOYMENT)
    assert usd["sqs"] == pytest.approx(0.40) and usd["sqs_within_free_tier"] == 0.0
    assert usd["total_on_demand"] - bill.bill(_usage(), DEPLOYMENT)["total_on_demand"] == pytest.approx(0.40)


def test_the_waiting_is_the_workers_idle_time_the_hand_overs_invocations_and_sqs_not_a_term_more() -> None:
    # Given a month whose worker is billed 100,000 s, 40,000 of them without work, in 2,000
    # invocations of which 500 a hand-over started, and 1.6 million SQS requests
    usage = _usage(
        worker_invocations=2_000,
        worker_seconds=100_000,
        worker_idle_seconds=40_000,
        handover_invocations=500,
        sqs_requests=1_600_000,
    )
    usd = bill.bill(usage, DEPLOYMENT)
    # Then the waiting is the idle time at the worker's memory, those invocations and all of SQS
    assert usd["waiting"] == pytest.approx(40_000 * 0.5 * 0.0000133334 + 500 * 0.2e-6 + 1.6 * 0.40)
    # And it is a share of the terms, not one more: the totals are the terms' sum
    terms = [
        k for k in usd if k.startswith(("dynamodb_on_demand", "dynamodb_storage", "lambda_", "cloudwatch_"))
    ]
    others = ("api_gateway", "eventbridge", "sqs")
    assert usd["total_on_demand"] == pytest.approx(sum(usd[k] for k in (*terms, *others)))
    assert usd["waiting"] < usd["lambda_worker"] + usd["sqs"]


def test_an_invocations_idle_time_is_its_billed_time_beyond_its_work() -> None:
    # A worker alive 3 s that worked 0.1 s of CPU (0.345 s at 512 MB's share of a vCPU)
    waited = Run(HANDOVER, START, START + timedelta(seconds=3), cpu_s=0.1)
    assert idle_seconds(waited, 512) == pytest.approx(3 - 0.1 * 1769 / 512)
    # One whose work outlasts its span waited for nothing
    busy = Run("rule", START, START + timedelta(seconds=0.2), cpu_s=0.1)
    assert idle_seconds(busy, 512) == 0.0


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


def _measured(worker: list[Run], tasks: int, sends: int = 0) -> Measured:
    return Measured(
        accounts={
            API: Account(rru=1.0 * tasks, wru=1.0 * tasks),
            WORKER: Account(rru=2.0 * tasks, wru=3.0 * tasks),
        },
        worker=worker,
        keeper=[],
        api=[Run("create", START, START + timedelta(seconds=0.010), 0.002) for _ in range(tasks)],
        printed_bytes={API: 500 * tasks},
        metric_marks={"nexttick/runs {service=nexttick}": 1},
        finished=tasks,
        stored_bytes_per_task=800.0,
        sqs_requests={"SendMessage": sends, "ReceiveMessage": sends, "DeleteMessage": sends},
        handovers=sends,
    )


def test_a_steady_window_is_scaled_to_the_month_by_its_length() -> None:
    # Given a minute of 1/second: one worker invocation waiting all of it, 60 creates
    load = next(load for load in monthly.LOADS if load.name == "1/second")
    window = monthly.Window(Plan(Precision.SECOND, START, (), end=START), 60, 60, bill.MONTH_SECONDS, 1)
    wait = Run("rule", START, START + timedelta(seconds=60), cpu_s=0.1)
    # When its month is derived
    usage = monthly.usage(load, window, _measured([wait], 60), DEPLOYMENT)
    # Then per-task figures count 2,592,000 tasks, per-wake ones 43,200 minutes
    assert usage.rru == pytest.approx(3 * 2_592_000) and usage.wru == pytest.approx(4 * 2_592_000)
    assert usage.api_invocations == pytest.approx(2_592_000)
    assert usage.worker_invocations == pytest.approx(43_200)
    assert usage.worker_seconds == pytest.approx(60 * 43_200)  # the wait, longer than its CPU
    assert usage.metric_hours == {
        "nexttick/runs {service=nexttick}": 43_200
    }  # every hour (capped when billed)
    assert usage.phases == (Phase(bill.MONTH_SECONDS, usage.rru, usage.wru),)
    # and the hand-over queue's pollers, idle, poll all month: five long polls of 20 s at once
    assert usage.sqs_requests == pytest.approx(5 * bill.MONTH_SECONDS / 20)
    assert usage.handover_invocations == 0


def test_a_handed_over_wait_is_billed_per_wake_with_its_messages_requests() -> None:
    # Given a minute of 1/minute: the rule's invocation handed the wait over (a send), the message's
    # invocation slept 3 s and ran the task (a receive and a delete)
    load = next(load for load in monthly.LOADS if load.name == "1/minute")
    window = monthly.Window(Plan(Precision.SECOND, START, (), end=START), 1, 60, bill.MONTH_SECONDS, 1 / 60)
    early = Run("rule", START, START, cpu_s=0.01)
    late = Run(HANDOVER, START, START + timedelta(seconds=3), cpu_s=0.01)
    # When its month is derived
    usage = monthly.usage(load, window, _measured([early, late], 1, sends=1), DEPLOYMENT)
    # Then each of the month's 43,200 minutes has its hand-over, its three requests and its idle time
    assert usage.worker_invocations == pytest.approx(2 * 43_200)
    assert usage.handover_invocations == pytest.approx(43_200)
    assert usage.sqs_requests == pytest.approx(3 * 43_200 + 5 * bill.MONTH_SECONDS / 20)
    assert usage.worker_idle_seconds == pytest.approx(43_200 * (3 - 0.01 * 1769 / 512))


def test_a_scaled_down_burst_grows_its_work_by_its_tasks_but_its_waits_by_its_days() -> None:
    # Given a burst of 200 standing for 100,000: a worker that waited 80 s, then drained it on 0.4 s of CPU
    load = next(load for load in monthly.LOADS if load.name == "daily burst of 100,000")
    window = monthly.Window(Plan(Precision.SECOND, START, ()), 200, 1, 30, 50)
    drain = Run("rule", START, START + timedelta(seconds=80), cpu_s=0.4)
    # When its month is derived
    usage = monthly.usage(load, window, _measured([drain], 200), DEPLOYMENT)
    # Then its units and creates count 3,000,000 tasks; its one invocation a day lasts the drain's
    # CPU grown 500 times at 512 MB's share of a vCPU (longer than the wait), 30 times a month
    assert usage.api_invocations == pytest.approx(3_000_000)
    assert usage.worker_invocations == pytest.approx(30)
    assert usage.worker_seconds == pytest.approx(30 * bill.lambda_seconds(0.4 * 500 * 1769 / 512))
    assert usage.metric_hours == {"nexttick/runs {service=nexttick}": 30}
    # and its phases are a day's: the creates at the API's throttle rate, then the drain
    creates, runs = usage.phases
    assert creates.seconds == pytest.approx(100_000 / 50) and creates.wru == pytest.approx(100_000)
    assert runs.wru == pytest.approx(300_000) and usage.phases_per_month == 30
