"""The store's botocore client, made cheaper per request (nexttick/store/client.py), sends what a
stock client sends."""

from __future__ import annotations

from typing import Any

from botocore.useragent import register_feature_id

from bench.harness import pending_once
from nexttick.store import TaskStore
from tests.integration.test_store_queue import NOW
from tests.support.aws import RecordedRuntime


def _client(store: TaskStore) -> Any:
    return store.client


def _sent_user_agents(store: TaskStore) -> list[tuple[str, str]]:
    """For each request from now on: the User-Agent it was sent with, and the one botocore builds
    for it without the memo (at the same point: the request's feature ids are all known)."""
    client = _client(store)
    creator = client._user_agent_creator
    seen: list[tuple[str, str]] = []

    def capture(*, request: Any, **_: Any) -> None:
        seen.append((request.headers["User-Agent"].decode(), type(creator).to_string(creator)))

    client.meta.events.register("before-send.dynamodb", capture)
    return seen


def test_requests_carry_the_user_agent_botocore_builds(runtime: RecordedRuntime) -> None:
    store = runtime.store
    seen = _sent_user_agents(store)
    # When the store writes and reads a task (several operations, each with its own context)
    store.create_task(pending_once("ua", NOW, NOW))
    assert store.get_task("ua") is not None
    # Then every request's User-Agent starts with what botocore builds for it (Powertools appends)
    assert len(seen) >= 3
    for sent, built in seen:
        assert sent.startswith(built + " ") or sent == built


def test_a_feature_id_of_one_request_is_in_its_user_agent_only(runtime: RecordedRuntime) -> None:
    store = runtime.store
    store.get_task("warm")  # the memo knows the plain string
    seen = _sent_user_agents(store)
    compressed = [True]

    def mark(**_: Any) -> None:
        if compressed.pop() if compressed else False:
            register_feature_id("GZIP_REQUEST_COMPRESSION")  # as botocore's compression does

    _client(store).meta.events.register("before-parameter-build.dynamodb", mark)
    # When one request registers a feature id and the next does not
    store.get_task("a")
    store.get_task("b")
    # Then only the first one's User-Agent names it, as botocore builds them
    (first, first_built), (second, second_built) = seen
    assert first.startswith(first_built) and second.startswith(second_built)
    assert first_built != second_built
    assert first != second
