"""What the local stack changes in moto, applied in one place: a Query that reads only what it
returns, item answers and stream records as plain JSON, expressions parsed once, in-process requests
applied one at a time, a dispatcher that does not list moto's package per request, and SQS long
polls answered when a message becomes visible. The test suite's in-process moto is lightened the
same way (tests/conftest.py), so the suite runs against the emulator the local stack and the bench
use.

Each patch is a module of its own (`PATCH_MODULES`) that names the moto version it was written for
(`MOTO_VERSION`) and records in `FINGERPRINTS` a fingerprint of the source of every moto function
it replaces or relies on: tests/unit/test_motopatches.py fails when a moto upgrade changes one of
them, naming it and its module, so the patch is re-read before it is trusted again.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from local import (
    moto_answers,
    moto_expressions,
    moto_projection,
    moto_query,
    moto_routing,
    moto_serial,
    moto_sqs,
)

PATCH_MODULES: tuple[ModuleType, ...] = (
    moto_query,
    moto_projection,
    moto_answers,
    moto_expressions,
    moto_routing,
    moto_serial,
    moto_sqs,
)


def fingerprint(function: Callable[..., Any]) -> str:
    """What a patch module's `FINGERPRINTS` records of a moto function: the sha256 of its source."""
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()


def lighten_dynamodb() -> None:
    """moto's DynamoDB as the local stack serves it: sorted partitions for Query
    (local/moto_query.py), expressions parsed once (local/moto_expressions.py), item operations and
    stream records answered in plain JSON (local/moto_answers.py), and in-process, requests applied
    one at a time as the server applies them (local/moto_serial.py). Idempotent."""
    moto_query.query_sorted_partitions()
    moto_expressions.evaluate_expressions_once()
    moto_answers.serialize_dynamodb_directly()
    moto_answers.serialize_stream_records_directly()
    moto_serial.apply_requests_one_at_a_time()


def route_without_listing_moto() -> None:
    """Resolve a request's service and action without listing moto's package or a handler's
    methods each time (local/moto_routing.py). Idempotent."""
    moto_routing.keep_moto_module_list()
    moto_routing.keep_handler_action_names()


def answer_long_polls_on_time() -> None:
    """Answer an SQS long poll when a delayed or in-flight message becomes visible, not up to a
    second later (local/moto_sqs.py). Idempotent."""
    moto_sqs.wake_long_polls_when_visible()
