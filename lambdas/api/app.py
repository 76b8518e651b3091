"""The HTTP API: a Powertools REST resolver, validated by pydantic models, over the editor library.

Routes stay thin (parse -> editor call -> JSON); every error becomes a JSON body
`{"error", "message", "field"}` in ONE place (`_register_error_handlers`). Nothing a client sends
yields a 5xx; AWS failures answer 503 and unexpected bugs 500, both with a generic message.
"""

from __future__ import annotations

import binascii
import json
import re
import threading
import traceback
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.models import Example, Server
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema
from pynamodb.exceptions import PynamoDBException

from editor import Editor, TaskChanges, TaskSpec
from editor.models import Task
from lambdas.api.models import (
    CREATE_EXAMPLES,
    CURSOR_REGEX,
    IF_MATCH_REGEX,
    PATTERN_MESSAGES,
    TASK_ID_REGEX,
    UPDATE_EXAMPLES,
    CreateTaskRequest,
    ErrorCode,
    ErrorOut,
    Health,
    ListableStatus,
    TaskOut,
    TaskPage,
    UpdateTaskRequest,
)
from nexttick.constants import MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH
from nexttick.errors import ConflictError, NextTickError, VersionMismatchError
from nexttick.observability import logger
from nexttick.store import TaskStatus

TITLE = "nexttick"
API_VERSION = "1.0.0"
DESCRIPTION = """\
Schedule work for a future time: one-shot (`due`, `delay_seconds`) or recurring (`cron`, `every`).

* Every error is a JSON object `{"error", "message", "field"}`; `message` starts with the offending
  field. 400 malformed body (not JSON, not UTF-8), 404 unknown task or route, 405 wrong method,
  409 conflict, 412 stale `If-Match`, 413 payload over 256 KiB, 415 not JSON, 422 invalid field
  (body field, query parameter, path id or `If-Match`; a `payload` nested deeper than 32 levels
  of objects/arrays, the payload object being the first). Nothing a client sends yields a 5xx.
* Every task response carries `ETag: "<version>"`; send `If-Match: <version>` (quoted or not) with
  PATCH / DELETE for a compare-and-set change (412 on mismatch).
* `GET /tasks` lists the queue - `pending` and `running` tasks in due order, with cursor
  pagination. Finished tasks (`succeeded`, `failed`, `cancelled`, `skipped`) are read by id;
  `status` accepts only `pending` or `running` (422 otherwise).
* Behind API Gateway the API is IAM-authorised (SigV4).
"""
# A request body larger than this is refused before parsing (the payload limit applies after).
MAX_BODY_BYTES = 4 * MAX_PAYLOAD_BYTES
# The body object is one level above its fields: a payload at the limit is this deep in the body.
MAX_BODY_DEPTH = MAX_PAYLOAD_DEPTH + 1
_JSON_SPECIAL = re.compile(r'["\[\]{}]')
_JSON_STRING_REST = re.compile(r'(?:[^"\\]|\\.)*+"', re.DOTALL)
_FIELD_NAME = re.compile(r"^[a-z_]{1,64}$")
# A cancel reads the task, then cancels that version; a task changing in between is read again.
CANCEL_ATTEMPTS = 20
# Unexpected errors are logged clipped: a RecursionError's traceback, or an error quoting the request,
# would otherwise make one log line of megabytes.
LOGGED_FRAMES = 10
MAX_LOGGED_CHARS = 3000
_ROUTES: dict[str, tuple[re.Pattern[str], frozenset[str]]] = {
    "/": (re.compile(r"^/$"), frozenset({"GET"})),
    "/tasks": (re.compile(r"^/tasks/?$"), frozenset({"GET", "POST"})),
    "/tasks/{id}": (re.compile(r"^/tasks/[^/]+/?$"), frozenset({"GET", "PATCH", "DELETE"})),
    "/health": (re.compile(r"^/health/?$"), frozenset({"GET"})),
    "/openapi.json": (re.compile(r"^/openapi\.json$"), frozenset({"GET"})),
    "/docs": (re.compile(r"^/docs$"), frozenset({"GET"})),
}
# API Gateway resources of the API (the local gateway fills `resource` / `pathParameters` from them).
RESOURCES = tuple(_ROUTES)
_STATUS_CODES = {
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


TaskId = Annotated[str, Path(pattern=TASK_ID_REGEX, description="The task id.")]
IfMatch = Annotated[
    Annotated[str, Field(pattern=IF_MATCH_REGEX)] | SkipJsonSchema[None],
    Header(
        alias="If-Match",
        description='Expected task version (`3` or `"3"`); 412 if the task is at another version.',
    ),
]


class MalformedRequest(Exception):
    """The request body cannot be read (not acceptable JSON, or far too large): 400 / 413."""

    def __init__(self, message: str, field: str, code: ErrorCode = ErrorCode.MALFORMED) -> None:
        super().__init__(message)
        self.message, self.field, self.code = message, field, code


def _error_response(code: ErrorCode, message: str, field: str | None) -> Response[Any]:
    status = _STATUS_CODES[code]
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body={"error": code.value, "message": message, "field": field},
    )


def _errors(*statuses: int) -> Any:
    descriptions = {
        400: "Malformed body: not JSON (NaN, Infinity and absurd nesting included) or not UTF-8.",
        404: "Unknown task (or route).",
        409: "Conflict: the task is not pending, or the client id holds a different task.",
        412: "`If-Match` does not match the task's current version.",
        413: "Payload larger than 256 KiB serialised.",
        415: "The body is not `application/json`.",
        422: "Invalid field; `field` names it.",
    }
    return {
        s: {"description": descriptions[s], "content": {"application/json": {"model": ErrorOut}}}
        for s in statuses
    }


_ETAG_HEADER = {
    "description": "The task's version, quoted; send it back as `If-Match`.",
    "schema": {"type": "string", "pattern": '^"[0-9]+"$'},
}
_TASK_LINKS = {
    "GetTask": {"operationId": "getTask", "parameters": {"id": "$response.body#/id"}},
    "UpdateTask": {"operationId": "updateTask", "parameters": {"id": "$response.body#/id"}},
    "CancelTask": {"operationId": "cancelTask", "parameters": {"id": "$response.body#/id"}},
}


def _examples(examples: dict[str, dict[str, Any]]) -> dict[str, Example]:
    return {name: Example(**example) for name, example in examples.items()}


def _base_path(app: APIGatewayRestResolver) -> str:
    """What precedes the routes in the URL the client called: `/v1` through API Gateway's stage URL,
    empty locally. The same base Powertools gives Swagger UI's `servers`."""
    return app._get_base_path()


def _task(description: str, *, created: bool = False, links: bool = False) -> Any:
    """The OpenAPI response of an operation answering with one task."""
    headers: dict[str, Any] = {"ETag": _ETAG_HEADER}
    if created:
        headers["Location"] = {"description": "The task's URL.", "schema": {"type": "string"}}
    response: dict[str, Any] = {
        "description": description,
        "headers": headers,
        "content": {"application/json": {"model": TaskOut}},
    }
    if links:
        response["links"] = _TASK_LINKS
    return response


def _task_response(task: Task, status: int = 200, base_path: str = "") -> Response[Any]:
    headers = {"ETag": f'"{task.version}"'}
    if status == 201:
        headers["Location"] = f"{base_path}/tasks/{task.id}"
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=task.to_dict(), headers=headers
    )


def _occurrence_due(task: Task, now: datetime) -> bool:
    """Whether the queued occurrence of a task read just before its cancel was due by `now`, taken
    after the cancel committed. A worker claims an occurrence only once due and reads the task right
    after its claim: if the cancel committed before the occurrence was due, no worker can run it."""
    if task.status not in (TaskStatus.PENDING, TaskStatus.RUNNING):
        return False
    run_at = task.next_attempt_at or task.due
    return run_at is not None and run_at <= now


def _expected_version(if_match: str | None) -> int | None:
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


def _json_body(text: str) -> Any:
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


def _field_of(location: tuple[Any, ...]) -> str:
    if not location:
        return "body"
    if location[0] == "header" and len(location) > 1:
        return "-".join(part.capitalize() for part in str(location[1]).split("-"))
    if len(location) > 1 and location[0] in ("body", "query", "path"):
        return str(location[1])
    return str(location[0])


class _JsonOnlyValidation(OpenAPIRequestValidationMiddleware):
    """Powertools' request validation, reading bodies as JSON only (it would also parse forms and
    multipart, which the API does not offer): any other media type is a 415."""

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


def build_app(editor_factory: Callable[[], Editor]) -> APIGatewayRestResolver:
    """The API as a Powertools resolver. `editor_factory` is called once, on first use."""
    app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=_json_body)
    app._request_validation_middleware = _JsonOnlyValidation()  # JSON bodies only (see class)
    editor_lock = threading.Lock()
    editors: list[Editor] = []

    def editor() -> Editor:
        if not editors:
            with editor_lock:
                if not editors:
                    editors.append(editor_factory())
        return editors[0]

    @app.post(
        "/tasks",
        summary="Schedule a task",
        operation_id="createTask",
        responses={
            201: _task("Created.", created=True, links=True),
            200: _task(
                "An identical create with this client `id` already exists; it is returned.", links=True
            ),
            **_errors(400, 409, 413, 415, 422),
        },
    )
    def create_task(
        body: Annotated[CreateTaskRequest, Body(openapi_examples=_examples(CREATE_EXAMPLES))],
    ) -> Response[Any]:
        fields = body.model_dump(exclude_none=True)
        result = editor().create(TaskSpec(**fields))
        return _task_response(result.task, 201 if result.created else 200, _base_path(app))

    @app.get(
        "/tasks",
        summary="List queued tasks (pending / running) in due order",
        operation_id="listTasks",
        description="The queue, earliest due first: `pending` and `running` tasks only (finished tasks "
        "- succeeded, failed, cancelled, skipped - are read by id). Follow `next_cursor` for more.",
        responses={
            200: {"description": "One page.", "content": {"application/json": {"model": TaskPage}}},
            **_errors(422),
        },
    )
    def list_tasks(
        status: Annotated[
            ListableStatus | SkipJsonSchema[None],
            Query(description="Only queued tasks in this status; finished tasks are read by id."),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=500, description="Page size.")] = 50,
        cursor: Annotated[
            Annotated[str, Field(max_length=512, pattern=CURSOR_REGEX)] | SkipJsonSchema[None],
            Query(description="`next_cursor` of a previous page."),
        ] = None,
    ) -> Response[Any]:
        page = editor().list(status=status.value if status else None, limit=limit, cursor=cursor)
        return Response(
            status_code=200,
            content_type=content_types.APPLICATION_JSON,
            body={"items": [t.to_dict() for t in page.items], "next_cursor": page.next_cursor},
        )

    @app.get(
        "/tasks/<id>",
        summary="Read a task",
        operation_id="getTask",
        responses={
            200: _task("The task."),
            **_errors(404, 422),
        },
    )
    def get_task(id: TaskId) -> Response[Any]:
        return _task_response(editor().get(id))

    @app.patch(
        "/tasks/<id>",
        summary="Change the time, payload or policy of a pending task",
        operation_id="updateTask",
        responses={
            200: _task("The changed task.", links=True),
            **_errors(400, 404, 409, 412, 413, 415, 422),
        },
    )
    def update_task(
        id: TaskId,
        body: Annotated[UpdateTaskRequest, Body(openapi_examples=_examples(UPDATE_EXAMPLES))],
        if_match: IfMatch = None,
    ) -> Response[Any]:
        expected = _expected_version(if_match)
        changes = TaskChanges(**{name: getattr(body, name) for name in body.model_fields_set})
        return _task_response(editor().modify(id, changes, expected_version=expected))

    @app.delete(
        "/tasks/<id>",
        summary="Cancel a pending task",
        operation_id="cancelTask",
        description="204: cancelled before its occurrence was due; nothing of the task runs any more. "
        "202: cancelled while an occurrence was already due (claimed, running, or about to be): that "
        "one occurrence may still complete, and its outcome then shows in `last_run`; nothing after "
        "it runs. Cancelling a cancelled task answers 204 again.",
        responses={
            204: {"description": "Cancelled; nothing of the task runs any more.", "content": {}},
            202: _task("Cancelled; the occurrence already due may still complete, nothing after it runs."),
            **_errors(404, 409, 412, 422),
        },
    )
    def cancel_task(id: TaskId, if_match: IfMatch = None) -> Response[Any]:
        expected = _expected_version(if_match)
        for _ in range(CANCEL_ATTEMPTS):
            before = editor().get(id)
            try:
                task = editor().cancel(id, expected_version=before.version if expected is None else expected)
            except VersionMismatchError:
                if expected is not None:
                    raise
                continue  # changed between the read and the cancel (e.g. a run completed): look again
            if _occurrence_due(before, editor().clock.now()):
                return _task_response(task, 202)
            return Response(status_code=204, body="")
        raise ConflictError("id: task is changing too often; retry", field="id")

    @app.get(
        "/health",
        summary="Liveness",
        operation_id="health",
        responses={200: {"description": "Up.", "content": {"application/json": {"model": Health}}}},
    )
    def health() -> Response[Any]:
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body={"status": "ok"})

    @app.get("/openapi.json", include_in_schema=False)
    def openapi_json() -> Response[Any]:
        return Response(
            status_code=200,
            content_type=content_types.APPLICATION_JSON,
            body=openapi_text(app, server_url=_base_path(app) or "/"),
        )

    @app.get("/", include_in_schema=False)
    def root() -> Response[Any]:
        """A browser opening the API's URL lands on its documentation."""
        return Response(status_code=302, body="", headers={"Location": f"{_base_path(app)}/docs"})

    app.enable_swagger(path="/docs", title=TITLE, version=API_VERSION, description=DESCRIPTION)
    _register_error_handlers(app)
    return app


def _register_error_handlers(app: APIGatewayRestResolver) -> None:
    """Every exception -> HTTP status + `{"error", "message", "field"}`, in this one place."""

    @app.exception_handler(NextTickError)
    def domain_error(exc: NextTickError) -> Response[Any]:
        return _error_response(exc.code, exc.message, exc.field)

    @app.exception_handler(MalformedRequest)
    def malformed(exc: MalformedRequest) -> Response[Any]:
        return _error_response(exc.code, exc.message, exc.field)

    @app.exception_handler(RequestValidationError)
    def invalid_request(exc: RequestValidationError) -> Response[Any]:
        errors = exc.errors()
        first: dict[str, Any] = (
            errors[0] if errors else {"loc": ("body",), "type": "invalid", "msg": "invalid"}
        )
        if first.get("type") == "json_invalid":
            detail = (first.get("ctx") or {}).get("error", "invalid JSON")
            return _error_response(ErrorCode.MALFORMED, f"body: malformed JSON ({detail})", "body")
        field = _field_of(tuple(first.get("loc") or ()))
        if first.get("type") == "missing" and field == "body":
            return _error_response(ErrorCode.VALIDATION, "body: a JSON object is required", "body")
        same_field = [e for e in errors if _field_of(tuple(e.get("loc") or ())) == field]
        message = f"{field}: {_explain(same_field)}"
        if len(errors) > 1:
            others = sorted({_field_of(tuple(e.get("loc") or ())) for e in errors[1:]} - {field})
            if others:
                message += f" (also invalid: {', '.join(others)})"
        return _error_response(ErrorCode.VALIDATION, message, field)

    @app.exception_handler(RequestUnsupportedContentType)
    def unsupported_media_type(exc: RequestUnsupportedContentType) -> Response[Any]:
        return _error_response(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE, "Content-Type: send application/json", "Content-Type"
        )

    @app.exception_handler([UnicodeDecodeError, binascii.Error])
    def undecodable_body(exc: Exception) -> Response[Any]:
        return _error_response(ErrorCode.MALFORMED, "body: not valid UTF-8 text", "body")

    @app.exception_handler(NotFoundError)
    def not_found(exc: NotFoundError) -> Response[Any]:
        method = app.current_event.http_method.upper()
        path = app.current_event.path
        for template, (pattern, methods) in _ROUTES.items():
            if pattern.match(path) and method not in methods:
                response = _error_response(
                    ErrorCode.METHOD_NOT_ALLOWED,
                    f"method: {template} allows {', '.join(sorted(methods))}",
                    "method",
                )
                response.headers["Allow"] = ", ".join(sorted(methods))
                return response
        return _error_response(ErrorCode.NOT_FOUND, f"path: no route {path!r}", "path")

    @app.exception_handler([ClientError, BotoCoreError, PynamoDBException])
    def aws_failure(exc: Exception) -> Response[Any]:
        log_failure("AWS call failed", exc)
        return _error_response(ErrorCode.UNAVAILABLE, "service temporarily unavailable; retry", None)

    @app.exception_handler(Exception)
    def unexpected(exc: Exception) -> Response[Any]:
        log_failure("unhandled error", exc)
        return _error_response(ErrorCode.INTERNAL, "internal error", None)


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


def openapi_document(app: APIGatewayRestResolver, server_url: str = "/") -> dict[str, Any]:
    """The OpenAPI document generated from the routes and models; `server_url` prefixes its paths."""
    text = app.get_openapi_json_schema(
        title=TITLE, version=API_VERSION, description=DESCRIPTION, servers=[Server(url=server_url)]
    )
    document: dict[str, Any] = json.loads(text)
    # Powertools always adds its own validation-error schemas; our errors use ErrorOut instead.
    for operations in document["paths"].values():
        for operation in operations.values():
            for status in [
                s for s, r in operation["responses"].items() if "HTTPValidationError" in json.dumps(r)
            ]:
                del operation["responses"][status]
    schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})
    used: set[str] = set()
    pending = _refs(document["paths"])
    while pending:
        name = pending.pop()
        if name not in used:
            used.add(name)
            pending |= _refs(schemas.get(name, {}))
    for name in set(schemas) - used:
        del schemas[name]
    return document


def _refs(node: Any) -> set[str]:
    """Names of the component schemas a document fragment refers to."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def openapi_text(app: APIGatewayRestResolver, server_url: str = "/") -> str:
    """The document as committed in docs/openapi.json: sorted keys, indent 2, trailing newline."""
    document = openapi_document(app, server_url)
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


__all__ = ["RESOURCES", "build_app", "log_failure", "openapi_document", "openapi_text"]
