"""What every route module is built from: the route registration that records each rule and method,
the dependencies `build_app` binds, the parameter types, the documented responses and the JSON
answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from aws_lambda_powertools.event_handler.request import Request
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from editor import Editor
from editor.models import Task, as_json
from lambdas.api.models import CURSOR_REGEX, IF_MATCH_REGEX, TASK_ID_REGEX, ErrorOut

# Every route's rule and methods, as registered on any router: the 405 answers and the API Gateway
# resources.
ROUTE_METHODS: dict[str, set[str]] = {}


def route_on(router: Router) -> Callable[..., Any]:
    """`router`'s route decorator, `(method, rule, **options)`, recording the route in
    `ROUTE_METHODS` so that no router's route is missing from the 405 answers."""

    def route(method: str, rule: str, **options: Any) -> Any:
        ROUTE_METHODS.setdefault(rule, set()).add(method)
        return router.route(rule, method, **options)

    return route


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


def documented_errors(*statuses: int) -> Any:
    """The OpenAPI responses of the error `statuses` an operation may answer."""
    return {
        s: {"description": _ERROR_DESCRIPTIONS[s], "content": {"application/json": {"model": ErrorOut}}}
        for s in statuses
    }


def documented(description: str, model: Any) -> dict[str, Any]:
    """The OpenAPI response of an operation answering one JSON `model`."""
    return {"description": description, "content": {"application/json": {"model": model}}}


def documented_task(description: str, *, created: bool = False, links: bool = False) -> Any:
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


def documented_examples(examples: dict[str, dict[str, Any]]) -> Any:
    """A request body's OpenAPI examples, by name, as the plain mappings the document holds: typed
    as Powertools' `Example` models they would load its OpenAPI models (about a fifth of the API's
    cold start) on every cold start, not only when the document is built."""
    return {name: dict(example) for name, example in examples.items()}


def answer(editor_answer: Any) -> Response[Any]:
    """200 with an editor answer rendered as it is documented (its type is the response model)."""
    return Response(
        status_code=200,
        content_type=content_types.APPLICATION_JSON,
        body=as_json(editor_answer),
    )


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


def task_response(task: Task, status: int = 200, base: str = "") -> Response[Any]:
    """The task as JSON with its version as `ETag` (and, when created, its URL as `Location`)."""
    headers = {"ETag": f'"{task.version}"'}
    if status == 201:
        headers["Location"] = f"{base}/tasks/{task.id}"
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=as_json(task),
        headers=headers,
    )
