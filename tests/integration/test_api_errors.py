"""The API Lambda's error answers: status, a stable code, and a message naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from nexttick.constants import MAX_PAYLOAD_BYTES
from tests.support.api import ApiResponse, LambdaApi

ONE_SHOT = {"action": "log", "due": "2030-01-07T10:00:00+01:00"}
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def api(shared_api: LambdaApi) -> LambdaApi:
    """These tests only add uniquely named tasks: one moto account serves the module."""
    return shared_api


def assert_error(response: ApiResponse, status: int, code: str, field: str | None) -> None:
    assert response.status == status, response.body
    body = response.json()
    assert body["error"] == code
    assert body["field"] == field
    if field is not None:
        assert body["message"].startswith(f"{field}:"), body["message"]


MALFORMED = {
    "truncated": '{"action": "log",',
    "text": "not json",
    "nan": '{"action": NaN}',
    "infinity": '{"delay_seconds": Infinity}',
    "deeply-nested": "[" * 50_000 + "]" * 50_000,
    "5000-digit-int": '{"max_attempts": 1' + "0" * 5000 + "}",
}


@pytest.mark.parametrize("raw", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_json_is_400_naming_body(api: LambdaApi, raw: str) -> None:
    # When the body is not (acceptable) JSON
    response = api.post("/tasks", body=raw, headers=JSON)
    # Then the answer is 400 about the body
    assert_error(response, 400, "malformed_request", "body")


def test_body_that_is_not_utf8_is_400(api: LambdaApi) -> None:
    # When the body is binary (API Gateway passes it base64-encoded)
    response = api.post("/tasks", body=b"\xff\xfe\x00", headers=JSON)
    # Then it is refused as malformed
    assert_error(response, 400, "malformed_request", "body")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"due": "2030-01-01T00:00:00Z"}, "action"),
        ({**ONE_SHOT, "max_attempts": "3"}, "max_attempts"),
        ({**ONE_SHOT, "max_attempts": True}, "max_attempts"),
        ({**ONE_SHOT, "max_attempts": 10**30}, "max_attempts"),
        ({**ONE_SHOT, "max_attempts": 0}, "max_attempts"),
        ({**ONE_SHOT, "max_attempts": None}, "max_attempts"),
        ({"action": "log", "delay_seconds": -1}, "delay_seconds"),
        ({"action": "log", "delay_seconds": 1e300}, "delay_seconds"),
        ({**ONE_SHOT, "payload": [1, 2]}, "payload"),
        ({**ONE_SHOT, "colour": "blue"}, "colour"),
        ({**ONE_SHOT, "id": "has space"}, "id"),
        ({**ONE_SHOT, "id": "x" * 129}, "id"),
        ({"action": "log", "due": "2030-01-07T10:00:00"}, "due"),
        ({"action": "log", "due": "2030-02-30T10:00:00Z"}, "due"),
        ({"action": "log", "due": "2300-01-01T00:00:00Z"}, "due"),
        ({"action": "log", "cron": "61 * * * *"}, "cron"),
        ({"action": "log", "cron": "0 23-1 * * *"}, "cron"),  # a wrap-around range: no crontab meaning
        ({"action": "log", "cron": "0 0 LW * *"}, "cron"),
        ({"action": "log", "cron": "@reboot"}, "cron"),
        ({"action": "log", "cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"action": "log", "every": "soon"}, "every"),
        ({"action": "log", "every": "0s"}, "every"),
        ({"action": "log", "every": "999999999d"}, "every"),
        ({"action": "log", "every": "P99999D"}, "every"),
        ({"action": "log", "due": "2030-01-07T10:00:00Z", "end": "2031-01-01T00:00:00Z"}, "end"),
        ({"action": "log", "payload": {}}, "due"),
    ],
)
def test_invalid_create_fields_are_422_naming_the_field(
    api: LambdaApi, body: dict[str, Any], field: str
) -> None:
    # When a create carries one invalid field
    response = api.post("/tasks", body)
    # Then the answer is 422 and names that field
    assert_error(response, 422, "validation_error", field)


def test_unusual_unicode_round_trips(api: LambdaApi) -> None:
    # When a payload holds emoji, a right-to-left override, a NUL and a lone surrogate
    payload = {"k": "\U0001f600 \u202e \x00 \ud800", "": "empty key", "ключ": "значение"}
    created = api.post("/tasks", {**ONE_SHOT, "payload": payload})
    # Then it is stored and read back unchanged
    assert created.status == 201, created.body
    assert api.get(f"/tasks/{created.json()['id']}").json()["payload"] == payload


def test_two_time_fields_are_422(api: LambdaApi) -> None:
    # When a create names both a due time and a delay
    response = api.post("/tasks", {**ONE_SHOT, "delay_seconds": 5})
    # Then it is refused, naming one of them
    assert response.status == 422
    assert response.json()["field"] in {"due", "delay_seconds"}


def test_body_must_be_an_object(api: LambdaApi) -> None:
    # When the JSON body is an array, or missing
    as_list = api.post("/tasks", [ONE_SHOT])
    missing = api.post("/tasks", headers=JSON)
    # Then both are 422 about the body
    assert_error(as_list, 422, "validation_error", "body")
    assert_error(missing, 422, "validation_error", "body")


def test_unknown_action_is_422(api: LambdaApi) -> None:
    # When a create names an action the deployment does not configure
    response = api.post("/tasks", {**ONE_SHOT, "action": "launch-rockets"})
    # Then it is refused at creation, naming the action
    assert_error(response, 422, "unknown_action", "action")
    assert "launch-rockets" in response.json()["message"]


def test_payload_over_256_kib_is_413(api: LambdaApi) -> None:
    # When the payload serialises to just over 256 KiB
    response = api.post("/tasks", {**ONE_SHOT, "payload": {"blob": "x" * MAX_PAYLOAD_BYTES}})
    # Then the answer is 413 about the payload
    assert_error(response, 413, "payload_too_large", "payload")


def test_payload_at_the_limit_is_accepted(api: LambdaApi) -> None:
    # When the payload serialises to exactly 256 KiB
    filler = MAX_PAYLOAD_BYTES - len('{"blob":""}')
    response = api.post("/tasks", {**ONE_SHOT, "payload": {"blob": "x" * filler}})
    # Then it is created
    assert response.status == 201, response.body[:300]


def test_body_far_over_the_limit_is_413_before_parsing(api: LambdaApi) -> None:
    # When the body itself is over 1 MiB
    response = api.post("/tasks", body='{"payload": "' + "x" * (4 * MAX_PAYLOAD_BYTES) + '"}', headers=JSON)
    # Then it is refused as too large, naming the body
    assert_error(response, 413, "payload_too_large", "body")


def test_non_json_content_type_is_415(api: LambdaApi) -> None:
    # When the body is sent as a form or multipart (without a boundary)
    form = api.post(
        "/tasks",
        body="action=log&cron=*+*+*+*+*",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    multipart = api.post("/tasks", body="--x--", headers={"Content-Type": "multipart/form-data"})
    # Then both are 415 naming the content type
    assert_error(form, 415, "unsupported_media_type", "Content-Type")
    assert_error(multipart, 415, "unsupported_media_type", "Content-Type")


def test_different_body_under_a_used_client_id_is_409(api: LambdaApi) -> None:
    # Given a task created under a client id
    assert api.post("/tasks", {**ONE_SHOT, "id": "dup"}).status == 201
    # When another body is sent under the same id
    response = api.post("/tasks", {**ONE_SHOT, "id": "dup", "payload": {"other": True}})
    # Then it is a conflict naming the id
    assert_error(response, 409, "conflict", "id")


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_unknown_task_is_404(api: LambdaApi, method: str) -> None:
    # When a task that does not exist is read, changed or cancelled
    response = api.request(method, "/tasks/no-such-task", {"payload": {}} if method == "PATCH" else None)
    # Then the answer is 404 naming the id
    assert_error(response, 404, "not_found", "id")


def test_invalid_task_id_in_path_is_422(api: LambdaApi) -> None:
    # When the path carries an id no task can have
    response = api.get("/tasks/semi;colon")
    # Then the id is named as invalid
    assert_error(response, 422, "validation_error", "id")


def test_unknown_route_is_404(api: LambdaApi) -> None:
    response = api.get("/nothing/here")
    assert_error(response, 404, "not_found", "path")


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("PUT", "/tasks/abc", "DELETE, GET, PATCH"),
    ("DELETE", "/tasks", "GET, POST"),
    ("POST", "/health", "GET"),
    ("POST", "/", "GET"),
])  # fmt: skip
def test_wrong_method_is_405_with_allow(api: LambdaApi, method: str, path: str, allowed: str) -> None:
    # When a known path is called with a method it does not support
    response = api.request(method, path)
    # Then the answer is 405 and lists the allowed methods
    assert_error(response, 405, "method_not_allowed", "method")
    assert response.headers["allow"] == allowed


def test_patch_with_stale_if_match_is_412(api: LambdaApi) -> None:
    # Given a task changed once (now at version 2)
    task_id = api.post("/tasks", ONE_SHOT).json()["id"]
    assert api.patch(f"/tasks/{task_id}", {"payload": {"n": 1}}).status == 200
    # When a client that read version 1 tries to change it
    response = api.patch(f"/tasks/{task_id}", {"payload": {"n": 2}}, headers={"If-Match": '"1"'})
    # Then it is a precondition failure and nothing changed
    assert_error(response, 412, "version_mismatch", "version")
    assert api.get(f"/tasks/{task_id}").json()["payload"] == {"n": 1}


def test_delete_with_stale_if_match_is_412(api: LambdaApi) -> None:
    task_id = api.post("/tasks", ONE_SHOT).json()["id"]
    response = api.delete(f"/tasks/{task_id}", headers={"If-Match": "7"})
    assert_error(response, 412, "version_mismatch", "version")
    assert api.get(f"/tasks/{task_id}").json()["status"] == "pending"


@pytest.mark.parametrize("if_match", ["abc", '"1', "1, 2", "9" * 40])
def test_unreadable_if_match_is_422(api: LambdaApi, if_match: str) -> None:
    task_id = api.post("/tasks", ONE_SHOT).json()["id"]
    response = api.patch(f"/tasks/{task_id}", {"payload": {}}, headers={"If-Match": if_match})
    assert_error(response, 422, "validation_error", "If-Match")


INSTANT_WORDS = (
    "must be an RFC 3339 time with a UTC offset, e.g. 2030-12-01T09:00:00+01:00 or 2030-12-01T08:00:00Z"
)
DURATION_WORDS = "must be an interval such as 90s, 1h30m, 2d, 250ms or PT1H, or a number of seconds"
ID_WORDS = "must be 1 to 128 letters, digits or the characters . _ : -"


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "message"),
    [
        ("POST", "/tasks", {"action": "log", "due": "2030-01-07T10:00:00"}, {}, f"due: {INSTANT_WORDS}"),
        ("POST", "/tasks", {"action": "log", "every": "1h", "end": "2031"}, {}, f"end: {INSTANT_WORDS}"),
        ("POST", "/tasks", {"action": "log", "every": "soon"}, {}, f"every: {DURATION_WORDS}"),
        ("POST", "/tasks", {"action": "log", "every": 0}, {}, "every: Input should be greater than 0"),
        ("POST", "/tasks", {**ONE_SHOT, "max_attempts": None}, {},
         "max_attempts: must not be null (leave the field out instead)"),
        ("POST", "/tasks", {**ONE_SHOT, "id": "has space"}, {}, f"id: {ID_WORDS}"),
        ("GET", "/tasks/semi;colon", None, {}, f"id: {ID_WORDS}"),
        ("GET", "/tasks?cursor=%F0%9F%98%80", None, {}, "cursor: must be the next_cursor of a previous page"),
        ("PATCH", "/tasks/any", {"due": "tomorrow"}, {}, f"due: {INSTANT_WORDS}"),
        ("PATCH", "/tasks/any", {"payload": {}}, {"If-Match": "abc"},
         'If-Match: must be a task version such as 3 or "3", or * for any version'),
        ("POST", "/tasks", {"action": "log", "cron": "0 9 * * *", "timezone": "Mars/Olympus"}, {},
         "timezone: unknown IANA time zone 'Mars/Olympus'"),
    ],
)  # fmt: skip
def test_invalid_formats_are_explained_in_words(
    api: LambdaApi, method: str, path: str, body: Any, headers: dict[str, str], message: str
) -> None:
    # When a field, parameter or header does not have the expected shape
    response = api.request(method, path, **({} if body is None else {"json_body": body}), headers=headers)
    # Then the message says in words what is expected, naming the field (never a raw pattern)
    assert response.status == 422, response.body
    assert response.json()["message"] == message


def test_patch_without_any_field_is_422(api: LambdaApi) -> None:
    task_id = api.post("/tasks", ONE_SHOT).json()["id"]
    response = api.patch(f"/tasks/{task_id}", {})
    assert_error(response, 422, "validation_error", "body")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"due": "yesterday"}, "due"),
        ({"payload": "text"}, "payload"),
        ({"action": "hook"}, "action"),
        ({"timezone": "Europe/Berlin"}, "timezone"),
        ({"payload": None}, "payload"),
    ],
)
def test_invalid_patch_fields_are_422(api: LambdaApi, change: dict[str, Any], field: str) -> None:
    task_id = api.post("/tasks", ONE_SHOT).json()["id"]
    response = api.patch(f"/tasks/{task_id}", change)
    assert_error(response, 422, "validation_error", field)


def test_patch_payload_over_limit_is_413(api: LambdaApi) -> None:
    task_id = api.post("/tasks", ONE_SHOT).json()["id"]
    response = api.patch(f"/tasks/{task_id}", {"payload": {"blob": "x" * MAX_PAYLOAD_BYTES}})
    assert_error(response, 413, "payload_too_large", "payload")


def test_changing_a_cancelled_task_is_409_and_cancelling_it_again_is_204(api: LambdaApi) -> None:
    # Given a cancelled task
    task_id = api.post("/tasks", ONE_SHOT).json()["id"]
    assert api.delete(f"/tasks/{task_id}").status == 204
    # When it is changed or cancelled again
    patched = api.patch(f"/tasks/{task_id}", {"payload": {}})
    deleted = api.delete(f"/tasks/{task_id}")
    # Then the change is a conflict naming its status; the repeated cancel succeeds like the first
    assert_error(patched, 409, "conflict", "status")
    assert deleted.status == 204


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=succeeded", "status"),
        ("status=cancelled", "status"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("limit=ten", "limit"),
        ("limit=" + "9" * 400, "limit"),
        ("cursor=bm90LWEtY3Vyc29y", "cursor"),
        ("cursor=%F0%9F%98%80", "cursor"),
        ("cursor=" + "A" * 600, "cursor"),
    ],
)
def test_invalid_list_parameters_are_422(api: LambdaApi, query: str, field: str) -> None:
    response = api.get(f"/tasks?{query}")
    assert_error(response, 422, "validation_error", field)


def test_subnormal_seconds_are_kept_to_the_microsecond(api: LambdaApi) -> None:
    # When policy seconds are far below a microsecond (DynamoDB cannot store 5e-324)
    response = api.post(
        "/tasks", {**ONE_SHOT, "retry_backoff_seconds": 5e-324, "misfire_grace_seconds": 1e-200}
    )
    # Then the task is created with them rounded to the microsecond
    assert response.status == 201, response.body
    assert (response.json()["retry_backoff_seconds"], response.json()["misfire_grace_seconds"]) == (0.0, 0.0)
