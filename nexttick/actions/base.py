"""What every action receives (the delivery envelope) and what every action kind implements."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from nexttick.errors import ValidationError
from nexttick.timeutil import rfc3339


def idempotency_key(task_id: str, scheduled_for: datetime) -> str:
    """`<task id>:<scheduled time>` — identical for every attempt and re-run of one occurrence."""
    return f"{task_id}:{rfc3339(scheduled_for)}"


@dataclass(frozen=True)
class Delivery:
    """One attempt of one occurrence; `envelope()` is the documented JSON every action receives."""

    task_id: str
    action: str
    payload: dict[str, Any]
    scheduled_for: datetime
    fired_at: datetime
    attempt: int

    @property
    def idempotency_key(self) -> str:
        return idempotency_key(self.task_id, self.scheduled_for)

    def envelope(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "action": self.action,
            "payload": self.payload,
            "scheduled_for": rfc3339(self.scheduled_for),
            "fired_at": rfc3339(self.fired_at),
            "attempt": self.attempt,
            "idempotency_key": self.idempotency_key,
        }


class ActionConfigError(ValidationError):
    """An action definition is invalid; `field` is `actions.<name>[.<key>]`."""

    def __init__(self, name: str, message: str, key: str | None = None) -> None:
        field = f"actions.{name}" + (f".{key}" if key else "")
        super().__init__(f"{field}: {message}", field=field)


class DeliveryError(Exception):
    """The target refused or failed the delivery (the worker records it and may retry)."""


class Action(Protocol):
    """A configured, named action. `deliver` returns on success and raises on failure."""

    name: str
    kind: str
    # Upper bound of one delivery; the worker stops claiming when less than this is left.
    timeout_seconds: float

    def deliver(self, delivery: Delivery) -> None: ...
