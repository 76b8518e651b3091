"""Keeper Lambda: triggered by the table's stream (DynamoDB Streams event source mapping). Thin:
the work is in `nexttick.keeper`. An error fails the batch: Lambda retries it (bisecting, bounded)
and then reports it to the keeper's on-failure queue."""

from __future__ import annotations

import threading
from typing import Any

from lambdas.coldstart import collector_paused

with collector_paused():
    from nexttick.keeper import Keeper
    from nexttick.observability import MetricUnit, inject_lambda_context, logger, metrics, tracer
    from nexttick.runtime import Runtime

_lock = threading.Lock()
_keeper: Keeper | None = None


def dependencies() -> Keeper:
    """The keeper over a runtime built once per container."""
    global _keeper
    with _lock:
        if _keeper is None:
            _keeper = Keeper(Runtime.build().rule_sync)
        return _keeper


def use(runtime: Runtime) -> None:
    """Install a prebuilt runtime (tests, which bring their own clock and trigger)."""
    global _keeper
    with _lock:
        _keeper = Keeper(runtime.rule_sync)


@inject_lambda_context()
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    report = dependencies().handle(event.get("Records", []))
    metrics.add_metric(name="keeper_records", unit=MetricUnit.Count, value=report.records)
    for outcome in report.outcomes:
        metrics.add_metric(name=f"keeper_{outcome.value.replace('-', '_')}", unit=MetricUnit.Count, value=1)
    logger.debug("keeper batch covered", extra={"report": report.to_dict()})
    return report.to_dict()
