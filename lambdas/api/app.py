"""The HTTP API as a Powertools REST resolver, validated by pydantic models, over the editor library:
the routes (`routes/`), request reading (`requests.py`), one error mapping (`errors.py`), the
OpenAPI document (`openapi.py`) and the web console's static files (`console/`), assembled for one
editor."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from editor import Editor
from lambdas.api import console
from lambdas.api.errors import register_error_handlers
from lambdas.api.requests import JsonOnlyValidation, json_body
from lambdas.api.routes import ROUTERS
from lambdas.api.routes.routing import ROUTE_METHODS, current_app, current_editor


def _resource(rule: str) -> str:
    """A Powertools route rule (`/tasks/<id>`) as its API Gateway resource (`/tasks/{id}`)."""
    return re.sub(r"<(\w+)>", r"{\1}", rule)


# API Gateway resource -> methods of every route the app serves (the web console's files included).
RESOURCE_METHODS: dict[str, frozenset[str]] = {
    **{_resource(rule): frozenset(methods) for rule, methods in ROUTE_METHODS.items()},
    **{_resource(rule): frozenset(methods) for rule, methods in console.ROUTE_METHODS.items()},
}
# The resources the local API Gateway adapter matches requests to (`resource`, `pathParameters`).
RESOURCES = tuple(RESOURCE_METHODS)


def build_app(editor_factory: Callable[[], Editor]) -> APIGatewayRestResolver:
    """The API as a Powertools resolver. `editor_factory` is called once, on first use."""
    app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=json_body)
    # Powertools has no public way to replace its request validation or to run a middleware before it.
    app._request_validation_middleware = JsonOnlyValidation()  # JSON bodies only (see the class)
    editor_lock = threading.Lock()
    editors: list[Editor] = []

    def editor() -> Editor:
        if not editors:
            with editor_lock:
                if not editors:
                    editors.append(editor_factory())
        return editors[0]

    for router in ROUTERS:
        app.include_router(router)
    app.include_router(console.router)  # the web console: static files, outside the OpenAPI document
    app.dependency_overrides[current_editor] = editor
    app.dependency_overrides[current_app] = lambda: app
    register_error_handlers(app, RESOURCE_METHODS)
    return app


__all__ = ["RESOURCES", "build_app"]
