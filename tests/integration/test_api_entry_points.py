"""The API's front door, against moto: the root, the documents' server URL and their request examples."""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin

import pytest
import requests

from lambdas.api.app import RESOURCES
from local.gateway import serve
from tests.support.api import LambdaApi

DOCUMENTS = ["/openapi.json", "/docs?format=json"]  # the second is the one Swagger UI embeds


@pytest.fixture
def api(shared_api: LambdaApi) -> LambdaApi:
    """These tests only read or add new tasks: one moto account serves the module."""
    return shared_api


def behind_api_gateway(api: LambdaApi) -> LambdaApi:
    """The API as called through API Gateway's stage URL, `https://<api>.execute-api.<region>.amazonaws.com/v1`:
    the stage is part of the path the client called (`requestContext.path`)."""

    def on_stage_v1(event: dict[str, Any], context: Any) -> Any:
        event["requestContext"].update(stage="v1", path=f"/v1{event['path']}")
        return api.handler(event, context)

    return LambdaApi(on_stage_v1)


def request_examples(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    content = document["paths"][path][method]["requestBody"]["content"]["application/json"]
    return {name: example["value"] for name, example in content.get("examples", {}).items()}


@pytest.mark.parametrize("document_path", DOCUMENTS)
def test_try_it_out_through_the_local_gateway_reaches_the_api(api: LambdaApi, document_path: str) -> None:
    # Given the API behind the local gateway (it serves at the root, no stage in the URL)
    with serve(api.handler, resources=RESOURCES) as server:
        # When Swagger UI reads the document's server and sends a create there, as "Try it out" does
        document = requests.get(server.url + document_path, timeout=10).json()
        base = urljoin(f"{server.url}/docs", document["servers"][0]["url"]).rstrip("/")
        response = requests.post(f"{base}/tasks", json={"action": "log", "delay_seconds": 60}, timeout=10)
    # Then the server is the gateway's root and the create reaches the API
    assert document["servers"] == [{"url": "/"}]
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("document_path", DOCUMENTS)
def test_behind_api_gateway_the_documents_name_the_stage(api: LambdaApi, document_path: str) -> None:
    # When a document is read through API Gateway's stage URL
    response = behind_api_gateway(api).get(document_path)
    # Then its server is the stage, so "Try it out" posts to /v1/tasks
    assert response.status == 200, response.body
    assert response.json()["servers"] == [{"url": "/v1"}]


def test_root_redirects_to_the_swagger_ui(api: LambdaApi) -> None:
    # When the root is opened (locally, no stage in the URL)
    response = api.get("/")
    # Then it redirects to the docs, which answer with the Swagger UI page
    assert response.status == 302, response.body
    assert response.headers["location"] == "/docs"
    docs = api.get(response.headers["location"])
    assert docs.status == 200 and "SwaggerUIBundle" in docs.body


def test_root_behind_api_gateway_redirects_within_the_stage(api: LambdaApi) -> None:
    # When the stage's root is opened through API Gateway
    response = behind_api_gateway(api).get("/")
    # Then the redirect stays inside the stage
    assert response.status == 302, response.body
    assert response.headers["location"] == "/v1/docs"


def test_location_of_a_task_created_behind_api_gateway_is_inside_the_stage(api: LambdaApi) -> None:
    # When a task is created through API Gateway's stage URL
    response = behind_api_gateway(api).post("/tasks", {"action": "log", "delay_seconds": 60})
    # Then its Location is under the stage too
    assert response.status == 201, response.body
    assert response.headers["location"] == f"/v1/tasks/{response.json()['id']}"


def test_every_create_example_is_accepted(api: LambdaApi) -> None:
    # Given the named request examples of POST /tasks in the served document
    examples = request_examples(api.get("/openapi.json").json(), "/tasks", "post")
    assert examples
    # When each one is sent as it stands (what "Try it out" prefills)
    responses = {name: api.post("/tasks", body) for name, body in examples.items()}
    # Then every one creates a task
    assert {name: r.status for name, r in responses.items()} == dict.fromkeys(examples, 201), {
        name: r.body for name, r in responses.items() if r.status != 201
    }


def test_every_update_example_is_accepted(api: LambdaApi) -> None:
    # Given the named request examples of PATCH /tasks/{id} in the served document
    examples = request_examples(api.get("/openapi.json").json(), "/tasks/{id}", "patch")
    assert examples
    # When each one is applied to a pending one-shot task
    responses = {}
    for name, body in examples.items():
        task_id = api.post("/tasks", {"action": "log", "delay_seconds": 3600}).json()["id"]
        responses[name] = api.patch(f"/tasks/{task_id}", body)
    # Then every one changes it
    assert {name: r.status for name, r in responses.items()} == dict.fromkeys(examples, 200), {
        name: r.body for name, r in responses.items() if r.status != 200
    }
