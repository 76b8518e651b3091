"""The local stack's sorted-partition Query answers exactly what moto's own Query answers.

Through boto3 against in-process moto: random partitions (string and number sort keys, items put,
overwritten and deleted between queries, and a deep copy of the table as a saved state makes) and
random queries — every key condition, Limit, both directions, paging by ExclusiveStartKey to the
end, filters and projections (top-level names, present or missing, of every attribute type, and the
nested and list-index paths left to moto) — each asked once through the patch and once through
moto's own `Table.query`, page by page."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any, Literal

import boto3
import pytest
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.table import Table

from local.moto_query import SortedPartition, _moto_query, _query
from tests.support.aws import create_keyed_table

TABLES: dict[str, Literal["S", "N"]] = {"strings": "S", "numbers": "N"}


@pytest.fixture
def dynamodb(aws: None) -> Iterator[Any]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    for name, kind in TABLES.items():
        create_keyed_table(client, name, sort_key_type=kind)
    previous = Table.query
    yield client
    Table.query = previous  # type: ignore[method-assign]


def _sort_key(rng: random.Random, kind: str) -> dict[str, str]:
    if kind == "N":
        return {"N": str(rng.choice([rng.randint(-50, 50), round(rng.uniform(-50, 50), 2)]))}
    return {
        "S": rng.choice(["E#", "E#0", "R#", "T", ""]) + "".join(rng.choices("abc019", k=rng.randint(0, 3)))
        or "x"
    }


def _mutate(client: Any, rng: random.Random, table: str, kind: str) -> None:
    for _ in range(rng.randint(5, 40)):
        key = {"pk": {"S": rng.choice(["q0", "q1", "q2"])}, "sk": _sort_key(rng, kind)}
        if rng.random() < 0.25:
            client.delete_item(TableName=table, Key=key)
        else:
            size = rng.choice([1, 10, 300])
            item: dict[str, Any] = {**key, "n": {"N": str(rng.randint(0, 9))}, "body": {"S": "p" * size}}
            if rng.random() < 0.5:  # the other attribute types a projection copies
                item |= {
                    "m": {"M": {"a": {"N": "1.50"}, "b": {"L": [{"S": "x"}, {"NULL": True}]}}},
                    "l": {"L": [{"N": str(rng.randint(0, 9))}, {"M": {"c": {"BOOL": True}}}]},
                    "ss": {"SS": rng.sample(["u", "v", "w", "z"], k=rng.randint(1, 4))},
                    "flag": {"BOOL": rng.random() < 0.5},
                }
            client.put_item(TableName=table, Item=item)


def _query_request(rng: random.Random, table: str, kind: str) -> dict[str, Any]:
    request: dict[str, Any] = {
        "TableName": table,
        "ConsistentRead": True,
        "ScanIndexForward": rng.random() < 0.6,
        "ExpressionAttributeValues": {":p": {"S": rng.choice(["q0", "q1", "q2", "empty"])}},
    }
    condition = "pk = :p"
    operator = rng.choice(["", "=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"])
    if operator == "begins_with" and kind == "N":
        operator = ">"
    a, b = sorted((_sort_key(rng, kind), _sort_key(rng, kind)), key=lambda v: _value(v))
    if operator == "BETWEEN":
        condition += " AND sk BETWEEN :a AND :b"
        request["ExpressionAttributeValues"].update({":a": a, ":b": b})
    elif operator == "begins_with":
        condition += " AND begins_with(sk, :a)"
        request["ExpressionAttributeValues"][":a"] = {"S": a["S"][: rng.randint(0, 2)] or "E"}
    elif operator:
        condition += f" AND sk {operator} :a"
        request["ExpressionAttributeValues"][":a"] = a
    request["KeyConditionExpression"] = condition
    if rng.random() < 0.7:
        request["Limit"] = rng.randint(1, 7)
    if rng.random() < 0.25:
        request["FilterExpression"] = "n > :n"
        request["ExpressionAttributeValues"][":n"] = {"N": str(rng.randint(0, 9))}
    if rng.random() < 0.4:
        request["ProjectionExpression"] = rng.choice(PROJECTIONS)
        if "#n" in request["ProjectionExpression"]:
            request["ExpressionAttributeNames"] = {"#n": "n"}
    return request


# Top-level names (the patch copies them), a missing one, and paths it leaves to moto.
PROJECTIONS = ["sk, n", "m, l, ss, flag", "body, absent", "#n, sk", "m.a, n", "l[1], sk"]


def _value(value: dict[str, str]) -> Any:
    return float(value["N"]) if "N" in value else value["S"]


def _pages(client: Any, request: dict[str, Any]) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    while True:
        page = client.query(**request)
        page["Items"] = [_sets_sorted(item) for item in page["Items"]]
        pages.append({k: page.get(k) for k in ("Items", "Count", "ScannedCount", "LastEvaluatedKey")})
        if "LastEvaluatedKey" not in page or len(pages) > 100:
            return pages
        request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}


def _sets_sorted(item: dict[str, Any]) -> dict[str, Any]:
    """A set's members in order: DynamoDB leaves their order open, and moto's own projection
    rebuilds each set through a Python set."""
    return {name: {"SS": sorted(value["SS"])} if "SS" in value else value for name, value in item.items()}


@pytest.mark.parametrize("seed", range(3))
def test_sorted_partitions_answer_what_moto_answers(dynamodb: Any, seed: int) -> None:
    rng = random.Random(seed)
    backend = dynamodb_backends["123456789012"]["us-east-1"]
    for round_ in range(10):
        for table, kind in TABLES.items():
            _mutate(dynamodb, rng, table, kind)
            if round_ == 5:  # a saved state, restored: the partitions come back from a copy
                stored = backend.get_table(table)
                stored.items = copy.deepcopy(stored.items)
            for _ in range(6):
                request = _query_request(rng, table, kind)
                Table.query = _query  # type: ignore[method-assign]
                ours = _pages(dynamodb, request)
                Table.query = _moto_query  # type: ignore[method-assign]
                theirs = _pages(dynamodb, request)
                assert ours == theirs, request
    # and the queried partitions were answered from sorted ones
    partitions = backend.get_table("strings").items
    assert any(isinstance(partition, SortedPartition) for partition in partitions.values())


def test_a_sorted_partition_keeps_order_through_puts_deletes_and_copies() -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    rng = random.Random(7)
    partition = SortedPartition()
    shadow: dict[str, object] = {}
    for _ in range(2_000):
        key = "".join(rng.choices("abcdef", k=rng.randint(1, 3)))
        if rng.random() < 0.4 and shadow:
            victim = rng.choice(sorted(shadow))
            if rng.random() < 0.5:
                del partition[DynamoType({"S": victim})]
            else:
                partition.pop(DynamoType({"S": victim}))
            del shadow[victim]
        else:
            partition[DynamoType({"S": key})] = shadow[key] = object()  # type: ignore[assignment]
        if rng.random() < 0.01:
            partition = copy.deepcopy(partition)
            shadow = {key: partition[DynamoType({"S": key})] for key in shadow}
    assert partition.ordered == sorted(shadow)
    assert [partition.item_at(i) for i in range(len(shadow))] == [shadow[k] for k in sorted(shadow)]
