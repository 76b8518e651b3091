"""A small in-memory DynamoDB for the bench only, with the latency model (bench/latency.py).

Why: moto spends milliseconds of CPU per request (in-process under our GIL; out of process above
~200 requests/s on this machine), so a scheduler-bound figure measured against it is moto's CPU,
not the scheduler. This stand-in answers the same requests cheaply and sleeps each one's modelled
round trip, so the worker's pool overlaps waits as it does on AWS.

How it is reached: it is an HTTP server on 127.0.0.1 speaking the wire protocols the real clients
speak, so the worker runs unchanged — its boto3/botocore clients and PynamoDB models go to
`NextTickSettings.endpoint_url` (`NEXTTICK_ENDPOINT_URL`), which nexttick/aws.py and the store's
models use for every service. So besides DynamoDB (JSON 1.0, `X-Amz-Target:
DynamoDB_20120810.<Op>`) it answers the three other calls the worker can make: EventBridge
PutRule / DescribeRule (JSON 1.1, `AWSEvents.<Op>`: the rule's fields are kept per name) and Lambda
Invoke with InvocationType=Event (REST, answered 202 and counted; the invoked function does not
run). Each request is processed, then sleeps its operation's modelled latency, then is answered.

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

tests/integration/test_bench_standin.py runs the same store operations and worker run against
moto and against this stand-in and asserts identical results. Nothing deployed may import this
(tests/unit/test_layers.py).

    python -m bench.standin [--port N] [--no-latency]   # prints its URL, serves until killed
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import copy
import json
import re
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    ResourceInUseException,
    ResourceNotFoundException,
)
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.parsing.executors import UpdateExpressionExecutor
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.key_condition_expression import parse_expression
from moto.dynamodb.parsing.validators import UpdateExpressionValidator
from moto.dynamodb.responses import ProjectionExpressionParser

from bench.latency import LATENCY_MS, delay
from local.moto_expressions import evaluate_expressions_once
from local.moto_projection import is_top_level, project_top_level

Json = dict[str, Any]
ACCOUNT = "123456789012"
REGION = "us-east-1"
REPO = Path(__file__).resolve().parents[1]
_LAMBDA_INVOKE = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations")


class _Partition:
    """One partition's items, with its sort keys kept sorted."""

    __slots__ = ("items", "keys")

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.items: dict[str, Item] = {}


class _Table:
    """One table. Also what moto's UpdateExpressionValidator reads of a table (key names, types)."""

    def __init__(self, name: str, key_schema: list[Json], attribute_definitions: list[Json]) -> None:
        self.name = name
        self.key_schema = key_schema
        self.attr = attribute_definitions
        self.hash_attr = next(k["AttributeName"] for k in key_schema if k["KeyType"] == "HASH")
        self.range_attr: str | None = next(
            (k["AttributeName"] for k in key_schema if k["KeyType"] == "RANGE"), None
        )
        self.table_key_attrs = [a for a in (self.hash_attr, self.range_attr) if a is not None]
        self.attribute_keys = self.table_key_attrs
        self.partitions: dict[str, _Partition] = {}
        self.ttl: Json | None = None

    def describe(self) -> Json:
        count = sum(len(p.keys) for p in self.partitions.values())
        return {
            "TableName": self.name,
            "TableArn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{self.name}",
            "TableStatus": "ACTIVE",
            "KeySchema": self.key_schema,
            "AttributeDefinitions": self.attr,
            "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
            "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 0},
            "ItemCount": count,
        }

    def key_of(self, attributes: Json) -> tuple[str, str]:
        """(partition, sort) key strings of a Key or an Item (DynamoDB JSON)."""
        try:
            pk = attributes[self.hash_attr]["S"]
            sk = attributes[self.range_attr]["S"] if self.range_attr else ""
        except (KeyError, TypeError):
            raise MockValidationException("The provided key element does not match the schema") from None
        return pk, sk

    def key_json(self, pk: str, sk: str) -> Json:
        key = {self.hash_attr: {"S": pk}}
        if self.range_attr:
            key[self.range_attr] = {"S": sk}
        return key

    def get(self, pk: str, sk: str) -> Item | None:
        partition = self.partitions.get(pk)
        return partition.items.get(sk) if partition is not None else None

    def put(self, pk: str, sk: str, item: Item) -> None:
        partition = self.partitions.setdefault(pk, _Partition())
        if sk not in partition.items:
            bisect.insort(partition.keys, sk)
        partition.items[sk] = item

    def delete(self, pk: str, sk: str) -> None:
        partition = self.partitions.get(pk)
        if partition is None or partition.items.pop(sk, None) is None:
            return
        del partition.keys[bisect.bisect_left(partition.keys, sk)]
        if not partition.keys:
            del self.partitions[pk]

    def new_item(self, attributes: Json) -> Item:
        hash_value = DynamoType(attributes[self.hash_attr])
        range_value = DynamoType(attributes[self.range_attr]) if self.range_attr else None
        return Item(hash_value, range_value, attributes)


def _sort_key_bounds(keys: list[str], comparison: str | None, values: list[str]) -> tuple[int, int]:
    """The slice of the sorted `keys` a key condition on the sort key selects (bisect)."""
    lo, hi = 0, len(keys)
    if comparison is None:
        return lo, hi
    if comparison == "=":
        return bisect.bisect_left(keys, values[0]), bisect.bisect_right(keys, values[0])
    if comparison == "<":
        return lo, bisect.bisect_left(keys, values[0])
    if comparison == "<=":
        return lo, bisect.bisect_right(keys, values[0])
    if comparison == ">":
        return bisect.bisect_right(keys, values[0]), hi
    if comparison == ">=":
        return bisect.bisect_left(keys, values[0]), hi
    if comparison == "BETWEEN":
        if values[0] > values[1]:
            raise MockValidationException(
                "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be "
                "greater than or equal to lower bound"
            )
        return bisect.bisect_left(keys, values[0]), bisect.bisect_right(keys, values[1])
    if comparison == "BEGINS_WITH":
        prefix = values[0]
        after = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else None
        return bisect.bisect_left(keys, prefix), bisect.bisect_left(keys, after) if after else hi
    raise MockValidationException(f"Unsupported key condition: {comparison}")


# An update that only sets and removes whole attributes named by placeholders (what the store's
# hand-built writes send, e.g. a home item's completion: ~40 clauses). Applied here directly: moto's
# parser and validator take ~10 ms of CPU for those under the one lock, so the stand-in, not the
# worker, would be what a burst measures.
_PLAIN_UPDATE = re.compile(
    r"SET (?P<set>#\w+ = :\w+(?:, #\w+ = :\w+)*)" r"(?: REMOVE (?P<remove>#\w+(?:, #\w+)*))?"
)


def _apply_plain_update(
    expression: str, names: Mapping[str, str], values: Mapping[str, Any], item: Item, key_names: list[str]
) -> bool:
    """Apply `expression` to `item` if it is a plain SET/REMOVE of whole attributes; False (nothing
    done) for anything else, which moto's executor then handles, errors included."""
    match = _PLAIN_UPDATE.fullmatch(expression)
    if match is None:
        return False
    sets = [clause.split(" = ") for clause in match["set"].split(", ")]
    removes = match["remove"].split(", ") if match["remove"] else []
    placeholders = [name for name, _ in sets] + removes
    if any(name not in names or names[name] in key_names for name in placeholders):
        return False
    if any(value not in values for _, value in sets) or len(set(placeholders)) < len(placeholders):
        return False
    for name, value in sets:
        item.attrs[names[name]] = DynamoType(values[value])
    for name in removes:
        item.attrs.pop(names[name], None)
    return True


def _json(item: Item) -> Json:
    return dict(item.to_json()["Attributes"])


def _projection(request: Json) -> list[list[str]]:
    """The request's ProjectionExpression as paths (none: whole items), parsed once per request."""
    expression, names = request.get("ProjectionExpression"), request.get("ExpressionAttributeNames")
    return list(ProjectionExpressionParser(expression, names).parse() or [])


def _project(item: Item, paths: list[list[str]]) -> Json:
    """The item as a projection shows it: named top-level attributes copied as the local emulator
    copies them (moto's `Item.project` converts the whole item to plain JSON once per path: a third
    of this stand-in's CPU in a worker's drain), other paths by moto."""
    if not paths:
        return _json(item)
    return _json(project_top_level(item, paths) if all(map(is_top_level, paths)) else item.project(paths))


class DynamoBackend:
    """The tables and the rule store, and one handler per implemented operation."""

    def __init__(self) -> None:
        self.tables: dict[str, _Table] = {}
        self.rules: dict[str, Json] = {}
        self.invocations: list[tuple[str, bytes]] = []
        self.requests: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.dynamodb_operations: dict[str, Callable[[Json], Json]] = {
            "CreateTable": self.create_table,
            "DescribeTable": self.describe_table,
            "UpdateTimeToLive": self.update_time_to_live,
            "GetItem": self.get_item,
            "PutItem": self.put_item,
            "UpdateItem": self.update_item,
            "DeleteItem": self.delete_item,
            "Query": self.query,
            "BatchGetItem": self.batch_get_item,
            "BatchWriteItem": self.batch_write_item,
        }

    # ------------------------------------------------------------------ dispatch
    def dynamodb(self, operation: str, request: Json) -> Json:
        handler = self.dynamodb_operations.get(operation)
        if handler is None:
            raise JsonRESTError(
                "com.amazonaws.dynamodb.v20120810#UnknownOperationException",
                f"{operation} is not implemented by the bench's stand-in",
            )
        with self.lock:
            self.requests[operation] += 1
            return handler(request)

    def table(self, name: str) -> _Table:
        table = self.tables.get(name)
        if table is None:
            raise ResourceNotFoundException(table_name=name)
        return table

    def dump(self, table_name: str) -> list[Json]:
        """Every item of a table in key order, as DynamoDB JSON (for tests)."""
        table = self.table(table_name)
        with self.lock:
            return [
                _json(table.partitions[pk].items[sk])
                for pk in sorted(table.partitions)
                for sk in table.partitions[pk].keys
            ]

    # ------------------------------------------------------------------ tables
    def create_table(self, request: Json) -> Json:
        name = request["TableName"]
        if name in self.tables:
            raise ResourceInUseException(f"Table already exists: {name}")
        key_names = {k["AttributeName"] for k in request["KeySchema"]}
        if any(
            a["AttributeType"] != "S"
            for a in request["AttributeDefinitions"]
            if a["AttributeName"] in key_names
        ):
            raise MockValidationException("the bench's stand-in supports string keys only")
        table = _Table(name, request["KeySchema"], request["AttributeDefinitions"])
        self.tables[name] = table
        return {"TableDescription": table.describe()}

    def describe_table(self, request: Json) -> Json:
        return {"Table": self.table(request["TableName"]).describe()}

    def update_time_to_live(self, request: Json) -> Json:
        table = self.table(request["TableName"])
        table.ttl = request["TimeToLiveSpecification"]
        return {"TimeToLiveSpecification": table.ttl}

    # ------------------------------------------------------------------ single items
    def get_item(self, request: Json) -> Json:
        table = self.table(request["TableName"])
        item = table.get(*table.key_of(request["Key"]))
        return {} if item is None else {"Item": _project(item, _projection(request))}

    def put_item(self, request: Json) -> Json:
        table = self.table(request["TableName"])
        pk, sk = table.key_of(request["Item"])
        old = table.get(pk, sk)
        self._check(request, old)
        table.put(pk, sk, table.new_item(request["Item"]))
        return self._returned(request, old, None)

    def update_item(self, request: Json) -> Json:
        table = self.table(request["TableName"])
        pk, sk = table.key_of(request["Key"])
        old = table.get(pk, sk)
        self._check(request, old)
        new = copy.deepcopy(old) if old is not None else table.new_item(dict(request["Key"]))
        expression = request.get("UpdateExpression")
        names = request.get("ExpressionAttributeNames") or {}
        if expression and not _apply_plain_update(
            expression, names, request.get("ExpressionAttributeValues") or {}, new, table.table_key_attrs
        ):
            validated = UpdateExpressionValidator(
                UpdateExpressionParser.make(expression),
                expression_attribute_names=names,
                expression_attribute_values=request.get("ExpressionAttributeValues") or {},
                item=new,
                table=table,  # type: ignore[arg-type]
            ).validate()
            validated.normalize()
            UpdateExpressionExecutor(validated, new, names).execute()
        table.put(pk, sk, new)
        return self._returned(request, old, new)

    def delete_item(self, request: Json) -> Json:
        table = self.table(request["TableName"])
        pk, sk = table.key_of(request["Key"])
        old = table.get(pk, sk)
        self._check(request, old)
        table.delete(pk, sk)
        return self._returned(request, old, None)

    @staticmethod
    def _check(request: Json, current: Item | None) -> None:
        """Evaluate the request's ConditionExpression on the stored item (None: absent)."""
        expression = request.get("ConditionExpression")
        if not expression:
            return
        condition = get_filter_expression(
            expression, request.get("ExpressionAttributeNames"), request.get("ExpressionAttributeValues")
        )
        if not condition.expr(current):
            if request.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current is not None:
                raise ConditionalCheckFailed(item=_json(current))
            raise ConditionalCheckFailed

    @staticmethod
    def _returned(request: Json, old: Item | None, new: Item | None) -> Json:
        wanted = request.get("ReturnValues") or "NONE"
        if wanted == "NONE":
            return {}
        if wanted == "ALL_OLD":
            return {} if old is None else {"Attributes": _json(old)}
        if wanted == "ALL_NEW" and new is not None:
            return {"Attributes": _json(new)}
        raise MockValidationException(f"ReturnValues={wanted} is not supported by the bench's stand-in")

    # ------------------------------------------------------------------ queries and batches
    def query(self, request: Json) -> Json:
        table = self.table(request["TableName"])
        if request.get("IndexName") or not request.get("KeyConditionExpression"):
            raise MockValidationException(
                "the bench's stand-in queries the base table by KeyConditionExpression"
            )
        names = request.get("ExpressionAttributeNames") or {}
        values = request.get("ExpressionAttributeValues") or {}
        hash_conditions, range_conditions, _ = parse_expression(
            request["KeyConditionExpression"], values, names, table.key_schema
        )
        pk = hash_conditions[0][1]["S"]
        partition = table.partitions.get(pk)
        keys = partition.keys if partition is not None else []
        comparison, bounds = None, []
        if range_conditions:
            _, comparison, operands = range_conditions[-1]
            bounds = [operand["S"] for operand in operands]
        lo, hi = _sort_key_bounds(keys, comparison, bounds)
        forward = request.get("ScanIndexForward", True)
        start = request.get("ExclusiveStartKey")
        if start is not None:
            _, after = table.key_of(start)
            if forward:
                lo = max(lo, bisect.bisect_right(keys, after))
            else:
                hi = min(hi, bisect.bisect_left(keys, after))
        limit = request.get("Limit")
        if forward:
            page = keys[lo : hi if limit is None else min(hi, lo + limit)]
        else:
            page = keys[lo if limit is None else max(lo, hi - limit) : hi][::-1]
        items = [partition.items[sk] for sk in page] if partition is not None else []
        result: Json = {"ScannedCount": len(items)}
        if request.get("FilterExpression"):
            condition = get_filter_expression(request["FilterExpression"], names, values)
            items = [item for item in items if condition.expr(item)]
        paths = _projection(request)
        result.update(Items=[_project(item, paths) for item in items], Count=len(items))
        if limit is not None and page and len(page) == limit:
            result["LastEvaluatedKey"] = table.key_json(pk, page[-1])
        return result

    def batch_get_item(self, request: Json) -> Json:
        wanted = request["RequestItems"]
        if sum(len(spec["Keys"]) for spec in wanted.values()) > 100:
            raise MockValidationException("Too many items requested for the BatchGetItem call")
        responses: Json = {}
        for name, spec in wanted.items():
            table = self.table(name)
            found = (table.get(*table.key_of(key)) for key in spec["Keys"])
            paths = _projection(spec)
            responses[name] = [_project(item, paths) for item in found if item is not None]
        return {"Responses": responses, "UnprocessedKeys": {}}

    def batch_write_item(self, request: Json) -> Json:
        writes = request["RequestItems"]
        if sum(len(requests) for requests in writes.values()) > 25:
            raise MockValidationException(
                "Too many items requested for the BatchWriteItem call (at most 25 put or delete requests)"
            )
        for name, requests in writes.items():
            table = self.table(name)
            for write in requests:
                if "PutRequest" in write:
                    attributes = write["PutRequest"]["Item"]
                    table.put(*table.key_of(attributes), table.new_item(attributes))
                else:
                    table.delete(*table.key_of(write["DeleteRequest"]["Key"]))
        return {"UnprocessedItems": {}}

    # ------------------------------------------------------------------ EventBridge and Lambda
    def events(self, operation: str, request: Json) -> tuple[int, Json]:
        with self.lock:
            self.requests[operation] += 1
            name = request.get("Name", "")
            arn = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{name}"
            if operation == "PutRule":
                self.rules[name] = {**request, "Arn": arn, "EventBusName": "default"}
                return 200, {"RuleArn": arn}
            if operation == "DescribeRule":
                rule = self.rules.get(name)
                if rule is None:
                    message = f"Rule {name} does not exist on EventBus default."
                    return 400, {"__type": "ResourceNotFoundException", "message": message}
                return 200, rule
            message = f"{operation} is not implemented by the bench's stand-in"
            return 400, {"__type": "UnknownOperationException", "message": message}

    def invoke(self, function: str, invocation_type: str, payload: bytes) -> tuple[int, Json]:
        with self.lock:
            self.requests["Invoke"] += 1
            if invocation_type != "Event":
                message = "the bench's stand-in answers asynchronous invokes (InvocationType=Event) only"
                return 400, {"__type": "InvalidParameterValueException", "message": message}
            self.invocations.append((function, payload))
            return 202, {}


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


class StandIn(ThreadingHTTPServer):
    """The stand-in served on 127.0.0.1 by a thread of this process (`start`/`stop`).
    `latency`: operation -> ms slept per request (bench/latency.py; empty for none)."""

    daemon_threads = True

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
