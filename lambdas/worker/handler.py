"""Worker Lambda: invoked by the rule, by editors (wake), by deploys (sync) and by the hand-over
queue (a waiting worker's delayed message). Thin: the work is in `nexttick.worker`."""

from __future__ import annotations

import threading
from typing import Any

from lambdas.coldstart import collector_paused

with collector_paused():
    from nexttick.actions import ActionRegistry, build_registry
    from nexttick.observability import MetricUnit, inject_lambda_context, logger, metrics, tracer
    from nexttick.runtime import Runtime
    from nexttick.worker import (
        Worker,
        WorkerEvent,
        classify_event,
        handover_record,
        handover_wake_at,
        helper_shards,
    )

_lock = threading.Lock()
_deps: tuple[Runtime, ActionRegistry] | None = None


def dependencies() -> tuple[Runtime, ActionRegistry]:
    """Runtime and action registry, built once per container (an invalid action fails here)."""
    global _deps
    with _lock:
        if _deps is None:
            runtime = Runtime.build()
            registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
            if registry.max_timeout_seconds >= runtime.settings.lease_seconds:
                logger.warning(
                    "an action may run longer than the claim lease: raise NEXTTICK_LEASE_SECONDS",
                    extra={
                        "max_timeout": registry.max_timeout_seconds,
                        "lease": runtime.settings.lease_seconds,
                    },
                )
            _deps = runtime, registry
        return _deps


def use(runtime: Runtime, registry: ActionRegistry) -> None:
    """Install prebuilt dependencies (the local stack and tests, which bring their own clock)."""
    global _deps
    with _lock:
        _deps = runtime, registry


@inject_lambda_context()
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    kind = classify_event(event)
    if kind is WorkerEvent.UNKNOWN:
        keys = sorted(event) if isinstance(event, dict) else type(event).__name__
        logger.warning("ignoring an event the worker does not handle", extra={"event_keys": keys})
        metrics.add_metric(name="ignored_events", unit=MetricUnit.Count, value=1)
        return {"outcome": "ignored"}
    runtime, registry = dependencies()
    metrics.add_metric(name="invocations", unit=MetricUnit.Count, value=1)
    logger.info("worker invoked", extra={"event_kind": kind.value, "reason": event.get("reason")})
    if kind is WorkerEvent.SYNC:
        runtime.rule_sync.sync()
    helping = kind is WorkerEvent.HELP
    worker = Worker(
        runtime,
        registry,
        owner=context.aws_request_id,
        remaining_ms=context.get_remaining_time_in_millis(),
        shards=helper_shards(event, runtime.store.shards) if helping else None,
        leader=event.get("leader") if helping else None,
        by_rule=kind is WorkerEvent.SCHEDULED,
    )
    if kind is WorkerEvent.HANDOVER:
        return {"event": kind.value, **worker.run(handover_wake_at(event), handover_record(event)).to_dict()}
    return {"event": kind.value, **worker.run().to_dict()}
