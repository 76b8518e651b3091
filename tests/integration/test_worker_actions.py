"""Action kinds against moto (SQS, SNS, EventBridge, Lambda) and a loopback HTTP server (webhook)."""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest

from nexttick.actions import ActionConfigError, Delivery, DeliveryError, build_registry
from nexttick.config import NextTickSettings

REGION = "us-east-1"
DUE = datetime(2030, 1, 7, 9, 0, 0, tzinfo=UTC)


def delivery(action: str, attempt: int = 1) -> Delivery:
    return Delivery("task-1", action, {"sku": 42}, DUE, DUE.replace(second=1), attempt)


def build(settings: NextTickSettings, **definitions: dict[str, Any]) -> Any:
    return build_registry(definitions, settings)


# ---------------------------------------------------------------------------------------- AWS kinds
def test_sqs_delivers_the_envelope(resources: NextTickSettings) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="out")["QueueUrl"]
    registry = build(resources, out={"type": "sqs", "queue_url": url})
    registry.deliver(delivery("out"))
    [message] = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert json.loads(message["Body"]) == delivery("out").envelope()
    assert message["MessageAttributes"]["idempotency_key"]["StringValue"] == "task-1:2030-01-07T09:00:00Z"


def test_sqs_fifo_deduplicates_by_idempotency_key(resources: NextTickSettings) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="out.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    registry = build(resources, out={"type": "sqs", "queue_url": url})
    # When the same occurrence is delivered twice (a retry after a crash)
    registry.deliver(delivery("out", attempt=1))
    registry.deliver(delivery("out", attempt=2))
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
    # Then the queue holds it once, deduplicated by the idempotency key, grouped by task
    assert len(messages) == 1
    assert messages[0]["Attributes"]["MessageDeduplicationId"] == "task-1:2030-01-07T09:00:00Z"
    assert messages[0]["Attributes"]["MessageGroupId"] == "task-1"


def test_sns_publishes_the_envelope(resources: NextTickSettings) -> None:
    sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
    topic = sns.create_topic(Name="out")["TopicArn"]
    url = sqs.create_queue(QueueName="sub")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    build(resources, out={"type": "sns", "topic_arn": topic}).deliver(delivery("out"))
    [message] = sqs.receive_message(QueueUrl=url)["Messages"]
    assert json.loads(message["Body"]) == delivery("out").envelope()


def test_eventbridge_puts_the_envelope_as_detail(resources: NextTickSettings) -> None:
    events, sqs = boto3.client("events", region_name=REGION), boto3.client("sqs", region_name=REGION)
    events.create_event_bus(Name="apps")
    url = sqs.create_queue(QueueName="bus-target")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="all", EventBusName="apps", EventPattern=json.dumps({"source": ["shop"]}))
    events.put_targets(Rule="all", EventBusName="apps", Targets=[{"Id": "q", "Arn": arn}])
    out = {"type": "eventbridge", "event_bus_name": "apps", "source": "shop", "detail_type": "sale"}
    build(resources, out=out).deliver(delivery("out"))
    [message] = sqs.receive_message(QueueUrl=url)["Messages"]
    event = json.loads(message["Body"])
    assert event["source"] == "shop" and event["detail-type"] == "sale"
    assert event["detail"] == delivery("out").envelope()


def test_lambda_invokes_the_function_with_the_envelope(resources: NextTickSettings) -> None:
    iam, lam = boto3.client("iam", region_name=REGION), boto3.client("lambda", region_name=REGION)
    role = iam.create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("fn.py", "def handler(event, context):\n    return event\n")
    lam.create_function(
        FunctionName="consumer",
        Runtime="python3.12",
        Role=role,
        Handler="fn.handler",
        Code={"ZipFile": buffer.getvalue()},
    )
    registry = build(resources, out={"type": "lambda", "function": "consumer"})
    sent: list[dict[str, Any]] = []
    action = registry.get("out")
    action.client.meta.events.register(
        "provide-client-params.lambda.Invoke", lambda params, **_: sent.append(dict(params))
    )
    action.deliver(delivery("out"))
    assert sent[0]["FunctionName"] == "consumer" and sent[0]["InvocationType"] == "Event"
    assert json.loads(sent[0]["Payload"]) == delivery("out").envelope()


# ---------------------------------------------------------------------------------------- webhook
class _Hook(BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, str], bytes]] = []
    status = 200
    delay = 0.0
    location: str | None = None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.path, dict(self.headers), body))
        time.sleep(type(self).delay)
        self.send_response(type(self).status)
        location = type(self).location
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def hook_server() -> Iterator[tuple[str, type[_Hook]]]:
    handler = type("Hook", (_Hook,), {"received": [], "status": 200, "delay": 0.0, "location": None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def test_webhook_posts_json_with_idempotency_key(hook_server: tuple[str, type[_Hook]]) -> None:
    base, handler = hook_server
    registry = build(
        NextTickSettings(), hook={"type": "webhook", "url": f"{base}/hook", "headers": {"X-A": "b"}}
    )
    registry.deliver(delivery("hook"))
    [(path, headers, body)] = handler.received
    assert path == "/hook" and json.loads(body) == delivery("hook").envelope()
    assert headers["Idempotency-Key"] == "task-1:2030-01-07T09:00:00Z"
    assert headers["Content-Type"] == "application/json" and headers["X-A"] == "b"


@pytest.mark.parametrize("status", [201, 204, 299])
def test_webhook_any_2xx_is_success(hook_server: tuple[str, type[_Hook]], status: int) -> None:
    base, handler = hook_server
    handler.status = status
    build(NextTickSettings(), hook={"type": "webhook", "url": base}).deliver(delivery("hook"))


@pytest.mark.parametrize("status", [400, 500, 503])
def test_webhook_error_status_fails_the_delivery(hook_server: tuple[str, type[_Hook]], status: int) -> None:
    base, handler = hook_server
    handler.status = status
    with pytest.raises(DeliveryError, match=f"HTTP {status}"):
        build(NextTickSettings(), hook={"type": "webhook", "url": base}).deliver(delivery("hook"))


def test_webhook_does_not_follow_redirects(hook_server: tuple[str, type[_Hook]]) -> None:
    base, handler = hook_server
    handler.status, handler.location = 307, "http://example.com/elsewhere"
    with pytest.raises(DeliveryError, match="HTTP 307"):
        build(NextTickSettings(), hook={"type": "webhook", "url": base}).deliver(delivery("hook"))
    assert len(handler.received) == 1


def test_webhook_times_out(hook_server: tuple[str, type[_Hook]]) -> None:
    base, handler = hook_server
    handler.delay = 1.0
    registry = build(NextTickSettings(), hook={"type": "webhook", "url": base, "timeout_seconds": 0.2})
    started = time.monotonic()
    with pytest.raises(DeliveryError, match="timed out"):
        registry.deliver(delivery("hook"))
    assert time.monotonic() - started < 1.0


def test_webhook_allow_list_is_checked_at_build_and_at_call(
    hook_server: tuple[str, type[_Hook]], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, handler = hook_server
    # Default: loopback only; a prefix must end at a boundary
    for url in ("https://example.com/hook", "http://localhost.example.com/x", "http://127.0.0.10/x"):
        with pytest.raises(ActionConfigError, match="NEXTTICK_WEBHOOK_ALLOWLIST") as caught:
            build(NextTickSettings(), hook={"type": "webhook", "url": url})
        assert caught.value.field == "actions.hook.url"
    # The environment replaces the list
    monkeypatch.setenv("NEXTTICK_WEBHOOK_ALLOWLIST", "https://hooks.example.com/, http://127.0.0.1")
    build(NextTickSettings(), hook={"type": "webhook", "url": "https://hooks.example.com/a"})
    # At call time the URL is checked again (nothing is sent when it is not allowed)
    registry = build(NextTickSettings(), hook={"type": "webhook", "url": base})
    registry.get("hook").allowlist = ("https://hooks.example.com/",)
    with pytest.raises(DeliveryError, match="not allow-listed"):
        registry.deliver(delivery("hook"))
    assert handler.received == []
