"""Records every AWS API call the runtime makes (DynamoDB through the store, EventBridge, Lambda)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class OperationLog:
    """Hooks the real botocore clients of a Runtime; `calls` lists (service, operation, params)."""

    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    scans: int = 0  # never reset: a tripwire for Scan on any path

    @classmethod
    def attach(cls, runtime: Any) -> OperationLog:
        log = cls()
        store = runtime.store
        clients = {
            id(model._get_connection().connection.client): model._get_connection().connection.client
            for model in (store.models.task, store.models.queue, store.models.rule)
        }
        for client in clients.values():
            client.meta.events.register("provide-client-params.dynamodb", log._dynamodb)
        runtime.rule.client.meta.events.register("provide-client-params.events", log._other("events"))
        inner = getattr(runtime.trigger, "inner", runtime.trigger)
        inner.client.meta.events.register("provide-client-params.lambda", log._other("lambda"))
        return log

    def _dynamodb(self, *, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "Scan":
            self.scans += 1
        self.calls.append(("dynamodb", model.name, dict(params)))

    def _other(self, service: str) -> Any:
        def record(*, params: dict[str, Any], model: Any, **_: Any) -> None:
            self.calls.append((service, model.name, dict(params)))

        return record

    def reset(self) -> None:
        self.calls.clear()

    def count(self) -> Counter[str]:
        return Counter(f"{service}.{op}" for service, op, _ in self.calls)

    def ops(self, service: str, operation: str) -> list[dict[str, Any]]:
        return [p for s, o, p in self.calls if (s, o) == (service, operation)]


def all_entries(store: Any) -> list[Any]:
    """Every queue entry in every shard (consistent; small test tables only)."""
    return [entry for shard in range(store.shards) for entry in store.shard_entries(shard)]
