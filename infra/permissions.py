"""IAM grants derived exactly from the configured actions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from nexttick.actions.kinds import KINDS

ACTION_KINDS = frozenset(KINDS)

# arn_for(service, resource) -> an ARN in the stack's partition/region/account.
ArnFactory = Callable[[str, str], str]


@dataclass(frozen=True)
class Grant:
    """One IAM statement: exact actions on exact resources."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]


def _required(name: str, definition: Mapping[str, Any], key: str) -> str:
    value = definition.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"actions.{name}.{key} is required for a {definition['type']} action")
    return value


def _queue_arn(name: str, url_or_arn: str) -> str:
    """`https://sqs.<region>.amazonaws.com/<account>/<queue>` (or an ARN) -> the queue ARN."""
    if url_or_arn.startswith("arn:"):
        return url_or_arn
    parsed = urlparse(url_or_arn)
    parts = parsed.path.strip("/").split("/")
    labels = (parsed.hostname or "").split(".")
    if len(parts) != 2 or len(labels) < 3 or labels[0] != "sqs":
        raise ValueError(f"actions.{name}.queue_url: not an SQS queue URL: {url_or_arn!r}")
    return f"arn:aws:sqs:{labels[1]}:{parts[0]}:{parts[1]}"


def action_grant(name: str, definition: Mapping[str, Any], arn_for: ArnFactory) -> Grant | None:
    """The statement one configured action needs (keys as the worker's action kinds read them),
    or None: log, webhook and python actions need no AWS permission."""
    kind = definition.get("type")
    if kind == "sqs":
        return Grant(("sqs:SendMessage",), (_queue_arn(name, _required(name, definition, "queue_url")),))
    if kind == "sns":
        return Grant(("sns:Publish",), (_required(name, definition, "topic_arn"),))
    if kind == "eventbridge":
        bus = definition.get("event_bus_name") or "default"
        bus_arn = bus if bus.startswith("arn:") else arn_for("events", f"event-bus/{bus}")
        return Grant(("events:PutEvents",), (bus_arn,))
    if kind == "lambda":
        fn = _required(name, definition, "function")
        arn = fn if fn.startswith("arn:") else arn_for("lambda", f"function:{fn}")
        qualifier = definition.get("qualifier")
        return Grant(("lambda:InvokeFunction",), (f"{arn}:{qualifier}" if qualifier else arn,))
    if kind in ("log", "webhook", "python"):
        return None
    raise ValueError(f"actions.{name}.type must be one of {sorted(ACTION_KINDS)}")


def action_grants(actions: Mapping[str, Mapping[str, Any]], arn_for: ArnFactory) -> list[Grant]:
    """Grants for every configured action, merged per IAM action, resources de-duplicated and sorted."""
    merged: dict[tuple[str, ...], set[str]] = {}
    for name in sorted(actions):
        grant = action_grant(name, actions[name], arn_for)
        if grant is not None:
            merged.setdefault(grant.actions, set()).update(grant.resources)
    return [Grant(acts, tuple(sorted(res))) for acts, res in sorted(merged.items())]
