"""How an action definition is read: typed access whose every error names the action and the key,
and what a kind needs at build time."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nexttick.actions.base import ActionConfigError

MAX_TIMEOUT_SECONDS = 300.0
# How much of a failed target's answer a delivery error quotes.
ERROR_BODY_CHARS = 200


def envelope_json(envelope: dict[str, Any]) -> str:
    """The envelope as a message body: compact, keys sorted (the same bytes for the same delivery)."""
    return json.dumps(envelope, separators=(",", ":"), sort_keys=True)


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
