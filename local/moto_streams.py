"""How moto numbers a table's stream records: one at a time (`number_stream_records_atomically`).

Written for moto 5.2.5 (`MOTO_VERSION`); `FINGERPRINTS` records the moto functions the patch
replaces or relies on, checked by tests/unit/test_motopatches.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import StreamShard

MOTO_VERSION = "5.2.5"

_moto_add = StreamShard.add

# sha256 of each function's source as moto 5.2.5 ships it: `StreamShard.add` is run one call at a
# time.
FINGERPRINTS: dict[str, tuple[Callable[..., Any], str]] = {
    "moto.dynamodb.models.table.StreamShard.add": (
        _moto_add,
        "357dc6da267e5dd7d46e18ee25d14b232a98679677906a2f02e4d454d1f11e03",
    ),
}

_adding = threading.Lock()


def _add_one_at_a_time(self: StreamShard, old: Item | None, new: Item | None) -> None:
    with _adding:
        _moto_add(self, old, new)


def number_stream_records_atomically() -> None:
    """Give every stream record a sequence number of its own, however many threads write.

    `StreamShard.add` numbers a record by the shard's length, then appends it. In-process moto
    (tests, the bench) serves each thread's request in that thread, with no lock: two writes at
    once could take one number, and the record after them none. A reader that stops at its first
    empty page (Lambda's poller, bench/stream.py) then reads the last of the two forever: a page
    after a duplicate's number starts at it again, until something else is written (the bench's
    simulated world waits for the read, so nothing is: `make bench --quick` hung in its monthly
    section, 2 runs in 4 here). The local stack's server applies one request at a time, so this
    changes nothing there. Idempotent."""
    if StreamShard.add is _moto_add:
        StreamShard.add = _add_one_at_a_time  # type: ignore[method-assign]
