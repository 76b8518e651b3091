"""The hot path's prebuilt requests (nexttick/store/prebuilt.py) send the parameters PynamoDB's own
methods send, and fail with the errors they raise."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from pynamodb.exceptions import DeleteError, PutError, UpdateError

from nexttick.store import TaskStore, keys, wire
from tests.unit.test_task_model import record

Sent = list[tuple[str, dict[str, Any]]]


@pytest.fixture
def store(aws_credentials: None) -> Iterator[TaskStore]:
    store = TaskStore("prebuilt", region="us-east-1", shards=4)
    yield store
    store._pool.shutdown()


def _capture(store: TaskStore, monkeypatch: pytest.MonkeyPatch, answer: dict[str, Any] | Exception) -> Sent:
    """Every request the store's connection dispatches, answered with `answer` (or failing with it)."""
    sent: Sent = []

    def dispatch(operation: str, params: dict[str, Any]) -> dict[str, Any]:
        sent.append((operation, params))
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(store.table.connection, "dispatch", dispatch)
    return sent


def test_a_claim_sends_what_pynamodb_sends(store: TaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _capture(store, monkeypatch, {"Attributes": {}})
    store._claim_entry.send("Q#1", "key", token="tok", now=1_900_000_000, until=1_900_000_030, owner="w1")
    q = store.models.queue
    store.table.update_item(
        "Q#1",
        "key",
        actions=[q.lease_until.set(1_900_000_030), q.lease_owner.set("w1"), q.attempt.add(1)],
        condition=q.pk.exists()
        & (q.token == "tok")
        & (q.lease_until.does_not_exist() | (q.lease_until <= 1_900_000_000)),
        return_values="ALL_NEW",
    )
    (ours, params), theirs = sent
    assert (ours, params) == theirs and list(params) == list(theirs[1])


def test_a_task_write_and_an_entry_delete_send_what_pynamodb_sends(
    store: TaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _capture(store, monkeypatch, {})
    task = record()
    attributes = wire.TASKS.encode(task)
    store._put_task.send(keys.task_pk(task.id), "T", attributes, version=4)
    version = store.models.task.version
    store.table.put_item(keys.task_pk(task.id), "T", attributes=attributes, condition=version == 4)
    store._delete_entry.send("Q#2", "key", token="tok")
    store.table.delete_item("Q#2", "key", condition=store.models.queue.token == "tok")
    put, put_theirs, delete, delete_theirs = sent
    assert put == put_theirs and list(put[1]["Item"]) == list(put_theirs[1]["Item"])
    assert delete == delete_theirs


FAILURES = [
    (
        "_claim_entry",
        {"token": "t", "now": 1, "until": 2, "owner": "o"},
        UpdateError,
        "Failed to update item",
    ),
    ("_put_task", {"version": 1}, PutError, "Failed to put item"),
    ("_delete_entry", {"token": "t"}, DeleteError, "Failed to delete item"),
]


@pytest.mark.parametrize(("request_name", "values", "error", "words"), FAILURES)
def test_a_failed_request_raises_what_pynamodb_raises(
    store: TaskStore,
    monkeypatch: pytest.MonkeyPatch,
    request_name: str,
    values: dict[str, Any],
    error: type[Exception],
    words: str,
) -> None:
    failure = ClientError({"Error": {"Code": "ConditionalCheckFailedException", "Message": "no"}}, "Op")
    _capture(store, monkeypatch, failure)
    with pytest.raises(error) as raised:
        getattr(store, request_name).send("pk", "sk", **values)
    assert str(raised.value) == f"{words}: {failure}"
    assert raised.value.cause is failure  # type: ignore[attr-defined]
