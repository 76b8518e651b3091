"""The API's routes, on one Powertools `Router`: each parses its request, calls the editor and
answers JSON. No logic beyond that lives here; errors are raised and mapped in `errors.py`.

The editor and the app reach a route through Powertools dependencies (`Depends`), which
`build_app` binds per app with `dependency_overrides`."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.models import Example
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.event_handler.request import Request
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from editor import Editor, TaskChanges, TaskSpec
from editor.models import LatenessWindow, Page, Preview, RunPage, Task, UpcomingRuns, as_json
from lambdas.api.models import (
    CREATE_EXAMPLES,
    CURSOR_REGEX,
    IF_MATCH_REGEX,
    TASK_ID_REGEX,
    UPDATE_EXAMPLES,
    CreateTaskRequest,
    ErrorOut,
    Health,
    ListableStatus,
    ResumeRequest,
    SkipRequest,
    UpdateTaskRequest,
)
from lambdas.api.openapi import openapi_text
from lambdas.api.requests import expected_version
from nexttick import constants
from nexttick.errors import ValidationError
from nexttick.schedules import MAX_UPCOMING

DOCS_PATH = "/docs"

router = Router()
# Every route's rule and methods, as registered: the 405 answers and the API Gateway resources.
ROUTE_METHODS: dict[str, set[str]] = {}


def _route(method: str, rule: str, **options: Any) -> Any:
    ROUTE_METHODS.setdefault(rule, set()).add(method)
    return router.route(rule, method, **options)


def current_editor() -> Editor:
    """The editor of the app serving the request (bound by `build_app`)."""
    raise LookupError("no editor bound: build the app with lambdas.api.app.build_app")


def current_app() -> APIGatewayRestResolver:
    """The app serving the request (bound by `build_app`): its OpenAPI document."""
    raise LookupError("no app bound: build the app with lambdas.api.app.build_app")


CurrentEditor = Annotated[Editor, Depends(current_editor)]
TaskId = Annotated[str, Path(pattern=TASK_ID_REGEX, description="The task id.")]
Cursor = Annotated[
    Annotated[str, Field(max_length=512, pattern=CURSOR_REGEX)] | SkipJsonSchema[None],
    Query(description="`next_cursor` of a previous page."),
]
IfMatch = Annotated[
    Annotated[str, Field(pattern=IF_MATCH_REGEX)] | SkipJsonSchema[None],
    Header(
        alias="If-Match",
        description='Expected task version (`3` or `"3"`); 412 if the task is at another version.',
    ),
]
_ERROR_DESCRIPTIONS = {
    400: "Malformed body: not JSON (NaN, Infinity and absurd nesting included) or not UTF-8.",
    404: "Unknown task (or route).",
    409: "Conflict: the task's status does not allow this (`field: status`, e.g. a finished task), or "
    "the client id holds a different task.",
    412: "`If-Match` does not match the task's current version.",
    413: "Payload larger than 256 KiB serialised.",
    415: "The body is not `application/json`.",
    422: "Invalid field; `field` names it.",
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


def _errors(*statuses: int) -> Any:
    return {
        s: {"description": _ERROR_DESCRIPTIONS[s], "content": {"application/json": {"model": ErrorOut}}}
        for s in statuses
    }


def _documented(description: str, model: Any) -> dict[str, Any]:
    """The OpenAPI response of an operation answering one JSON `model`."""
    return {"description": description, "content": {"application/json": {"model": model}}}


def _answer(answer: Any) -> Response[Any]:
    """200 with an editor answer rendered as it is documented (its type is the response model)."""
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=as_json(answer),
    )


def _examples(examples: dict[str, dict[str, Any]]) -> dict[str, Example]:
    return {name: Example(**example) for name, example in examples.items()}


def _task(description: str, *, created: bool = False, links: bool = False) -> Any:
    """The OpenAPI response of an operation answering with one task."""
    headers: dict[str, Any] = {"ETag": _ETAG_HEADER}
    if created:
        headers["Location"] = {"description": "The task's URL.", "schema": {"type": "string"}}
    response: dict[str, Any] = {
        "description": description,
        "headers": headers,
        "content": {"application/json": {"model": Task}},
    }
    if links:
        response["links"] = _TASK_LINKS
    return response


def base_path(request: Request) -> str:
    """What precedes the routes in the URL the client called: `/<stage>` through API Gateway's stage
    URL, empty through a custom domain or locally (the path then does not start with the stage)."""
    event = request.resolved_event
    if not isinstance(event, APIGatewayProxyEvent):
        return ""
    context = event.request_context
    stage = context.stage
    if stage and stage != "$default" and (context.path or "").startswith(f"/{stage}"):
        return f"/{stage}"
    return ""


def _task_response(task: Task, status: int = 200, base: str = "") -> Response[Any]:
    headers = {"ETag": f'"{task.version}"'}
    if status == 201:
        headers["Location"] = f"{base}/tasks/{task.id}"
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=as_json(task),
        headers=headers,
    )


@_route(
    "POST",
    "/tasks",
    summary="Schedule a task",
    operation_id="createTask",
    description="With `dry_run=true` the body is validated exactly as for a create and the answer "
    "(200) is a preview: the task as it would be and its next five occurrences. Nothing is written.",
    responses={
        201: _task("Created.", created=True, links=True),
        200: {
            "description": "An identical create with this client `id` already exists; it is returned. "
            "With `dry_run=true`: the preview.",
            "content": {"application/json": {"model": Task | Preview}},
        },
        **_errors(400, 409, 413, 415, 422),
    },
)
def create_task(
    body: Annotated[CreateTaskRequest, Body(openapi_examples=_examples(CREATE_EXAMPLES))],
    editor: CurrentEditor,
    request: Request,
    dry_run: Annotated[bool, Query(description="Validate and preview; write nothing.")] = False,
) -> Response[Any]:
    spec = TaskSpec(**body.model_dump(exclude_none=True))
    if dry_run:
        preview = editor.preview(spec)
        return _answer(preview)
    result = editor.create(spec)
    return _task_response(result.task, 201 if result.created else 200, base_path(request))


@_route(
    "GET",
    "/tasks",
    summary="List queued tasks (pending / running) in due order",
    operation_id="listTasks",
    description="The queue, earliest due first: `pending` and `running` tasks only (finished tasks "
    "- succeeded, failed, cancelled, skipped - are read by id). Follow `next_cursor` for more.",
    responses={
        200: _documented("One page.", Page),
        **_errors(422),
    },
)
def list_tasks(
    editor: CurrentEditor,
    status: Annotated[
        ListableStatus | SkipJsonSchema[None],
        Query(description="Only queued tasks in this status; finished tasks are read by id."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="Page size.")] = 50,
    cursor: Cursor = None,
) -> Response[Any]:
    return _answer(editor.list(status=status.value if status else None, limit=limit, cursor=cursor))


@_route(
    "GET",
    "/tasks/<id>",
    summary="Read a task",
    operation_id="getTask",
    responses={200: _task("The task."), **_errors(404, 422)},
)
def get_task(id: TaskId, editor: CurrentEditor) -> Response[Any]:
    return _task_response(editor.get(id))


@_route(
    "GET",
    "/tasks/<id>/runs",
    summary="Read a task's run history",
    operation_id="listTaskRuns",
    description="Every attempt of every occurrence, newest first: when it was due, claimed, started "
    "and finished, its outcome and error, its idempotency key and lateness. The newest `run_history` "
    "runs (a deployment setting, 100 by default) are kept; `lateness` summarises all of them.",
    responses={
        200: _documented("One page.", RunPage),
        **_errors(404, 422),
    },
)
def list_task_runs(
    id: TaskId,
    editor: CurrentEditor,
    limit: Annotated[int, Query(ge=1, le=constants.MAX_RUNS_PAGE_SIZE, description="Page size.")] = 20,
    cursor: Cursor = None,
) -> Response[Any]:
    return _answer(editor.runs(id, limit=limit, cursor=cursor))


@_route(
    "GET",
    "/tasks/<id>/upcoming",
    summary="List a task's next occurrences",
    operation_id="listTaskUpcoming",
    description="The next `count` occurrences from the one due next, in UTC and on the wall clock of "
    "the task's zone, each marked where a DST change shifts or repeats its wall time, with the wall "
    "times a gap skips. Empty once the task is finished.",
    responses={
        200: _documented("The occurrences.", UpcomingRuns),
        **_errors(404, 422),
    },
)
def list_task_upcoming(
    id: TaskId,
    editor: CurrentEditor,
    count: Annotated[int, Query(ge=1, le=MAX_UPCOMING, description="How many.")] = 10,
) -> Response[Any]:
    return _answer(editor.upcoming(id, count=count))


@_route(
    "PATCH",
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
    editor: CurrentEditor,
    if_match: IfMatch = None,
) -> Response[Any]:
    changes = TaskChanges(**{name: getattr(body, name) for name in body.model_fields_set})
    return _task_response(editor.modify(id, changes, expected_version=expected_version(if_match)))


@_route(
    "DELETE",
    "/tasks/<id>",
    summary="Cancel a pending task",
    operation_id="cancelTask",
    description="204: cancelled before its occurrence could be claimed (a worker claims it at the "
    f"earliest {constants.CLAIM_AHEAD_SECONDS:g} s before it is due); nothing of the task runs any more. "
    "202: cancelled while an occurrence was claimable (claimed, running, or about to be): that "
    "one occurrence may still complete, and its outcome then shows in `last_run`; nothing after "
    "it runs. Cancelling a cancelled task answers 204 again.",
    responses={
        204: {"description": "Cancelled; nothing of the task runs any more.", "content": {}},
        202: _task("Cancelled; the occurrence already due may still complete, nothing after it runs."),
        **_errors(404, 409, 412, 422),
    },
)
def cancel_task(id: TaskId, editor: CurrentEditor, if_match: IfMatch = None) -> Response[Any]:
    task = editor.cancel(id, expected_version=expected_version(if_match))
    return _task_response(task, 202) if task.occurrence_may_run else Response(status_code=204, body="")


@_route(
    "GET",
    "/lateness",
    summary="Lateness of recent runs, all tasks",
    operation_id="getLateness",
    description="A histogram of how late every run of the last `minutes` started (the workers add "
    "up each minute's runs in fixed buckets), with percentiles and the count of runs over 1 s late.",
    responses={
        200: _documented("The window.", LatenessWindow),
        **_errors(422),
    },
)
def get_lateness(
    editor: CurrentEditor,
    minutes: Annotated[
        int, Query(ge=1, le=constants.MAX_LATENESS_MINUTES, description="The window, up to now.")
    ] = 60,
) -> Response[Any]:
    return _answer(editor.lateness(minutes=minutes))


_STEER_ERRORS = _errors(400, 404, 409, 412, 415, 422)


def _no_null_body(request: Request) -> None:
    """An optional body may be left out or be an object; a JSON `null` is neither (Powertools would
    take it for a missing body)."""
    if (request.resolved_event.body or "").strip() == "null":
        raise ValidationError("body: must be a JSON object, or left out", field="body")


@_route(
    "POST",
    "/tasks/<id>/pause",
    summary="Pause a pending task",
    operation_id="pauseTask",
    description="Nothing of its schedule runs until it is resumed; it keeps its next due time and its "
    "history (a pending retry starts over at that time). An occurrence already running completes.",
    responses={200: _task("The paused task.", links=True), **_STEER_ERRORS},
)
def pause_task(id: TaskId, editor: CurrentEditor, if_match: IfMatch = None) -> Response[Any]:
    return _task_response(editor.pause(id, expected_version=expected_version(if_match)))


@_route(
    "POST",
    "/tasks/<id>/resume",
    summary="Resume a paused task",
    operation_id="resumeTask",
    responses={
        200: _task("The resumed task (or, when nothing was left to run, the ended one).", links=True),
        **_STEER_ERRORS,
    },
)
def resume_task(
    id: TaskId,
    editor: CurrentEditor,
    request: Request,
    body: Annotated[ResumeRequest | SkipJsonSchema[None], Body()] = None,
    if_match: IfMatch = None,
) -> Response[Any]:
    _no_null_body(request)
    options = body.model_dump(exclude_none=True) if body is not None else {}
    return _task_response(editor.resume(id, expected_version=expected_version(if_match), **options))


@_route(
    "POST",
    "/tasks/<id>/skip",
    summary="Skip the next occurrences of a task",
    operation_id="skipTask",
    description="Skips the next `count` occurrences of a pending or paused task; a one-shot task's only "
    "occurrence is skipped and the task ends `skipped`. An occurrence already running completes.",
    responses={200: _task("The task, due at its next kept occurrence.", links=True), **_STEER_ERRORS},
)
def skip_task(
    id: TaskId,
    editor: CurrentEditor,
    request: Request,
    body: Annotated[SkipRequest | SkipJsonSchema[None], Body()] = None,
    if_match: IfMatch = None,
) -> Response[Any]:
    _no_null_body(request)
    count = body.count if body is not None and body.count is not None else 1
    return _task_response(editor.skip(id, count=count, expected_version=expected_version(if_match)))


@_route(
    "POST",
    "/tasks/<id>/run-now",
    summary="Run one extra occurrence now",
    operation_id="runTaskNow",
    description="One extra occurrence of a pending or paused task, now, with its own idempotency key "
    "(its scheduled time is now); the schedule is unchanged. On a failed task it is a retry: when "
    "it succeeds, the task has succeeded. 409 while an earlier one still waits.",
    responses={
        200: _task("The task; `run_now_at` says when the extra occurrence runs.", links=True),
        **_STEER_ERRORS,
    },
)
def run_task_now(id: TaskId, editor: CurrentEditor, if_match: IfMatch = None) -> Response[Any]:
    return _task_response(editor.run_now(id, expected_version=expected_version(if_match)))


@_route(
    "GET",
    "/health",
    summary="Liveness",
    operation_id="health",
    responses={200: _documented("Up.", Health)},
)
def health() -> Response[Any]:
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body={"status": "ok"})


@_route("GET", "/openapi.json", include_in_schema=False)
def openapi_json(
    app: Annotated[APIGatewayRestResolver, Depends(current_app)], request: Request
) -> Response[Any]:
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=openapi_text(app, server_url=base_path(request) or "/"),
    )


@_route("GET", "/", include_in_schema=False)
def root(request: Request) -> Response[Any]:
    """A browser opening the API's URL lands on its documentation."""
    return Response(status_code=302, body="", headers={"Location": f"{base_path(request)}{DOCS_PATH}"})
