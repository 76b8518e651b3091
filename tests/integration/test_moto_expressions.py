"""The emulator's expression evaluation (local/moto_expressions.py) answers as moto's own does.

Two tables receive the same random item writes, reads and queries through boto3 against
in-process moto: one under the patched evaluation, the other with moto's own traversal, clause
search and parsers put back for the request. Every answer (or error, code and message) must be the
same but for the table's name, and so must both tables' items at the end. The update expressions
and conditions cover every action (SET with arithmetic and functions, REMOVE, ADD, DELETE), nested
paths, and the requests moto refuses (a key attribute updated, overlapping paths, a name or value
unused or missing, a path that does not exist)."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import moto.dynamodb.comparisons as moto_comparisons
import moto.dynamodb.models as moto_models
import moto.dynamodb.responses as moto_responses
import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node  # type: ignore[attr-defined]
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

from local import moto_expressions, motopatches
from tests.integration.test_motopatches_answers import _unnamed
from tests.support.aws import create_keyed_table

TABLES = ("patched", "moto")


@contextmanager
def moto_evaluation() -> Iterator[None]:
    """moto's own expression evaluation for the requests made inside."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DepthFirstTraverser, "traverse", moto_expressions._moto_traverse)
        patch.setattr(Node, "find_clauses", moto_expressions._moto_find_clauses)
        patch.setattr(UpdateExpressionParser, "make", moto_expressions._moto_make)
        for module in (moto_responses, moto_models, moto_comparisons):
            patch.setattr(
                module, "create_condition_expression_parser", moto_expressions._moto_condition_parser
            )
        yield


@pytest.fixture
def dynamodb(aws: None) -> Any:
    motopatches.lighten_dynamodb()
    client = boto3.client("dynamodb", region_name="us-east-1")
    for name in TABLES:
        create_keyed_table(client, name)
    return client


UPDATES: list[tuple[str, dict[str, Any]]] = [
    ("SET n = if_not_exists(n, :zero) + :one", {":zero": {"N": "0"}, ":one": {"N": "1"}}),
    ("SET n = n - :one", {":one": {"N": "1"}}),
    ("SET #a = :v, #b = :w REMOVE c", {":v": {"S": "x"}, ":w": {"N": "2"}}),
    (
        "SET lst = list_append(if_not_exists(lst, :empty), :items)",
        {":empty": {"L": []}, ":items": {"L": [{"S": "i"}]}},
    ),
    ("ADD n :one, ss :set", {":one": {"N": "1"}, ":set": {"SS": ["a", "b"]}}),
    ("DELETE ss :set", {":set": {"SS": ["a"]}}),
    ("SET mapv = if_not_exists(mapv, :map)", {":map": {"M": {"k": {"S": "v"}}}}),
    ("SET mapv.k = :v, mapv.j = :w", {":v": {"S": "y"}, ":w": {"BOOL": True}}),
    ("SET lst[0] = :v", {":v": {"S": "first"}}),
    ("REMOVE lst[1], mapv.j", {}),
    ("SET pk = :v", {":v": {"S": "other"}}),  # a key attribute: refused
    ("SET #a = :v, #a = :w", {":v": {"S": "x"}, ":w": {"S": "y"}}),  # overlapping paths
    ("SET #a = :v", {":v": {"S": "x"}, ":unused": {"S": "u"}}),  # a value not used
    ("SET #a = :missing", {":v": {"S": "x"}}),  # a value not given
    ("SET a = :v ADD", {":v": {"S": "x"}}),  # not an expression
]
CONDITIONS: list[tuple[str | None, dict[str, Any]]] = [
    (None, {}),
    ("attribute_exists(pk)", {}),
    ("attribute_not_exists(n) OR n < :lim", {":lim": {"N": "3"}}),
    ("begins_with(#a, :p)", {":p": {"S": "x"}}),
    ("contains(ss, :elem)", {":elem": {"S": "b"}}),
    ("#b IN (:two, :three)", {":two": {"N": "2"}, ":three": {"N": "3"}}),
    ("NOT attribute_exists(z) AND (n BETWEEN :zero AND :lim)", {":zero": {"N": "0"}, ":lim": {"N": "3"}}),
]
NAMES = {"#a": "a", "#b": "b"}


def _with_names(parameters: dict[str, Any], *expressions: str | None) -> dict[str, Any]:
    """`parameters` with the expression attribute names the expressions use (exactly those)."""
    used = {k: v for k, v in NAMES.items() if any(e and k in e for e in expressions)}
    return parameters | ({"ExpressionAttributeNames": used} if used else {})


def _requests(rng: random.Random) -> Iterator[tuple[str, dict[str, Any]]]:
    keys = [{"pk": {"S": "p"}, "sk": {"S": f"s{i}"}} for i in range(4)]
    for _ in range(160):
        key = rng.choice(keys)
        condition, condition_values = rng.choice(CONDITIONS)
        guarded: dict[str, Any] = {"ConditionExpression": condition} if condition else {}
        if condition and rng.random() < 0.5:
            guarded["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        choice = rng.random()
        if choice < 0.6:
            update, values = rng.choice(UPDATES)
            values = values | condition_values
            parameters = {
                "Key": key,
                "UpdateExpression": update,
                "ReturnValues": rng.choice(["NONE", "ALL_NEW", "ALL_OLD", "UPDATED_NEW", "UPDATED_OLD"]),
                **guarded,
            } | ({"ExpressionAttributeValues": values} if values else {})
            yield "update_item", _with_names(parameters, update, condition)
        elif choice < 0.75:
            item = key | {"a": {"S": rng.choice(["x1", "y"])}, "n": {"N": str(rng.randint(0, 4))}}
            parameters = {"Item": item, **guarded} | (
                {"ExpressionAttributeValues": condition_values} if condition_values else {}
            )
            yield "put_item", _with_names(parameters, condition)
        elif choice < 0.85:
            parameters = {"Key": key, "ReturnValues": "ALL_OLD", **guarded} | (
                {"ExpressionAttributeValues": condition_values} if condition_values else {}
            )
            yield "delete_item", _with_names(parameters, condition)
        else:
            yield (
                "query",
                {
                    "KeyConditionExpression": "pk = :pk",
                    "FilterExpression": "attribute_exists(n) AND n >= :low",
                    "ExpressionAttributeValues": {":pk": {"S": "p"}, ":low": {"N": str(rng.randint(0, 3))}},
                },
            )


def _call(dynamodb: Any, table: str, operation: str, parameters: dict[str, Any]) -> Any:
    named = {} if operation == "transact_write_items" else {"TableName": table}
    try:
        answer = getattr(dynamodb, operation)(**named, **parameters)
    except ClientError as error:
        return {"error": error.response["Error"], "item": error.response.get("Item")}
    answer.pop("ResponseMetadata", None)
    return _unnamed(answer, table)


def _items(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    return sorted(dynamodb.scan(TableName=table)["Items"], key=lambda item: item["sk"]["S"])


@pytest.mark.parametrize("seed", range(4))
def test_patched_evaluation_answers_as_moto_does(dynamodb: Any, seed: int) -> None:
    outcomes: set[str] = set()
    for operation, parameters in _requests(random.Random(seed)):
        ours = _call(dynamodb, "patched", operation, parameters)
        with moto_evaluation():
            theirs = _call(dynamodb, "moto", operation, parameters)
        assert ours == theirs, (operation, parameters)
        outcomes.add(ours["error"]["Code"] if "error" in ours else "ok")
    assert _items(dynamodb, "patched") == _items(dynamodb, "moto")
    # the requests reached both the answers and the refusals they were written for
    assert {"ok", "ConditionalCheckFailedException", "ValidationException"} <= outcomes, outcomes


@pytest.mark.parametrize(
    "holds", [(True, False), (False, True), (True, True)], ids=["first", "second", "both"]
)
def test_a_transaction_judges_each_condition_by_its_own_values(
    dynamodb: Any, holds: tuple[bool, bool]
) -> None:
    # Given two items and a transaction whose two updates carry the same condition text with values
    # of their own (the handler parses both before the backend evaluates either)
    def transaction(table: str) -> list[dict[str, Any]]:
        updates = []
        for index, holding in enumerate(holds):
            key = {"pk": {"S": "p"}, "sk": {"S": f"s{index}"}}
            dynamodb.put_item(TableName=table, Item=key | {"n": {"N": str(index)}})
            seen = index if holding else index + 10
            updates.append(
                {
                    "Update": {
                        "TableName": table,
                        "Key": key,
                        "UpdateExpression": "SET n = n + :one",
                        "ConditionExpression": "n = :seen",
                        "ExpressionAttributeValues": {":one": {"N": "1"}, ":seen": {"N": str(seen)}},
                    }
                }
            )
        return updates

    # When each table runs it, one under each evaluation
    ours = _call(dynamodb, "patched", "transact_write_items", {"TransactItems": transaction("patched")})
    with moto_evaluation():
        theirs = _call(dynamodb, "moto", "transact_write_items", {"TransactItems": transaction("moto")})
    # Then both judge every condition alike, and leave the same items
    assert ours == theirs
    assert ("error" in ours) is not all(holds), ours
    assert _items(dynamodb, "patched") == _items(dynamodb, "moto")


def test_threads_writing_with_the_same_expressions_each_get_their_own_condition(dynamodb: Any) -> None:
    # Given threads that each count up their own item with the same expression texts, every update
    # conditioned on the value its thread last wrote (so no update of theirs can fail)
    threads, increments = 4, 60
    failures: list[BaseException] = []

    def count(key: dict[str, Any]) -> None:
        dynamodb.put_item(TableName="patched", Item=key | {"n": {"N": "0"}})
        try:
            for seen in range(increments):
                dynamodb.update_item(
                    TableName="patched",
                    Key=key,
                    UpdateExpression="SET n = n + :one",
                    ConditionExpression="n = :seen",
                    ExpressionAttributeValues={":one": {"N": "1"}, ":seen": {"N": str(seen)}},
                )
        except BaseException as error:  # reported below
            failures.append(error)

    # When they run at once (a handler hands its condition to its backend through the thread)
    keys = [{"pk": {"S": "p"}, "sk": {"S": f"counter{i}"}} for i in range(threads)]
    workers = [threading.Thread(target=count, args=(key,)) for key in keys]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    # Then no update was judged by another thread's condition: each applied, once
    assert failures == []
    for key in keys:
        item = dynamodb.get_item(TableName="patched", Key=key, ConsistentRead=True)["Item"]
        assert item["n"] == {"N": str(increments)}, key
