"""The committed OpenAPI document is the one the code generates (run `make openapi` to refresh)."""

from __future__ import annotations

import json
from pathlib import Path

from editor.specs import LISTABLE_STATUSES
from lambdas.api.app import RESOURCE_METHODS
from lambdas.api.openapi_file import DEFAULT_PATH, generated

ROOT = Path(__file__).resolve().parents[2]


def test_committed_document_matches_the_code() -> None:
    # Given the committed document and the one generated from the routes and models
    committed = (ROOT / DEFAULT_PATH).read_text(encoding="utf-8")
    # Then they are byte for byte the same
    assert committed == generated(), "docs/openapi.json is out of date: run `make openapi`"


def test_every_operation_documents_its_errors_with_the_error_model() -> None:
    # Given the generated document
    document = json.loads(generated())
    # Then every 4xx answer of every operation uses ErrorOut, and no Powertools default remains
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith("4"):
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, status)
    assert "HTTPValidationError" not in json.dumps(document)


def test_task_responses_require_every_field() -> None:
    # Given the task schema
    task = json.loads(generated())["components"]["schemas"]["Task"]
    # Then every property is required (nullable ones are explicit) and no other may appear
    assert set(task["required"]) == set(task["properties"])
    assert task["additionalProperties"] is False


def test_create_examples_show_each_kind_of_time_alone() -> None:
    # Given the named request examples of POST /tasks
    content = json.loads(generated())["paths"]["/tasks"]["post"]["requestBody"]["content"]
    examples = [example["value"] for example in content["application/json"].get("examples", {}).values()]
    # Then each sets exactly one time field (the API refuses two), together they show all four,
    # and the cron one names its time zone
    time_fields = [[f for f in ("due", "delay_seconds", "cron", "every") if f in body] for body in examples]
    assert sorted(time_fields) == [["cron"], ["delay_seconds"], ["due"], ["every"]]
    assert all("timezone" in body for body in examples if "cron" in body)


def test_the_document_says_what_the_api_accepts() -> None:
    # Given the generated document
    document = json.loads(generated())
    description = document["info"]["description"]
    listable = {str(status) for status in LISTABLE_STATUSES}
    # Then the list's status filter takes exactly the statuses the editor lists, and the
    # description names each of them
    assert set(document["components"]["schemas"]["ListableStatus"]["enum"]) == listable
    assert all(f"`{status}`" in description for status in listable), description
    # And every steering POST documents the If-Match header its description promises
    posts = {path: ops["post"] for path, ops in document["paths"].items() if "post" in ops}
    steering = {path: operation for path, operation in posts.items() if path.startswith("/tasks/{id}/")}
    assert steering and all(
        any(p["in"] == "header" and p["name"].lower() == "if-match" for p in operation["parameters"])
        for operation in steering.values()
    ), steering
    assert all(path.rsplit("/", 1)[-1] in description for path in steering), description


def test_every_documented_operation_is_one_the_app_declares_for_api_gateway_and_405_answers() -> None:
    # Given the generated document and the resources the app declares (API Gateway's resources,
    # the local adapter's matching and the 405 answers read them)
    document = json.loads(generated())
    # Then each documented path and method is among them: a route registered without its module's
    # `_route` would be served and documented, yet unknown there
    for path, operations in document["paths"].items():
        assert {method.upper() for method in operations} <= RESOURCE_METHODS.get(path, frozenset()), path
