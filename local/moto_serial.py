"""How in-process moto applies requests: one at a time, as the local stack's server applies them
(`apply_requests_one_at_a_time`).

Written for moto 5.2.5 (`MOTO_VERSION`); `FINGERPRINTS` records the moto functions the patch
replaces or relies on, checked by tests/unit/test_motopatches.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from botocore.awsrequest import AWSPreparedRequest
from moto.core.botocore_stubber import BotocoreStubber

MOTO_VERSION = "5.2.5"

_moto_process_request = BotocoreStubber.process_request

# sha256 of each function's source as moto 5.2.5 ships it: `BotocoreStubber.process_request`, which
# serves an in-process request in the calling thread, is run one request at a time.
FINGERPRINTS: dict[str, tuple[Callable[..., Any], str]] = {
    "moto.core.botocore_stubber.BotocoreStubber.process_request": (
        _moto_process_request,
        "f79a1a778c7e755f0c7f234cdab9e36312ed2b16d7051baf06b04872f79dd5b2",
    ),
}

_serving = threading.RLock()


def _one_at_a_time(self: BotocoreStubber, request: AWSPreparedRequest) -> Any:
    if (urlsplit(request.url).hostname or "").startswith("sqs."):
        return _moto_process_request(self, request)  # a long poll would hold every other request
    with _serving:
        return _moto_process_request(self, request)


def apply_requests_one_at_a_time() -> None:
    """Apply each in-process request whole before the next, as DynamoDB applies each write.

    In-process moto (the tests, the bench) serves a request in the thread that makes it, with no
    lock: two conditional writes at once could both pass one condition, and two writes to a table
    with a stream could take one sequence number (moto numbers a record by the stream's length,
    then appends it) — a reader that stops at its first empty page, as Lambda's poller and
    bench/stream.py do, then read the last of the two forever: `make test`'s quick bench hung in
    its monthly section, 2 of 4 runs here. The local stack's server serialises its requests the
    same way (local.motoserver.RuleChangeNotifier). SQS requests are left out, as there: a long
    poll waits. Idempotent."""
    if BotocoreStubber.process_request is _moto_process_request:
        BotocoreStubber.process_request = _one_at_a_time  # type: ignore[method-assign]
