"""The two parts of a DynamoDB request under botocore's event flow that cost most of its CPU, done
directly: Signature Version 4 of a JSON POST, and the HTTP exchange over kept-alive connections.

Why: botocore signs through a generic request object (about a seventh of a GetItem's client CPU) and
sends through urllib3 (about two fifths, much of it header objects and `email` parsing). Both are
general; a DynamoDB data-plane request is always one signed POST of a JSON body to `/`. What the
standard library's `http.client` does for it costs a fraction, and its errors map onto botocore's
own exceptions, so botocore's retry policy judges them as it judges urllib3's
(tests/integration/test_store_transport.py sends through both and compares).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import select
import socket
import ssl
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from urllib.parse import urlsplit

from botocore.auth import SIGNED_HEADERS_BLACKLIST
from botocore.exceptions import (
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from botocore.httpsession import get_cert_path

_ALGORITHM = "AWS4-HMAC-SHA256"


class Signer:
    """SigV4 for one service and region (header-based, as botocore's `SigV4Auth` signs a JSON POST):
    the derived key is kept per day, the only input of it that changes."""

    def __init__(self, service: str, region: str) -> None:
        self.service = service
        self.region = region
        self._key: tuple[str, str, bytes] | None = None  # (secret, day, derived key)
        self._lock = threading.Lock()

    def sign(
        self,
        headers: dict[str, str],
        host: str,
        path: str,
        body: bytes,
        credentials: tuple[str, str, str | None],
        now: datetime | None = None,
    ) -> None:
        """Add `X-Amz-Date`, the session token if any, and `Authorization` to `headers` for a POST
        of `body` to `host` + `path`."""
        access_key, secret_key, token = credentials
        stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
        day = stamp[:8]
        headers["X-Amz-Date"] = stamp
        if token:
            headers["X-Amz-Security-Token"] = token
        signed = {name.lower(): " ".join(value.split()) for name, value in headers.items()}
        signed["host"] = host
        names = sorted(name for name in signed if name not in SIGNED_HEADERS_BLACKLIST)
        signed_names = ";".join(names)
        canonical = "\n".join(
            [
                "POST",
                path,
                "",
                "".join(f"{name}:{signed[name]}\n" for name in names),
                signed_names,
                hashlib.sha256(body).hexdigest(),
            ]
        )
        scope = f"{day}/{self.region}/{self.service}/aws4_request"
        to_sign = f"{_ALGORITHM}\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        signature = hmac.new(self._derived_key(secret_key, day), to_sign.encode(), hashlib.sha256)
        headers["Authorization"] = (
            f"{_ALGORITHM} Credential={access_key}/{scope}, SignedHeaders={signed_names}, "
            f"Signature={signature.hexdigest()}"
        )

    def _derived_key(self, secret_key: str, day: str) -> bytes:
        with self._lock:
            if self._key is not None and self._key[0] == secret_key and self._key[1] == day:
                return self._key[2]
        key = f"AWS4{secret_key}".encode()
        for part in (day, self.region, self.service, "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        with self._lock:
            self._key = (secret_key, day, key)
        return key


class Connections:
    """Kept-alive HTTP(S) connections to one endpoint, at most `max_idle` of them kept between
    requests (any number in flight). A request either answers (status, lower-cased headers, body)
    or raises botocore's exception for what went wrong, as its urllib3 session does."""

    def __init__(
        self,
        endpoint_url: str,
        *,
        connect_timeout: float,
        read_timeout: float,
        max_idle: int,
        verify: bool | str = True,
    ) -> None:
        parts = urlsplit(endpoint_url)
        self.url = endpoint_url
        self.host = parts.netloc
        self.path = parts.path or "/"
        self.request_url = f"{parts.scheme}://{parts.netloc}{self.path}"  # what botocore's requests name
        self._hostname = parts.hostname or ""
        self._port = parts.port
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._max_idle = max_idle
        self._tls: ssl.SSLContext | None = None
        if parts.scheme == "https":
            bundle = get_cert_path(verify) if verify else None  # type: ignore[arg-type]
            self._tls = ssl.create_default_context(cafile=bundle)
            if verify is False:
                self._tls.check_hostname = False
                self._tls.verify_mode = ssl.CERT_NONE
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def post(
        self, headers: Iterable[tuple[str, str | bytes]], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        connection = self._take()
        try:
            connection.request("POST", self.path, body, dict(headers))
            response = connection.getresponse()
            answer = response.read()
        except TimeoutError as exc:
            connection.close()
            raise ReadTimeoutError(endpoint_url=self.url, error=exc) from exc
        except (OSError, http.client.HTTPException) as exc:
            # Reset, closed or refused mid-exchange: botocore's urllib3 session says the same.
            connection.close()
            raise ConnectionClosedError(endpoint_url=self.url, error=exc) from exc
        if response.will_close:
            connection.close()
        else:
            self._give(connection)
        return response.status, {name.lower(): value for name, value in response.getheaders()}, answer

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _take(self) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._connect()
            if not _dropped(connection):
                return connection
            connection.close()

    def _give(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(connection)
                return
        connection.close()

    def _connect(self) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection
        if self._tls is not None:
            connection = http.client.HTTPSConnection(
                self._hostname, self._port, timeout=self._connect_timeout, context=self._tls
            )
        else:
            connection = http.client.HTTPConnection(self._hostname, self._port, timeout=self._connect_timeout)
        try:
            connection.connect()
        except TimeoutError as exc:
            raise ConnectTimeoutError(endpoint_url=self.url, error=exc) from exc
        except OSError as exc:
            raise EndpointConnectionError(endpoint_url=self.url, error=exc) from exc
        assert connection.sock is not None
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.sock.settimeout(self._read_timeout)
        return connection


def _dropped(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle kept-alive connection was closed by the server (readable while idle means its
    end of file, or bytes no request asked for): as urllib3 checks before reusing one."""
    sock = connection.sock
    if sock is None:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))
