"""The local load's delivery check (bench/localload.py `LoadRun.duplicates`): one delivery per
occurrence a task may have run. A reschedule answered once the replaced occurrence could be claimed
lets that occurrence run too (a change never stops a claimed one); any other repeat is a duplicate."""

from __future__ import annotations

import random
from typing import Any

from bench.localload import Client, LoadRun
from bench.localstack import Delivery, parse_time, rfc3339

DUE = 1_900_000_000.25
LATER = DUE + 10.0


def delivery(task_id: str, due: float) -> Delivery:
    # The API echoes the due time with microseconds: the check compares instants, not strings.
    scheduled = rfc3339(due).replace("Z", "000Z")
    body: dict[str, Any] = {"task_id": task_id, "scheduled_for": scheduled, "idempotency_key": task_id}
    return Delivery(received_at=due, status=200, body=body, idempotency_header=None)


def run_of(client: Client, *deliveries: Delivery) -> LoadRun:
    return LoadRun([client], 1, list(deliveries), 1.0, True)


def client_with(task_id: str, due: float, superseded: float | None = None) -> Client:
    client = Client(0, "http://unused", random.Random(0))
    client.due[task_id] = due
    if superseded is not None:
        client.superseded[task_id] = {parse_time(rfc3339(superseded))}
    return client


def test_one_delivery_for_the_last_due_time_is_no_duplicate() -> None:
    assert run_of(client_with("a", DUE), delivery("a", DUE)).duplicates() == {}


def test_a_second_delivery_of_one_occurrence_is_a_duplicate() -> None:
    assert run_of(client_with("a", DUE), delivery("a", DUE), delivery("a", DUE)).duplicates() == {"a": 1}


def test_the_replaced_time_of_a_slow_reschedule_may_run_once() -> None:
    client = client_with("a", LATER, superseded=DUE)
    assert run_of(client, delivery("a", DUE), delivery("a", LATER)).duplicates() == {}
    twice = run_of(client, delivery("a", DUE), delivery("a", DUE), delivery("a", LATER))
    assert twice.duplicates() == {"a": 1}


def test_a_replaced_time_the_reschedule_answered_in_time_for_may_not_run() -> None:
    assert run_of(client_with("a", LATER), delivery("a", DUE), delivery("a", LATER)).duplicates() == {"a": 1}
