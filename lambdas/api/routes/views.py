"""The read-only views computed from a task's runs and schedule: its run history, its next
occurrences, and the lateness of every task's recent runs."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from editor.models import LatenessWindow, RunPage, UpcomingRuns
from lambdas.api.routes.routing import (
    CurrentEditor,
    Cursor,
    TaskId,
    answer,
    documented,
    documented_errors,
    route_on,
)
from nexttick import constants
from nexttick.schedules import MAX_UPCOMING

router = Router()
_route = route_on(router)


@_route(
    "GET",
    "/tasks/<id>/runs",
    summary="Read a task's run history",
    operation_id="listTaskRuns",
    description="Every attempt of every occurrence, newest first: when it was due, claimed, started "
    "and finished, its outcome and error, its idempotency key and lateness. The newest `run_history` "
    "runs (a deployment setting, 100 by default) are kept; `lateness` summarises all of them.",
    responses={
        200: documented("One page.", RunPage),
        **documented_errors(404, 422),
    },
)
def list_task_runs(
    id: TaskId,
    editor: CurrentEditor,
    limit: Annotated[int, Query(ge=1, le=constants.MAX_RUNS_PAGE_SIZE, description="Page size.")] = 20,
    cursor: Cursor = None,
) -> Response[Any]:
    return answer(editor.runs(id, limit=limit, cursor=cursor))


@_route(
    "GET",
    "/tasks/<id>/upcoming",
    summary="List a task's next occurrences",
    operation_id="listTaskUpcoming",
    description="The next `count` occurrences from the one due next, in UTC and on the wall clock of "
    "the task's zone, each marked where a DST change shifts or repeats its wall time, with the wall "
    "times a gap skips. Empty once the task is finished.",
    responses={
        200: documented("The occurrences.", UpcomingRuns),
        **documented_errors(404, 422),
    },
)
def list_task_upcoming(
    id: TaskId,
    editor: CurrentEditor,
    count: Annotated[int, Query(ge=1, le=MAX_UPCOMING, description="How many.")] = 10,
) -> Response[Any]:
    return answer(editor.upcoming(id, count=count))


@_route(
    "GET",
    "/lateness",
    summary="Lateness of recent runs, all tasks",
    operation_id="getLateness",
    description="A histogram of how late every run of the last `minutes` started (the workers add "
    "up each minute's runs in fixed buckets), with percentiles and the count of runs over 1 s late.",
    responses={
        200: documented("The window.", LatenessWindow),
        **documented_errors(422),
    },
)
def get_lateness(
    editor: CurrentEditor,
    minutes: Annotated[
        int, Query(ge=1, le=constants.MAX_LATENESS_MINUTES, description="The window, up to now.")
    ] = 60,
) -> Response[Any]:
    return answer(editor.lateness(minutes=minutes))
