"""A local stand-in for API Gateway (REST, Lambda proxy integration) in front of a Lambda handler.

Each HTTP request becomes an API Gateway REST proxy event, the handler runs in-process with a
Lambda-like context (remaining time from a configurable timeout), and its proxy response goes
back over HTTP. Used by the local stack and by tests that talk HTTP on loopback.

    server = serve(handler)                 # 127.0.0.1, free port, background threads
    requests.get(server.url + "/health")
    server.shutdown()
"""

from __future__ import annotations

import base64
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from moto.core import DEFAULT_ACCOUNT_ID

from local.lambdas import LambdaContext, LocalHTTPServer

LambdaHandler = Callable[[dict[str, Any], Any], Mapping[str, Any]]

logger = logging.getLogger(__name__)

# API Gateway REST limits: 10 MB request payload; the integration times out after 29 s.
MAX_REQUEST_BYTES = 10 * 1024 * 1024
DEFAULT_TIMEOUT_SECONDS = 29.0
_INTERNAL_ERROR = b'{"message": "Internal server error"}'
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server"}


class _Resource:
    """An API Gateway resource template such as `/tasks/{id}` or `/{proxy+}`."""

    def __init__(self, template: str) -> None:
        self.template = template
        pattern = ""
        for part in re.split(r"(\{[^}]+\})", template):
            if part.startswith("{") and part.endswith("+}"):
                pattern += f"(?P<{part[1:-2]}>.+)"
            elif part.startswith("{"):
                pattern += f"(?P<{part[1:-1]}>[^/]+)"
            else:
                pattern += re.escape(part)
        self.regex = re.compile(f"^{pattern}$")
        self.literal_length = len(re.sub(r"\{[^}]+\}", "", template))

    def match(self, path: str) -> dict[str, str] | None:
        found = self.regex.match(path)
        return None if found is None else found.groupdict()


@lru_cache(maxsize=32)
def _resources(templates: tuple[str, ...]) -> list[_Resource]:
    # API Gateway prefers the most specific resource: more literal characters first, greedy last.
    return sorted(
        (_Resource(t) for t in templates),
        key=lambda r: ("+}" in r.template, -r.literal_length),
    )


def build_event(
    *,
    method: str,
    raw_path: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    stage: str = "local",
    resources: Iterable[str] = (),
    source_ip: str = "127.0.0.1",
    request_id: str | None = None,
    api_id: str = "local",
    account_id: str = DEFAULT_ACCOUNT_ID,
) -> dict[str, Any]:
    """An API Gateway REST proxy event (payload format 1.0) for one HTTP request.

    `raw_path` is the request target (path and query string, percent-encoded); `resources` are
    resource templates (`/tasks/{id}`) that fill `resource` and `pathParameters` (the greedy
    `/{proxy+}` otherwise). `stage` is only named, never part of the URL (as with a custom domain):
    the API derives its links and documented server from `requestContext.path`."""
    split = urlsplit(raw_path)
    path = unquote(split.path) or "/"
    multi_headers: dict[str, list[str]] = {}
    for name, value in headers:
        multi_headers.setdefault(name, []).append(value)
    single_headers = {name: values[-1] for name, values in multi_headers.items()}
    multi_query: dict[str, list[str]] = {}
    for name, value in parse_qsl(split.query, keep_blank_values=True):
        multi_query.setdefault(name, []).append(value)
    resource, path_parameters = "/{proxy+}", {"proxy": path.lstrip("/")}
    if path == "/":
        resource, path_parameters = "/", {}
    for candidate in _resources(tuple(resources)):
        matched = candidate.match(path)
        if matched is not None:
            resource, path_parameters = candidate.template, matched
            break
    is_base64 = False
    text: str | None = None
    if body:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text, is_base64 = base64.b64encode(body).decode("ascii"), True
    request_id = request_id or str(uuid.uuid4())
    now = datetime.now(UTC)
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": single_headers or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": path_parameters or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": account_id,
            "apiId": api_id,
            "resourceId": "local",
            "resourcePath": resource,
            "httpMethod": method,
            "path": path,  # the URL as called: this gateway serves at the root, without the stage
            "protocol": "HTTP/1.1",
            "stage": stage,
            "domainPrefix": "localhost",
            "domainName": "localhost",
            "requestId": request_id,
            "extendedRequestId": request_id,
            "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "requestTimeEpoch": int(now.timestamp() * 1000),
            "identity": {
                "sourceIp": source_ip,
                "userAgent": single_headers.get("User-Agent") or single_headers.get("user-agent"),
                "accountId": None,
                "caller": None,
                "user": None,
                "userArn": None,
                "accessKey": None,
                "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
            },
        },
        "body": text,
        "isBase64Encoded": is_base64,
    }


@dataclass(frozen=True)
class _Target:
    """The function behind the gateway and how API Gateway describes its requests to it."""

    invoke: LambdaHandler
    resources: tuple[str, ...]
    stage: str
    function_name: str
    timeout_seconds: float
    region: str


class _GatewayHTTPServer(LocalHTTPServer):
    """Every request goes to `target`."""

    def __init__(self, address: tuple[str, int], target: _Target) -> None:
        super().__init__(address, _GatewayHandler)
        self.target = target


class GatewayServer:
    """A running gateway: `.url`, `.host`, `.port`, `.shutdown()`; also a context manager."""

    def __init__(self, httpd: ThreadingHTTPServer) -> None:
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, name="nexttick-gateway", daemon=True)
        self._thread.start()

    @property
    def host(self) -> str:
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def shutdown(self) -> None:
        """Stop accepting requests, wait for the serving loop to end and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> GatewayServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def serve(
    handler: LambdaHandler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    function_name: str = "nexttick-api",
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    stage: str = "local",
    resources: Iterable[str] = (),
    region: str = "us-east-1",
    one_at_a_time: bool = False,
) -> GatewayServer:
    """Serve `handler(event, context)` over HTTP the way API Gateway's Lambda proxy would.

    `resources` are resource templates (`/tasks/{id}`) used to fill `resource` and
    `pathParameters`; unmatched paths use the greedy `/{proxy+}` resource.

    `one_at_a_time`: one invocation of `handler` at a time, as one Lambda execution environment
    runs them. A handler that keeps per-request state in module globals needs it: Powertools'
    resolver keeps the current event, route and context on its `app`, and called from several
    threads at once it mixes requests up (500s, another request's body; bench/localload.py).
    Without it, concurrent requests call `handler` concurrently.
    """
    invoke: LambdaHandler = handler
    if one_at_a_time:
        environment = threading.Lock()

        def invoke(event: dict[str, Any], context: Any) -> Mapping[str, Any]:
            with environment:
                return handler(event, context)

    target = _Target(invoke, tuple(resources), stage, function_name, timeout_seconds, region)
    return GatewayServer(_GatewayHTTPServer((host, port), target))


class _GatewayHandler(BaseHTTPRequestHandler):
    """One HTTP request as API Gateway's Lambda proxy passes it on: an event, a context, the
    function's answer back as the HTTP response."""

    server: _GatewayHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "nexttick-gateway"

    def _dispatch(self) -> None:
        length = self._content_length()
        if length is None:
            return
        if length > MAX_REQUEST_BYTES:
            self._reply(413, {"Content-Type": "application/json"}, b'{"message":"Request Too Long"}')
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        target = self.server.target
        event = build_event(
            method=self.command,
            raw_path=self.path,
            headers=list(self.headers.items()),
            body=body,
            stage=target.stage,
            resources=target.resources,
            source_ip=self.client_address[0],
        )
        context = LambdaContext(
            function_name=target.function_name, timeout_seconds=target.timeout_seconds, region=target.region
        )
        try:
            result = target.invoke(event, context)
        except Exception:  # API Gateway answers a failed invocation with 502
            logger.exception("handler raised for %s %s", self.command, self.path)
            self._reply(502, {"Content-Type": "application/json"}, _INTERNAL_ERROR)
            return
        self._send_result(result)

    def _content_length(self) -> int | None:
        raw = self.headers.get("Content-Length", "0") or "0"
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self._reply(411, {"Content-Type": "application/json"}, b'{"message":"Length Required"}')
            self.close_connection = True
            return None
        try:
            length = int(raw)
            if length < 0:
                raise ValueError(raw)
        except ValueError:
            self._reply(400, {"Content-Type": "application/json"}, b'{"message":"Bad Request"}')
            self.close_connection = True
            return None
        return length

    def _send_result(self, result: Mapping[str, Any]) -> None:
        status = int(result.get("statusCode", 200))
        raw_body = result.get("body") or ""
        payload = base64.b64decode(raw_body) if result.get("isBase64Encoded") else str(raw_body).encode()
        merged: list[tuple[str, str]] = []
        multi = result.get("multiValueHeaders") or {}
        for name, value in (result.get("headers") or {}).items():
            if name not in multi:
                merged.append((name, str(value)))
        for name, values in multi.items():
            merged.extend((name, str(v)) for v in values)
        self._reply(status, merged, payload)

    def _reply(
        self, status: int, headers: Mapping[str, str] | Iterable[tuple[str, str]], payload: bytes
    ) -> None:
        items = headers.items() if isinstance(headers, Mapping) else headers
        self.send_response(status)
        for name, value in items:
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        no_body = status in (204, 304) or self.command == "HEAD"
        self.send_header("Content-Length", "0" if status in (204, 304) else str(len(payload)))
        self.end_headers()
        if not no_body:
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s - %s", self.address_string(), format % args)

    def __getattr__(self, name: str) -> Any:
        # Every method reaches the handler (API Gateway's ANY method), which answers 405 itself.
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)


__all__ = ["GatewayServer", "LambdaContext", "build_event", "serve"]
