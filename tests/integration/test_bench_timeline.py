"""bench/timeline.py: a window of load in simulated time runs every task once through the real
handlers, charges each function what its code spent, and waits without spending real time."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import timedelta
from unittest import mock

import pytest

from bench.accounts import API, KEEPER, WORKER
from bench.monthly import LOADS
from bench.sparse import isolated_tasks
from bench.timeline import follow
from nexttick.config import Precision


@pytest.fixture(autouse=True)
def _environment() -> Iterator[None]:
    """The bench's emulator sets its own process environment: it stays in this test."""
    with mock.patch.dict(os.environ):
        yield


def test_an_isolated_task_runs_once_its_wake_waiting_in_simulated_time() -> None:
    # Given one task created 10 minutes ahead, in `second` precision
    began = time.monotonic()
    measured = follow(isolated_tasks(Precision.SECOND, 1))
    # Then it ran once, the worker started by the rule 70 s or more before it and waiting for it,
    # in much less real time than it waited
    assert measured.finished == 1
    [wake] = measured.worker
    assert wake.cause == "rule" and wake.span_s >= 70 and wake.cpu_s > 0
    assert time.monotonic() - began < wake.span_s / 4
    # And each function was charged what its code spent: the API its create, the worker the claim
    # and the completion, the keeper its reads of the rule record
    api, worker, keeper = (measured.accounts[f] for f in (API, WORKER, KEEPER))
    assert api.requests["PutItem"] == 1 and api.wru >= 1
    assert worker.requests["UpdateItem"] >= 2 and "PutItem" not in worker.requests
    assert keeper.requests["GetItem"] == len(measured.keeper) >= 1 and keeper.wru == 0
    assert [r.round_trip_s > 0 for r in measured.api + measured.keeper] == [True] * (1 + len(measured.keeper))
    # And what the functions printed (log lines, EMF metrics) was counted, with the metrics named
    assert measured.printed_bytes[API] > 0 and measured.printed_bytes[WORKER] > 0
    assert measured.metric_marks["nexttick/Responses2xx {service=nexttick}"] == 1
    assert measured.stored_bytes_per_task > 100


def test_a_steady_window_measures_its_stretch_and_stops_at_its_end() -> None:
    # Given six minutes of 1/minute in `minute` precision (quick): three tasks queued before it
    window = next(load for load in LOADS if load.name == "1/minute").window(Precision.MINUTE, True)
    plan = window.plan
    assert plan.end is not None and plan.measured_from is not None and len(plan.queued) == 3
    # When it runs
    measured = follow(plan)
    # Then each task due in it ran, and it created the six due three minutes after them
    assert measured.finished == window.tasks == 6
    assert len(measured.api) == 6
    # And every invocation it counts lies within it, the minute's rule firing the worker each time
    assert all(plan.measured_from <= r.start <= r.end <= plan.end for r in measured.worker)
    assert {r.cause for r in measured.worker} == {"rule"}
    assert sum(r.span_s for r in measured.worker) <= (plan.end - plan.measured_from) / timedelta(seconds=1)
