"""The Lambda handler: event kinds, sync, fail-fast configuration, logs and metrics."""

from __future__ import annotations

import io
import json
import threading
from datetime import timedelta

import pytest

from lambdas.worker import handler as worker_handler
from nexttick.actions import ActionConfigError
from nexttick.config import NextTickSettings, get_settings
from nexttick.observability import metrics as powertools_metrics
from tests.support.worker import ACTIONS, RECORDER, FakeContext, WorkerEnv

SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4)


@pytest.fixture
def env(env: WorkerEnv, monkeypatch: pytest.MonkeyPatch) -> WorkerEnv:
    """The worker Lambda handler serves this environment's runtime and registry."""
    monkeypatch.setattr(worker_handler, "_deps", (env.runtime, env.registry))
    return env


def call(env: WorkerEnv, event: object) -> dict:
    return worker_handler.handler(event, FakeContext(env.clock, remaining_seconds=120))


def emf_metrics(output: str) -> dict[str, list[float]]:
    """Metric name -> values from the EMF lines Powertools printed with the invocation's dimensions
    (the per-action, per-kind lines are checked in test_worker_lateness_metrics.py)."""
    found: dict[str, list[float]] = {}
    for line in output.splitlines():
        if '"_aws"' not in line:
            continue
        blob = json.loads(line)
        [directive] = blob["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "nexttick"
        if directive["Dimensions"] != [["service"]]:
            continue
        for metric in directive["Metrics"]:
            value = blob[metric["Name"]]
            found.setdefault(metric["Name"], []).extend(value if isinstance(value, list) else [value])
    return found


def test_unknown_events_are_logged_and_ignored(env: WorkerEnv, logs: io.StringIO) -> None:
    for event in ({"source": "aws.s3"}, {"source": "nexttick", "action": "explode"}, {}):
        assert call(env, event) == {"outcome": "ignored"}
    assert logs.getvalue().count("ignoring an event the worker does not handle") == 3


def test_scheduled_event_runs_due_work_logs_by_task_and_flushes_metrics(
    env: WorkerEnv, capsys: pytest.CaptureFixture[str], logs: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (metrics on, as in Lambda, whatever an earlier test of this process left in the environment)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    # Given two due tasks; the one whose action is not `log` carries a payload that must not reach
    # INFO logs (only the `log` action, whose purpose is to show deliveries, logs its payload)
    due = env.now() + timedelta(minutes=2)
    a = env.editor.schedule_at("log", due, {"shown": "by-the-log-action"})
    b = env.editor.schedule_at("record", due, {"secret": "s3cr3t-value"})
    env.travel_to(due + timedelta(seconds=2))
    capsys.readouterr()
    powertools_metrics.clear_metrics()  # other tests in this process ran workers without the handler's flush
    # When the rule's event arrives
    result = call(env, SCHEDULED)
    out = logs.getvalue()
    # Then both ran, logs are correlated by task id, other actions' payloads stay out of INFO logs
    assert result["event"] == "scheduled" and result["succeeded"] == 2
    assert len(RECORDER.calls[b.id]) == 1
    lines = [json.loads(line) for line in out.splitlines()]
    finished = {line["task_id"]: line for line in lines if line.get("message") == "occurrence finished"}
    assert set(finished) == {a.id, b.id} and finished[a.id]["lateness_ms"] == 2000.0
    assert "s3cr3t-value" not in out and "by-the-log-action" in out
    # And the metrics were flushed for this invocation
    printed = capsys.readouterr().out
    metrics = emf_metrics(printed)
    # (Powertools keeps one metric buffer per process: say what else was running if this fails)
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    assert sum(metrics.get("runs", [])) == 2, {"printed": printed, "other threads": others}
    assert metrics["lateness"] == [2000.0, 2000.0] and metrics["batch_size"] == [2.0]
    assert metrics["invocations"] == [1.0]


def test_sync_event_rederives_the_rule_then_runs(env: WorkerEnv) -> None:
    # Given a pending task and a rule that a redeploy reset to the epoch
    task = env.editor.schedule_in("record", 3600)
    env.runtime.rule.put(None)
    # When the deploy sends the sync event
    result = call(env, {"source": "nexttick", "action": "sync"})
    # Then the rule points at the task again
    assert result["event"] == "sync"
    assert env.runtime.rule.current() == env.runtime.rule_sync.timing.fire_minute(task.due)


def test_wake_event_runs_what_is_due(env: WorkerEnv) -> None:
    task = env.editor.schedule_in("record", 0)  # due now: the editor invokes the worker directly
    assert env.runtime.trigger.reasons  # the editor asked for a wake
    result = call(env, {"source": "nexttick", "action": "wake", "reason": "due too soon to arm"})
    assert result["event"] == "wake" and len(RECORDER.calls[task.id]) == 1


def test_invalid_action_configuration_fails_the_cold_start(
    resources: NextTickSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a deployment whose NEXTTICK_ACTIONS names an unknown kind
    monkeypatch.setenv("NEXTTICK_ACTIONS", json.dumps({"hook": {"type": "carrier-pigeon"}}))
    monkeypatch.setattr(worker_handler, "_deps", None)
    get_settings.cache_clear()
    try:
        # When the container builds its dependencies, Then it fails naming the action
        with pytest.raises(ActionConfigError, match=r"actions\.hook\.type"):
            worker_handler.dependencies()
    finally:
        get_settings.cache_clear()
