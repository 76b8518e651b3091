"""The project's Lambda handlers as the local stack runs them, in this process: their environment
pointed at the emulator and the deployed resources, their settings and actions checked, the worker
behind the Lambda Invoke endpoint as its function is deployed, and the API behind the API Gateway
stand-in."""

from __future__ import annotations

import importlib
import os
from typing import Any

from infra import names
from local import preflight
from local.lambdas import ASYNC_RETRY_DELAYS, InvokeEndpoint, LocalFunction, SleepCountingClock
from local.options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_WORKER_TIMEOUT_SECONDS,
    LocalOptions,
    handler_environment,
)
from local.resources import StackNames
from nexttick import constants
from nexttick.config import get_settings
from nexttick.runtime import Runtime


def _load(handler: str, name: str | None = None) -> Any:
    """What a Lambda handler setting (`lambdas/worker/handler.handler`) names, imported as Lambda
    imports it; `name` picks another attribute of the same module."""
    module, _, function = handler.rpartition(".")
    return getattr(importlib.import_module(module.replace("/", ".")), name or function)


def configure(
    options: LocalOptions,
    *,
    moto_url: str,
    lambda_url: str,
    deployed: StackNames,
    clock: SleepCountingClock,
) -> list[str]:
    """Point the handlers' environment at the emulator and the deployed names, check their settings
    and actions (preflight.StartupError) and build the worker's runtime; the actions, described."""
    os.environ.update(
        handler_environment(
            options,
            moto_url=moto_url,
            lambda_url=lambda_url,
            names={
                "table": deployed.table,
                "rule": deployed.rule,
                "worker_function": deployed.worker_function,
            },
            function_env=deployed.worker_environment,
            environ=os.environ,
        )
    )
    get_settings.cache_clear()
    settings, registry = preflight.validated_handler_settings()
    # The worker sleeps on a clock the stack can see: an invocation that only sleeps is not
    # waited for at shutdown.
    _load(names.WORKER_HANDLER, "use")(Runtime.build(settings, clock=clock), registry)
    return [f"{name} ({action.kind})" for name, action in sorted(registry.actions.items())]


def start_worker(options: LocalOptions, endpoint: InvokeEndpoint, deployed: StackNames) -> LocalFunction:
    """The worker function, configured as deployed unless the options say otherwise, served by the
    Lambda Invoke endpoint (started here)."""
    timeout = options.worker_timeout or deployed.worker_timeout or DEFAULT_WORKER_TIMEOUT_SECONDS
    worker = LocalFunction(
        deployed.worker_function,
        _load(names.WORKER_HANDLER),
        timeout_seconds=timeout,
        region=options.region,
        concurrency=options.concurrency or deployed.reserved_concurrency or DEFAULT_CONCURRENCY,
        retry_delays=ASYNC_RETRY_DELAYS[: deployed.async_retries]
        if deployed.async_retries is not None
        else ASYNC_RETRY_DELAYS,
    )
    endpoint.functions[worker.name] = worker
    endpoint.start()
    return worker


def serve_api(options: LocalOptions) -> Any:
    """The API handler behind the API Gateway stand-in, serving from a thread of its own."""
    from lambdas.api.app import RESOURCES
    from local.gateway import serve

    return serve(
        _load(names.API_HANDLER),
        "127.0.0.1",
        options.api_port,
        # one request per execution environment at a time, as in Lambda (local/gateway.py)
        one_at_a_time=True,
        function_name=constants.DEFAULT_API_FUNCTION_NAME,
        resources=RESOURCES,
        region=options.region,
    )
