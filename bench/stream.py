"""The table's stream as Lambda's trigger reads it, for the simulated-time window (bench/timeline.py):
each read takes what was written since the last one, as Lambda's poller keeps its checkpoint."""

from __future__ import annotations

from typing import Any

import boto3

from local.keeper import lambda_record
from nexttick.runtime import Runtime

# moto serves the streams API only on the regional streams host (tests/integration/test_keeper.py).
STREAMS_ENDPOINT = "https://streams.dynamodb.us-east-1.amazonaws.com"


class StreamFeed:
    """The table's stream, read from where the last read stopped (as Lambda's poller keeps its
    checkpoint), each record as Lambda's event carries it."""

    def __init__(self, runtime: Runtime) -> None:
        settings = runtime.settings
        described = boto3.client("dynamodb", region_name=settings.region).update_table(
            TableName=settings.table_name,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )["TableDescription"]
        self.arn = described["LatestStreamArn"]
        self.client = boto3.client(
            "dynamodbstreams", region_name=settings.region, endpoint_url=STREAMS_ENDPOINT
        )
        shard = self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"][0]["ShardId"]
        self.iterator = self.client.get_shard_iterator(
            StreamArn=self.arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]

    def read(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        while True:
            page = self.client.get_records(ShardIterator=self.iterator)
            self.iterator = page["NextShardIterator"]
            if not page["Records"]:
                return records
            records += [lambda_record(r, self.arn) for r in page["Records"]]
