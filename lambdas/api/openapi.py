"""The OpenAPI document: generated from the routes and models, trimmed to what the API answers
(served at /openapi.json; `lambdas.api.openapi_file` writes and checks the committed copy)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from editor.specs import LISTABLE_STATUSES

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver

TITLE = "nexttick"
# The docs page's icon: the console's, relative to the page (/docs, or /<stage>/docs behind API Gateway).
_ICON = '<link rel="icon" href="console/favicon.svg" type="image/svg+xml">'
API_VERSION = "1.0.0"
_LISTABLE = ", ".join(f"`{status}`" for status in LISTABLE_STATUSES)
DESCRIPTION = f"""\
Schedule work for a future time: one-shot (`due`, `delay_seconds`) or recurring (`cron`, `every`).

* Every error is a JSON object `{{"error", "message", "field"}}`; `message` starts with the offending
  field. 400 malformed body (not JSON, not UTF-8), 404 unknown task or route, 405 wrong method,
  409 conflict, 412 stale `If-Match`, 413 payload over 256 KiB, 415 not JSON, 422 invalid field
  (body field, query parameter, path id or `If-Match`; a `payload` nested deeper than 32 levels
  of objects/arrays, the payload object being the first). Nothing a client sends yields a 5xx.
* Every task response carries `ETag: "<version>"`; send `If-Match: <version>` (quoted or not) with
  PATCH, DELETE or a steering POST (pause, resume, skip, run-now) for a compare-and-set change (412 on
  mismatch).
* `GET /tasks` lists the queue - {_LISTABLE} tasks in due order, with cursor pagination. Finished
  tasks (`succeeded`, `failed`, `cancelled`, `skipped`) are read by id; `status` accepts only
  {_LISTABLE} (422 otherwise).
* Behind API Gateway the API is IAM-authorised (SigV4).
"""


def openapi_document(app: APIGatewayRestResolver, server_url: str = "/") -> dict[str, Any]:
    """The OpenAPI document generated from the routes and models; `server_url` prefixes its paths."""
    from aws_lambda_powertools.event_handler.openapi.models import Server

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


@cache
def _swagger_assets() -> tuple[str, str]:
    """Swagger UI's script and stylesheet as Powertools ships them (inlined: the page loads nothing)."""
    from aws_lambda_powertools.event_handler.openapi import swagger_ui

    folder = Path(swagger_ui.__file__).parent
    return (
        (folder / "swagger-ui-bundle.min.js").read_text(encoding="utf-8"),
        (folder / "swagger-ui.min.css").read_text(encoding="utf-8"),
    )


def swagger_page(document: str) -> str:
    """The Swagger UI page embedding `document` (a `</` in it escaped, so no string closes the script),
    titled and with the console's icon (a browser asks for /favicon.ico otherwise, a 404)."""
    from aws_lambda_powertools.event_handler.openapi.swagger_ui import generate_swagger_html

    script, stylesheet = _swagger_assets()
    page = generate_swagger_html(document.replace("</", "<\\/"), script, stylesheet, "", None)
    return page.replace("<title>Swagger UI</title>", f"<title>{TITLE} API</title>{_ICON}", 1)
