"""The local API Gateway adapter: HTTP in -> REST proxy event -> handler -> HTTP out."""

from __future__ import annotations

import base64
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from local.gateway import build_event, serve


class Recorder:
    """A Lambda handler that records what it was given and answers with a canned proxy response."""

    def __init__(self, response: dict[str, Any] | None = None, fail: bool = False) -> None:
        self.events: list[dict[str, Any]] = []
        self.contexts: list[Any] = []
        self.response = response or {
            "statusCode": 200,
            "headers": {"Content-Type": "application/json"},
            "body": "{}",
        }
        self.fail = fail

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.events.append(event)
        self.contexts.append(context)
        if self.fail:
            raise RuntimeError("boom")
        return self.response


def test_request_becomes_a_rest_proxy_event_with_resource_and_path_parameters() -> None:
    # Given a gateway in front of a recording handler, with the API's resources
    handler = Recorder()
    with serve(handler, resources=["/tasks", "/tasks/{id}"], stage="v1", function_name="api-fn") as server:
        # When a client sends a PATCH with headers, repeated query values and a JSON body
        requests.patch(
            f"{server.url}/tasks/a%3Ab?x=1&x=2&y=",
            json={"payload": {"k": "ü"}},
            headers={"If-Match": "3", "X-Trace": "t"},
            timeout=5,
        )
    # Then the handler saw a realistic REST proxy event
    event = handler.events[0]
    assert event["resource"] == "/tasks/{id}"
    assert event["path"] == "/tasks/a:b"
    assert event["pathParameters"] == {"id": "a:b"}
    assert event["httpMethod"] == "PATCH"
    assert event["headers"]["If-Match"] == "3"
    assert event["multiValueHeaders"]["X-Trace"] == ["t"]
    assert event["queryStringParameters"] == {"x": "2", "y": ""}
    assert event["multiValueQueryStringParameters"] == {"x": ["1", "2"], "y": [""]}
    assert json.loads(event["body"]) == {"payload": {"k": "ü"}}
    assert event["isBase64Encoded"] is False
    assert event["requestContext"]["stage"] == "v1"
    assert event["requestContext"]["identity"]["sourceIp"] == "127.0.0.1"
    assert event["requestContext"]["requestId"]
    # And a Lambda-like context with the remaining time counting down from the timeout
    context = handler.contexts[0]
    assert context.function_name == "api-fn"
    assert context.invoked_function_arn.endswith(":function:api-fn")
    assert 0 < context.get_remaining_time_in_millis() <= 29_000


def test_request_context_path_is_the_url_without_a_stage() -> None:
    # Given a gateway that serves at its root, under a stage name
    handler = Recorder()
    with serve(handler, resources=["/tasks"], stage="local") as server:
        # When a client calls a path on it
        requests.get(f"{server.url}/tasks?limit=1", timeout=5)
    # Then the event's request path is the URL's path, with no stage prefix (the URL has none),
    # so the API names the root, not "/local", as its base in generated links and documents
    context = handler.events[0]["requestContext"]
    assert context["stage"] == "local"
    assert context["path"] == "/tasks"


def test_unknown_resource_uses_greedy_proxy_and_empty_body_is_null() -> None:
    # Given / When a GET on a path no declared resource matches
    event = build_event(method="GET", raw_path="/nope/deeper", headers=[], body=b"", resources=["/tasks"])
    # Then the greedy proxy resource carries the path, and there is no body or query
    assert event["resource"] == "/{proxy+}"
    assert event["pathParameters"] == {"proxy": "nope/deeper"}
    assert event["body"] is None
    assert event["queryStringParameters"] is None


def test_binary_body_is_base64_encoded() -> None:
    # Given a body that is not UTF-8
    event = build_event(method="POST", raw_path="/tasks", headers=[], body=b"\xff\xfe")
    # Then it travels base64-encoded, as API Gateway sends binary
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == b"\xff\xfe"


def test_response_status_headers_and_body_are_returned() -> None:
    # Given a handler answering 201 with single and multi-value headers
    handler = Recorder(
        {
            "statusCode": 201,
            "headers": {"Content-Type": "application/json", "ETag": '"1"'},
            "multiValueHeaders": {"X-Multi": ["a", "b"]},
            "body": '{"id": "x"}',
            "isBase64Encoded": False,
        }
    )
    with serve(handler) as server:
        # When a client calls it
        response = requests.post(f"{server.url}/tasks", data="{}", timeout=5)
    # Then status, headers and body arrive unchanged
    assert response.status_code == 201
    assert response.headers["ETag"] == '"1"'
    assert response.headers["X-Multi"] == "a, b"
    assert response.json() == {"id": "x"}


def test_handler_exception_becomes_502_like_api_gateway() -> None:
    # Given a handler that raises
    with serve(Recorder(fail=True)) as server:
        # When it is called
        response = requests.get(f"{server.url}/health", timeout=5)
    # Then the gateway answers as API Gateway does for a failed invocation
    assert response.status_code == 502
    assert response.json() == {"message": "Internal server error"}


def test_requests_are_served_concurrently() -> None:
    # Given a handler that returns only once four requests are inside it at the same time
    all_inside = threading.Barrier(4, timeout=10)

    def together(event: dict[str, Any], context: Any) -> dict[str, Any]:
        all_inside.wait()  # raises BrokenBarrierError (a 502) if the requests were queued
        return {"statusCode": 204, "body": ""}

    # When four clients call at once
    with serve(together) as server, ThreadPoolExecutor(4) as pool:
        calls = [pool.submit(requests.delete, f"{server.url}/x", timeout=30) for _ in range(4)]
        codes = [call.result().status_code for call in calls]
    # Then they were served concurrently instead of one after the other
    assert codes == [204] * 4


def test_shutdown_frees_the_port() -> None:
    # Given a running gateway
    server = serve(Recorder())
    url = server.url
    # When it is shut down
    server.shutdown()
    # Then nothing listens there any more
    try:
        requests.get(url + "/health", timeout=1)
    except requests.ConnectionError:
        return
    raise AssertionError("gateway still answering after shutdown")


def test_every_method_reaches_the_handler() -> None:
    # Given a gateway in front of a recording handler
    handler = Recorder()
    with serve(handler) as server:
        # When clients use methods http.server has no handler for
        for method in ("TRACE", "QUERY", "OPTIONS"):
            requests.request(method, f"{server.url}/tasks", timeout=5)
    # Then each one arrived as an event (API Gateway's ANY method), for the API to answer
    assert [e["httpMethod"] for e in handler.events] == ["TRACE", "QUERY", "OPTIONS"]
