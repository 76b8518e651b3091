"""The API Lambda, called with API Gateway REST proxy events, against moto: the happy paths."""

from __future__ import annotations

import importlib
import io
import json
from typing import Any

import boto3
import pytest

from tests.support.api import LambdaApi

ONE_SHOT = {"action": "log", "due": "2030-01-07T10:00:00+01:00", "payload": {"to": "ada@example.com"}}


def test_health(api: LambdaApi) -> None:
    # When the health endpoint is called
    response = api.get("/health")
    # Then it answers ok as JSON
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"status": "ok"}


def test_create_returns_201_with_the_task_etag_and_location(api: LambdaApi, frozen_now: Any) -> None:
    # When a one-shot task is created with a due time in Berlin time
    response = api.post("/tasks", ONE_SHOT)
    # Then it is created, pending, due in UTC, at version 1
    assert response.status == 201
    task = response.json()
    assert task["status"] == "pending"
    assert task["due"] == "2030-01-07T09:00:00Z"
    assert task["schedule"] == "once"
    assert task["payload"] == {"to": "ada@example.com"}
    assert task["version"] == 1 and task["attempts"] == 0 and task["runs"] == 0
    assert task["max_attempts"] == 3 and task["last_run"] is None
    assert response.headers["etag"] == '"1"'
    assert response.headers["location"] == f"/tasks/{task['id']}"


@pytest.mark.parametrize(
    ("fields", "schedule", "due"),
    [
        ({"delay_seconds": 90}, "once", "2030-01-07T09:02:00Z"),
        ({"every": "1h30m"}, "every", "2030-01-07T10:30:30Z"),
        ({"every": "PT1H"}, "every", "2030-01-07T10:00:30Z"),
        ({"cron": "0 9 * * 5", "timezone": "Europe/Berlin"}, "cron", "2030-01-11T08:00:00Z"),
    ],
)
def test_create_accepts_each_kind_of_time(
    api: LambdaApi, frozen_now: Any, fields: dict[str, Any], schedule: str, due: str
) -> None:
    # When a task is created with each kind of time field
    response = api.post("/tasks", {"action": "log", **fields})
    # Then its schedule and first due time follow from it
    assert response.status == 201, response.body
    assert response.json()["schedule"] == schedule
    assert response.json()["due"] == due


def test_identical_repeat_of_a_client_id_returns_200_and_the_same_task(
    api: LambdaApi, frozen_now: Any
) -> None:
    # Given a task created under a client id
    first = api.post("/tasks", {**ONE_SHOT, "id": "order-42:reminder"})
    # When the identical create is sent again (a retried request)
    again = api.post("/tasks", {**ONE_SHOT, "id": "order-42:reminder"})
    # Then the existing task comes back with 200, unchanged
    assert first.status == 201
    assert again.status == 200
    assert again.json() == first.json()


def test_get_returns_the_task_with_etag(api: LambdaApi, frozen_now: Any) -> None:
    # Given a task
    created = api.post("/tasks", ONE_SHOT).json()
    # When it is read by id
    response = api.get(f"/tasks/{created['id']}")
    # Then it is the same task, its version as ETag
    assert response.status == 200
    assert response.json() == created
    assert response.headers["etag"] == '"1"'


def test_patch_reschedules_a_pending_task(api: LambdaApi, frozen_now: Any) -> None:
    # Given a task
    created = api.post("/tasks", ONE_SHOT).json()
    # When it is moved to a new time
    response = api.patch(f"/tasks/{created['id']}", {"due": "2030-02-01T12:00:00Z"})
    # Then it is due then, at the next version
    assert response.status == 200, response.body
    assert response.json()["due"] == "2030-02-01T12:00:00Z"
    assert response.json()["version"] == 2
    assert response.headers["etag"] == '"2"'
    # And the change is stored
    assert api.get(f"/tasks/{created['id']}").json()["due"] == "2030-02-01T12:00:00Z"


@pytest.mark.parametrize("if_match", ["1", '"1"', 'W/"1"', "*"])
def test_patch_with_matching_if_match_changes_payload(api: LambdaApi, frozen_now: Any, if_match: str) -> None:
    # Given a task at version 1
    created = api.post("/tasks", ONE_SHOT).json()
    # When its payload is replaced with If-Match naming that version (quoted, weak or any)
    response = api.patch(
        f"/tasks/{created['id']}", {"payload": {"to": "grace@example.com"}}, headers={"If-Match": if_match}
    )
    # Then the payload changes and the time does not
    assert response.status == 200, response.body
    assert response.json()["payload"] == {"to": "grace@example.com"}
    assert response.json()["due"] == created["due"]


def test_patch_changes_policy_and_clears_misfire_grace(api: LambdaApi, frozen_now: Any) -> None:
    # Given a task with a misfire grace
    created = api.post("/tasks", {**ONE_SHOT, "misfire_grace_seconds": 60}).json()
    # When its policy changes and the grace is cleared with null
    response = api.patch(
        f"/tasks/{created['id']}",
        {"max_attempts": 5, "retry_backoff_seconds": 2.5, "misfire_grace_seconds": None},
    )
    # Then the new policy is stored
    assert response.status == 200, response.body
    task = response.json()
    assert (task["max_attempts"], task["retry_backoff_seconds"], task["misfire_grace_seconds"]) == (
        5,
        2.5,
        None,
    )


def test_delete_cancels_and_get_shows_cancelled(api: LambdaApi, frozen_now: Any) -> None:
    # Given a pending task, not yet due
    created = api.post("/tasks", {**ONE_SHOT, "due": "2030-01-07T11:00:00+01:00"}).json()
    # When it is deleted
    response = api.delete(f"/tasks/{created['id']}")
    # Then the answer is 204 without a body, and the task reads as cancelled with no due time
    assert response.status == 204
    assert response.body == ""
    after = api.get(f"/tasks/{created['id']}").json()
    assert after["status"] == "cancelled"
    assert after["due"] is None
    # And it is no longer listed
    assert created["id"] not in [t["id"] for t in api.get("/tasks").json()["items"]]


def test_list_pages_through_pending_tasks_in_due_order(api: LambdaApi, frozen_now: Any) -> None:
    # Given seven tasks created out of due order
    hours = [5, 1, 7, 3, 2, 6, 4]
    for hour in hours:
        assert (
            api.post(
                "/tasks", {"action": "log", "due": f"2030-01-08T0{hour}:00:00Z", "id": f"h{hour}"}
            ).status
            == 201
        )
    # When they are listed three at a time, following next_cursor
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        query = "/tasks?limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = api.get(query).json()
        seen += [item["id"] for item in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    # Then every task appears once, in due order, over three pages
    assert seen == [f"h{h}" for h in sorted(hours)]
    assert pages == 3


def test_list_filters_by_status_and_defaults_to_all_queued(api: LambdaApi, frozen_now: Any) -> None:
    # Given two pending tasks
    api.post("/tasks", {**ONE_SHOT, "id": "a"})
    api.post("/tasks", {**ONE_SHOT, "id": "b", "due": "2030-01-07T11:00:00+01:00"})
    # When listing pending tasks, running tasks and everything queued
    pending = api.get("/tasks?status=pending").json()
    running = api.get("/tasks?status=running").json()
    everything = api.get("/tasks").json()
    # Then the pending list has both, none is running
    assert [t["id"] for t in pending["items"]] == ["a", "b"]
    assert running == {"items": [], "next_cursor": None}
    assert everything == pending


def test_openapi_json_is_served(api: LambdaApi) -> None:
    # When the document is requested
    response = api.get("/openapi.json")
    # Then it is the OpenAPI 3 document with every public path
    assert response.status == 200
    document = response.json()
    assert document["openapi"].startswith("3.")
    assert set(document["paths"]) == {
        "/health",
        "/lateness",
        "/tasks",
        "/tasks/{id}",
        "/tasks/{id}/pause",
        "/tasks/{id}/resume",
        "/tasks/{id}/run-now",
        "/tasks/{id}/runs",
        "/tasks/{id}/skip",
        "/tasks/{id}/upcoming",
    }


def test_swagger_ui_is_served_self_contained(api: LambdaApi) -> None:
    # When the docs page is requested
    response = api.get("/docs")
    # Then it is an HTML page that embeds Swagger UI's script and the spec instead of loading them
    assert response.status == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "SwaggerUIBundle" in response.body
    assert "<script src=" not in response.body and "<link rel='stylesheet'" not in response.body
    # ... titled as the API, with the console's icon
    assert "<title>nexttick API</title>" in response.body and 'href="console/favicon.svg"' in response.body
    assert '"/tasks/{id}"' in response.body


def test_handler_builds_its_editor_from_the_environment(
    resources: Any, monkeypatch: pytest.MonkeyPatch, frozen_now: Any, logs: io.StringIO
) -> None:
    # Given the Lambda's environment (as the CDK stack sets it) and a fresh container
    monkeypatch.setenv("NEXTTICK_TABLE", resources.table_name)
    monkeypatch.setenv("NEXTTICK_RULE", resources.rule_name)
    monkeypatch.setenv("NEXTTICK_WORKER_FUNCTION", resources.worker_function)
    monkeypatch.setenv("NEXTTICK_QUEUE_SHARDS", str(resources.queue_shards))
    monkeypatch.setenv("NEXTTICK_ACTIONS", json.dumps({"log": {"type": "log"}}))
    import lambdas.api.handler as module

    module = importlib.reload(module)
    api = LambdaApi(module.handler)
    # When a task is created and read through the real handler
    created = api.post("/tasks", ONE_SHOT)
    read = api.get(f"/tasks/{created.json()['id']}")
    # Then both succeed against the configured table, and logs carry API Gateway's request id
    assert created.status == 201, created.body
    assert read.json()["id"] == created.json()["id"]
    logged = [json.loads(line) for line in logs.getvalue().splitlines()]
    requests_logged = [line for line in logged if line.get("message") == "api request"]
    assert requests_logged[-1]["correlation_id"] == api.events[-1]["requestContext"]["requestId"]


def test_aws_failure_is_503_with_a_generic_message(api: LambdaApi, resources: Any) -> None:
    # Given the table has gone (an AWS-side failure, not the client's doing)
    boto3.client("dynamodb", region_name=resources.region).delete_table(TableName=resources.table_name)
    # When a task is read
    response = api.get("/tasks/abc")
    # Then the answer is 503 without internals
    assert response.status == 503
    assert response.json() == {
        "error": "service_unavailable",
        "message": "service temporarily unavailable; retry",
        "field": None,
    }
    assert "Table" not in response.body and "Traceback" not in response.body
