"""The service's own routes, about the API rather than its tasks: liveness, the OpenAPI document,
the documentation page (Swagger UI at `DOCS_PATH`) and the API's URL sending a browser to it.

The page is served here rather than by Powertools' `enable_swagger`, which loads its OpenAPI models
(about a fifth of the API's cold start) when the app is built: here they load on the first request
for a document."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.request import Request

from lambdas.api.models import Health
from lambdas.api.openapi import openapi_text, swagger_page
from lambdas.api.routes.routing import base_path, current_app, documented, route_on

DOCS_PATH = "/docs"

router = Router()
_route = route_on(router)


@_route(
    "GET",
    "/health",
    summary="Liveness",
    operation_id="health",
    responses={200: documented("Up.", Health)},
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


@_route("GET", DOCS_PATH, include_in_schema=False)
def docs(app: Annotated[APIGatewayRestResolver, Depends(current_app)], request: Request) -> Response[Any]:
    """Swagger UI over the document `/openapi.json` serves; `?format=json`: that document alone."""
    document = openapi_text(app, server_url=base_path(request) or "/")
    if (request.query_parameters or {}).get("format") == "json":
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=document)
    return Response(status_code=200, content_type="text/html", body=swagger_page(document))


@_route("GET", "/", include_in_schema=False)
def root(request: Request) -> Response[Any]:
    """A browser opening the API's URL lands on its documentation."""
    return Response(status_code=302, body="", headers={"Location": f"{base_path(request)}{DOCS_PATH}"})
