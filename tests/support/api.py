"""Call the API Lambda handler the way API Gateway does (REST proxy events), and read its answers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lambdas.api.app import RESOURCES
from local.gateway import build_event
from local.lambdas import LambdaContext

_NO_BODY: Any = object()


@dataclass
class ApiResponse:
    status: int
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


class LambdaApi:
    """Sends realistic API Gateway REST proxy events to a Lambda handler."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        self.events: list[dict[str, Any]] = []

    def request(
        self,
        method: str,
        path: str,
        json_body: Any = _NO_BODY,
        *,
        body: str | bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> ApiResponse:
        all_headers = {"Accept": "application/json", "User-Agent": "pytest", **(headers or {})}
        raw = body.encode() if isinstance(body, str) else (body or b"")
        if json_body is not _NO_BODY:
            raw = json.dumps(json_body).encode()
            all_headers.setdefault("Content-Type", "application/json")
        event = build_event(
            method=method, raw_path=path, headers=list(all_headers.items()), body=raw, resources=RESOURCES
        )
        self.events.append(event)
        result = self.handler(event, LambdaContext(function_name="nexttick-api", timeout_seconds=29))
        headers_out = {k.lower(): str(v) for k, v in (result.get("headers") or {}).items()}
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers_out[name.lower()] = ", ".join(str(v) for v in values)
        return ApiResponse(int(result["statusCode"]), headers_out, result.get("body") or "")

    def get(self, path: str, **kw: Any) -> ApiResponse:
        return self.request("GET", path, **kw)

    def post(self, path: str, json_body: Any = _NO_BODY, **kw: Any) -> ApiResponse:
        return self.request("POST", path, json_body, **kw)

    def patch(self, path: str, json_body: Any = _NO_BODY, **kw: Any) -> ApiResponse:
        return self.request("PATCH", path, json_body, **kw)

    def delete(self, path: str, **kw: Any) -> ApiResponse:
        return self.request("DELETE", path, **kw)
