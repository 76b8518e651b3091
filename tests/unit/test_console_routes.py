"""The web console's routes through the built app, called with API Gateway REST proxy events: the page
and its files (every file of the static folder, every module the page imports) with their content
types and headers, nothing else (no path reaches the file system),
the trailing-slash redirect (also under the stage), and the OpenAPI document without them."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from lambdas.api import console
from lambdas.api.app import RESOURCE_METHODS, build_app
from lambdas.api.openapi import openapi_document
from tests.support.api import LambdaApi


def _no_editor() -> Any:
    raise AssertionError("the console's routes never use the editor")


@pytest.fixture(scope="module")
def app() -> Any:
    return build_app(_no_editor)


@pytest.fixture(scope="module")
def api(app: Any) -> LambdaApi:
    return LambdaApi(app.resolve)


def on_stage_v1(api: LambdaApi) -> LambdaApi:
    """The API as called through API Gateway's stage URL (`/v1/...` in `requestContext.path`)."""

    def handler(event: dict[str, Any], context: Any) -> Any:
        event["requestContext"].update(stage="v1", path=f"/v1{event['path']}")
        return api.handler(event, context)

    return LambdaApi(handler)


def test_the_page_is_served_with_a_strict_content_security_policy(api: LambdaApi) -> None:
    # When the console is opened
    response = api.get("/console", headers={"Accept": "text/html"})
    # Then it is the page, as HTML, never cached without a check, under a policy that allows only
    # the stack's own scripts, styles and API
    assert response.status == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    policy = {
        directive.split()[0]: directive.split()[1:]
        for directive in response.headers["content-security-policy"].split("; ")
    }
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["connect-src"] == ["'self'"]
    assert not [d for d in policy.values() if "'unsafe-inline'" in d or "'unsafe-eval'" in d]
    assert "<title>nexttick console</title>" in response.body


def test_the_page_has_no_inline_script_style_or_handler_and_loads_only_its_own_files(api: LambdaApi) -> None:
    # Given the page
    page = api.get("/console").body
    # Then it holds no inline script, style or event handler (the policy would refuse them) ...
    assert "<script>" not in page and "<style" not in page and " style=" not in page
    assert not [word for word in page.split() if word.lower().startswith("on") and "=" in word]
    # ... and the files it loads are the console's own, named relative to the page's URL
    assert '<script type="module" src="console/main.js"></script>' in page
    assert '<link rel="stylesheet" href="console/console.css">' in page
    assert "http://" not in page and "https://" not in page


@pytest.mark.parametrize(
    ("name", "content_type"),
    [(name, kind) for name, kind in console.ASSETS.items() if name != console.INDEX],
)
def test_each_file_is_served_with_its_content_type(api: LambdaApi, name: str, content_type: str) -> None:
    # When one of the console's files is requested
    response = api.get(f"/console/{name}")
    # Then it is that file, with its content type and the same headers as the page
    assert response.status == 200
    assert response.headers["content-type"] == content_type
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["content-security-policy"] == console.CONTENT_SECURITY_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.body == (console.STATIC_DIR / name).read_text(encoding="utf-8")


def test_every_file_of_the_static_folder_is_served() -> None:
    # Given the files the console is made of
    files = {path.name for path in console.STATIC_DIR.iterdir() if path.is_file()}
    # Then each is one the console serves (a file of a kind without a content type would not be)
    assert set(console.ASSETS) == files


def test_every_module_the_page_imports_is_served_as_javascript(api: LambdaApi) -> None:
    # Given the page's entry module, and every module it imports, directly or through another one
    entry = re.search(r'<script type="module" src="console/([\w.]+)">', api.get("/console").body)
    assert entry is not None
    pending, modules = [entry.group(1)], {}
    while pending:
        name = pending.pop()
        # When each is requested as the browser does, relative to the page
        response = api.get(f"/console/{name}")
        # Then it is served, as JavaScript (a browser runs a module of no other type)
        assert response.status == 200, name
        assert response.headers["content-type"] == "text/javascript; charset=utf-8", name
        modules[name] = response.body
        imported = re.findall(r'^(?:import|export) [^;]*? from "\./([\w.]+)";$', response.body, re.MULTILINE)
        pending += [found for found in imported if found not in modules]
    # ... and the console is several modules, none imported from outside its folder
    assert {"main.js", "api.js", "statuses.js"} <= set(modules)
    assert not [body for body in modules.values() if re.search(r'from "(?!\./)', body)]


@pytest.mark.parametrize(
    "path",
    [
        "/console/nothing.js",
        "/console/index.html",  # the page lives at /console only (its relative links resolve there)
        "/console/__init__.py",
        "/console/static",
        "/console/main.js/more",
        "/console/..%2f__init__.py",
        "/console/..%2F..%2Fapp.py",
        "/console/%2e%2e%2f__init__.py",
        "/console/..%252f__init__.py",  # encoded twice: arrives as `..%2f__init__.py`
        "/console/../routes.py",
        "/console/static%2fmain.js",
        "/console/%2fetc%2fpasswd",
    ],
)
def test_anything_else_under_the_console_is_not_found(api: LambdaApi, path: str) -> None:
    # When a name outside the console's files (or a path, however encoded) is requested
    response = api.get(path)
    # Then the answer is the API's 404, naming the path, and holds no file content
    assert response.status == 404, response.body
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"] == "not_found" and body["field"] == "path"
    assert "import" not in response.body


def test_other_methods_are_refused_with_405(api: LambdaApi) -> None:
    for path in ("/console", "/console/main.js"):
        response = api.request("POST", path, {})
        assert response.status == 405
        assert response.headers["allow"] == "GET"


@pytest.mark.parametrize(("client", "location"), [("local", "/console"), ("stage", "/v1/console")])
def test_a_trailing_slash_is_sent_to_the_page_s_url(api: LambdaApi, client: str, location: str) -> None:
    # When the page is opened with a trailing slash (its relative links would then miss)
    caller = api if client == "local" else on_stage_v1(api)
    response = caller.get("/console/")
    # Then the browser is sent to the page's own URL, under the stage behind API Gateway
    assert response.status == 302
    assert response.headers["location"] == location


def test_the_console_is_an_api_gateway_resource_and_stays_out_of_the_openapi_document(app: Any) -> None:
    # Given the API Gateway resources and the generated document
    document = openapi_document(app)
    # Then the console's two resources are there, GET only ...
    assert RESOURCE_METHODS["/console"] == frozenset({"GET"})
    assert RESOURCE_METHODS["/console/{name}"] == frozenset({"GET"})
    # ... and no console path, operation or schema is in the document
    assert not [path for path in document["paths"] if path.startswith("/console")]
    assert "console" not in json.dumps(document).lower()
