"""A moto server on loopback that tells the emulated EventBridge when a rule changes.

The notifier is a WSGI middleware around moto's own application: it sees every PutRule (from this
process or from a CLI in another one) exactly as EventBridge itself would, so the emulator can sleep
until the rule's next time or a change — no polling, no hook in nexttick's own clients.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

RULE_CHANGING_TARGETS = frozenset(
    {"AWSEvents.PutRule", "AWSEvents.DeleteRule", "AWSEvents.EnableRule", "AWSEvents.DisableRule"}
)


# The header of the requests still served once the server is frozen (the shutdown snapshot).
FROZEN_PASS_HEADER = "X-Nexttick-Snapshot"
_FROZEN_PASS_ENVIRON = "HTTP_" + FROZEN_PASS_HEADER.upper().replace("-", "_")


class RuleChangeNotifier:
    """WSGI middleware: after a rule-changing events call has been applied, call every listener;
    requests are applied one at a time (atomic conditional writes).

    It can also freeze the emulated AWS: from then on only requests carrying FROZEN_PASS_HEADER are
    served and every other caller waits for good, so a snapshot sees one consistent state while
    abandoned worker invocations can no longer change it."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self._listeners: list[Callable[[], None]] = []
        self._open = threading.Event()
        self._open.set()
        # moto checks a conditional write's condition and applies it without a lock: two concurrent
        # requests could both pass one condition. DynamoDB applies each write atomically; serialising
        # the (CPU-bound, GIL-holding) request processing restores that at no real cost.
        self._serial = threading.Lock()

    def subscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def freeze(self) -> None:
        self._open.clear()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if _FROZEN_PASS_ENVIRON not in environ:
            self._open.wait()
        with self._serial:
            body = list(self.app(environ, start_response))  # moto has applied the change when this returns
        if environ.get("HTTP_X_AMZ_TARGET") in RULE_CHANGING_TARGETS:
            for listener in self._listeners:
                listener()
        return body


class MotoServer:
    """moto's server application (all services) on 127.0.0.1, in a daemon thread."""

    def __init__(self, port: int = 0) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log line per AWS call
        self.notifier = RuleChangeNotifier(DomainDispatcherApplication(create_backend_app))
        self._server: BaseWSGIServer = make_server(
            "127.0.0.1", port, self.notifier, threaded=True, request_handler=MotoRequestHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> MotoServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
