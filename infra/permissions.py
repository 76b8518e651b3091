"""IAM grants derived exactly from the configured actions (brief §7, "Actions")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

ACTION_KINDS = frozenset({"log", "webhook", "lambda", "sqs", "sns", "eventbridge", "python"})

# arn_for(service, resource) -> an ARN in the stack's partition/region/account.
ArnFactory = Callable[[str, str], str]


@dataclass(frozen=True)
class Grant:
    """One IAM statement: exact actions on exact resources."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]


def _first(definition: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = definition.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _required(name: str, definition: Mapping[str, Any], *keys: str) -> str:
    value = _first(definition, *keys)
    if value is None:
        raise ValueError(f"actions.{name}.{keys[0]} is required for a {definition['type']} action")
    return value


def _queue_arn(url_or_arn: str) -> str:
    """`https://sqs.<region>.amazonaws.com/<account>/<name>` or an ARN -> the queue ARN."""
    if url_or_arn.startswith("arn:"):
        return url_or_arn
    parsed = urlparse(url_or_arn)
    parts = parsed.path.strip("/").split("/")
    host = parsed.hostname or ""
    labels = host.split(".")
    if len(parts) != 2 or len(labels) < 3 or labels[0] != "sqs":
        raise ValueError(f"not an SQS queue URL: {url_or_arn!r}")
    return f"arn:aws:sqs:{labels[1]}:{parts[0]}:{parts[1]}"


def action_grant(name: str, definition: Mapping[str, Any], arn_for: ArnFactory) -> Grant | None:
    """The statement one configured action needs, or None (log, webhook, python need no AWS grant)."""
    kind = definition.get("type")
    if kind == "sqs":
        target = _required(name, definition, "queue_url", "queue_arn", "queue")
        return Grant(("sqs:SendMessage",), (_queue_arn(target),))
    if kind == "sns":
        topic = _required(name, definition, "topic_arn", "topic")
        return Grant(("sns:Publish",), (topic if topic.startswith("arn:") else arn_for("sns", topic),))
    if kind == "eventbridge":
        bus = _first(definition, "event_bus", "event_bus_name", "event_bus_arn") or "default"
        return Grant(
            ("events:PutEvents",), (bus if bus.startswith("arn:") else arn_for("events", f"event-bus/{bus}"),)
        )
    if kind == "lambda":
        fn = _required(name, definition, "function", "function_name", "function_arn")
        return Grant(
            ("lambda:InvokeFunction",),
            (fn if fn.startswith("arn:") else arn_for("lambda", f"function:{fn}"),),
        )
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
