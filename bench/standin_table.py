"""The bench's DynamoDB stand-in (bench/standin.py): its tables, each partition's items with their
sort keys kept sorted, the slice a key condition selects, and items as requests and answers
carry them."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from typing import Any

from moto.dynamodb.exceptions import MockValidationException
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.responses import ProjectionExpressionParser

from local.moto_projection import is_top_level, project_top_level

Json = dict[str, Any]
ACCOUNT = "123456789012"
REGION = "us-east-1"


class Partition:
    """One partition's items, with its sort keys kept sorted."""

    __slots__ = ("items", "keys")

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.items: dict[str, Item] = {}


class Table:
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
        self.partitions: dict[str, Partition] = {}
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
        partition = self.partitions.setdefault(pk, Partition())
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


def sort_key_bounds(keys: list[str], comparison: str | None, values: list[str]) -> tuple[int, int]:
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


# An update that only sets and removes whole attributes and adds to numbers, named by placeholders
# (what the store's hand-built writes send: a home item's completion, ~40 clauses; a claim, which
# adds one to the attempt). Applied here directly: moto's parser and validator take ~10 ms of CPU
# for those under the one lock, so the stand-in, not the worker, would be what a burst measures.
_PLAIN_UPDATE = re.compile(
    r"SET (?P<set>#\w+ = :\w+(?:, #\w+ = :\w+)*)"
    r"(?: REMOVE (?P<remove>#\w+(?:, #\w+)*))?"
    r"(?: ADD (?P<add>#\w+ :\w+(?:, #\w+ :\w+)*))?"
)


def apply_plain_update(
    expression: str, names: Mapping[str, str], values: Mapping[str, Any], item: Item, key_names: list[str]
) -> bool:
    """Apply `expression` to `item` if it is a plain SET/REMOVE of whole attributes with ADDs of
    numbers to whole number attributes (or absent ones, as 0); False (nothing done) for anything
    else, which moto's executor then handles, errors included."""
    match = _PLAIN_UPDATE.fullmatch(expression)
    if match is None:
        return False
    sets = [clause.split(" = ") for clause in match["set"].split(", ")]
    removes = match["remove"].split(", ") if match["remove"] else []
    adds = [clause.split(" ") for clause in match["add"].split(", ")] if match["add"] else []
    placeholders = [name for name, _ in sets] + removes + [name for name, _ in adds]
    if any(name not in names or names[name] in key_names for name in placeholders):
        return False
    if any(value not in values for _, value in sets + adds) or len(set(placeholders)) < len(placeholders):
        return False
    if not all(_adds_numbers(item.attrs.get(names[name]), values[value]) for name, value in adds):
        return False
    for name, value in sets:
        item.attrs[names[name]] = DynamoType(values[value])
    for name in removes:
        item.attrs.pop(names[name], None)
    for name, value in adds:  # moto's AddExecutor: the number, or 0, plus the value (DynamoType's +)
        current = item.attrs.get(names[name])
        start = DynamoType({"N": "0"}) if current is None else current
        item.attrs[names[name]] = start + DynamoType(values[value])
    return True


def _adds_numbers(current: DynamoType | None, value: Any) -> bool:
    return set(value) == {"N"} and (current is None or current.type == "N")


def item_json(item: Item) -> Json:
    return dict(item.to_json()["Attributes"])


def projection(request: Json) -> list[list[str]]:
    """The request's ProjectionExpression as paths (none: whole items), parsed once per request."""
    expression, names = request.get("ProjectionExpression"), request.get("ExpressionAttributeNames")
    return list(ProjectionExpressionParser(expression, names).parse() or [])


def project(item: Item, paths: list[list[str]]) -> Json:
    """The item as a projection shows it: named top-level attributes copied as the local emulator
    copies them (moto's `Item.project` converts the whole item to plain JSON once per path: a third
    of this stand-in's CPU in a worker's drain), other paths by moto."""
    if not paths:
        return item_json(item)
    return item_json(project_top_level(item, paths) if all(map(is_top_level, paths)) else item.project(paths))
