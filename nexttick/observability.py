"""The one place that creates the Powertools Logger, Metrics and Tracer used by every handler.

Service name from `POWERTOOLS_SERVICE_NAME` (default "nexttick"); metrics namespace "nexttick"
unless `POWERTOOLS_METRICS_NAMESPACE` says otherwise. The tracer records to X-Ray only in Lambda
with tracing on (`POWERTOOLS_TRACE_DISABLED` false, as the stack sets it when `tracing` is chosen).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricResolution, MetricUnit

# Powertools has no public "are metrics disabled" check (POWERTOOLS_METRICS_DISABLED, POWERTOOLS_DEV).
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

# Powertools has no public no-op tracer: `Tracer(disabled=True)` still loads the X-Ray SDK.
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment
from aws_lambda_powertools.utilities import jmespath_utils

from nexttick.constants import APP_NAME

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", APP_NAME)
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", APP_NAME)

Handler = TypeVar("Handler", bound=Callable[..., Any])

# CloudWatch takes at most 100 values of a metric per EMF document (Powertools prints at that count too).
MAX_METRIC_VALUES = 100
STANDARD_RESOLUTION = MetricResolution.Standard.value


class _InvocationMetrics(Metrics):
    """Powertools' `Metrics`, except that with metrics disabled (`POWERTOOLS_METRICS_DISABLED`, as
    the local stack runs by default) `log_metrics` drops what the invocation added instead of
    flushing. Powertools keeps disabled metrics: once one holds 100 values it prints them anyway; and
    its flush warns whenever the set is empty, as another thread's invocation may just have left it."""

    def log_metrics(
        self, lambda_handler: Callable[..., Any] | None = None, *args: Any, **kwargs: Any
    ) -> Callable[..., Any]:
        if lambda_handler is None:
            return functools.partial(self.log_metrics, *args, **kwargs)
        flushing = super().log_metrics(lambda_handler, *args, **kwargs)

        @functools.wraps(lambda_handler)
        def invoke(*call_args: Any, **call_kwargs: Any) -> Any:
            if not is_metrics_disabled():
                return flushing(*call_args, **call_kwargs)
            try:
                return lambda_handler(*call_args, **call_kwargs)
            finally:
                self.clear_metrics()

        return invoke


class _Untraced(BaseSegment):
    """The segment of an untraced call: whatever is recorded on it goes nowhere."""

    def close(self, end_time: int | None = None) -> None:
        pass

    def add_subsegment(self, subsegment: Any) -> None:
        pass

    def remove_subsegment(self, subsegment: Any) -> None:
        pass

    def put_annotation(self, key: str, value: Any) -> None:
        pass

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        pass

    def add_exception(self, exception: BaseException, stack: Any, remote: bool = False) -> None:
        pass


class _NoTracing(BaseProvider):
    """The Tracer's provider when nothing is traced. Powertools' default provider is the X-Ray SDK
    even when tracing is disabled, and importing it builds an X-Ray client from the default AWS
    session: about 0.2 s of every cold start, and a failure outright when `AWS_PROFILE` names a
    profile this machine lacks (the local stack and the CLI need no profile)."""

    @contextlib.contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Iterator[BaseSegment]:
        yield _Untraced()

    @contextlib.asynccontextmanager
    async def in_subsegment_async(self, name: str | None = None, **kwargs: Any) -> AsyncIterator[BaseSegment]:
        yield _Untraced()

    def put_annotation(self, key: str, value: Any) -> None:
        pass

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        pass

    def patch(self, modules: Sequence[str]) -> None:
        pass

    def patch_all(self) -> None:
        pass


def _switched_on(variable: str) -> bool:
    """A Powertools on/off environment variable: on for the words Powertools reads as true."""
    return os.getenv(variable, "false").strip().lower() in ("1", "y", "yes", "t", "true", "on")


def _tracing_on() -> bool:
    """X-Ray records only inside Lambda (where its daemon listens) and unless tracing is disabled."""
    return bool(os.getenv("LAMBDA_TASK_ROOT")) and not _switched_on("POWERTOOLS_TRACE_DISABLED")


logger = Logger(service=SERVICE)
metrics = _InvocationMetrics(namespace=NAMESPACE, service=SERVICE)
if _tracing_on():
    tracer = Tracer(service=SERVICE)
else:
    tracer = Tracer(service=SERVICE, disabled=True, provider=_NoTracing())


Dimensions = tuple[tuple[str, str], ...]


def emit_by_dimensions(name: str, unit: MetricUnit, values: Mapping[Dimensions, Sequence[float]]) -> None:
    """Values of metric `name` grouped by their own dimensions (plus `service`; `()` is `service`
    alone, the alarms' set): one EMF line per dimension set and 100 values, so a worker pass prints
    a line per action and kind, not per run. The invocation's shared `metrics` are left alone. With
    metrics disabled nothing is printed.

    The values go to Powertools' serializer as one metric set (`EphemeralMetrics.serialize_metric_set`,
    what its `add_metric` prints at its 100th value) instead of one `add_metric` each: every
    `add_metric` formats the metric's values so far into a debug message, logged or not, which cost
    a fifth of a worker's CPU per fire."""
    if is_metrics_disabled():
        return
    for dimensions, batch in values.items():
        emf = EphemeralMetrics(namespace=NAMESPACE, service=SERVICE)
        for key, label in dimensions:
            emf.add_dimension(name=key, value=label)
        for start in range(0, len(batch), MAX_METRIC_VALUES):
            chunk = [float(value) for value in batch[start : start + MAX_METRIC_VALUES]]
            metric = {"Unit": unit.value, "StorageResolution": STANDARD_RESOLUTION, "Value": chunk}
            print(json.dumps(emf.serialize_metric_set(metrics={name: metric}), separators=(",", ":")))


def inject_lambda_context(*, correlation_id_path: str | None = None) -> Callable[[Handler], Handler]:
    """`logger.inject_lambda_context` with the Lambda context keys (cold start, function name,
    request id, correlation id) scoped to the invoking thread instead of the logger's shared keys.

    The lines are the same in Lambda, which runs one invocation per process at a time; the local
    stack runs the API and worker handlers in threads of one process, where shared keys put one
    function's name and request id on the other's lines. The keys live in a context variable:
    threads a handler starts see them when it runs their work in a copy of its context (the
    worker's occurrence pool does)."""

    def decorate(handler: Handler) -> Handler:
        invocations = itertools.count()  # cold start per handler: one handler per process in Lambda

        @functools.wraps(handler)
        def invoke(event: Any, context: Any) -> Any:
            keys: dict[str, Any] = {  # Powertools' standard keys
                "cold_start": next(invocations) == 0,
                "function_name": context.function_name,
                "function_memory_size": context.memory_limit_in_mb,
                "function_arn": context.invoked_function_arn,
                "function_request_id": context.aws_request_id,
            }
            if correlation_id_path:
                keys["correlation_id"] = jmespath_utils.query(envelope=correlation_id_path, data=event)
            logger.thread_safe_clear_keys()
            logger.thread_safe_append_keys(**keys)
            # The rest of what Powertools' decorator does: POWERTOOLS_LOGGER_LOG_EVENT, and sampling
            # drawn again for each warm invocation (POWERTOOLS_LOGGER_SAMPLE_RATE).
            if _switched_on("POWERTOOLS_LOGGER_LOG_EVENT"):
                logger.info(event)
            if logger.sampling_rate and not keys["cold_start"]:
                logger.refresh_sample_rate_calculation()
            try:
                return handler(event, context)
            finally:
                logger.thread_safe_clear_keys()

        return cast(Handler, invoke)

    return decorate


__all__ = [
    "NAMESPACE",
    "SERVICE",
    "MetricUnit",
    "emit_by_dimensions",
    "inject_lambda_context",
    "logger",
    "metrics",
    "tracer",
]
