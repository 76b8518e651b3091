"""Nested payloads cannot poison reads: the nesting limit is enforced at the door with a 4xx naming
`payload`; whatever the API accepts it reads back and lists; no request logs an unbounded line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from nexttick.constants import MAX_PAYLOAD_DEPTH
from tests.support.api import LambdaApi

MAX_LOG_LINE = 8 * 1024
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def api(shared_api: LambdaApi) -> LambdaApi:
    return shared_api


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.extend(self.format(record).splitlines())


@pytest.fixture
def log_lines() -> Iterator[list[str]]:
    """Every line the handlers log, formatted as they reach stdout (Powertools JSON)."""
    from nexttick.observability import logger

    handler = _Lines()
    handler.setFormatter(logger.registered_formatter)
    logger._logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger._logger.removeHandler(handler)


def nested(depth: int, *, arrays: bool = False) -> dict[str, Any]:
    """A payload object `depth` levels deep (the payload itself is level 1)."""
    inner: Any = {"leaf": True}
    for _ in range(depth - 2):
        inner = [inner] if arrays else {"a": inner}
    return {"a": inner} if depth > 1 else inner


def nested_json(depth: int, *, arrays: bool = False) -> str:
    """`nested(depth)` as JSON text, built without recursion (json.dumps cannot encode 5,000 levels)."""
    if depth == 1:
        return '{"leaf":true}'
    opening, closing = ("[", "]") if arrays else ('{"a":', "}")
    return '{"a":' + opening * (depth - 2) + '{"leaf":true}' + closing * (depth - 2) + "}"


def longest(lines: list[str]) -> int:
    return max((len(line) for line in lines), default=0)


@pytest.mark.parametrize("depth", [MAX_PAYLOAD_DEPTH + 1, 100, 500, 900, 5000])
@pytest.mark.parametrize("arrays", [False, True], ids=["objects", "arrays"])
def test_too_deep_payload_is_refused_naming_the_limit(
    api: LambdaApi, log_lines: list[str], depth: int, arrays: bool
) -> None:
    # Given a payload nested deeper than the limit
    payload = nested_json(depth, arrays=arrays)
    # When it is sent with a create
    created = api.post(
        "/tasks", body=f'{{"action": "log", "delay_seconds": 3600, "payload": {payload}}}', headers=JSON
    )
    # Then the answer is 422 naming payload and the limit (never a 5xx)
    assert created.status == 422, created.body[:500]
    body = created.json()
    assert body["field"] == "payload"
    assert body["message"] == f"payload: nested deeper than {MAX_PAYLOAD_DEPTH} levels"
    # And so is the same payload in a change of an existing task
    task = api.post("/tasks", {"action": "log", "delay_seconds": 3600}).json()
    patched = api.patch(f"/tasks/{task['id']}", body=f'{{"payload": {payload}}}', headers=JSON)
    assert patched.status == 422, patched.body[:500]
    assert patched.json()["field"] == "payload"
    # And the task list still answers
    assert api.get("/tasks?limit=500").status == 200
    # And no log line of these requests is unbounded
    assert log_lines and longest(log_lines) < MAX_LOG_LINE


@pytest.mark.parametrize("arrays", [False, True], ids=["objects", "arrays"])
def test_payload_at_the_depth_limit_round_trips_and_lists(
    api: LambdaApi, log_lines: list[str], arrays: bool
) -> None:
    # Given a payload exactly at the nesting limit
    payload = nested(MAX_PAYLOAD_DEPTH, arrays=arrays)
    # When it is created
    created = api.post("/tasks", {"action": "log", "delay_seconds": 3600, "payload": payload})
    # Then it is accepted and reads back unchanged, by id and in the list
    assert created.status == 201, created.body[:500]
    task_id = created.json()["id"]
    read = api.get(f"/tasks/{task_id}")
    assert read.status == 200 and read.json()["payload"] == payload
    listed = api.get("/tasks?limit=500")
    assert listed.status == 200
    assert [t["payload"] for t in listed.json()["items"] if t["id"] == task_id] == [payload]
    # And a change to the same payload is accepted too
    assert api.patch(f"/tasks/{task_id}", {"payload": payload}).status == 200
    assert log_lines and longest(log_lines) < MAX_LOG_LINE


def test_deep_nesting_in_another_field_names_that_field(api: LambdaApi) -> None:
    # When a field other than payload is nested absurdly deep
    response = api.post(
        "/tasks", body=f'{{"action": {nested_json(5000)}, "delay_seconds": 60}}', headers=JSON
    )
    # Then the answer is a 422 naming that field
    assert response.status == 422, response.body[:500]
    assert response.json()["field"] == "action"


def test_unexpected_errors_log_bounded_lines(
    api: LambdaApi, log_lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an editor bug that raises with a huge message from deep inside a recursion
    from editor import Editor

    def explode(self: Editor, task_id: str) -> None:
        def down(n: int) -> None:
            if n == 0:
                raise RuntimeError("x" * 500_000)
            down(n - 1)

        down(800)

    monkeypatch.setattr(Editor, "get", explode)
    # When a request hits it
    response = api.get("/tasks/some-task")
    # Then the client gets a generic 500 and the log line stays bounded
    assert response.status == 500
    assert any("unhandled error" in line for line in log_lines)
    assert longest(log_lines) < MAX_LOG_LINE
