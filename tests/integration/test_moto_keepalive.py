"""The local stack's moto server keeps HTTP/1.1 connections alive (local/keepalive.py,
`KeptAliveRequestHandler`): requests on one connection, back to back or sent together, each get
their own answer; a request that asks to close, has a chunked body, or is refused before it is read
ends its connection; a stop ends the connections waiting for their next request."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import BinaryIO

import pytest

from local.motoserver import MotoServer
from tests.support.local import client, moto_server

TABLE = "keepalive"


@pytest.fixture
def server(aws_credentials: None) -> Iterator[MotoServer]:
    with moto_server() as server:
        client("dynamodb", server).create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield server


def _request(server: MotoServer, action: str, body: dict, *, headers: str = "") -> bytes:
    raw = json.dumps(body).encode()
    host = server.url.removeprefix("http://")
    head = (
        f"POST / HTTP/1.1\r\nHost: {host}\r\nX-Amz-Target: DynamoDB_20120810.{action}\r\n"
        "Content-Type: application/x-amz-json-1.0\r\n"
        "Authorization: AWS4-HMAC-SHA256 Credential=testing/20300107/us-east-1/dynamodb/aws4_request, "
        f"SignedHeaders=host, Signature=0\r\n{headers}Content-Length: {len(raw)}\r\n\r\n"
    )
    return head.encode() + raw


def _answer(reader: BinaryIO) -> tuple[str, dict[str, str], dict]:
    """One answer: its status line, its lower-cased headers, its JSON body."""
    status = reader.readline().decode().strip()
    headers: dict[str, str] = {}
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    body = reader.read(int(headers["content-length"]))
    return status, headers, json.loads(body)


def _connect(server: MotoServer) -> tuple[socket.socket, BinaryIO]:
    port = int(server.url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock, sock.makefile("rb")  # a buffered reader of the answers


def _put(key: str, size: int = 10) -> dict:
    return {"TableName": TABLE, "Item": {"pk": {"S": key}, "data": {"S": "x" * size}}}


def _get(key: str) -> dict:
    return {"TableName": TABLE, "Key": {"pk": {"S": key}}, "ConsistentRead": True}


def test_requests_back_to_back_share_one_connection(server: MotoServer) -> None:
    sock, reader = _connect(server)
    with sock:
        for key in ("a", "b", "c"):
            sock.sendall(_request(server, "PutItem", _put(key)))
            status, headers, _ = _answer(reader)
            assert status == "HTTP/1.1 200 OK"
            assert headers.get("connection") != "close"
        sock.sendall(_request(server, "GetItem", _get("b")))
        assert _answer(reader)[2]["Item"]["pk"] == {"S": "b"}


def test_requests_sent_together_are_each_answered_in_order(server: MotoServer) -> None:
    # The first request's body is large, and the next request line follows it in the same write:
    # the server must read exactly the first body, and not discard what comes after it
    sock, reader = _connect(server)
    with sock:
        sock.sendall(
            _request(server, "PutItem", _put("big", size=200_000))
            + _request(server, "GetItem", _get("big"))
            + _request(server, "GetItem", _get("missing"))
        )
        assert _answer(reader)[0] == "HTTP/1.1 200 OK"
        assert len(_answer(reader)[2]["Item"]["data"]["S"]) == 200_000
        assert "Item" not in _answer(reader)[2]


def test_a_request_that_asks_to_close_ends_its_connection(server: MotoServer) -> None:
    sock, reader = _connect(server)
    with sock:
        sock.sendall(_request(server, "GetItem", _get("a"), headers="Connection: close\r\n"))
        _, headers, _ = _answer(reader)
        assert headers["connection"] == "close"
        assert reader.read(1) == b""


def test_a_chunked_request_is_answered_and_ends_its_connection(server: MotoServer) -> None:
    body = json.dumps(_put("chunked")).encode()
    head = _request(server, "PutItem", {}).split(b"Content-Length:")[0]
    chunked = head + b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    sock, reader = _connect(server)
    with sock:
        sock.sendall(chunked)
        status, headers, _ = _answer(reader)
        assert (status, headers["connection"]) == ("HTTP/1.1 200 OK", "close")
    assert "Item" in client("dynamodb", server).get_item(**_get("chunked"))


def test_a_stop_ends_the_connections_waiting_for_their_next_request(aws_credentials: None) -> None:
    server = MotoServer().start()
    sock, reader = _connect(server)
    with sock:
        sock.sendall(_request(server, "ListTables", {}))
        assert _answer(reader)[0] == "HTTP/1.1 200 OK"
        server.stop()
        assert reader.read(1) == b""


def test_a_request_refused_before_it_is_read_ends_its_connection(server: MotoServer) -> None:
    # A header line too long to parse, on a connection a request was answered on: the server answers
    # 431 without reading the rest, so it must not keep the connection
    sock, reader = _connect(server)
    with sock:
        sock.sendall(_request(server, "GetItem", _get("a")))
        assert _answer(reader)[0] == "HTTP/1.1 200 OK"
        sock.sendall(_request(server, "GetItem", _get("a"), headers=f"X-Long: {'x' * 70_000}\r\n"))
        status = reader.readline().decode()
        assert status.startswith("HTTP/1.1 431"), status
        length = 0
        while (line := reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        reader.read(length)
        assert reader.read(1) == b""
