"""The action kinds: log, webhook, lambda, sqs, sns, eventbridge, python.

Each kind validates its definition when the registry is built (fail fast, naming the action) and
delivers the envelope of one attempt. AWS kinds use real boto3 clients from `nexttick.aws`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from nexttick.actions.base import ActionConfigError, Delivery, DeliveryError
from nexttick.aws import ACTION_CALL_SECONDS
from nexttick.observability import logger

# One AWS call of an action, every attempt and backoff included (nexttick.aws).
AWS_CALL_TIMEOUT_SECONDS = float(ACTION_CALL_SECONDS)
DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10.0
DEFAULT_PYTHON_TIMEOUT_SECONDS = 10.0
MAX_TIMEOUT_SECONDS = 300.0
DEFAULT_WEBHOOK_ALLOWLIST = ("http://127.0.0.1", "http://localhost")
_MAX_DEDUP_ID = 128
_ERROR_BODY_CHARS = 200


def _json(envelope: dict[str, Any]) -> str:
    return json.dumps(envelope, separators=(",", ":"), sort_keys=True)


def _dedup_id(key: str) -> str:
    """SQS/SNS FIFO deduplication id: the idempotency key, hashed when longer than allowed."""
    return key if len(key) <= _MAX_DEDUP_ID else hashlib.sha256(key.encode()).hexdigest()


class Definition:
    """Typed access to one action definition; every error names the action and the key."""

    def __init__(self, name: str, raw: Mapping[str, Any], allowed: Sequence[str]) -> None:
        self.name = name
        self.raw = raw
        unknown = sorted(set(raw) - set(allowed) - {"type"})
        if unknown:
            raise ActionConfigError(
                name,
                f"unknown key {unknown[0]!r} for type {raw.get('type')!r} (allowed: {', '.join(allowed)})",
                unknown[0],
            )

    def text(self, key: str, default: str | None = None, *, required: bool = False) -> str:
        value = self.raw.get(key, default)
        if value is None and required:
            raise ActionConfigError(self.name, f"{key!r} is required", key)
        if not isinstance(value, str) or not value.strip():
            raise ActionConfigError(self.name, f"{key!r} must be a non-empty string", key)
        return value.strip()

    def optional_text(self, key: str) -> str | None:
        return self.text(key) if self.raw.get(key) is not None else None

    def choice(self, key: str, default: str, options: Sequence[str]) -> str:
        value = self.text(key, default)
        if value not in options:
            raise ActionConfigError(self.name, f"{key!r} must be one of {', '.join(options)}", key)
        return value

    def seconds(self, key: str, default: float) -> float:
        value = self.raw.get(key, default)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0 < value <= MAX_TIMEOUT_SECONDS
        ):
            raise ActionConfigError(self.name, f"{key!r} must be a number of seconds in (0, 300]", key)
        return float(value)

    def headers(self, key: str) -> dict[str, str]:
        value = self.raw.get(key, {})
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise ActionConfigError(self.name, f"{key!r} must be an object of string headers", key)
        return dict(value)


@dataclass
class BuildContext:
    """What kinds need at build time: an AWS client factory and the webhook allow-list."""

    client: Callable[[str], Any]
    webhook_allowlist: tuple[str, ...]


# ---------------------------------------------------------------------------------------- log
class LogAction:
    """Logs each delivery's whole envelope, payload included, at its level: showing deliveries is
    what the action is for (other kinds never log payloads)."""

    kind = "log"
    keys: ClassVar[tuple[str, ...]] = ("level",)

    def __init__(self, name: str, level: str) -> None:
        self.name = name
        self.level = level
        self.timeout_seconds = 1.0

    @classmethod
    def build(cls, d: Definition, _: BuildContext) -> LogAction:
        return cls(d.name, d.choice("level", "INFO", ("DEBUG", "INFO", "WARNING")))

    def deliver(self, delivery: Delivery) -> None:
        emit = {"DEBUG": logger.debug, "INFO": logger.info, "WARNING": logger.warning}[self.level]
        emit("task delivered", extra={"delivery": delivery.envelope()})


# ---------------------------------------------------------------------------------------- webhook
def url_allowed(url: str, prefixes: Sequence[str]) -> bool:
    """True when `url` starts with an allowed prefix at a boundary: `http://localhost` allows
    `http://localhost:9000/x` but not `http://localhost.example.com`."""
    for prefix in prefixes:
        if url == prefix:
            return True
        if url.startswith(prefix) and (prefix.endswith("/") or url[len(prefix)] in "/:?#"):
            return True
    return False


def parse_allowlist(text: str | None) -> tuple[str, ...]:
    """`NEXTTICK_WEBHOOK_ALLOWLIST`: comma-separated URL prefixes (default: loopback only)."""
    if text is None or not text.strip():
        return DEFAULT_WEBHOOK_ALLOWLIST
    return tuple(p.strip() for p in text.split(",") if p.strip())


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect could leave the allow-list: treat 3xx as a failed delivery instead."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class WebhookAction:
    kind = "webhook"
    keys: ClassVar[tuple[str, ...]] = ("url", "timeout_seconds", "headers")

    def __init__(
        self, name: str, url: str, timeout_seconds: float, headers: dict[str, str], allowlist: tuple[str, ...]
    ) -> None:
        self.name = name
        self.url = url
        self.timeout_seconds = timeout_seconds
        self.headers = headers
        self.allowlist = allowlist
        # No proxies from the environment, no redirects: the request goes only where configured.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _RefuseRedirects())

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> WebhookAction:
        url = d.text("url", required=True)
        if not url.startswith(("http://", "https://")):
            raise ActionConfigError(d.name, "'url' must be an http(s) URL", "url")
        if not url_allowed(url, ctx.webhook_allowlist):
            raise ActionConfigError(
                d.name,
                f"url {url!r} is not allowed by NEXTTICK_WEBHOOK_ALLOWLIST "
                f"({', '.join(ctx.webhook_allowlist)})",
                "url",
            )
        timeout = d.seconds("timeout_seconds", DEFAULT_WEBHOOK_TIMEOUT_SECONDS)
        return cls(d.name, url, timeout, d.headers("headers"), ctx.webhook_allowlist)

    def deliver(self, delivery: Delivery) -> None:
        if not url_allowed(self.url, self.allowlist):  # checked again at call time
            raise DeliveryError(f"webhook url {self.url!r} is not allow-listed")
        request = urllib.request.Request(
            self.url,
            data=_json(delivery.envelope()).encode(),
            method="POST",
            headers={
                **self.headers,
                "Content-Type": "application/json",
                "Idempotency-Key": delivery.idempotency_key,
                "User-Agent": "nexttick-worker",
            },
        )
        try:
            with self._opener.open(request, timeout=self.timeout_seconds) as response:
                status = int(response.status)
                response.read(1024)
        except urllib.error.HTTPError as exc:
            body = exc.read(_ERROR_BODY_CHARS).decode(errors="replace") if exc.fp else ""
            raise DeliveryError(f"webhook answered HTTP {exc.code}: {body}".strip()) from None
        except (urllib.error.URLError, OSError) as exc:
            raise DeliveryError(f"webhook request failed: {exc}") from None
        if not 200 <= status < 300:
            raise DeliveryError(f"webhook answered HTTP {status}")


# ---------------------------------------------------------------------------------------- lambda
class LambdaAction:
    kind = "lambda"
    keys: ClassVar[tuple[str, ...]] = ("function", "invocation_type", "qualifier")

    def __init__(
        self, name: str, client: Any, function: str, invocation_type: str, qualifier: str | None
    ) -> None:
        self.name = name
        self.client = client
        self.function = function
        self.invocation_type = invocation_type
        self.qualifier = qualifier
        self.timeout_seconds = AWS_CALL_TIMEOUT_SECONDS

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> LambdaAction:
        return cls(
            d.name,
            ctx.client("lambda"),
            d.text("function", required=True),
            d.choice("invocation_type", "Event", ("Event", "RequestResponse")),
            d.optional_text("qualifier"),
        )

    def deliver(self, delivery: Delivery) -> None:
        params: dict[str, Any] = {
            "FunctionName": self.function,
            "InvocationType": self.invocation_type,
            "Payload": _json(delivery.envelope()).encode(),
        }
        if self.qualifier:
            params["Qualifier"] = self.qualifier
        response = self.client.invoke(**params)
        if response.get("FunctionError"):
            detail = response["Payload"].read(_ERROR_BODY_CHARS).decode(errors="replace")
            raise DeliveryError(f"function {self.function} failed ({response['FunctionError']}): {detail}")


# ---------------------------------------------------------------------------------------- sqs
class SqsAction:
    kind = "sqs"
    keys: ClassVar[tuple[str, ...]] = ("queue_url", "message_group_id")

    def __init__(self, name: str, client: Any, queue_url: str, group: str | None) -> None:
        self.name = name
        self.client = client
        self.queue_url = queue_url
        self.group = group
        self.fifo = queue_url.endswith(".fifo")
        self.timeout_seconds = AWS_CALL_TIMEOUT_SECONDS

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> SqsAction:
        return cls(
            d.name, ctx.client("sqs"), d.text("queue_url", required=True), d.optional_text("message_group_id")
        )

    def deliver(self, delivery: Delivery) -> None:
        params: dict[str, Any] = {
            "QueueUrl": self.queue_url,
            "MessageBody": _json(delivery.envelope()),
            "MessageAttributes": {
                "idempotency_key": {"DataType": "String", "StringValue": delivery.idempotency_key}
            },
        }
        if self.fifo:
            params["MessageGroupId"] = self.group or delivery.task_id
            params["MessageDeduplicationId"] = _dedup_id(delivery.idempotency_key)
        self.client.send_message(**params)


# ---------------------------------------------------------------------------------------- sns
class SnsAction:
    kind = "sns"
    keys: ClassVar[tuple[str, ...]] = ("topic_arn", "message_group_id")

    def __init__(self, name: str, client: Any, topic_arn: str, group: str | None) -> None:
        self.name = name
        self.client = client
        self.topic_arn = topic_arn
        self.group = group
        self.fifo = topic_arn.endswith(".fifo")
        self.timeout_seconds = AWS_CALL_TIMEOUT_SECONDS

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> SnsAction:
        return cls(
            d.name, ctx.client("sns"), d.text("topic_arn", required=True), d.optional_text("message_group_id")
        )

    def deliver(self, delivery: Delivery) -> None:
        params: dict[str, Any] = {
            "TopicArn": self.topic_arn,
            "Message": _json(delivery.envelope()),
            "MessageAttributes": {
                "idempotency_key": {"DataType": "String", "StringValue": delivery.idempotency_key}
            },
        }
        if self.fifo:
            params["MessageGroupId"] = self.group or delivery.task_id
            params["MessageDeduplicationId"] = _dedup_id(delivery.idempotency_key)
        self.client.publish(**params)


# ---------------------------------------------------------------------------------------- eventbridge
class EventBridgeAction:
    kind = "eventbridge"
    keys: ClassVar[tuple[str, ...]] = ("event_bus_name", "source", "detail_type")

    def __init__(self, name: str, client: Any, bus: str, source: str, detail_type: str) -> None:
        self.name = name
        self.client = client
        self.bus = bus
        self.source = source
        self.detail_type = detail_type
        self.timeout_seconds = AWS_CALL_TIMEOUT_SECONDS

    @classmethod
    def build(cls, d: Definition, ctx: BuildContext) -> EventBridgeAction:
        return cls(
            d.name,
            ctx.client("events"),
            d.text("event_bus_name", "default"),
            d.text("source", "nexttick"),
            d.text("detail_type", "nexttick.task"),
        )

    def deliver(self, delivery: Delivery) -> None:
        response = self.client.put_events(
            Entries=[
                {
                    "EventBusName": self.bus,
                    "Source": self.source,
                    "DetailType": self.detail_type,
                    "Detail": _json(delivery.envelope()),
                }
            ]
        )
        if response.get("FailedEntryCount"):
            entry = response["Entries"][0]
            raise DeliveryError(f"PutEvents failed: {entry.get('ErrorCode')} {entry.get('ErrorMessage')}")


# ---------------------------------------------------------------------------------------- python
class PythonAction:
    kind = "python"
    keys: ClassVar[tuple[str, ...]] = ("target", "timeout_seconds")

    def __init__(
        self, name: str, target: str, function: Callable[[dict[str, Any]], Any], timeout: float
    ) -> None:
        self.name = name
        self.target = target
        self.function = function
        # Advisory: a Python call cannot be interrupted. It sizes the worker's time reserve; the
        # lease is renewed while the call runs, however long it takes.
        self.timeout_seconds = timeout

    @classmethod
    def build(cls, d: Definition, _: BuildContext) -> PythonAction:
        target = d.text("target", required=True)
        module_name, _sep, attribute = target.partition(":")
        if not module_name or not attribute:
            raise ActionConfigError(
                d.name, f"target {target!r} must look like 'package.module:function'", "target"
            )
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ActionConfigError(d.name, f"cannot import {module_name!r}: {exc}", "target") from exc
        function = getattr(module, attribute, None)
        if not callable(function):
            raise ActionConfigError(d.name, f"{target!r} is not a callable in the worker bundle", "target")
        return cls(d.name, target, function, d.seconds("timeout_seconds", DEFAULT_PYTHON_TIMEOUT_SECONDS))

    def deliver(self, delivery: Delivery) -> None:
        self.function(delivery.envelope())


KINDS: dict[str, Any] = {
    kind.kind: kind
    for kind in (
        LogAction,
        WebhookAction,
        LambdaAction,
        SqsAction,
        SnsAction,
        EventBridgeAction,
        PythonAction,
    )
}
