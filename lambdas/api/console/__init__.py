"""The web console: static files (`static/index.html`, its ES modules, `console.css`, an icon) served
by the API Lambda at `/console`, beside the JSON API they call (same origin, paths relative to where
the page is served, so behind API Gateway's `/<stage>` prefix too). Every console action is an API
call a user could make; the console has no endpoint of its own.

Only the files named in `ASSETS` are served: a request names a key of that table, never a path, so
nothing else on the file system can be reached. The routes stay out of the OpenAPI document."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.request import Request

from lambdas.api.errors import error_response
from lambdas.api.routes.routing import base_path
from nexttick.errors import ErrorCode

CONSOLE_PATH = "/console"
STATIC_DIR = Path(__file__).resolve().parent / "static"
INDEX = "index.html"
# The content type of each kind of file the console is made of (a module must be JavaScript, or the
# browser refuses to run it).
CONTENT_TYPES: dict[str, str] = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# Every file the console serves, with its content type: the whitelist (anything else is a 404), read
# from the static folder once when the API loads, so a new module is served without a second list.
ASSETS: dict[str, str] = {
    path.name: CONTENT_TYPES[path.suffix]
    for path in sorted(STATIC_DIR.iterdir())
    if path.is_file() and path.suffix in CONTENT_TYPES
}
# Scripts and styles from the stack only: no inline script, handler or style, nothing from elsewhere;
# the page only talks to its own API (connect-src) and submits no form anywhere (forms run in script).
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

router = Router()
# The console's route rules and methods: the API Gateway resources and 405 answers (lambdas/api/app.py).
ROUTE_METHODS: dict[str, set[str]] = {CONSOLE_PATH: {"GET"}, f"{CONSOLE_PATH}/<name>": {"GET"}}


@cache
def _read(name: str) -> str:
    """A whitelisted file's text, read once per container."""
    return (STATIC_DIR / name).read_text(encoding="utf-8")


def _file(name: str) -> Response[Any]:
    return Response(status_code=200, content_type=ASSETS[name], body=_read(name), headers=dict(HEADERS))


@router.route(CONSOLE_PATH, "GET", include_in_schema=False)
def console_page(request: Request) -> Response[Any]:
    """The page. `/console/` is sent to `/console`: the page names its files relative to its URL
    (`console/main.js`), which resolve under the API's base only without the trailing slash."""
    if (request.resolved_event.path or "").endswith("/"):
        location = f"{base_path(request)}{CONSOLE_PATH}"
        return Response(status_code=302, body="", headers={"Location": location, "Cache-Control": "no-cache"})
    return _file(INDEX)


@router.route(f"{CONSOLE_PATH}/<name>", "GET", include_in_schema=False)
def console_asset(name: str) -> Response[Any]:
    """One of the console's files by name; a name not in ASSETS (a path, `..`, anything encoded)
    is a 404."""
    if name not in ASSETS or name == INDEX:
        return error_response(ErrorCode.NOT_FOUND, f"path: no console file {name[:100]!r}", "path")
    return _file(name)


__all__ = ["ASSETS", "CONSOLE_PATH", "CONTENT_SECURITY_POLICY", "ROUTE_METHODS", "router"]
