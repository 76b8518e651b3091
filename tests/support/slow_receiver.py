"""A webhook receiver that holds every delivery before answering 200: a delivery still in flight
when the local stack is stopped or killed."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class SlowReceiver(ThreadingHTTPServer):
    """POST /hook: records the idempotency key on arrival and sets `arrived`, answers 200 after
    `answer_seconds` and sets `answered`."""

    daemon_threads = True

    def __init__(self, answer_seconds: float) -> None:
        super().__init__(("127.0.0.1", 0), _SlowHandler)
        self.answer_seconds = answer_seconds
        self.keys: list[str] = []
        self.arrived = threading.Event()
        self.answered = threading.Event()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class _SlowHandler(BaseHTTPRequestHandler):
    server: SlowReceiver

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.keys.append(body["idempotency_key"])
        self.server.arrived.set()
        time.sleep(self.server.answer_seconds)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.server.answered.set()

    def log_message(self, format: str, *args: Any) -> None:
        return None
