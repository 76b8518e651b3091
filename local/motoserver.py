"""A moto server on loopback that tells the emulated EventBridge when a rule changes and journals
what each acknowledged write changed.

The notifier is a WSGI middleware around moto's own application: it sees every PutRule (from this
process or from a CLI in another one) exactly as EventBridge itself would, so the emulator can sleep
until the rule's next time or a change — no polling, no hook in nexttick's own clients. The same
middleware hands every successful write to a recorder (the local stack's journal) before the
response leaves, so what the emulator acknowledged survives any end of the process.
"""

from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table
from moto.events.models import events_backends
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    create_backend_app,
)

from local.keepalive import KeptAliveServer
from local.motopatches import answer_long_polls_on_time, lighten_dynamodb, route_without_listing_moto

RULE_CHANGING_TARGETS = frozenset(
    {"AWSEvents.PutRule", "AWSEvents.DeleteRule", "AWSEvents.EnableRule", "AWSEvents.DisableRule"}
)


# Deletes only produce REMOVE records, which the keeper ignores: they need not wake it.
WRITE_TARGETS = frozenset(
    f"DynamoDB_20120810.{op}" for op in ("PutItem", "UpdateItem", "BatchWriteItem", "TransactWriteItems")
)


# SQS requests (JSON protocol) are served outside the request lock: they share nothing with the table
# and the rule, and a long poll would hold the lock, and every other request, for its whole wait.
SQS_TARGET_PREFIX = "AmazonSQS."


# The header of the requests still served once the server is frozen (the shutdown snapshot).
FROZEN_PASS_HEADER = "X-Nexttick-Snapshot"
_FROZEN_PASS_ENVIRON = "HTTP_" + FROZEN_PASS_HEADER.upper().replace("-", "_")


class WriteRecorder(Protocol):
    """Makes acknowledged writes durable (local.state.LocalState)."""

    def watches(self, target: str | None) -> bool:
        """Whether a request with this X-Amz-Target may change what is recorded."""
        ...

    def record(self, target: str, request: bytes, environ: dict[str, Any]) -> None:
        """Called once moto has applied the successful request, before any other request runs."""
        ...

    def flush(self) -> None:
        """Return once everything recorded so far is durable (called before every response)."""
        ...


class EmulatorEndpoint(Protocol):
    """What the stack's parts need of the emulated AWS, in this process (MotoServer) or in its own
    (local.motoprocess.MotoProcess): where it listens and what it tells about its writes."""

    @property
    def url(self) -> str: ...

    def subscribe(self, listener: Callable[[], None]) -> None: ...

    def subscribe_writes(self, listener: Callable[[], None]) -> None: ...


class RuleChangeNotifier:
    """WSGI middleware: after a rule-changing events call has been applied, call every listener;
    requests are applied one at a time (atomic conditional writes), and each successful write is
    recorded and made durable before its response is sent.

    It can also freeze the emulated AWS: from then on only requests carrying FROZEN_PASS_HEADER are
    served and every other caller waits for good, so a snapshot sees one consistent state while
    abandoned worker invocations can no longer change it."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self._listeners: list[Callable[[], None]] = []
        self._recorder: WriteRecorder | None = None
        self._open = threading.Event()
        self._open.set()
        # moto checks a conditional write's condition and applies it without a lock: two concurrent
        # requests could both pass one condition. DynamoDB applies each write atomically; serialising
        # the (CPU-bound, GIL-holding) request processing restores that at no real cost. Whoever
        # reads moto's backends directly takes it too (EmulatedState).
        self.serial = threading.Lock()

    def subscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def record_with(self, recorder: WriteRecorder | None) -> None:
        self._recorder = recorder

    def freeze(self) -> None:
        self._open.clear()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if _FROZEN_PASS_ENVIRON not in environ:
            self._open.wait()
        target = environ.get("HTTP_X_AMZ_TARGET")
        recorder = self._recorder
        request = _read_body(environ) if recorder is not None and recorder.watches(target) else None
        status: list[str] = []

        def respond(code: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            status.append(code)
            return start_response(code, headers, exc_info)

        serial = contextlib.nullcontext() if (target or "").startswith(SQS_TARGET_PREFIX) else self.serial
        with serial:
            # moto has applied the change when this returns; werkzeug sends nothing before we return
            body = list(self.app(environ, respond))
            if request is not None and status and status[-1].startswith("2"):
                assert recorder is not None and target is not None
                recorder.record(target, request, environ)
        if recorder is not None:
            # also before a read: no response shows a write that a crash could still lose
            recorder.flush()
        if target in RULE_CHANGING_TARGETS:
            for listener in self._listeners:
                listener()
        return body


class WriteWatch:
    """WSGI middleware around moto's application: after moto has applied a DynamoDB write request,
    call `listener` (it only sets an event: it runs inside the server's request lock)."""

    def __init__(self, app: Callable[..., Iterable[bytes]], listener: Callable[[], None]) -> None:
        self.app = app
        self.listener = listener

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        body = list(self.app(environ, start_response))
        if environ.get("HTTP_X_AMZ_TARGET") in WRITE_TARGETS:
            self.listener()
        return body


def _read_body(environ: dict[str, Any]) -> bytes:
    """The request body, left in place for moto to read."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body: bytes = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


class EmulatedState:
    """The stack's table and rule as moto holds them in this process, read and written directly.

    Snapshots, restores and the journal's after-images go here rather than through the server: a
    Scan of 10,000 tasks takes moto ~25 s (every page re-sorts and walks the whole table) where
    copying them here takes ~0.2 s, and writing here is neither journaled nor stopped by a frozen
    server. Items are DynamoDB JSON (`{"pk": {"S": ...}, ...}`), as on the wire; the table has a
    partition and a sort key. The backends are looked up on every call (a moto reset replaces them).
    """

    def __init__(self, region: str, table: str, rule: str, account: str = DEFAULT_ACCOUNT_ID) -> None:
        self.region, self.table_name, self.rule_name, self.account = region, table, rule, account

    def _table(self) -> tuple[Table, str, str]:
        """moto's table and its partition and sort key names."""
        table = dynamodb_backends[self.account][self.region].get_table(self.table_name)
        assert table.range_key_attr is not None
        return table, table.hash_key_attr, table.range_key_attr

    def key_names(self) -> tuple[str, str]:
        return self._table()[1:]

    def keys(self) -> list[dict[str, Any]]:
        table, hash_name, range_name = self._table()
        return [
            {hash_name: h.to_json(), range_name: r.to_json()}
            for h, items in table.items.items()
            for r in items
        ]

    def get(self, keys: Iterable[dict[str, Any]]) -> list[dict[str, Any] | None]:
        """The items under these keys (None where there is none), as copies."""
        table, hash_name, range_name = self._table()
        found: list[dict[str, Any] | None] = []
        for key in keys:
            item = table.items.get(DynamoType(key[hash_name]), {}).get(DynamoType(key[range_name]))
            found.append(item.to_json()["Attributes"] if item is not None else None)
        return found

    def put(self, items: Iterable[dict[str, Any]]) -> None:
        """Store items that moto itself produced (a snapshot's or the journal's), as they are.

        moto's own put re-validates every item with a size check per attribute (quadratic, ~3 s for
        10,000 tasks); these were validated when first written, so they are stored the way moto
        copies an item (its Item.__deepcopy__), without the checks."""
        table, hash_name, range_name = self._table()
        for attributes in items:
            hash_key, range_key = DynamoType(attributes[hash_name]), DynamoType(attributes[range_name])
            item = Item(hash_key, range_key, {})
            dict.update(item.attrs, {name: DynamoType(value) for name, value in attributes.items()})
            table.items[hash_key][range_key] = item

    def rule(self) -> dict[str, Any] | None:
        """The rule's schedule, description and state (None when there is no such rule)."""
        bus = events_backends[self.account][self.region].event_buses.get("default")
        found = bus.rules.get(self.rule_name) if bus is not None else None
        if found is None:
            return None
        return {
            "expression": found.scheduled_expression,
            "description": found.description or "",
            "state": found.state or "ENABLED",
        }

    def put_rule(self, rule: dict[str, Any]) -> None:
        events_backends[self.account][self.region].put_rule(
            self.rule_name,
            description=rule.get("description") or "",
            scheduled_expression=rule["expression"],
            state=rule.get("state") or "ENABLED",
        )


class MotoServer:
    """moto's server application (all services) on 127.0.0.1, in a daemon thread."""

    def __init__(self, port: int = 0) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log line per AWS call
        lighten_dynamodb()
        route_without_listing_moto()
        answer_long_polls_on_time()
        self.notifier = RuleChangeNotifier(DomainDispatcherApplication(create_backend_app))
        self._server = KeptAliveServer("127.0.0.1", port, self.notifier)
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call `listener` after every rule-changing events call the server applies."""
        self.notifier.subscribe(listener)

    def subscribe_writes(self, listener: Callable[[], None]) -> None:
        """Call `listener` after every DynamoDB write the server applies (wraps the application its
        notifier serialises, so the write has been applied when it is called)."""
        self.notifier.app = WriteWatch(self.notifier.app, listener)

    def start(self) -> MotoServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.stop()
        self._thread.join(timeout=5)
