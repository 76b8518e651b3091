"""The steering routes: pause, resume, skip and run-now, each a POST on a task that answers it."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.request import Request
from pydantic.json_schema import SkipJsonSchema

from lambdas.api.models import ResumeRequest, SkipRequest
from lambdas.api.requests import expected_version
from lambdas.api.routes.routing import (
    CurrentEditor,
    IfMatch,
    TaskId,
    documented_errors,
    documented_task,
    route_on,
    task_response,
)
from nexttick.errors import ValidationError

router = Router()
_route = route_on(router)
_STEER_ERRORS = documented_errors(400, 404, 409, 412, 415, 422)


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
    responses={200: documented_task("The paused task.", links=True), **_STEER_ERRORS},
)
def pause_task(id: TaskId, editor: CurrentEditor, if_match: IfMatch = None) -> Response[Any]:
    return task_response(editor.pause(id, expected_version=expected_version(if_match)))


@_route(
    "POST",
    "/tasks/<id>/resume",
    summary="Resume a paused task",
    operation_id="resumeTask",
    responses={
        200: documented_task(
            "The resumed task (or, when nothing was left to run, the ended one).", links=True
        ),
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
    return task_response(editor.resume(id, expected_version=expected_version(if_match), **options))


@_route(
    "POST",
    "/tasks/<id>/skip",
    summary="Skip the next occurrences of a task",
    operation_id="skipTask",
    description="Skips the next `count` occurrences of a pending or paused task; a one-shot task's only "
    "occurrence is skipped and the task ends `skipped`. An occurrence already running completes.",
    responses={
        200: documented_task("The task, due at its next kept occurrence.", links=True),
        **_STEER_ERRORS,
    },
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
    return task_response(editor.skip(id, count=count, expected_version=expected_version(if_match)))


@_route(
    "POST",
    "/tasks/<id>/run-now",
    summary="Run one extra occurrence now",
    operation_id="runTaskNow",
    description="One extra occurrence of a pending or paused task, now, with its own idempotency key "
    "(its scheduled time is now); the schedule is unchanged. On a failed task it is a retry: when "
    "it succeeds, the task has succeeded. 409 while an earlier one still waits.",
    responses={
        200: documented_task("The task; `run_now_at` says when the extra occurrence runs.", links=True),
        **_STEER_ERRORS,
    },
)
def run_task_now(id: TaskId, editor: CurrentEditor, if_match: IfMatch = None) -> Response[Any]:
    return task_response(editor.run_now(id, expected_version=expected_version(if_match)))
