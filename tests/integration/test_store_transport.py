"""The store's light DynamoDB path (nexttick/store/client.py, nexttick/store/transport.py) answers,
fails and retries as botocore's own path does, operation by operation.

Two botocore clients of one session, one of them lightened, send the same requests to two tables of
one DynamoDB: in-process moto (answered through botocore's `before-send` event) and moto's server
over HTTP (the light path's own HTTP exchange). Their answers must be equal but for what
differs per request (the request id, the date). Failures come from a scripted HTTP server: the same
script played to each client must end the same way after the same number of attempts. The HTTP
exchange itself must read a set of raw answers (chunked, read-to-close, HTTP/1.0, 1xx first) as
`http.client` reads them, and fail on a broken one as a closed connection."""

from __future__ import annotations

import http.client
import json
import random
import re
import select
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)

from nexttick.store.client import LIGHT_OPERATIONS, LightCalls, lighten
from nexttick.store.transport import Connections
from tests.integration.test_motopatches_answers import _requests
from tests.support.aws import create_keyed_table
from tests.support.local import moto_server

TABLES = ("stock", "light")
CONFIG = Config(
    parameter_validation=False,  # as PynamoDB makes its client
    retries={"mode": "standard", "total_max_attempts": 3},
    connect_timeout=2,
    read_timeout=0.5,  # the scripted server's slow answers time out quickly
)
# Against moto: an answer is never retried (the comparison asserts it), so no timeout a busy machine
# can reach (a CI run beside other work saw moto's server take over 0.5 s for one UpdateItem).
PATIENT = CONFIG.merge(Config(read_timeout=60))


def _clients(endpoint_url: str | None = None, config: Config = CONFIG) -> tuple[Any, Any]:
    stock, light, _ = _trio(endpoint_url, config)
    return stock, light


def _trio(endpoint_url: str | None = None, config: Config = CONFIG) -> tuple[Any, Any, LightCalls]:
    """A stock client, a lightened one, and the light path's calls."""
    session = botocore.session.get_session()
    stock, light = (
        session.create_client("dynamodb", region_name="us-east-1", endpoint_url=endpoint_url, config=config)
        for _ in TABLES
    )
    calls = lighten(light)
    assert calls is not None
    return stock, light, calls


def _answer(client: Any, table: str, operation: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The parsed answer without its per-request metadata, or the error botocore raised."""
    if operation == "batch_get_item":
        unique = list({repr(key): key for key in parameters["Keys"]}.values())
        call: dict[str, Any] = {"RequestItems": {table: {"Keys": unique, "ConsistentRead": True}}}
    else:
        call = {"TableName": table, **parameters}
    try:
        answer = getattr(client, operation)(**call)
    except ClientError as error:
        answer = {"raised": type(error).__name__, **error.response}
    metadata = answer.pop("ResponseMetadata")
    assert metadata["HTTPStatusCode"] in (200, 400) and metadata["RetryAttempts"] == 0
    assert "x-amzn-requestid" in metadata["HTTPHeaders"]
    return json.loads(json.dumps(answer, default=repr).replace(f'"{table}"', '"table"'))


def _compare(stock: Any, light: Any, binary: bool, seed: int) -> int:
    for client, table in zip((stock, light), TABLES, strict=True):
        create_keyed_table(client, table)
    compared = 0
    for operation, parameters in _requests(random.Random(seed), binary):
        answers = [_answer(c, t, operation, parameters) for c, t in zip((stock, light), TABLES, strict=True)]
        assert answers[0] == answers[1], (operation, parameters)
        compared += 1
    # Errors botocore parses from the answer: a malformed expression, a table that does not exist
    for missing in (True, False):
        bad = {"Key": {"pk": {"S": "p"}, "sk": {"S": "s"}}, "UpdateExpression": "SET v = :undefined"}
        answers = [
            _answer(c, "no-such-table" if missing else t, "update_item", bad)
            for c, t in zip((stock, light), TABLES, strict=True)
        ]
        assert answers[0]["raised"] == answers[1]["raised"] != ""
        assert answers[0] == answers[1]
    return compared


@pytest.mark.parametrize(("seed", "binary"), [(0, False), (2, True)])
def test_in_process_moto_answers_both_paths_alike(aws: None, seed: int, binary: bool) -> None:
    assert _compare(*_clients(config=PATIENT), binary, seed) == 40


@pytest.mark.parametrize(("seed", "binary"), [(1, False), (2, True)])
def test_moto_server_over_http_answers_both_paths_alike(
    aws_credentials: None, seed: int, binary: bool
) -> None:
    with moto_server() as server:
        stock, light = _clients(server.url, PATIENT)
        assert _compare(stock, light, binary, seed) == 40
        # batch writes too (the store's bulk paths): the same items land
        for client, table in zip((stock, light), TABLES, strict=True):
            puts = [{"PutRequest": {"Item": {"pk": {"S": "bw"}, "sk": {"S": f"{i}"}}}} for i in range(5)]
            assert client.batch_write_item(RequestItems={table: puts})["UnprocessedItems"] == {}
        counts = [
            client.query(
                TableName=table,
                KeyConditionExpression="pk = :p",
                ExpressionAttributeValues={":p": {"S": "bw"}},
            )["Count"]
            for client, table in zip((stock, light), TABLES, strict=True)
        ]
        assert counts == [5, 5]


def test_only_the_data_plane_operations_take_the_light_path(aws_credentials: None) -> None:
    with moto_server() as server:
        _, light = _clients(server.url, PATIENT)
        sent: list[str] = []
        light.meta.events.register(
            "request-created.dynamodb", lambda *, operation_name, **_: sent.append(operation_name)
        )
        create_keyed_table(light, "t")
        light.describe_table(TableName="t")
        light.put_item(TableName="t", Item={"pk": {"S": "a"}, "sk": {"S": "b"}})
        # request-created is botocore's own sending path: the control plane goes through it, items do not
        assert sent == ["CreateTable", "DescribeTable"]
        assert "PutItem" in LIGHT_OPERATIONS and "CreateTable" not in LIGHT_OPERATIONS


# ---------------------------------------------------------------- failures, from a scripted server
class Scripted(ThreadingHTTPServer):
    """Answers each POST with the next step of `script`: (status, body) or "close" (drop the
    connection without an answer) or ("sleep", seconds); past the script, 200 {}. Keeps connections
    alive unless a step closes them; counts requests."""

    daemon_threads = True

    def __init__(self, script: list[Any]) -> None:
        super().__init__(("127.0.0.1", 0), _Step)
        self.script = list(script)
        self.requests = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def next_step(self) -> Any:
        with self.lock:
            self.requests += 1
            return self.script.pop(0) if self.script else (200, {})


class _Step(BaseHTTPRequestHandler):
    server: Scripted
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        step = self.server.next_step()
        if step == LEAVES:
            self.close_connection = True  # after an answer that does not say so
            step = (200, {})
        if step == "close":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if step[0] == "sleep":
            threading.Event().wait(step[1])
            step = (200, {})
        status, body = step
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("x-amzn-RequestId", "scripted")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:
        pass


@contextmanager
def scripted(script: list[Any]) -> Iterator[Scripted]:
    server = Scripted(script)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _outcome(client: Any) -> tuple[str, int]:
    """What a GetItem ends with: ("ok", retries) or (the exception's name, -1)."""
    try:
        answer = client.get_item(TableName="t", Key={"pk": {"S": "a"}, "sk": {"S": "b"}})
    except Exception as error:
        return type(error).__name__, -1
    return "ok", answer["ResponseMetadata"]["RetryAttempts"]


LEAVES = "answer, then close"
THROTTLED = (
    400,
    {
        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "message": "slow down",
    },
)
UNAVAILABLE = (503, {"__type": "com.amazonaws.dynamodb.v20120810#ServiceUnavailable", "message": "try again"})
CONDITION = (
    400,
    {"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", "message": "no"},
)


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ([], ("ok", 0)),
        ([UNAVAILABLE], ("ok", 1)),
        ([THROTTLED, THROTTLED], ("ok", 2)),
        ([THROTTLED] * 3, ("ProvisionedThroughputExceededException", -1)),
        ([CONDITION], ("ConditionalCheckFailedException", -1)),  # not retried
        (["close"], ("ok", 1)),
        (["close"] * 3, (ConnectionClosedError.__name__, -1)),
        ([("sleep", 0.8)] * 3, (ReadTimeoutError.__name__, -1)),
    ],
    ids=[
        "ok",
        "503-once",
        "throttled-twice",
        "throttled-out",
        "condition",
        "closed-once",
        "closed-out",
        "timeouts",
    ],
)
def test_failures_end_as_botocore_ends_them(
    aws_credentials: None, script: list[Any], expected: tuple[str, int]
) -> None:
    outcomes = []
    for which in (0, 1):
        with scripted(script) as server:
            client = _clients(server.url)[which]
            outcomes.append((_outcome(client), server.requests))
    assert outcomes[0] == outcomes[1]
    assert outcomes[1][0] == expected


def test_a_connection_the_server_closed_while_idle_is_replaced_without_a_retry(aws_credentials: None) -> None:
    with scripted([LEAVES]) as server:
        _, light, calls = _trio(server.url)
        # Given an answer after which the server closes the connection it kept alive
        assert _outcome(light) == ("ok", 0)
        (idle,) = [connection for route in calls.routes() for connection in route._idle]
        assert select.select([idle.sock], [], [], 5)[0], "the server's end of file arrives"
        # When the next request is made, it goes on a new connection at its first attempt
        assert _outcome(light) == ("ok", 0)
        assert server.requests == 2


def test_a_refused_connection_fails_as_botocore_fails_it(aws_credentials: None) -> None:
    with scripted([]) as server:
        url = server.url
    outcomes = [_outcome(client) for client in _clients(url)]
    assert outcomes[0] == outcomes[1] == (EndpointConnectionError.__name__, -1)


def test_a_client_without_credentials_fails_as_botocore_fails_it(aws_credentials: None) -> None:
    with scripted([]) as server:
        clients = _clients(server.url)
        for client in clients:
            client._request_signer._credentials = None  # what a session that found none holds
        assert [_outcome(client) for client in clients] == [(NoCredentialsError.__name__, -1)] * 2
        assert server.requests == 0


# ---------------------------------------------------------------- the HTTP exchange, against http.client
class RawAnswers:
    """A server that reads one request (head and Content-Length body) and writes the next raw answer
    of `answers` as given, then waits for the next request on the same connection; "close" in place
    of an answer closes it (after the answer before it, without reading another request). Records
    each request as received."""

    def __init__(self, answers: list[bytes | str]) -> None:
        self.answers = list(answers)
        self.received: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        while self.answers:
            conn, _ = self.listener.accept()
            reader = conn.makefile("rb")
            with conn, reader:
                while self.answers:
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = reader.readline()
                        if not line:
                            break
                        head += line
                    if not head:
                        break
                    length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
                    self.received.append(head + reader.read(length))
                    answer = self.answers.pop(0)
                    if answer == "close":
                        break
                    assert isinstance(answer, bytes)
                    conn.sendall(answer)
                    if self.answers and self.answers[0] == "close":  # closed right after this answer
                        self.answers.pop(0)
                        break
                    if b"connection: close" in answer.lower() or b"http/1.0" in answer[:9].lower():
                        break


def _through_http_client(answer: bytes) -> tuple[int, dict[str, str], bytes, bool]:
    server = RawAnswers([answer])
    _, _, port = server.url.rpartition(":")
    connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
    connection.request("POST", "/", b"{}", {"X-Amz-Target": "t"})
    response = connection.getresponse()
    body = response.read()
    headers = {name.lower(): value for name, value in response.getheaders()}
    connection.close()
    return response.status, headers, body, not response.will_close


def _through_connections(answer: bytes) -> tuple[int, dict[str, str], bytes, bool]:
    server = RawAnswers([answer])
    connections = Connections(server.url, connect_timeout=2, read_timeout=30, max_idle=1)
    status, headers, body = connections.post([("X-Amz-Target", "t")], b"{}")
    kept = bool(connections._idle)
    connections.close()
    return status, headers, body, kept


JSON_HEAD = b"Content-Type: application/x-amz-json-1.0\r\nx-amzn-RequestId: r1\r\n"
ANSWERS = {
    "length": b"HTTP/1.1 200 OK\r\n" + JSON_HEAD + b'Content-Length: 8\r\n\r\n{"a": 1}',
    "no-reason": b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}",
    "chunked": b"HTTP/1.1 200 OK\r\n" + JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    b'3;ext=1\r\n{"a\r\n5\r\n": 1}\r\n0\r\nX-Trailer: t\r\n\r\n',
    "to-close": b"HTTP/1.1 200 OK\r\n" + JSON_HEAD + b'Connection: close\r\n\r\n{"a": 2}',
    "close-with-length": b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
    "http-1.0": b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
    "http-1.0-keep-alive": b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}",
    "continue-first": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
    "no-content": b"HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n",
    "folded-case": b"HTTP/1.1 503 Slow Down\r\nCONTENT-length: 2\r\nX-Amzn-RequestId:  r2 \r\n\r\n{}",
}


@pytest.mark.parametrize("answer", list(ANSWERS.values()), ids=list(ANSWERS))
def test_an_answer_reads_as_http_client_reads_it(answer: bytes) -> None:
    assert _through_connections(answer) == _through_http_client(answer)


def test_a_request_is_one_message_with_its_headers_host_and_length() -> None:
    server = RawAnswers([ANSWERS["length"], ANSWERS["length"]])
    connections = Connections(server.url, connect_timeout=2, read_timeout=30, max_idle=1)
    for body in (b'{"x": 1}', b"{}"):
        assert connections.post([("X-Amz-Target", "t"), ("User-Agent", b"ua/1")], body)[0] == 200
    connections.close()
    host = server.url.removeprefix("http://")
    assert server.received == [
        f"POST / HTTP/1.1\r\nHost: {host}\r\nX-Amz-Target: t\r\nUser-Agent: ua/1\r\n".encode()
        + b"Accept-Encoding: identity\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        for body in (b'{"x": 1}', b"{}")
    ], "both requests on the one kept-alive connection"


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",  # shorter than it says, then closed
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{}",  # a chunk cut short
        b"SMTP ready\r\n\r\n",  # not HTTP
        b"HTTP/1.1 200 OK\r\nX-A: 1\r\n  2\r\nContent-Length: 2\r\n\r\n{}",  # a folded header line
        "close",  # no answer at all
    ],
    ids=["short-body", "short-chunk", "not-http", "folded", "closed"],
)
def test_a_broken_answer_is_a_closed_connection(answer: bytes | str) -> None:
    server = RawAnswers([answer, "close"] if answer != "close" else [answer])
    connections = Connections(server.url, connect_timeout=2, read_timeout=30, max_idle=1)
    with pytest.raises(ConnectionClosedError):
        connections.post([("X-Amz-Target", "t")], b"{}")
    assert connections._idle == []


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    server = RawAnswers([ANSWERS["length"]])
    connections = Connections(server.url, connect_timeout=2, read_timeout=30, max_idle=1)
    for headers in ([("X-A", "a\r\nX-B: b")], [("X-A\r\nX-B", "b")]):
        with pytest.raises(ValueError, match="invalid header"):
            connections.post(headers, b"{}")
    assert server.received == []
