"""The task routes: create (or preview), list the queue, read, change and cancel a task."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.request import Request
from pydantic.json_schema import SkipJsonSchema

from editor import QUEUED_STATUSES, TaskChanges, TaskSpec
from editor.models import Page, Preview, Task
from lambdas.api.models import (
    CREATE_EXAMPLES,
    UPDATE_EXAMPLES,
    CreateTaskRequest,
    ListableStatus,
    UpdateTaskRequest,
)
from lambdas.api.requests import expected_version
from lambdas.api.routes.routing import (
    CurrentEditor,
    Cursor,
    IfMatch,
    TaskId,
    answer,
    base_path,
    documented,
    documented_errors,
    documented_examples,
    documented_task,
    route_on,
    task_response,
)
from nexttick import constants

router = Router()
_route = route_on(router)


_QUEUED = " and ".join(f"`{status}`" for status in QUEUED_STATUSES)


@_route(
    "POST",
    "/tasks",
    summary="Schedule a task",
    operation_id="createTask",
    description="With `dry_run=true` the body is validated exactly as for a create and the answer "
    "(200) is a preview: the task as it would be and its next five occurrences. Nothing is written.",
    responses={
        201: documented_task("Created.", created=True, links=True),
        200: {
            "description": "An identical create with this client `id` already exists; it is returned. "
            "With `dry_run=true`: the preview.",
            "content": {"application/json": {"model": Task | Preview}},
        },
        **documented_errors(400, 409, 413, 415, 422),
    },
)
def create_task(
    body: Annotated[CreateTaskRequest, Body(openapi_examples=documented_examples(CREATE_EXAMPLES))],
    editor: CurrentEditor,
    request: Request,
    dry_run: Annotated[bool, Query(description="Validate and preview; write nothing.")] = False,
) -> Response[Any]:
    spec = TaskSpec(**body.model_dump(exclude_none=True))
    if dry_run:
        preview = editor.preview(spec)
        return answer(preview)
    result = editor.create(spec)
    return task_response(result.task, 201 if result.created else 200, base_path(request))


@_route(
    "GET",
    "/tasks",
    summary=f"List queued tasks ({' / '.join(QUEUED_STATUSES)}) in due order",
    operation_id="listTasks",
    description=f"The queue, earliest due first: {_QUEUED} tasks only (`x-queued-statuses`; finished "
    "tasks are read by id). Follow `next_cursor` for more.",
    openapi_extensions={"x-queued-statuses": list(QUEUED_STATUSES)},
    responses={
        200: documented("One page.", Page),
        **documented_errors(422),
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
    return answer(editor.list(status=status.value if status else None, limit=limit, cursor=cursor))


@_route(
    "GET",
    "/tasks/<id>",
    summary="Read a task",
    operation_id="getTask",
    responses={200: documented_task("The task."), **documented_errors(404, 422)},
)
def get_task(id: TaskId, editor: CurrentEditor) -> Response[Any]:
    return task_response(editor.get(id))


@_route(
    "PATCH",
    "/tasks/<id>",
    summary="Change the time, payload or policy of a pending task",
    operation_id="updateTask",
    responses={
        200: documented_task("The changed task.", links=True),
        **documented_errors(400, 404, 409, 412, 413, 415, 422),
    },
)
def update_task(
    id: TaskId,
    body: Annotated[UpdateTaskRequest, Body(openapi_examples=documented_examples(UPDATE_EXAMPLES))],
    editor: CurrentEditor,
    if_match: IfMatch = None,
) -> Response[Any]:
    changes = TaskChanges(**{name: getattr(body, name) for name in body.model_fields_set})
    return task_response(editor.modify(id, changes, expected_version=expected_version(if_match)))


@_route(
    "DELETE",
    "/tasks/<id>",
    summary="Cancel a pending task",
    operation_id="cancelTask",
    description="204: cancelled before its occurrence could be claimed (a worker claims it at the "
    f"earliest {constants.CLAIM_AHEAD_SECONDS:g} s before it is due); nothing of the task runs any more. "
    "202: cancelled while an occurrence was claimable (claimed, running, or about to be), its own or "
    "one a reschedule, pause or skip left running: that "
    "one occurrence may still complete, and its outcome then shows in `last_run`; nothing after "
    "it runs. Cancelling a cancelled task answers 204 again.",
    responses={
        204: {"description": "Cancelled; nothing of the task runs any more.", "content": {}},
        202: documented_task(
            "Cancelled; the occurrence already due may still complete, nothing after it runs."
        ),
        **documented_errors(404, 409, 412, 422),
    },
)
def cancel_task(id: TaskId, editor: CurrentEditor, if_match: IfMatch = None) -> Response[Any]:
    task = editor.cancel(id, expected_version=expected_version(if_match))
    return task_response(task, 202) if task.occurrence_may_run else Response(status_code=204, body="")
