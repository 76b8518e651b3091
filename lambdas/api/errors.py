"""Every error the API answers, in one place: an exception becomes a status and a JSON body
`{"error", "message", "field"}` whose message starts with the offending field.

Nothing a client sends yields a 5xx; AWS failures answer 503 and unexpected bugs 500, both with a
generic message and one bounded log line.
"""

from __future__ import annotations

import binascii
import re
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from editor import AWS_FAILURES
from lambdas.api.models import PATTERN_MESSAGES, ErrorCode
from lambdas.api.requests import MalformedRequest
from nexttick.errors import NextTickError
from nexttick.observability import logger

# Unexpected errors are logged clipped: a RecursionError's traceback, or an error quoting the request,
# would otherwise make one log line of megabytes.
LOGGED_FRAMES = 10
MAX_LOGGED_CHARS = 3000
STATUS_CODES = {
    ErrorCode.MALFORMED: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.CONFLICT: 409,
    ErrorCode.VERSION_MISMATCH: 412,
    ErrorCode.TOO_LARGE: 413,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: 415,
    ErrorCode.VALIDATION: 422,
    ErrorCode.UNKNOWN_ACTION: 422,
    ErrorCode.INTERNAL: 500,
    ErrorCode.UNAVAILABLE: 503,
}


def error_response(code: ErrorCode, message: str, field: str | None) -> Response[Any]:
    return Response(
        status_code=STATUS_CODES[code],
        content_type=content_types.APPLICATION_JSON,
        body={"error": code.value, "message": message, "field": field},
    )


def _pattern(resource: str) -> re.Pattern[str]:
    """An API Gateway resource (`/tasks/{id}`) as a regex over request paths."""
    return re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(resource.rstrip("/"))) + "/?$")


def register_error_handlers(app: APIGatewayRestResolver, methods: Mapping[str, frozenset[str]]) -> None:
    """Every exception -> HTTP status + `{"error", "message", "field"}`. `methods` are the app's
    routes (resource -> methods): a path a route matches under another method is a 405."""
    allowed = [(resource, _pattern(resource), route_methods) for resource, route_methods in methods.items()]

    @app.exception_handler(NextTickError)
    def domain_error(exc: NextTickError) -> Response[Any]:
        return error_response(exc.code, exc.message, exc.field)

    @app.exception_handler(MalformedRequest)
    def malformed(exc: MalformedRequest) -> Response[Any]:
        return error_response(exc.code, exc.message, exc.field)

    @app.exception_handler(RequestValidationError)
    def invalid_request(exc: RequestValidationError) -> Response[Any]:
        return _validation_response(exc.errors())

    @app.exception_handler(RequestUnsupportedContentType)
    def unsupported_media_type(exc: RequestUnsupportedContentType) -> Response[Any]:
        return error_response(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE, "Content-Type: send application/json", "Content-Type"
        )

    @app.exception_handler([UnicodeDecodeError, binascii.Error])
    def undecodable_body(exc: Exception) -> Response[Any]:
        return error_response(ErrorCode.MALFORMED, "body: not valid UTF-8 text", "body")

    @app.exception_handler(NotFoundError)
    def not_found(exc: NotFoundError) -> Response[Any]:
        method = app.current_event.http_method.upper()
        path = app.current_event.path
        for resource, pattern, route_methods in allowed:
            if pattern.match(path) and method not in route_methods:
                listed = ", ".join(sorted(route_methods))
                response = error_response(
                    ErrorCode.METHOD_NOT_ALLOWED, f"method: {resource} allows {listed}", "method"
                )
                response.headers["Allow"] = listed
                return response
        return error_response(ErrorCode.NOT_FOUND, f"path: no route {path!r}", "path")

    @app.exception_handler(list(AWS_FAILURES))
    def aws_failure(exc: Exception) -> Response[Any]:
        log_failure("AWS call failed", exc)
        return error_response(ErrorCode.UNAVAILABLE, "service temporarily unavailable; retry", None)

    @app.exception_handler(Exception)
    def unexpected(exc: Exception) -> Response[Any]:
        log_failure("unhandled error", exc)
        return error_response(ErrorCode.INTERNAL, "internal error", None)


def _validation_response(errors: Sequence[Any]) -> Response[Any]:
    first: dict[str, Any] = errors[0] if errors else {"loc": ("body",), "type": "invalid", "msg": "invalid"}
    if first.get("type") == "json_invalid":
        detail = (first.get("ctx") or {}).get("error", "invalid JSON")
        return error_response(ErrorCode.MALFORMED, f"body: malformed JSON ({detail})", "body")
    field = _field_of(tuple(first.get("loc") or ()))
    if first.get("type") == "missing" and field == "body":
        return error_response(ErrorCode.VALIDATION, "body: a JSON object is required", "body")
    same_field = [e for e in errors if _field_of(tuple(e.get("loc") or ())) == field]
    message = f"{field}: {_explain(same_field)}"
    if len(errors) > 1:
        # (an optional body's `None` alternative fails too: not a field of the client's)
        rest = [e for e in errors[1:] if e.get("type") != "none_required"]
        others = sorted({_field_of(tuple(e.get("loc") or ())) for e in rest} - {field})
        if others:
            message += f" (also invalid: {', '.join(others)})"
    return error_response(ErrorCode.VALIDATION, message, field)


def _field_of(location: tuple[Any, ...]) -> str:
    if not location:
        return "body"
    if location[0] == "header" and len(location) > 1:
        return "-".join(part.capitalize() for part in str(location[1]).split("-"))
    if location[0] == "body" and len(location) > 2 and str(location[1])[:1].isupper():
        return str(location[2])  # an optional body (`Model | None`): pydantic names the model first
    if len(location) > 1 and location[0] in ("body", "query", "path"):
        return str(location[1])
    return str(location[0])


def _explain(errors: list[dict[str, Any]]) -> str:
    """What is wrong with one field, in words.

    A union field has one error per member: the telling one is not a type mismatch (`every: 0`
    is too small, not "should be a string"). A pattern is described, never quoted."""
    error = next(
        (e for e in errors if not str(e.get("type")).endswith("_type") and e.get("type") != "none_required"),
        errors[0] if errors else {},
    )
    context = error.get("ctx") or {}
    if error.get("type") == "string_pattern_mismatch":
        return PATTERN_MESSAGES.get(context.get("pattern", ""), "has an invalid format")
    if error.get("type") == "value_error" and "error" in context:
        return str(context["error"])
    return str(error.get("msg", "invalid value"))


def _clip(text: str, limit: int, *, tail: bool = False) -> str:
    if len(text) <= limit:
        return text
    return f"...{text[-limit:]}" if tail else f"{text[:limit]}... ({len(text)} chars)"


def log_failure(message: str, exc: BaseException) -> None:
    """Log an unexpected exception in one bounded line: its type, its message and its innermost
    frames, each clipped."""
    frames = "".join(traceback.format_exception(exc, limit=-LOGGED_FRAMES, chain=False))
    logger.error(
        message,
        extra={
            "error": _clip(f"{type(exc).__name__}: {exc}", MAX_LOGGED_CHARS // 3),
            "traceback": _clip(frames, MAX_LOGGED_CHARS, tail=True),
        },
    )
