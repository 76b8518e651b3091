"""Reading a request: the body (bounded size and nesting, strict JSON, JSON media types only) and
the `If-Match` header. Anything unreadable is refused here, before pydantic sees it."""

from __future__ import annotations

import json
import re
from typing import Any

from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from lambdas.api.models import ErrorCode
from nexttick.constants import MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH

# A request body larger than this is refused before parsing (the payload limit applies after).
MAX_BODY_BYTES = 4 * MAX_PAYLOAD_BYTES
# The body object is one level above its fields: a payload at the limit is this deep in the body.
MAX_BODY_DEPTH = MAX_PAYLOAD_DEPTH + 1
_JSON_SPECIAL = re.compile(r'["\[\]{}]')
_JSON_STRING_REST = re.compile(r'(?:[^"\\]|\\.)*+"', re.DOTALL)
_FIELD_NAME = re.compile(r"^[a-z_]{1,64}$")


class MalformedRequest(Exception):
    """The request body cannot be read (not acceptable JSON, or far too large): 400 / 413."""

    def __init__(self, message: str, field: str, code: ErrorCode = ErrorCode.MALFORMED) -> None:
        super().__init__(message)
        self.message, self.field, self.code = message, field, code


def expected_version(if_match: str | None) -> int | None:
    """`If-Match: 3`, `"3"` or `W/"3"` (validated against IF_MATCH_REGEX); `*` matches any version."""
    digits = "".join(ch for ch in if_match or "" if ch in "0123456789")
    return int(digits) if digits else None


def _too_deep(text: str, limit: int) -> str | None:
    """The top-level field of a JSON body whose value nests objects/arrays beyond `limit` levels
    (the body object being the first), `body` when the body itself does, else None.

    A linear scan without recursion, before the parser (whose recursion the depth would drive):
    unterminated strings end it (the parser then reports the malformed body)."""
    if text.count("{") + text.count("[") <= limit:
        return None
    depth, key, position = 0, "body", 0
    while (match := _JSON_SPECIAL.search(text, position)) is not None:
        char, position = match.group(), match.end()
        if char == '"':
            end = _JSON_STRING_REST.match(text, position)
            if end is None:
                return None
            if depth == 1:
                key = text[position : end.end() - 1]  # the last string at the top level: the key
            position = end.end()
        elif char in "[{":
            if depth == 0 and char == "[":
                return "body"  # not an object at all
            depth += 1
            if depth > limit:
                return key if _FIELD_NAME.match(key) else "body"
        else:
            depth -= 1
    return None


def json_body(text: str) -> Any:
    """Deserialise a request body: bounded size and nesting, strict JSON (no NaN / Infinity)."""
    if len(text) > MAX_BODY_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES:
        raise MalformedRequest(
            f"body: larger than {MAX_BODY_BYTES} bytes", field="body", code=ErrorCode.TOO_LARGE
        )
    deep = _too_deep(text, MAX_BODY_DEPTH)
    if deep == "body":
        raise MalformedRequest(f"body: nested deeper than {MAX_BODY_DEPTH} levels", field="body")
    if deep is not None:
        raise MalformedRequest(
            f"{deep}: nested deeper than {MAX_PAYLOAD_DEPTH} levels", field=deep, code=ErrorCode.VALIDATION
        )

    def reject_constant(name: str) -> Any:
        raise json.JSONDecodeError(f"{name} is not valid JSON", text, 0)

    try:
        return json.loads(text, parse_constant=reject_constant)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:  # e.g. an integer of 5,000 digits, nesting too deep
        raise MalformedRequest(f"body: not acceptable JSON ({type(exc).__name__})", field="body") from None


class JsonOnlyValidation(OpenAPIRequestValidationMiddleware):
    """Powertools' request validation, reading bodies as JSON only (it would also parse forms and
    multipart, which the API does not offer): any other media type is a 415.

    Powertools runs its validation before every middleware an app can add, so the media type can
    only be checked here, in the validation middleware the resolver is given."""

    # Powertools has no public way to replace its request validation (or run a middleware before
    # it): `_get_body` and `_parse_json_data` are checked by tests/unit/test_powertools_internals.py.

    def _get_body(self, app: Any) -> dict[str, Any]:
        media_type = app.current_event.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type and media_type != "application/json" and not media_type.endswith("+json"):
            raise RequestUnsupportedContentType(
                "Unsupported content type",
                errors=[{"type": "unsupported_content_type", "loc": ("body",), "msg": media_type}],
            )
        body = self._parse_json_data(app)
        if body is not None and not isinstance(body, dict):  # Powertools would unwrap a list
            raise RequestValidationError(
                [{"type": "model_attributes_type", "loc": ("body",), "msg": "must be a JSON object"}]
            )
        return body
