"""The bench's DynamoDB stand-in (bench/standin.py): one handler per operation it answers, over
its tables (bench/standin_table.py), the rules and invokes of EventBridge and Lambda and the SQS
sends of a wait hand-over."""

from __future__ import annotations

import bisect
import copy
import hashlib
import threading
import uuid
from collections import Counter
from collections.abc import Callable

from moto.core.exceptions import JsonRESTError
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    ResourceInUseException,
    ResourceNotFoundException,
)
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.parsing.executors import UpdateExpressionExecutor
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.key_condition_expression import parse_expression
from moto.dynamodb.parsing.validators import UpdateExpressionValidator

from bench.standin_table import (
    ACCOUNT,
    REGION,
    Json,
    Table,
    apply_plain_update,
    item_json,
    project,
    projection,
    sort_key_bounds,
)


class DynamoBackend:
    """The tables and the rule store, and one handler per implemented operation."""

    def __init__(self) -> None:
        self.tables: dict[str, Table] = {}
        self.rules: dict[str, Json] = {}
        self.invocations: list[tuple[str, bytes]] = []
        self.messages: list[Json] = []  # SendMessage requests, kept (nothing receives them)
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

    def table(self, name: str) -> Table:
        table = self.tables.get(name)
        if table is None:
            raise ResourceNotFoundException(table_name=name)
        return table

    def dump(self, table_name: str) -> list[Json]:
        """Every item of a table in key order, as DynamoDB JSON (for tests)."""
        table = self.table(table_name)
        with self.lock:
            return [
                item_json(table.partitions[pk].items[sk])
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
        table = Table(name, request["KeySchema"], request["AttributeDefinitions"])
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
        return {} if item is None else {"Item": project(item, projection(request))}

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
        if expression and not apply_plain_update(
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
                raise ConditionalCheckFailed(item=item_json(current))
            raise ConditionalCheckFailed

    @staticmethod
    def _returned(request: Json, old: Item | None, new: Item | None) -> Json:
        wanted = request.get("ReturnValues") or "NONE"
        if wanted == "NONE":
            return {}
        if wanted == "ALL_OLD":
            return {} if old is None else {"Attributes": item_json(old)}
        if wanted == "ALL_NEW" and new is not None:
            return {"Attributes": item_json(new)}
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
        lo, hi = sort_key_bounds(keys, comparison, bounds)
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
        paths = projection(request)
        result.update(Items=[project(item, paths) for item in items], Count=len(items))
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
            paths = projection(spec)
            responses[name] = [project(item, paths) for item in found if item is not None]
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

    def sqs(self, operation: str, request: Json) -> tuple[int, Json]:
        """SendMessage (a worker's wait hand-over): kept and answered with the body's MD5, which
        botocore checks; the message is never delivered (the invocation it would start, a minute
        or more later, finds its head already run)."""
        with self.lock:
            self.requests[operation] += 1
            if operation != "SendMessage":
                message = f"{operation} is not implemented by the bench's stand-in"
                return 400, {"__type": "com.amazonaws.sqs#UnsupportedOperation", "message": message}
            self.messages.append(request)
            body = str(request.get("MessageBody", ""))
            return 200, {
                "MessageId": str(uuid.uuid4()),
                "MD5OfMessageBody": hashlib.md5(body.encode()).hexdigest(),
            }
