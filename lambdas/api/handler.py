"""API Lambda: API Gateway REST proxy events -> the nexttick HTTP API (thin; logic lives in the editor).

The editor (boto3 clients, settings from `NEXTTICK_*`) is built on the first request and reused
by every later invocation of the same container.
"""

from __future__ import annotations

import time
from typing import Any

from lambdas.coldstart import collector_paused

with collector_paused():
    from aws_lambda_powertools.logging import correlation_paths

    from editor import Editor
    from lambdas.api.app import build_app
    from nexttick.observability import MetricUnit, inject_lambda_context, logger, metrics, tracer

# Polled by load balancers, scripts and the local stack's tooling: its request line is DEBUG only.
HEALTH_PATH = "/health"
# The request line quotes the client's path: clipped, so no request makes an unbounded log line.
MAX_LOGGED_PATH = 512

app = build_app(Editor.from_env)


@inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    started = time.perf_counter()
    response: dict[str, Any] = app.resolve(event, context)
    status = int(response.get("statusCode", 500))
    metrics.add_metric(name=f"Responses{status // 100}xx", unit=MetricUnit.Count, value=1)
    path = event.get("path") or ""
    (logger.debug if path.rstrip("/") == HEALTH_PATH else logger.info)(
        "api request",
        extra={
            "method": event.get("httpMethod"),
            "path": path if len(path) <= MAX_LOGGED_PATH else f"{path[:MAX_LOGGED_PATH]}...",
            "status": status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
    return response
