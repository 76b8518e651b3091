"""The webhook kind: POSTs the envelope to an allow-listed URL; a 3xx, 4xx or 5xx is a failed delivery."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, ClassVar

from nexttick.actions.base import ActionConfigError, Delivery, DeliveryError
from nexttick.actions.definition import ERROR_BODY_CHARS, BuildContext, Definition, envelope_json

DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10.0
DEFAULT_WEBHOOK_ALLOWLIST = ("http://127.0.0.1", "http://localhost")


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
            data=envelope_json(delivery.envelope()).encode(),
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
            body = exc.read(ERROR_BODY_CHARS).decode(errors="replace") if exc.fp else ""
            raise DeliveryError(f"webhook answered HTTP {exc.code}: {body}".strip()) from None
        except (urllib.error.URLError, OSError) as exc:
            raise DeliveryError(f"webhook request failed: {exc}") from None
        if not 200 <= status < 300:
            raise DeliveryError(f"webhook answered HTTP {status}")
