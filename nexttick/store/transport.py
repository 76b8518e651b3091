"""The two parts of a DynamoDB request under botocore's event flow that cost most of its CPU, done
directly: Signature Version 4 of a JSON POST, and the HTTP exchange over kept-alive connections.

Why: botocore signs through a generic request object (about a seventh of a GetItem's client CPU) and
sends through urllib3 (about two fifths, much of it header objects and `email` parsing). Both are
general; a DynamoDB data-plane request is always one signed POST of a JSON body to `/`, answered
with a length-delimited JSON body. Done for that case it costs a fraction, and its errors map onto
botocore's own exceptions, so botocore's retry policy judges them as it judges urllib3's
(tests/integration/test_store_transport.py sends through both and compares).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import io
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
    """Kept-alive HTTP/1.1 connections to one endpoint, at most `max_idle` of them kept between
    requests (any number in flight). A request either answers (status, lower-cased headers, body)
    or raises botocore's exception for what went wrong, as its urllib3 session does.

    The exchange is written here rather than through `http.client`: a DynamoDB request is one POST
    with a length-delimited body, and `http.client` sends its head and body in two writes and parses
    every answer's headers through the `email` package, about a seventh of a worker's fire (bench
    `cpu`). Here the request is one write and the answer's head is read line by line; chunked and
    read-to-close bodies are still read as HTTP/1.1 defines them."""

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
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
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
        self._request_line = f"POST {self.path} HTTP/1.1\r\nHost: {self.host}\r\n".encode()
        self._idle: list[Connection] = []
        self._lock = threading.Lock()

    def post(
        self, headers: Iterable[tuple[str, str | bytes]], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        message = _request(self._request_line, headers, body)
        connection = self._take()
        try:
            connection.sock.sendall(message)
            status, answer_headers, answer, keep = _answer(connection.reader)
        except TimeoutError as exc:
            connection.close()
            raise ReadTimeoutError(endpoint_url=self.url, error=exc) from exc
        except (OSError, http.client.HTTPException) as exc:
            # Reset, closed or refused mid-exchange: botocore's urllib3 session says the same.
            connection.close()
            raise ConnectionClosedError(endpoint_url=self.url, error=exc) from exc
        if keep:
            self._give(connection)
        else:
            connection.close()
        return status, answer_headers, answer

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _take(self) -> Connection:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._connect()
            if not connection.dropped():
                return connection
            connection.close()

    def _give(self, connection: Connection) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(connection)
                return
        connection.close()

    def _connect(self) -> Connection:
        try:
            sock = socket.create_connection((self._hostname, self._port), self._connect_timeout)
        except TimeoutError as exc:
            raise ConnectTimeoutError(endpoint_url=self.url, error=exc) from exc
        except OSError as exc:
            raise EndpointConnectionError(endpoint_url=self.url, error=exc) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self._hostname)
        except TimeoutError as exc:
            sock.close()
            raise ConnectTimeoutError(endpoint_url=self.url, error=exc) from exc
        except OSError as exc:  # the TLS handshake failed: as http.client's connect() says it
            sock.close()
            raise EndpointConnectionError(endpoint_url=self.url, error=exc) from exc
        sock.settimeout(self._read_timeout)
        return Connection(sock)


class Connection:
    """One kept-alive connection: its socket and the buffered reader its answers are read from (kept
    with it, so a read-ahead is never lost between requests)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")

    def dropped(self) -> bool:
        """Whether the server closed it while idle (readable while idle means its end of file, or
        bytes no request asked for): as urllib3 checks before reusing one."""
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        return bool(poller.poll(0))

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


_MAX_LINE = 65536  # http.client's limit on a status or header line
_MAX_HEADERS = 100  # and on their number


def _request(request_line: bytes, headers: Iterable[tuple[str, str | bytes]], body: bytes) -> bytes:
    """The whole request as one write: the request line and Host, the headers as given (no line
    breaks inside a name or value, as http.client refuses them), identity encoding, the length."""
    lines = [request_line]
    for name, value in headers:
        raw = value if isinstance(value, bytes) else value.encode("latin-1")
        if b"\n" in raw or b"\r" in raw or "\n" in name or "\r" in name or ":" in name:
            raise ValueError(f"invalid header {name!r}")
        lines.append(b"%s: %s\r\n" % (name.encode("ascii"), raw))
    lines.append(b"Accept-Encoding: identity\r\nContent-Length: %d\r\n\r\n" % len(body))
    lines.append(body)
    return b"".join(lines)


def _answer(reader: io.BufferedReader) -> tuple[int, dict[str, str], bytes, bool]:
    """Read one answer: (status, lower-cased headers, body, whether the connection may be reused).
    Informational (1xx) answers are skipped, as http.client skips them."""
    while True:
        line = reader.readline(_MAX_LINE + 1)
        if not line:  # closed before a status line: what http.client calls RemoteDisconnected
            raise http.client.RemoteDisconnected("Remote end closed connection without response")
        version, _, rest = line.decode("latin-1").partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/") or not code.isdigit() or len(line) > _MAX_LINE:
            raise http.client.BadStatusLine(line.decode("latin-1").strip())
        status = int(code)
        headers = _headers(reader)
        if not 100 <= status < 200:
            break
    keep = version == "HTTP/1.1"
    connection = headers.get("connection", "").lower()
    if "close" in connection:
        keep = False
    elif "keep-alive" in connection:
        keep = True
    if status in (204, 304):
        return status, headers, b"", keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return status, headers, _chunked(reader), keep
    length = headers.get("content-length")
    if length is None:  # delimited by the end of the connection
        return status, headers, reader.read(), False
    if not length.isdigit():
        raise http.client.HTTPException(f"invalid Content-Length {length!r}")
    expected = int(length)
    body = reader.read(expected)
    if len(body) < expected:
        raise http.client.IncompleteRead(body, expected - len(body))
    return status, headers, body, keep


def _headers(reader: io.BufferedReader) -> dict[str, str]:
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADERS + 1):
        line = reader.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n", b""):
            return headers
        if line[:1] in (b" ", b"\t"):  # obsolete line folding: RFC 9112 lets a client refuse it
            raise http.client.HTTPException("folded header line")
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.lower()] = value.lstrip(" \t").rstrip("\r\n")  # as http.client keeps it
    raise http.client.HTTPException(f"got more than {_MAX_HEADERS} headers")


def _chunked(reader: io.BufferedReader) -> bytes:
    parts: list[bytes] = []
    while True:
        line = reader.readline(_MAX_LINE + 1)
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise http.client.IncompleteRead(b"".join(parts)) from None
        if size == 0:
            _headers(reader)  # the trailer, if any
            return b"".join(parts)
        chunk = reader.read(size)
        if len(chunk) < size or reader.read(2) != b"\r\n":
            raise http.client.IncompleteRead(b"".join(parts) + chunk)
        parts.append(chunk)
