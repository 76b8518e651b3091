"""The bench's latency model: what one AWS request costs in wall time, by API operation.

Emulators answer in microseconds (or, in-process, cost CPU under the GIL), so a figure measured
against one says little about AWS, where every DynamoDB, EventBridge or Lambda call is a network
wait that a thread pool overlaps. The bench's stand-in (bench/standin.py) sleeps these figures on
every request, so the scheduler-bound figures (the burst) see AWS's round trips, not the
emulator's CPU.

Basis (AWS's published figures; values picked inside the published bands, medians of an
in-region client, not tails):

* DynamoDB: the DynamoDB documentation and product page give "single-digit millisecond" latency
  for item reads and writes at any scale. Reads (GetItem, a one-page Query, BatchGetItem of a few
  keys) 4 ms; single-item writes (PutItem, UpdateItem, DeleteItem) 6 ms: a write is acknowledged
  after it is stored durably in more than one Availability Zone, so it is slower than a read;
  TransactWriteItems and BatchWriteItem (several items, two-phase for a transaction) 10 ms.
  DescribeTable (control plane, called once per client) 10 ms.
* EventBridge PutRule / DescribeRule: control-plane calls, tens of milliseconds: 30 ms / 20 ms.
* Lambda Invoke with InvocationType=Event (queued, answered 202 before the function runs): tens
  of milliseconds: 20 ms.

Operations not named here (CreateTable, UpdateTimeToLive: set-up only, never inside a measured
run) cost nothing. Client-side costs (TLS handshakes, SigV4 signing, botocore's own CPU) are not
modelled: the real client does them, in the bench's process, as it would on AWS.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

READ_MS = 4.0
WRITE_MS = 6.0
MULTI_ITEM_MS = 10.0

# API operation name -> milliseconds per request (the figure each request sleeps).
LATENCY_MS: Mapping[str, float] = MappingProxyType(
    {
        # DynamoDB (data plane)
        "GetItem": READ_MS,
        "Query": READ_MS,
        "BatchGetItem": READ_MS,
        "PutItem": WRITE_MS,
        "UpdateItem": WRITE_MS,
        "DeleteItem": WRITE_MS,
        "BatchWriteItem": MULTI_ITEM_MS,
        "TransactWriteItems": MULTI_ITEM_MS,
        # DynamoDB (control plane, once per client)
        "DescribeTable": 10.0,
        # EventBridge
        "PutRule": 30.0,
        "DescribeRule": 20.0,
        # Lambda (asynchronous invoke)
        "Invoke": 20.0,
    }
)


def delay(operation: str, model: Mapping[str, float] = LATENCY_MS) -> None:
    """Spend `operation`'s modelled round trip (a sleep: other threads run meanwhile)."""
    ms = model.get(operation, 0.0)
    if ms > 0:
        time.sleep(ms / 1000)


class RoundTrips:
    """Simulated time that passes for each request's modelled round trip (bench/timeline.py): a
    request that starts at t returns no earlier than t + its figure, so requests one after another
    add up and requests in flight together (a pool's) overlap. `counts()` says whether the calling
    thread's request is a function's (a poller's reads take no function's time)."""

    def __init__(
        self,
        clients: Iterable[Any],
        now: Callable[[], datetime],
        move_to: Callable[[datetime], None],
        counts: Callable[[], bool],
    ) -> None:
        self._now, self._move_to, self._counts = now, move_to, counts
        self._started = threading.local()
        for client in clients:
            client.meta.events.register("provide-client-params", self._start)
            client.meta.events.register("after-call", self._end)

    def _start(self, **_: Any) -> None:
        self._started.at = self._now()

    def _end(self, *, model: Any, **_: Any) -> None:
        ms = LATENCY_MS.get(model.name, 0.0)
        started: datetime | None = getattr(self._started, "at", None)
        if ms > 0 and started is not None and self._counts():
            self._move_to(started + timedelta(milliseconds=ms))
