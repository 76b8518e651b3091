"""The emulator's plain-JSON answers are the ones moto's own serializer gives.

Two tables with streams receive the same random requests through boto3 against in-process moto:
one table's answers are written by the patches (`serialize_dynamodb_directly`,
`serialize_stream_records_directly`), the other's by moto's serializer. Every answer, parsed by
botocore, must be the same but for the table's name, and so must every stream record but for what
moto draws afresh for each (its event id, its creation time, and its size, which moto estimates
from the record's JSON with that time in it)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto.dynamodb.responses import DynamoResult
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

from local import moto_answers, motopatches
from tests.support.aws import create_keyed_table, streams_client

TABLES = ("patched", "moto")


@contextmanager
def moto_serializer() -> Iterator[None]:
    """moto's own serializer for the requests made inside."""
    patched = DynamoResult.execute_result, DynamoDBStreamsHandler.serialized
    DynamoResult.execute_result = moto_answers._moto_execute_result  # type: ignore[method-assign]
    DynamoDBStreamsHandler.serialized = moto_answers._moto_streams_serialized  # type: ignore[method-assign]
    try:
        yield
    finally:
        DynamoResult.execute_result, DynamoDBStreamsHandler.serialized = patched  # type: ignore[method-assign]


@pytest.fixture
def clients(aws: None) -> Iterator[tuple[Any, Any]]:
    motopatches.lighten_dynamodb()
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    for name in TABLES:
        create_keyed_table(
            dynamodb,
            name,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
    streams = streams_client()
    yield dynamodb, streams


def _value(rng: random.Random, binary: bool, depth: int = 0) -> dict[str, Any]:
    kinds = ["S", "N", "BOOL", "NULL", "SS", "NS"] + (["M", "L"] if depth < 2 else [])
    kind = rng.choice(kinds + (["B"] if binary and rng.random() < 0.1 else []))
    if kind == "S":
        return {"S": rng.choice(["", "x", "é ü", 'a"b\\c', "2030-01-07T09:00:30.5+00:00"])}
    if kind == "N":
        return {"N": rng.choice(["0", "30", "30.0", "-1.5", "1e3", "12345678901234567890"])}
    if kind == "BOOL":
        return {"BOOL": rng.random() < 0.5}
    if kind == "NULL":
        return {"NULL": True}
    if kind == "SS":
        return {"SS": rng.sample(["a", "b", "c", "d"], rng.randint(1, 3))}
    if kind == "NS":
        return {"NS": rng.sample(["1", "2", "3.5", "-4"], rng.randint(1, 3))}
    if kind == "B":
        return {"B": bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))}
    if kind == "M":
        return {"M": {f"m{i}": _value(rng, binary, depth + 1) for i in range(rng.randint(0, 3))}}
    return {"L": [_value(rng, binary, depth + 1) for _ in range(rng.randint(0, 3))]}


def _requests(rng: random.Random, binary: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """(operation, parameters without the table name) — item writes with every ReturnValues, reads,
    queries and conditions that fail; with `binary`, some values are binary (moto's serializer
    answers those)."""
    keys = [{"pk": {"S": f"p{rng.randint(0, 2)}"}, "sk": {"S": f"s{rng.randint(0, 5)}"}} for _ in range(40)]
    for key in keys:
        item = key | {f"a{i}": _value(rng, binary) for i in range(rng.randint(0, 4))}
        choice = rng.random()
        if choice < 0.3:
            yield "put_item", {"Item": item, "ReturnValues": rng.choice(["NONE", "ALL_OLD"])}
        elif choice < 0.5:
            yield (
                "update_item",
                {
                    "Key": key,
                    "UpdateExpression": "SET n = if_not_exists(n, :zero) + :one, v = :v",
                    "ExpressionAttributeValues": {
                        ":zero": {"N": "0"},
                        ":one": {"N": "1"},
                        ":v": _value(rng, binary),
                    },
                    "ReturnValues": rng.choice(["NONE", "ALL_NEW", "ALL_OLD", "UPDATED_NEW", "UPDATED_OLD"]),
                },
            )
        elif choice < 0.6:
            yield "delete_item", {"Key": key, "ReturnValues": rng.choice(["NONE", "ALL_OLD"])}
        elif choice < 0.7:
            yield (
                "put_item",
                {
                    "Item": item,
                    "ConditionExpression": "attribute_not_exists(pk)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                },
            )
        elif choice < 0.8:
            yield "get_item", {"Key": key, "ConsistentRead": True}
        elif choice < 0.9:
            yield (
                "query",
                {
                    "KeyConditionExpression": "pk = :pk AND sk >= :sk",
                    "ExpressionAttributeValues": {":pk": key["pk"], ":sk": key["sk"]},
                    "Limit": rng.randint(1, 4),
                    "ScanIndexForward": rng.random() < 0.5,
                },
            )
        else:
            yield "batch_get_item", {"Keys": rng.sample(keys, 3)}


def _call(dynamodb: Any, table: str, operation: str, parameters: dict[str, Any]) -> dict[str, Any]:
    if operation == "batch_get_item":
        # BatchGetItem names its table in the request and in the answer
        unique = list({repr(key): key for key in parameters["Keys"]}.values())
        answer = dynamodb.batch_get_item(RequestItems={table: {"Keys": unique, "ConsistentRead": True}})
        assert answer.pop("UnprocessedKeys") == {}
    else:
        try:
            answer = getattr(dynamodb, operation)(TableName=table, **parameters)
        except dynamodb.exceptions.ConditionalCheckFailedException as error:
            answer = {"error": error.response["Error"], "item": error.response.get("Item")}
    answer.pop("ResponseMetadata", None)
    return _unnamed(answer, table)


def _unnamed(value: Any, table: str) -> Any:
    """`value` with the table's name (a key or a value) written as "table"."""
    if isinstance(value, dict):
        return {_unnamed(k, table): _unnamed(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [_unnamed(v, table) for v in value]
    return "table" if value == table else value


def _records(streams: Any, table_arn: str) -> list[dict[str, Any]]:
    shard = streams.describe_stream(StreamArn=table_arn)["StreamDescription"]["Shards"][0]["ShardId"]
    start = streams.get_shard_iterator(StreamArn=table_arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    answer = streams.get_records(ShardIterator=start["ShardIterator"])
    return answer["Records"]


@pytest.mark.parametrize(("seed", "binary"), [(0, False), (1, False), (2, True)])
def test_plain_json_answers_equal_moto_serializer_answers(
    clients: tuple[Any, Any], seed: int, binary: bool
) -> None:
    dynamodb, streams = clients
    for operation, parameters in _requests(random.Random(seed), binary):
        ours = _call(dynamodb, "patched", operation, parameters)
        with moto_serializer():
            theirs = _call(dynamodb, "moto", operation, parameters)
        assert ours == theirs, (operation, parameters)

    arns = {name: dynamodb.describe_table(TableName=name)["Table"]["LatestStreamArn"] for name in TABLES}
    our_records = _records(streams, arns["patched"])
    with moto_serializer():
        their_records = _records(streams, arns["moto"])
    assert len(our_records) == len(their_records) > 20
    for mine, other in zip(our_records, their_records, strict=True):
        assert mine.pop("eventID") and other.pop("eventID")
        created = [record["dynamodb"].pop("ApproximateCreationDateTime") for record in (mine, other)]
        assert abs((created[0] - created[1]).total_seconds()) < 60, created
        # moto sizes a record by its JSON with the creation time in it, microseconds or none
        assert abs(mine["dynamodb"].pop("SizeBytes") - other["dynamodb"].pop("SizeBytes")) <= len(".123456")
        assert mine == other
