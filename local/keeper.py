"""The keeper's stream trigger, locally: what Lambda's DynamoDB Streams event source mapping does for
the deployed keeper, done against the emulator's DynamoDB Streams API (moto cannot run the mapping).

It reads the table's stream from LATEST at start (the restored state needs no keeping: the start's
sync invocation re-derives the rule), keeps each shard's iterator in memory as its checkpoint, and
hands batches of up to `KEEPER_BATCH_SIZE` records to the keeper handler in-process, synchronously,
as a `LocalFunction` (a Lambda context with its timeout). Only task items and the rule record,
inserted or modified, are passed on (the deployed trigger's filters). A failing batch is retried
whole `KEEPER_RETRY_ATTEMPTS` times, backing off (the keeper is idempotent; Lambda would also split
it), then logged as given up — where the deployed trigger reports it to the on-failure queue — and
the checkpoint moves on.

No polling loop: the moto server wakes it after every DynamoDB write it applies (from this process
or a client in another one), and a safety re-read runs every `RESYNC_SECONDS`. Like the mapping,
which polls each shard four times a second, it reads at most once per `POLL_SECONDS`: the writes
of that interval arrive as one batch. Reading at every write instead made the keeper react within
milliseconds, before the editor that wrote had invoked the worker itself, so both did (two worker
invocations per task due soon), and it multiplied the stream reads under load.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import boto3

from infra import names
from local import resources
from local.lambdas import LocalFunction
from local.motoserver import EmulatorEndpoint
from nexttick.store.streams import reaches_keeper

logger = logging.getLogger("local-stack")

# A safety re-read of the stream while idle (a missed wake-up, which the moto server's notes make
# unlikely): each read is a request of tens of milliseconds of CPU on a slow machine, two processes.
RESYNC_SECONDS = 60.0
POLL_SECONDS = 0.25
RETRY_DELAYS = tuple(min(2.0**i, 30.0) for i in range(names.KEEPER_RETRY_ATTEMPTS))


def lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as Lambda's event carries it (creation time in epoch seconds, the ARN)."""
    change = dict(record["dynamodb"])
    created = change.get("ApproximateCreationDateTime")
    if created is not None and not isinstance(created, int | float):
        change["ApproximateCreationDateTime"] = created.timestamp()
    return {**record, "dynamodb": change, "eventSourceARN": stream_arn}


class LocalKeeper:
    """Feeds one table's stream to the keeper function; `start()`, `notify()` on writes, `stop()`."""

    def __init__(
        self,
        streams_client: Any,
        table_name: str,
        function: LocalFunction,
        *,
        batch_size: int = names.KEEPER_BATCH_SIZE,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
        resync_seconds: float = RESYNC_SECONDS,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.client = streams_client
        self.table_name = table_name
        self.function = function
        self.batch_size = batch_size
        self.retry_delays = retry_delays
        self.resync_seconds = resync_seconds
        self.poll_seconds = poll_seconds
        self.stream_arn = ""
        self.given_up = 0  # batches dropped after their retries (the deployed trigger's on-failure queue)
        self._iterators: dict[str, str] = {}  # shard id -> where the next read starts (the checkpoint)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="keeper-stream", daemon=True)

    @classmethod
    def for_stack(
        cls, moto: EmulatorEndpoint, cloudformation: Any, table_name: str, region: str
    ) -> LocalKeeper:
        """The local stack's keeper: the function the template names (its container warm from the
        start, configured from the handlers' environment), the stream read from the moto server (an
        explicit endpoint: botocore sends DescribeStream to an account-scoped host moto does not
        serve), woken by the server's writes."""
        from lambdas.keeper import handler

        (stack,) = cloudformation.describe_stacks(StackName=resources.STACK_NAME)["Stacks"]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        handler.dependencies()
        function = LocalFunction(
            outputs[names.OUTPUT_KEEPER],
            handler.handler,
            timeout_seconds=names.KEEPER_TIMEOUT_SECONDS,
            region=region,
            concurrency=0,  # invoked synchronously, one batch at a time, as the mapping does per shard
        )
        client = boto3.session.Session(region_name=region).client("dynamodbstreams", endpoint_url=moto.url)
        keeper = cls(client, table_name, function)
        keeper.watch(moto)
        return keeper

    def watch(self, moto: EmulatorEndpoint) -> None:
        """Wake on every DynamoDB write the moto server applies (after it has been applied)."""
        moto.subscribe_writes(self.notify)

    # ------------------------------------------------------------------ control
    def start(self) -> LocalKeeper:
        """Start at the end of the stream: only what is written from now on is kept."""
        (stream,) = self.client.list_streams(TableName=self.table_name)["Streams"]
        self.stream_arn = stream["StreamArn"]
        self._open_shards("LATEST")
        self._thread.start()
        return self

    def notify(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.poll()
            except Exception:
                logger.exception("keeper: reading the table's stream failed; retrying")
            if self._stop.wait(self.poll_seconds):
                return
            self._wake.wait(self.resync_seconds)

    # ------------------------------------------------------------------ one read
    def poll(self) -> int:
        """Deliver everything written since the checkpoints; the number of records read."""
        read = 0
        for shard in list(self._iterators):
            while not self._stop.is_set():
                page = self.client.get_records(ShardIterator=self._iterators[shard], Limit=self.batch_size)
                records = page["Records"]
                kept = [lambda_record(r, self.stream_arn) for r in records if reaches_keeper(r)]
                if kept:
                    self._deliver(kept)
                read += len(records)
                following = page.get("NextShardIterator")
                if following is None:  # the shard was closed: its children start at their beginning
                    del self._iterators[shard]
                    self._open_shards("TRIM_HORIZON")
                    break
                self._iterators[shard] = following
                if len(records) < self.batch_size:
                    break
        return read

    def _deliver(self, records: list[dict[str, Any]]) -> None:
        event = {"Records": records}
        for attempt, delay in enumerate((*self.retry_delays, None), start=1):
            try:
                self.function.invoke(event)
                return
            except Exception:
                logger.exception("keeper: batch of %d records failed (attempt %d)", len(records), attempt)
            if delay is None or self._stop.wait(delay):
                break
        self.given_up += 1
        logger.error(
            "keeper: gave up on a batch of %d records (sequence %s-%s); run `nexttick sync`",
            len(records),
            records[0]["dynamodb"].get("SequenceNumber"),
            records[-1]["dynamodb"].get("SequenceNumber"),
        )

    def _open_shards(self, position: str) -> None:
        """Iterators for the stream's open shards not followed yet."""
        shards = self.client.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id in self._iterators or "EndingSequenceNumber" in shard["SequenceNumberRange"]:
                continue
            self._iterators[shard_id] = self.client.get_shard_iterator(
                StreamArn=self.stream_arn, ShardId=shard_id, ShardIteratorType=position
            )["ShardIterator"]
