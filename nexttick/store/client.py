"""The store's one DynamoDB client: botocore's, with its data-plane requests taking a shorter path.

Why: a DynamoDB request cost the worker about 2 ms of CPU in botocore (bench `cpu`: the raw GetItem
floor), four of them per fire. Most of it is machinery a DynamoDB item request does not need: the
shape-walking serialiser and parser (its parameters and answers already are DynamoDB JSON), the
endpoint ruleset (the same URL every time), a generic request object to sign and urllib3 to send.
`lighten` has the client send GetItem, PutItem, UpdateItem, DeleteItem, Query, BatchGetItem and
BatchWriteItem itself: `json` for the body and the answer, the endpoint resolved once, SigV4 and
a plain HTTP/1.1 exchange (nexttick.store.transport). Everything that decides behaviour stays botocore's and
runs as it does for any call: the events around the call (`provide-client-params`,
`before-parameter-build`, `before-call`, `before-send`, `needs-retry`, `after-call`, so in-process
moto, fault injection and test hooks see every request), the retry policy and its quota, error parsing and the
modeled exceptions. Every other operation goes botocore's way.
tests/integration/test_store_transport.py holds the two paths' answers and errors equal, call by call.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.compat import HTTPHeaders
from botocore.context import get_context, with_current_context
from botocore.exceptions import NoCredentialsError
from botocore.hooks import first_non_none_response
from botocore.model import OperationModel
from botocore.parsers import create_parser

from nexttick.store.transport import Connections, Signer

LIGHT_OPERATIONS = frozenset(
    {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem", "BatchWriteItem"}
)
_SERVICE_ID = "dynamodb"
_TARGET_PREFIX = "DynamoDB_20120810."
_CONTENT_TYPE = "application/x-amz-json-1.0"


def lighten(client: Any) -> LightCalls | None:
    """Have `client` (a botocore DynamoDB client) build its User-Agent once per set of feature ids
    and send its data-plane operations through `LightCalls`, unless it is set up in a way only
    botocore's path honours (a proxy, a client certificate)."""
    memoize_user_agent(client)
    config = client.meta.config
    if config.proxies or config.client_cert or _proxied(client.meta.endpoint_url):
        return None
    light = LightCalls(client)
    botocore_call = client._make_api_call

    def make_api_call(operation_name: str, api_params: dict[str, Any]) -> Any:
        if operation_name in LIGHT_OPERATIONS:
            return light.call(operation_name, api_params)
        return botocore_call(operation_name, api_params)

    client._make_api_call = make_api_call
    return light


class LightCalls:
    """BaseClient._make_api_call and Endpoint._send_request of botocore, for the operations in
    `LIGHT_OPERATIONS`: the same events with the same arguments, the same retry decisions, answers
    and errors; the body, the signature and the HTTP exchange done directly."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.events = client.meta.events
        self._endpoints: dict[str, tuple[Connections, Signer] | None] = {}
        self._parser = create_parser(client.meta.service_model.resolved_protocol)
        self._lock = threading.Lock()

    @with_current_context()  # as botocore's: a call's feature ids (its User-Agent) are its own
    def call(self, operation_name: str, api_params: dict[str, Any]) -> Any:
        client = self.client
        model = client.meta.service_model.operation_model(operation_name)  # memoized by botocore
        context: dict[str, Any] = {
            "client_region": client.meta.region_name,
            "client_config": client.meta.config,
            "has_streaming_input": False,
            "auth_type": model.resolved_auth_type,
            "unsigned_payload": model.unsigned_payload,
            "auth_options": client.meta.service_model.metadata.get("auth"),
        }
        route = self._route(model, api_params, context)
        if route is None:  # an endpoint only botocore's path reaches
            return self._botocore_call(operation_name, api_params)
        api_params = client._emit_api_params(api_params=api_params, operation_model=model, context=context)
        body = _json_body(api_params)
        if body is None:  # binary values: base64-encoded by botocore's serialiser
            body = client._serializer.serialize_to_request(api_params, model)["body"]
        connections, signer = route
        request_dict = {
            "url_path": "/",
            "query_string": "",
            "method": "POST",
            "headers": {
                "X-Amz-Target": _TARGET_PREFIX + operation_name,
                "Content-Type": _CONTENT_TYPE,
                "User-Agent": client._user_agent_creator.to_string(),
            },
            "body": body,
            "url": connections.request_url,
            "context": context,
        }
        _, answered = self.events.emit_until_response(
            f"before-call.{_SERVICE_ID}.{operation_name}",
            model=model,
            params=request_dict,
            request_signer=client._request_signer,
            context=context,
        )
        if answered is not None:
            http, parsed = answered
        else:
            try:
                http, parsed = self._send(model, request_dict, connections, signer)
            except Exception as exc:
                self.events.emit(
                    f"after-call-error.{_SERVICE_ID}.{operation_name}", exception=exc, context=context
                )
                raise
        self.events.emit(
            f"after-call.{_SERVICE_ID}.{operation_name}",
            http_response=http,
            parsed=parsed,
            model=model,
            context=context,
        )
        if http.status_code >= 300:
            code = context.get("error_code_override") or parsed.get("Error", {}).get("Code")
            raise client.exceptions.from_code(code)(parsed, operation_name)
        return parsed

    def _send(
        self, model: OperationModel, request_dict: dict[str, Any], connections: Connections, signer: Signer
    ) -> tuple[AWSResponse, dict[str, Any]]:
        """Attempts until botocore's retry handler (`needs-retry`) says stop, as Endpoint does."""
        context = request_dict["context"]
        attempts = 1
        retries = context.setdefault("retries", {})
        while True:
            retries["attempt"] = attempts
            answer: tuple[AWSResponse, dict[str, Any]] | None = None
            error: Exception | None = None
            try:
                answer = self._attempt(model, request_dict, connections, signer)
            except Exception as exc:  # judged by the retry handler, as botocore judges it
                error = exc
            delay = first_non_none_response(
                self.events.emit(
                    f"needs-retry.{_SERVICE_ID}.{model.name}",
                    response=answer,
                    endpoint=self.client._endpoint,
                    operation=model,
                    attempts=attempts,
                    caught_exception=error,
                    request_dict=request_dict,
                )
            )
            if delay is None or delay is False:
                break
            time.sleep(delay)
            attempts += 1
        if error is not None:
            raise error
        assert answer is not None
        answer[1]["ResponseMetadata"]["RetryAttempts"] = attempts - 1
        return answer

    def _attempt(
        self, model: OperationModel, request_dict: dict[str, Any], connections: Connections, signer: Signer
    ) -> tuple[AWSResponse, dict[str, Any]]:
        headers = dict(request_dict["headers"])
        found = self.client._request_signer._credentials
        if found is None:  # as botocore's signer says it
            raise NoCredentialsError()
        credentials = found.get_frozen_credentials()
        signer.sign(
            headers,
            connections.host,
            connections.path,
            request_dict["body"],
            (credentials.access_key, credentials.secret_key, credentials.token),
        )
        encoded = HTTPHeaders()  # as botocore prepares a request: its values encoded
        for name, value in headers.items():
            encoded[name] = value.encode()
        request = AWSPreparedRequest(
            "POST", connections.request_url, encoded, request_dict["body"], False, request_dict["context"]
        )
        http = first_non_none_response(
            self.events.emit(f"before-send.{_SERVICE_ID}.{model.name}", request=request)
        )
        if http is None:
            status, answer_headers, content = connections.post(request.headers.items(), request_dict["body"])
            http = AWSResponse(connections.request_url, status, answer_headers, _Raw(content))  # type: ignore[arg-type]
        return http, self._parse(model, http)

    def _parse(self, model: OperationModel, http: AWSResponse) -> dict[str, Any]:
        """The answer as botocore's parser gives it: `json` for a plain success; the parser itself
        (and the error's modeled fields) for an error or an answer holding binary values."""
        content = http.content
        if http.status_code < 300 and b'"B":' not in content and b'"BS":' not in content:
            parsed: dict[str, Any] = json.loads(content) if content else {}
            headers = {name.lower(): value for name, value in http.headers.items()}
            metadata: dict[str, Any] = {}
            if "x-amzn-requestid" in headers:
                metadata["RequestId"] = headers["x-amzn-requestid"]
            metadata.update(HTTPStatusCode=http.status_code, HTTPHeaders=headers)
            parsed["ResponseMetadata"] = metadata
            return parsed
        response = {
            "headers": http.headers,
            "status_code": http.status_code,
            "body": content,
            "context": {"operation_name": model.name},
        }
        parsed = self._parser.parse(response, model.output_shape)  # type: ignore[arg-type]
        if http.status_code >= 300:
            code = parsed.get("Error", {}).get("Code")
            shape = model.service_model.shape_for_error_code(code) if code else None
            if shape is not None:
                parsed.update(self._parser.parse(response, shape))
        return parsed

    def routes(self) -> list[Connections]:
        """The connection pools in use (one per endpoint)."""
        with self._lock:
            return list({id(r[0]): r[0] for r in self._endpoints.values() if r is not None}.values())

    @property
    def _botocore_call(self) -> Callable[[str, dict[str, Any]], Any]:
        return type(self.client)._make_api_call.__get__(self.client)

    def _route(
        self, model: OperationModel, api_params: dict[str, Any], context: dict[str, Any]
    ) -> tuple[Connections, Signer] | None:
        """Where the operation goes and how it is signed, from botocore's endpoint ruleset, resolved
        once per operation: None when the answer is not a plain SigV4 endpoint without extra headers."""
        if model.name in self._endpoints:
            return self._endpoints[model.name]
        scratch = dict(context)
        url, headers, _ = self.client._resolve_endpoint_ruleset(model, api_params, scratch)
        signing = scratch.get("signing", {})
        route: tuple[Connections, Signer] | None = None
        if not headers and scratch.get("auth_type") in (None, "v4"):
            config = self.client.meta.config
            with self._lock:
                existing = next((r for r in self._endpoints.values() if r and r[0].url == url), None)
            connections = (
                existing[0]
                if existing
                else Connections(
                    url,
                    connect_timeout=config.connect_timeout,
                    read_timeout=config.read_timeout,
                    max_idle=config.max_pool_connections,
                    verify=self.client._endpoint.http_session._verify,
                )
            )
            signer = Signer(
                signing.get("signing_name", "dynamodb"), signing.get("region", self.client.meta.region_name)
            )
            route = (connections, signer)
        with self._lock:
            self._endpoints[model.name] = route
        return route


class _Raw:
    """The raw stream of an answer already read whole (what AWSResponse.content reads from)."""

    def __init__(self, content: bytes) -> None:
        self._content = content

    def stream(self, **_: Any) -> Any:
        yield self._content


def _json_body(api_params: dict[str, Any]) -> bytes | None:
    """The JSON 1.0 body botocore's serialiser writes for these parameters (it leaves out None), or
    None when they hold bytes (binary attributes)."""
    try:
        return json.dumps({k: v for k, v in api_params.items() if v is not None}).encode()
    except TypeError:
        return None


def _proxied(endpoint_url: str) -> bool:
    proxies = urllib.request.getproxies()
    scheme = endpoint_url.partition(":")[0]
    return scheme in proxies and not urllib.request.proxy_bypass(endpoint_url.split("//")[-1].split("/")[0])


def memoize_user_agent(client: Any) -> None:
    """Have `client` build its User-Agent string once per set of request feature ids (botocore builds
    it twice per request, each time from a dozen components it sanitises character by character).
    Both places botocore builds it look the method up on the client's user-agent object."""
    creator = client._user_agent_creator
    creator.to_string = _memoized(creator.to_string)


def _memoized(build: Callable[[], str]) -> Callable[[], str]:
    built: dict[frozenset[str], str] = {}

    def to_string() -> str:
        context = get_context()
        features = frozenset(context.features) if context is not None else frozenset()
        text = built.get(features)
        if text is None:
            text = built[features] = build()
        return text

    return to_string
