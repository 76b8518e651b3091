"""Action kinds and the registry built from `NextTickSettings.action_definitions()` (README, "Configure")."""

from nexttick.actions.base import (
    Action,
    ActionConfigError,
    Delivery,
    DeliveryError,
    idempotency_key,
)
from nexttick.actions.registry import WEBHOOK_ALLOWLIST_ENV, ActionRegistry, build_registry

__all__ = [
    "WEBHOOK_ALLOWLIST_ENV",
    "Action",
    "ActionConfigError",
    "ActionRegistry",
    "Delivery",
    "DeliveryError",
    "build_registry",
    "idempotency_key",
]
