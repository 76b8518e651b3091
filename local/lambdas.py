"""Lambda, locally: a Lambda-like context, asynchronous invocation on a bounded pool with Lambda's
retry policy, and a loopback endpoint speaking the Lambda Invoke API (moto cannot run code without
Docker). nexttick's own `lambda` clients reach it through NEXTTICK_LAMBDA_ENDPOINT_URL."""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import re
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from moto.core import DEFAULT_ACCOUNT_ID

from nexttick.clock import SystemClock

logger = logging.getLogger("local-stack")

Handler = Callable[[dict[str, Any], Any], Any]
Settle = Callable[[bool], None]  # told whether a polled invocation returned (True) or raised
# Lambda retries a failed asynchronous invocation twice, about one and two minutes later.
ASYNC_RETRY_DELAYS: tuple[float, ...] = (60.0, 120.0)


class LambdaContext:
    """What a handler sees as `context` in Lambda; the remaining time counts down from the timeout."""

    def __init__(
        self, function_name: str, timeout_seconds: float, region: str = "us-east-1", memory_mb: int = 512
    ) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{DEFAULT_ACCOUNT_ID}:function:{function_name}"
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = f"local/{self.aws_request_id}"
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class SleepCountingClock(SystemClock):
    """The system clock, counting the threads inside `sleep`, whose sleeps a stop ends (`wake`). A
    worker invocation woken so ends at once without a request (the process is stopping: its wait's
    claim and backstop stand for the next start's sync), so a stop waits for it and it cannot wake
    into a stopped emulator."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sleeping = 0
        self._woken = threading.Event()

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self._sleeping += 1
        try:
            if seconds > 0:
                self._woken.wait(seconds)
        finally:
            with self._lock:
                self._sleeping -= 1

    def wake(self) -> None:
        """End every sleep, now and from now on."""
        self._woken.set()

    def sleeping(self) -> int:
        with self._lock:
            return self._sleeping


class LocalFunction:
    """One function: synchronous calls, and asynchronous and polled ones queued to `concurrency`
    threads (the function's concurrency, shared as reserved concurrency is in Lambda)."""

    def __init__(
        self,
        name: str,
        handler: Handler,
        *,
        timeout_seconds: float,
        region: str,
        concurrency: int,
        retry_delays: Sequence[float] = ASYNC_RETRY_DELAYS,
    ) -> None:
        self.name = name
        self.handler = handler
        self.timeout_seconds = timeout_seconds
        self.region = region
        self.retry_delays = tuple(retry_delays)
        self._queue: queue.Queue[tuple[dict[str, Any], int, Settle | None] | None] = queue.Queue()
        self._timers: set[threading.Timer] = set()
        self._lock = threading.Condition()
        self._busy = 0  # queued or running asynchronous invocations
        self._running = 0
        self._stopping = False
        self._threads = [
            threading.Thread(target=self._drain, name=f"lambda-{name}-{i}", daemon=True)
            for i in range(concurrency)
        ]
        for thread in self._threads:
            thread.start()

    def invoke(self, event: dict[str, Any]) -> Any:
        """RequestResponse: run now, in the caller's thread; exceptions propagate."""
        context = LambdaContext(self.name, self.timeout_seconds, self.region)
        started = time.monotonic()
        try:
            return self.handler(event, context)
        finally:
            elapsed = time.monotonic() - started
            if elapsed > self.timeout_seconds:
                logger.warning(
                    "%s ran %.1fs, beyond its %ss timeout", self.name, elapsed, self.timeout_seconds
                )

    def invoke_async(self, event: dict[str, Any], delay: float = 0.0, attempt: int = 1) -> None:
        """Event: queue the invocation (after `delay` seconds); retried on error like Lambda."""
        with self._lock:
            if self._stopping:
                logger.warning("%s: stopping, asynchronous invocation dropped", self.name)
                return
            if delay <= 0:
                self._busy += 1
                self._queue.put((event, attempt, None))
                return
            timer = threading.Timer(delay, self._fire_timer, args=(event, attempt))
            timer.daemon = True
            self._timers.add(timer)
            timer.start()

    def invoke_polled(self, event: dict[str, Any], settle: Settle) -> bool:
        """An event source mapping's invocation (local/handover.py): queued as an asynchronous one,
        not retried (the source decides what a failure means), then `settle(returned)` on the
        invocation's thread. False when the function is stopping: nothing is queued."""
        with self._lock:
            if self._stopping:
                return False
            self._busy += 1
            self._queue.put((event, 1, settle))
            return True

    def _fire_timer(self, event: dict[str, Any], attempt: int) -> None:
        with self._lock:
            self._timers = {t for t in self._timers if t.is_alive() and t is not threading.current_thread()}
        self.invoke_async(event, 0.0, attempt)

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            event, attempt, settle = item
            with self._lock:
                self._running += 1
            try:
                returned = self._run_queued(event, attempt, retried=settle is None)
                if settle is not None:
                    settle(returned)
            finally:
                with self._lock:
                    self._busy -= 1
                    self._running -= 1
                    self._lock.notify_all()

    def _run_queued(self, event: dict[str, Any], attempt: int, *, retried: bool) -> bool:
        """Whether the invocation returned; a failed asynchronous one is retried as in Lambda."""
        try:
            self.invoke(event)
            return True
        except Exception:
            kind = "asynchronous" if retried else "polled"
            logger.exception("%s: %s invocation failed (attempt %d)", self.name, kind, attempt)
            if retried and attempt <= len(self.retry_delays):
                self.invoke_async(event, self.retry_delays[attempt - 1], attempt + 1)
            return False

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no asynchronous invocation is queued or running; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            return True

    def running(self) -> int:
        with self._lock:
            return self._running

    def stop(self, grace: float, resumable: Callable[[], int] = lambda: 0) -> bool:
        """Accept nothing more, cancel pending retries, give running invocations `grace` seconds,
        except the `resumable()` ones (sleeping: nothing to finish). Invocations still running then
        are abandoned (their threads are daemons), like a timeout; queued ones are dropped."""
        with self._lock:
            self._stopping = True
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()
            while not self._queue.empty():
                if self._queue.get_nowait() is not None:
                    self._busy -= 1
        deadline = time.monotonic() + grace
        with self._lock:
            while (settled := self._running <= resumable()) is False and time.monotonic() < deadline:
                self._lock.wait(min(0.05, max(0.0, deadline - time.monotonic())))
        for _ in self._threads:
            self._queue.put(None)
        return settled


_INVOKE_PATH = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")


class _InvokeRequestHandler(BaseHTTPRequestHandler):
    server: InvokeEndpoint

    def do_POST(self) -> None:
        match = _INVOKE_PATH.match(self.path.split("?", 1)[0])
        function = self.server.lookup(unquote(match.group("name"))) if match else None
        if function is None:
            return self._error(
                HTTPStatus.NOT_FOUND, "ResourceNotFoundException", f"Function not found: {self.path}"
            )
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            event = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return self._error(
                HTTPStatus.BAD_REQUEST, "InvalidRequestContentException", "payload is not JSON"
            )
        kind = self.headers.get("X-Amz-Invocation-Type", "RequestResponse")
        if kind == "DryRun":
            return self._reply(HTTPStatus.NO_CONTENT, b"")
        if kind == "Event":
            function.invoke_async(event)
            return self._reply(HTTPStatus.ACCEPTED, b"")
        try:
            result = function.invoke(event)
        except Exception as exc:
            body = {
                "errorMessage": str(exc),
                "errorType": type(exc).__name__,
                "stackTrace": traceback.format_tb(exc.__traceback__),
            }
            return self._reply(
                HTTPStatus.OK, json.dumps(body).encode(), {"X-Amz-Function-Error": "Unhandled"}
            )
        return self._reply(HTTPStatus.OK, json.dumps(result).encode())

    def _error(self, status: HTTPStatus, kind: str, message: str) -> None:
        body = json.dumps({"Type": "User", "message": message}).encode()
        self._reply(status, body, {"x-amzn-ErrorType": kind})

    def _reply(self, status: HTTPStatus, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.send_header("X-Amz-Executed-Version", "$LATEST")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("lambda endpoint: " + format, *args)


# Connections the kernel holds for an HTTP server's accept loop (the local stack's and the bench's):
# socketserver's default of 5 resets (or, with SYN cookies, stalls) a client beyond the fifth that
# connects while the loop is busy, as 20 concurrent API clients or a worker pool's 32 connections
# do. The kernel caps it at net.core.somaxconn.
LISTEN_BACKLOG = 1024
# How often an idle HTTP server's loop wakes (socketserver's default is twice a second; on a slow
# virtual machine the idle stack's wake-ups add up to a percent of a core). A shutdown wakes it at once.
IDLE_POLL_SECONDS = 30.0


class LocalHTTPServer(ThreadingHTTPServer):
    """The local stack's and the bench's HTTP servers: a thread per connection, a listen backlog that
    takes a burst (LISTEN_BACKLOG), and a serving loop that sleeps while idle: `shutdown()` connects
    to the server to wake it rather than waiting for its next poll."""

    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def serve_forever(self, poll_interval: float = IDLE_POLL_SECONDS) -> None:
        super().serve_forever(poll_interval)

    def shutdown(self) -> None:
        """Stop the serving loop and wait until it has (as socketserver's), waking it at once."""
        stopping = threading.Thread(target=super().shutdown, name="http-shutdown", daemon=True)
        stopping.start()
        host, port = self.server_address[:2]
        while stopping.is_alive():
            with contextlib.suppress(OSError):
                socket.create_connection((str(host), int(port)), timeout=1).close()
            stopping.join(0.05)


class InvokeEndpoint(LocalHTTPServer):
    """POST /2015-03-31/functions/{name}/invocations on 127.0.0.1 for the registered functions."""

    def __init__(self, functions: Sequence[LocalFunction], port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _InvokeRequestHandler)
        self.functions = {f.name: f for f in functions}
        self._thread = threading.Thread(target=self.serve_forever, name="lambda-endpoint", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def lookup(self, name_or_arn: str) -> LocalFunction | None:
        """A function by name or ARN (a `:qualifier` suffix is accepted and ignored)."""
        name = name_or_arn.split(":function:", 1)[-1].split(":", 1)[0]
        return self.functions.get(name)

    def start(self) -> InvokeEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() waits for serve_forever, which may never have run
            self.shutdown()
        self.server_close()
