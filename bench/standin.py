"""A small in-memory DynamoDB for the bench only, with the latency model (bench/latency.py).

Why: moto spends milliseconds of CPU per request (in-process under our GIL; out of process above
~200 requests/s on this machine), so a scheduler-bound figure measured against it is moto's CPU,
not the scheduler. This stand-in answers the same requests cheaply and sleeps each one's modelled
round trip, so the worker's pool overlaps waits as it does on AWS.

How it is reached: it is an HTTP server on 127.0.0.1 speaking the wire protocols the real clients
speak, so the worker runs unchanged — its boto3/botocore clients and PynamoDB models go to
`NextTickSettings.endpoint_url` (`NEXTTICK_ENDPOINT_URL`), which nexttick/aws.py and the store's
models use for every service. So besides DynamoDB (JSON 1.0, `X-Amz-Target:
DynamoDB_20120810.<Op>`) it answers the four other calls the worker can make: EventBridge
PutRule / DescribeRule (JSON 1.1, `AWSEvents.<Op>`: the rule's fields are kept per name), Lambda
Invoke with InvocationType=Event (REST, answered 202 and counted; the invoked function does not
run), and SQS SendMessage (JSON 1.0, `AmazonSQS.SendMessage`: a waiting worker's hand-over, as
deployed; answered, counted and kept, never delivered; not in the latency model). Each request is
processed, then sleeps its operation's modelled latency, then is answered.

What it implements, and only that (what nexttick/store/ issues, and table set-up):
  CreateTable, DescribeTable, UpdateTimeToLive, GetItem, PutItem, UpdateItem, DeleteItem,
  Query, BatchGetItem, BatchWriteItem.
The store issues no TransactWriteItems and no Scan (docs/architecture.md says why), so neither is
here; anything else is answered `UnknownOperationException`. Semantics:
* items of a partition are kept with their sort keys in a sorted list (bisect), so a Query costs
  O(log n + page): KeyConditionExpression (=, <, <=, >, >=, BETWEEN, begins_with on the sort key),
  Limit, ExclusiveStartKey, ScanIndexForward, FilterExpression, ProjectionExpression.
  LastEvaluatedKey is returned whenever a page stops at Limit, as DynamoDB documents (moto returns
  it only if another item follows). Every read is strongly consistent (the store asks for that
  everywhere). No 1 MB page limit; key attributes must be strings (the table's are);
* ConditionExpression, UpdateExpression, FilterExpression and ProjectionExpression are parsed and
  evaluated by moto's own classes (moto is a pinned dev dependency; in the stand-in's process as
  the local stack runs them, local/moto_expressions.py), and errors are moto's
  exception shapes (`ConditionalCheckFailedException` with the old item under `Item` when
  ReturnValuesOnConditionCheckFailure=ALL_OLD). ReturnValues: NONE, ALL_OLD, ALL_NEW;
* one lock serialises every DynamoDB request's processing: each conditional write is atomic.
  The latency sleep is outside it, so requests overlap as on AWS.

Here: the HTTP server and its process; the operations are bench/standin_backend.py's, the tables
bench/standin_table.py's. tests/integration/test_bench_standin.py runs the same store operations
and worker run against moto and against this stand-in and asserts identical results. Nothing
deployed may import this (tests/unit/test_layers.py).

    python -m bench.standin [--port N] [--no-latency]   # prints its URL, serves until killed
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from moto.core.exceptions import JsonRESTError

from bench.latency import LATENCY_MS, delay
from bench.standin_backend import DynamoBackend
from bench.standin_table import Json
from local.lambdas import LocalHTTPServer
from local.moto_expressions import evaluate_expressions_once

REPO = Path(__file__).resolve().parents[1]
_LAMBDA_INVOKE = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: botocore reuses its pooled connections
    disable_nagle_algorithm = True  # no 40 ms Nagle / delayed-ACK stall between header and body
    server: StandIn

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        backend = self.server.backend
        service, _, operation = (self.headers.get("X-Amz-Target") or "").partition(".")
        content_type = "application/x-amz-json-1.0"
        try:
            if service == "DynamoDB_20120810":
                try:
                    status, answer = 200, backend.dynamodb(operation, json.loads(body or b"{}"))
                except JsonRESTError as exc:
                    status, answer = int(exc.code), json.loads(exc.description)
            elif service == "AWSEvents":
                content_type = "application/x-amz-json-1.1"
                status, answer = backend.events(operation, json.loads(body or b"{}"))
            elif service == "AmazonSQS":
                status, answer = backend.sqs(operation, json.loads(body or b"{}"))
            elif (match := _LAMBDA_INVOKE.match(self.path)) is not None:
                operation, content_type = "Invoke", "application/json"
                invocation_type = self.headers.get("X-Amz-Invocation-Type") or "RequestResponse"
                status, answer = backend.invoke(match["name"], invocation_type, body)
            else:
                status, answer = 400, {"__type": "UnknownOperationException", "message": self.path}
        except Exception as exc:  # a defect of the stand-in: say so (botocore retries a 500)
            traceback.print_exc(file=sys.stderr)
            status, answer = 500, {"__type": "InternalServerError", "message": f"{type(exc).__name__}: {exc}"}
        delay(operation, self.server.latency)
        self._answer(status, answer, content_type)

    def do_GET(self) -> None:
        """`GET /stats`: requests answered, by operation, and the CPU seconds this process has spent
        (a look at what a bench run cost the stand-in)."""
        with self.server.backend.lock:
            stats = {"requests": dict(self.server.backend.requests), "cpu_seconds": time.process_time()}
        self._answer(200, stats, "application/json")

    def _answer(self, status: int, answer: Json, content_type: str) -> None:
        payload = b"" if status == 202 else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("x-amzn-RequestId", uuid.uuid4().hex)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class StandIn(LocalHTTPServer):
    """The stand-in served on 127.0.0.1 by a thread of this process (`start`/`stop`).
    `latency`: operation -> ms slept per request (bench/latency.py; empty for none). (A worker's
    pool opens its 32 connections at once: socketserver's backlog of 5 dropped some, each retried
    by the kernel a second later; LocalHTTPServer's takes them.)"""

    def __init__(self, latency: Mapping[str, float] = LATENCY_MS, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.backend = DynamoBackend()
        self.latency = latency
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> StandIn:
        self._thread = threading.Thread(target=self.serve_forever, name="bench-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


@contextlib.contextmanager
def standin_process(latency: bool = True) -> Iterator[str]:
    """The stand-in in a process of its own (its CPU and memory are not the measured process's);
    yields its URL."""
    command = [sys.executable, "-m", "bench.standin", *([] if latency else ["--no-latency"])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the stand-in did not start (exit {process.poll()})")
        yield url
    finally:
        process.terminate()
        process.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The bench's in-memory DynamoDB stand-in.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-latency", action="store_true", help="answer at once (no latency model)")
    args = parser.parse_args(argv)
    evaluate_expressions_once()  # moto's expression classes as the local stack runs them
    server = StandIn({} if args.no_latency else LATENCY_MS, args.port)
    print(server.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
