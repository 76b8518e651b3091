"""Lateness metrics per action and schedule kind (Powertools `EphemeralMetrics`, one EMF line per
dimension set and worker pass,
beside the invocation's dimensionless `lateness`), and `late_runs` for runs over 1 s late."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from lambdas.worker import handler as worker_handler
from nexttick import constants
from nexttick.config import NextTickSettings
from nexttick.observability import SERVICE, Dimensions, MetricUnit, emit_by_dimensions
from nexttick.observability import metrics as powertools_metrics
from tests.support.worker import ACTIONS, RECORDER, FakeContext, WorkerEnv

SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4)


@pytest.fixture
def metrics_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Metrics enabled, as in Lambda, whatever an earlier test of this process left in the environment."""
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    powertools_metrics.clear_metrics()


def emf_values(output: str) -> list[tuple[dict[str, str], str, list[float]]]:
    """(dimensions, metric name, values) of every metric on the EMF lines Powertools printed."""
    found = []
    for line in output.splitlines():
        if '"_aws"' not in line:
            continue
        blob: dict[str, Any] = json.loads(line)
        [directive] = blob["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "nexttick"
        [dimension_names] = directive["Dimensions"]
        dimensions = {name: blob[name] for name in dimension_names}
        for metric in directive["Metrics"]:
            value = blob[metric["Name"]]
            found.append((dimensions, metric["Name"], value if isinstance(value, list) else [value]))
    return found


def test_lateness_is_emitted_per_action_and_kind_and_late_runs_counts_runs_over_a_second(
    env: WorkerEnv,
    metrics_on: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given an hourly `record` task and a one-shot `log` task due 2 s before it
    every = env.editor.schedule_every("record", "1h")
    once = env.editor.schedule_at("log", every.due - timedelta(seconds=2))
    # When the rule's event arrives as the hourly one is due (the one-shot starts 2 s late)
    env.travel_to(every.due)
    capsys.readouterr()
    monkeypatch.setattr(worker_handler, "_deps", (env.runtime, env.registry))
    result = worker_handler.handler(SCHEDULED, FakeContext(env.clock, remaining_seconds=120))
    assert result["succeeded"] == 2 and RECORDER.calls[every.id]
    printed = emf_values(capsys.readouterr().out)
    # Then the pass's lateness has a line per action and schedule kind
    by_action = sorted(
        ((dims, values) for dims, name, values in printed if name == "lateness" and len(dims) > 1),
        key=lambda line: line[0]["action"],
    )
    assert by_action == [
        ({"service": SERVICE, "action": "log", "kind": "once"}, [2000.0]),
        ({"service": SERVICE, "action": "record", "kind": "every"}, [0.0]),
    ], printed
    # And the invocation's dimensionless lateness (the alarms') still has both
    [shared] = [
        values for dims, name, values in printed if name == "lateness" and dims == {"service": SERVICE}
    ]
    assert sorted(shared) == [0.0, 2000.0]
    # And one run was over a second late
    late = [value for dims, name, values in printed if name == constants.METRIC_LATE_RUNS for value in values]
    assert late == [1.0], printed
    assert env.runtime.store.get_task(once.id).status == "succeeded"


def test_a_run_at_exactly_one_second_late_is_not_a_late_run(
    env: WorkerEnv, metrics_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    due = env.now() + timedelta(minutes=2)
    env.editor.schedule_at("record", due)
    env.travel_to(due + timedelta(seconds=constants.LATE_RUN_THRESHOLD_SECONDS))
    capsys.readouterr()
    env.run()
    powertools_metrics.flush_metrics()
    printed = emf_values(capsys.readouterr().out)
    shared = [values for dims, name, values in printed if name == "lateness" and dims == {"service": SERVICE}]
    assert shared == [[1000.0]], printed
    assert not [name for _, name, _ in printed if name == constants.METRIC_LATE_RUNS]


def test_dimensioned_metrics_print_nothing_when_metrics_are_disabled(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given metrics disabled (the local stack's default)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    capsys.readouterr()
    # When dimensioned metrics are emitted, Then nothing is printed (EphemeralMetrics alone would)
    values: dict[Dimensions, list[float]] = {
        (("action", "log"), ("kind", "once")): [12.0, 14.0],
        (("action", "hook"), ("kind", "cron")): [3.0],
    }
    emit_by_dimensions("lateness", MetricUnit.Milliseconds, values)
    assert capsys.readouterr().out == ""
    # And with metrics on, one EMF line per dimension set with all its values, the shared metrics
    # untouched
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    powertools_metrics.clear_metrics()
    emit_by_dimensions("lateness", MetricUnit.Milliseconds, values)
    assert emf_values(capsys.readouterr().out) == [
        ({"service": SERVICE, "action": "log", "kind": "once"}, "lateness", [12.0, 14.0]),
        ({"service": SERVICE, "action": "hook", "kind": "cron"}, "lateness", [3.0]),
    ]
    assert powertools_metrics.metric_set == {}


def test_a_dimension_set_with_more_than_a_hundred_values_prints_a_line_per_hundred(
    metrics_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given 250 values for the shared (service-only) dimension set, as a large pass collects
    values = [float(v) for v in range(250)]
    capsys.readouterr()
    # When they are emitted
    emit_by_dimensions("lateness", MetricUnit.Milliseconds, {(): values})
    # Then CloudWatch's limit of 100 values per metric and document holds, and none is lost
    printed = emf_values(capsys.readouterr().out)
    assert [len(batch) for _, _, batch in printed] == [100, 100, 50]
    assert [v for _, _, batch in printed for v in batch] == values
    assert all(dims == {"service": SERVICE} and name == "lateness" for dims, name, _ in printed)
