"""moto's server, kept alive: werkzeug's threaded WSGI server with HTTP/1.1 connections that stay
open between requests (the local stack's emulated AWS, local/motoserver.py)."""

from __future__ import annotations

import contextlib
import io
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.serving import ThreadedWSGIServer


class KeptAliveRequestHandler(MotoRequestHandler):
    """moto's request handler with HTTP/1.1 keep-alive. werkzeug's answers every request with
    `Connection: close` (http.server cannot skip a body the application left unread before the next
    request line), so each AWS call cost a TCP connection, a server thread and a TIME_WAIT socket:
    about 200 new connections a second under the local load. Here a request's body is read whole
    before the application sees it, so the connection is always at the next request line; only a
    request with a chunked body, one that asks to close, one refused before it is read, or one
    served while the server stops, ends its connection."""

    server: KeptAliveServer
    # The request being served had its body read whole here (set per request in `make_environ`, and
    # cleared when it is answered, so an error answered before the next request's environ is built
    # closes its connection).
    _whole_body = False

    def setup(self) -> None:
        super().setup()
        # An answer leaves in several writes: without this, Nagle's algorithm holds its last one
        # until the client's delayed ACK of the first (about 40 ms per request on a kept connection).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.opened(self.connection)

    def finish(self) -> None:
        self.server.closed(self.connection)
        super().finish()

    def run_wsgi(self) -> None:
        rfile, connection = self.rfile, self.connection
        try:
            super().run_wsgi()
        finally:
            self.rfile, self.connection = rfile, connection
            self._whole_body = False

    def make_environ(self) -> dict[str, Any]:
        environ = super().make_environ()
        # A chunked body is werkzeug's to read; a body behind `Expect: 100-continue` comes only once
        # werkzeug has answered 100, after this.
        self._whole_body = (
            "chunked" not in (environ.get("HTTP_TRANSFER_ENCODING") or "").lower()
            and environ.get("HTTP_EXPECT", "").lower().strip() != "100-continue"
        )
        if self._whole_body:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            environ["wsgi.input"] = io.BytesIO(self.rfile.read(length) if length > 0 else b"")
            # After the answer, werkzeug discards what is left to read on the connection (waiting
            # 10 ms for it), which would be the next request's: until `run_wsgi` returns, it finds
            # nothing left, at once.
            self.rfile, self.connection = io.BytesIO(), self.server.at_end
        return environ

    def send_header(self, keyword: str, value: str) -> None:
        if keyword.lower() == "connection" and value.lower() == "close" and self._keeps_alive():
            return  # werkzeug's unconditional close: the body was read, the connection stays usable
        super().send_header(keyword, value)

    def _keeps_alive(self) -> bool:
        return (
            self._whole_body
            and not self.close_connection  # the request's own `Connection: close`, or HTTP/1.0
            and not self.server.stopping
        )


class KeptAliveServer(ThreadedWSGIServer):
    """werkzeug's threaded server, which knows its open connections so that a stop ends them too
    (each is served by a daemon thread waiting for its next request)."""

    def __init__(self, host: str, port: int, app: Callable[..., Iterable[bytes]]) -> None:
        super().__init__(host, port, app, handler=KeptAliveRequestHandler)
        self.stopping = False
        # A socket always readable at its end: what a request's leftover input is looked for on.
        self.at_end, peer = socket.socketpair()
        peer.close()
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def opened(self, connection: socket.socket) -> None:
        with self._open_lock:
            self._open.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._open_lock:
            self._open.discard(connection)

    def stop(self) -> None:
        """Stop accepting, then end every open connection (an idle one waits in its next read)."""
        self.stopping = True
        self.shutdown()
        self.server_close()
        self.at_end.close()
        with self._open_lock:
            open_connections, self._open = self._open, set()
        for connection in open_connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
