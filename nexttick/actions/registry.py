"""ActionRegistry: the configured actions by name, built once per worker container."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from nexttick.actions.base import Action, ActionConfigError, Delivery, DeliveryError
from nexttick.actions.definition import BuildContext, Definition
from nexttick.actions.kinds import KINDS
from nexttick.actions.webhook import parse_allowlist
from nexttick.aws import ACTION_BOTO_CONFIG, AwsSession, make_client
from nexttick.config import NextTickSettings

WEBHOOK_ALLOWLIST_ENV = "NEXTTICK_WEBHOOK_ALLOWLIST"


class ActionRegistry:
    """Named actions; `deliver` runs the task's action (an unknown name is a failed delivery)."""

    def __init__(self, actions: Mapping[str, Action]) -> None:
        self.actions = dict(actions)

    def __contains__(self, name: object) -> bool:
        return name in self.actions

    def get(self, name: str) -> Action:
        try:
            return self.actions[name]
        except KeyError:
            raise DeliveryError(f"action {name!r} is not configured in this deployment") from None

    def deliver(self, delivery: Delivery) -> None:
        self.get(delivery.action).deliver(delivery)

    @property
    def max_timeout_seconds(self) -> float:
        """The longest a single delivery may take (sizes the worker's remaining-time margin)."""
        return max((a.timeout_seconds for a in self.actions.values()), default=1.0)


def build_registry(
    definitions: Mapping[str, Any],
    settings: NextTickSettings,
    *,
    session: AwsSession | None = None,
    webhook_allowlist: tuple[str, ...] | None = None,
) -> ActionRegistry:
    """Validate every definition (`{"type": ..., ...}`) and build its action. Raises
    ActionConfigError naming the first invalid action, so a bad deployment fails at start."""
    allowlist = webhook_allowlist or parse_allowlist(os.environ.get(WEBHOOK_ALLOWLIST_ENV))
    clients: dict[str, Any] = {}

    def client(service: str) -> Any:
        if service not in clients:
            clients[service] = make_client(service, settings, session, config=ACTION_BOTO_CONFIG)
        return clients[service]

    context = BuildContext(client=client, webhook_allowlist=allowlist)
    actions: dict[str, Action] = {}
    for name in sorted(definitions):
        raw = definitions[name]
        if not isinstance(raw, Mapping):
            raise ActionConfigError(name, 'definition must be an object like {"type": "log"}')
        kind = raw.get("type")
        if kind not in KINDS:
            raise ActionConfigError(
                name, f"unknown or missing 'type' {kind!r} (one of: {', '.join(sorted(KINDS))})", "type"
            )
        factory = KINDS[kind]
        actions[name] = factory.build(Definition(name, raw, factory.keys), context)
    return ActionRegistry(actions)
