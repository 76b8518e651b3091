"""How the local stack's moto writes DynamoDB's item answers and DynamoDB Streams' records: as the
plain JSON they already are, not through moto's generic serializer (`serialize_dynamodb_directly`,
`serialize_stream_records_directly`).

Written for moto 5.2.5 (`MOTO_VERSION`); `FINGERPRINTS` records the moto functions the patches
replace or rely on, checked by tests/unit/test_motopatches.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from moto.core.serialize import TimestampSerializer
from moto.dynamodb.models.table import StreamRecord
from moto.dynamodb.responses import DynamoResult
from moto.dynamodbstreams.models import ShardIterator
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

MOTO_VERSION = "5.2.5"

_moto_execute_result = DynamoResult.execute_result
_moto_streams_serialized = DynamoDBStreamsHandler.serialized

# sha256 of each function's source as moto 5.2.5 ships it: `execute_result` is replaced outright;
# the three stream functions make the GetRecords answer that is answered in plain JSON, with its
# times converted by moto's own `_timestamp_unixtimestamp`.
FINGERPRINTS: dict[str, tuple[Callable[..., Any], str]] = {
    "moto.dynamodb.responses.DynamoResult.execute_result": (
        _moto_execute_result,
        "6333faa349b58671258985778d2aaf02d31e0617aae380442e4c683c36ab248d",
    ),
    "moto.dynamodbstreams.responses.DynamoDBStreamsHandler.get_records": (
        DynamoDBStreamsHandler.get_records,
        "eca5821a96bdd10d8ae32ccc432f7c7df424a484f388ab2a8ecb2e8c9a2026ce",
    ),
    "moto.dynamodbstreams.models.ShardIterator.get": (
        ShardIterator.get,
        "8932c0f7250e89963eef1e848bdd205a05c0f6ed94f526ed36ca9b7339442ace",
    ),
    "moto.dynamodb.models.table.StreamRecord.__init__": (
        StreamRecord.__init__,
        "511904c6352cfd9a0dc7eb26ebbff6ad007d734698d7097b194f7f56a85482be",
    ),
    "moto.core.serialize.TimestampSerializer._timestamp_unixtimestamp": (
        TimestampSerializer._timestamp_unixtimestamp,
        "9b00cea88c916ce0b09dc487c57c9b2a10df87fd1fdf5ca13b111c5682d90b82",
    ),
}


# DynamoDB's data-plane answers: attribute maps, counts and keys, already in their wire form.
_PLAIN_JSON_OPERATIONS = frozenset(
    {"GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem", "DeleteItem"}
)
_DYNAMODB_CONTENT_TYPE = "application/x-amz-json-1.0"


def _plain_json_result(self: DynamoResult, context: Any) -> Any:
    if context.operation_model.name in _PLAIN_JSON_OPERATIONS and isinstance(self.result, dict):
        members = context.operation_model.output_shape.members  # what moto's serializer keeps
        body = json.dumps({k: v for k, v in self.result.items() if k in members}, separators=(",", ":"))
        # Binary attributes are base64-encoded by moto's serializer: leave those answers to it.
        if '"B":' not in body and '"BS":' not in body:
            return 200, {"Content-Type": _DYNAMODB_CONTENT_TYPE}, body
    return _moto_execute_result(self, context)


def serialize_dynamodb_directly() -> None:
    """Answer DynamoDB's item operations with the result's JSON as it is, not through moto's
    generic serializer.

    moto 5 serializes every answer by walking the operation's output shape member by member,
    attribute value by attribute value: a third of the local stack's emulator CPU under load
    (bench/localload.py), most of it on Query pages of queue entries. For these operations the
    result is already DynamoDB's wire JSON (moto's DynamoResult converts its DynamoType values), so
    `json.dumps` gives the same document; an answer holding a binary attribute still goes through
    moto's serializer, which base64-encodes it. Errors never reach this (they are not
    DynamoResults). Idempotent."""
    DynamoResult.execute_result = _plain_json_result  # type: ignore[method-assign,assignment]


def _stream_timestamp(value: Any) -> Any:
    """A stream record's ApproximateCreationDateTime as moto's serializer writes it (its own
    conversion: epoch seconds to the millisecond)."""
    if not isinstance(value, datetime):
        raise TypeError(f"{type(value).__name__} in a stream record")
    return TimestampSerializer._timestamp_unixtimestamp(value)


def _plain_stream_records(self: DynamoDBStreamsHandler, action_result: Any) -> Any:
    result = action_result.result
    if self._get_action() == "GetRecords" and isinstance(result, dict):
        body = json.dumps(result, separators=(",", ":"), default=_stream_timestamp)
        if '"B":' not in body and '"BS":' not in body:
            return 200, {"Content-Type": _DYNAMODB_CONTENT_TYPE}, body
    return _moto_streams_serialized(self, action_result)


def serialize_stream_records_directly() -> None:
    """Answer DynamoDB Streams' GetRecords with the records' JSON as they are.

    moto's generic serializer walks every record's images attribute by attribute: about 14 ms per
    GetRecords call, the keeper's every poll. The records are already the stream's wire JSON
    (moto keeps the images as DynamoDB JSON) but for their creation time, a datetime written as
    epoch seconds as moto writes it. Answers holding a binary attribute still go through moto's
    serializer (base64). Idempotent."""
    DynamoDBStreamsHandler.serialized = _plain_stream_records  # type: ignore[method-assign,assignment]
