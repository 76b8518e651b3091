"""The Powertools internals the project still uses, for want of a public API, checked for the shape
the code relies on: when one of these fails after a Powertools upgrade, re-check the named code
(and whether Powertools now offers a public way) before adjusting the expectation."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
)
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from nexttick import observability


@pytest.mark.parametrize(
    ("environment", "disabled"),
    [
        ({}, False),
        ({"POWERTOOLS_METRICS_DISABLED": "true"}, True),
        ({"POWERTOOLS_METRICS_DISABLED": "false"}, False),
        ({"POWERTOOLS_DEV": "true"}, True),
        ({"POWERTOOLS_DEV": "true", "POWERTOOLS_METRICS_DISABLED": "false"}, False),
    ],
)
def test_is_metrics_disabled_still_reads_the_environment_as_powertools_metrics_do(
    environment: dict[str, str], disabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("POWERTOOLS_METRICS_DISABLED", "POWERTOOLS_DEV"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    assert not inspect.signature(is_metrics_disabled).parameters
    assert is_metrics_disabled() is disabled, (
        "Powertools' is_metrics_disabled changed: re-check observability's metrics switch "
        "(_InvocationMetrics, emit_by_dimensions)"
    )


def _parameters(method: Any) -> list[tuple[str, Any, Any]]:
    """Name, kind and default of each parameter: what a call relies on, annotations aside."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]


@pytest.mark.parametrize(
    ("ours", "base"), [(observability._NoTracing, BaseProvider), (observability._Untraced, BaseSegment)]
)
def test_the_no_op_tracer_implements_each_abstract_method_powertools_declares(ours: type, base: type) -> None:
    abstract: frozenset[str] = getattr(base, "__abstractmethods__", frozenset())
    assert abstract, f"{base.__qualname__} has no abstract methods left: re-check {ours.__qualname__}"
    for name in sorted(abstract):
        assert _parameters(getattr(ours, name)) == _parameters(getattr(base, name)), (
            f"Powertools' {base.__qualname__}.{name} changed its signature: re-check {ours.__qualname__}"
        )


class _Body(BaseModel):
    name: str


def test_a_resolver_still_validates_requests_with_the_middleware_in_its_private_attribute() -> None:
    # Given a resolver whose request validation middleware is replaced, as build_app does, by one
    # that reads the body through Powertools' private `_get_body` and `_parse_json_data`
    seen: list[Any] = []

    class Recording(OpenAPIRequestValidationMiddleware):
        def _get_body(self, app: Any) -> dict[str, Any]:
            body = self._parse_json_data(app)
            seen.append(body)
            return body

    for method in ("_get_body", "_parse_json_data"):
        assert list(inspect.signature(getattr(OpenAPIRequestValidationMiddleware, method)).parameters) == [
            "self",
            "app",
        ], f"Powertools' {method} changed: re-check JsonOnlyValidation (lambdas/api/requests.py)"
    app = APIGatewayRestResolver(enable_validation=True)
    app._request_validation_middleware = Recording()

    @app.post("/things")
    def create(thing: _Body) -> dict[str, str]:
        return {"name": thing.name}

    # When a request comes in
    event = {
        "httpMethod": "POST",
        "path": "/things",
        "resource": "/things",
        "headers": {"content-type": "application/json"},
        "body": json.dumps({"name": "x"}),
        "requestContext": {"requestId": "r"},
    }
    answer = app.resolve(event, LambdaContext())
    # Then that middleware validated it
    assert seen == [{"name": "x"}], (
        "Powertools no longer validates through _request_validation_middleware/_get_body: "
        "re-check build_app (lambdas/api/app.py) and JsonOnlyValidation"
    )
    assert answer["statusCode"] == 200 and json.loads(answer["body"]) == {"name": "x"}
