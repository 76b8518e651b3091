"""In-process moto applies one request at a time (local/moto_serial.py): every stream record gets a
number of its own however many threads write, and a reader that stops at its first empty page ends.

Tests and the bench serve moto in the calling thread: unserialised, moto numbered a record by the
shard's length, then appended it, and two writes at once took one number. A reader that stops at an
empty page (Lambda's poller; bench/stream.py) then read the second of them forever when they were
the last records. Here the window between the two steps is widened (a record takes a millisecond to
build) so that concurrent writes meet in it every run."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.dynamodb.models import table as moto_table

from local.moto_serial import apply_requests_one_at_a_time
from tests.support.aws import create_keyed_table, streams_client

WRITERS, WRITES = 6, 15
STREAM: dict[str, Any] = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}


@pytest.fixture
def slow_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream record takes a millisecond to build, between its number and its append."""
    build = moto_table.StreamRecord.__init__

    def slowly(self: Any, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.001)
        build(self, *args, **kwargs)

    monkeypatch.setattr(moto_table.StreamRecord, "__init__", slowly)


@pytest.fixture
def dynamodb(aws: None) -> Iterator[Any]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_keyed_table(client, "streamed", StreamSpecification=STREAM)
    yield client


def _write_concurrently() -> None:
    def writer(n: int) -> None:
        client = boto3.client("dynamodb", region_name="us-east-1")
        for i in range(WRITES):
            client.put_item(TableName="streamed", Item={"pk": {"S": f"w{n}"}, "sk": {"S": f"{i:03d}"}})

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _read_to_the_end(dynamodb: Any, limit_pages: int) -> tuple[list[str], bool]:
    """The stream's sequence numbers read page by page from its start, as Lambda's poller reads
    (until an empty page), and whether the read ended within `limit_pages`."""
    streams = streams_client()
    arn = dynamodb.describe_table(TableName="streamed")["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    numbers: list[str] = []
    for _ in range(limit_pages):
        page = streams.get_records(ShardIterator=iterator, Limit=7)
        iterator = page["NextShardIterator"]
        if not page["Records"]:
            return numbers, True
        numbers += [r["dynamodb"]["SequenceNumber"] for r in page["Records"]]
    return numbers, False


def test_concurrent_writes_number_every_record_once_and_a_reader_reaches_the_end(
    dynamodb: Any, slow_records: None
) -> None:
    # Given moto as the tests and the bench run it (patched) and writers in several threads at once
    apply_requests_one_at_a_time()
    _write_concurrently()
    # When the stream is read from its start to its first empty page
    numbers, ended = _read_to_the_end(dynamodb, limit_pages=10 * WRITERS * WRITES)
    # Then the read ended, every write's record came once, and no number was taken twice
    assert ended
    assert len(numbers) == WRITERS * WRITES
    assert [n for n, count in Counter(numbers).items() if count > 1] == []
