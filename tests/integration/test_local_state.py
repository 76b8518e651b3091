"""Local stack persistence: every item and the rule survive a snapshot / fresh emulator / restore
(the snapshot is read from and restored into moto's backends directly; tests/integration/
test_local_journal.py covers the journal that makes every acknowledged write survive a crash)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from botocore.exceptions import EndpointConnectionError

from editor import Editor, as_json
from local import state
from local.motoserver import EmulatedState, MotoServer
from local.stack import _mark_snapshot_request
from nexttick.config import NextTickSettings
from nexttick.constants import DEFAULT_RULE_NAME, DEFAULT_TABLE_NAME
from tests.support.local import client, create_table_and_rule, local_worker, moto_server


@pytest.fixture
def stack(aws_credentials: None) -> Iterator[tuple[MotoServer, Editor]]:
    with moto_server() as server, local_worker() as (endpoint, _, _):
        create_table_and_rule(server, DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
        settings = NextTickSettings(
            endpoint_url=server.url,
            lambda_endpoint_url=endpoint.url,
            queue_shards=4,
            actions_config={"log": {"type": "log"}},
        )
        yield server, Editor(settings=settings)


def clients(server: MotoServer) -> tuple[Any, Any]:
    return client("dynamodb", server), client("events", server)


EMULATED = EmulatedState("us-east-1", DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)


def take_snapshot(server: MotoServer) -> dict[str, Any]:
    return state.snapshot(EMULATED, server.notifier.serial, journal_seq=0)


def scan_items(dynamodb: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=DEFAULT_TABLE_NAME, ConsistentRead=True):
        items.extend(page["Items"])
    return sorted(items, key=lambda i: (i["pk"]["S"], i["sk"]["S"]))


def test_a_snapshot_restores_every_task_and_the_rule_into_a_fresh_emulator(
    stack: tuple[MotoServer, Editor], tmp_path: Path
) -> None:
    # Given one-shot, cron and interval tasks (the rule armed for the earliest), and a cancelled one
    server, editor = stack
    once = editor.schedule_at("log", "2030-01-07T09:30:00Z", {"n": 1})
    cron = editor.schedule_cron("log", "0 9 * * 5", {"n": 2}, timezone="Europe/Berlin")
    every = editor.schedule_every("log", "1h30m", {"n": 3})
    gone = editor.cancel(editor.schedule_in("log", 3600, {"n": 4}).id)
    dynamodb, events = clients(server)
    rule_before = events.describe_rule(Name=DEFAULT_RULE_NAME)["ScheduleExpression"]
    listed_before = [as_json(t) for t in editor.list(limit=10).items]
    # When the state is saved, the emulator reset to nothing, its resources re-created and the state restored
    path = tmp_path / "state.json"
    state.save(path, take_snapshot(server))
    requests.post(f"{server.url}/moto-api/reset", timeout=5).raise_for_status()
    create_table_and_rule(server, DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
    saved = state.load(path)
    assert saved is not None
    restored = state.restore(EMULATED, saved, now=0)
    # Then every item, the task views, the pending order and the rule are as before; the count is of tasks
    assert restored == 4 < len(saved["items"])
    for task in (once, cron, every, gone):
        assert as_json(editor.get(task.id)) == as_json(task)
    assert [as_json(t) for t in editor.list(limit=10).items] == listed_before
    assert (
        events.describe_rule(Name=DEFAULT_RULE_NAME)["ScheduleExpression"]
        == rule_before
        != "cron(0 0 1 1 ? 1970)"
    )
    assert scan_items(dynamodb) == saved["items"]


def test_items_past_their_ttl_are_not_restored(stack: tuple[MotoServer, Editor], tmp_path: Path) -> None:
    # Given a cancelled task (kept for the retention period) and a pending one
    server, editor = stack
    gone = editor.cancel(editor.schedule_in("log", 3600).id)
    kept = editor.schedule_in("log", 7200)
    snap = take_snapshot(server)
    requests.post(f"{server.url}/moto-api/reset", timeout=5).raise_for_status()
    create_table_and_rule(server, DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
    # When restored long after the retention period
    state.restore(EMULATED, snap, now=4_000_000_000)
    # Then the expired task is gone (as DynamoDB TTL would have deleted it) and the pending one is there
    assert editor.get(kept.id).status == "pending"
    with pytest.raises(Exception, match="no task"):
        editor.get(gone.id)


def test_a_restart_drops_the_stopped_processs_waiter_claim(
    stack: tuple[MotoServer, Editor], tmp_path: Path
) -> None:
    # Given a task due soon and the rule record naming an invocation sleeping for it (as when the
    # stack was stopped while a worker waited for the exact instant)
    server, editor = stack
    task = editor.schedule_in("log", 30)
    assert task.due is not None
    store = editor.runtime.store
    now = datetime.now(UTC)
    assert store.claim_waiter(task.due, "dead-invocation", now + timedelta(minutes=5), now)
    assert store.read_rule_state().waiter_owner == "dead-invocation"
    snap = take_snapshot(server)
    requests.post(f"{server.url}/moto-api/reset", timeout=5).raise_for_status()
    create_table_and_rule(server, DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
    # When the state is restored into a fresh emulator
    state.restore(EMULATED, snap, now=now.timestamp())
    # Then the claim is gone (that invocation no longer exists), so the next worker may wait for the task
    after = store.read_rule_state()
    assert (after.waiter_at, after.waiter_until, after.waiter_owner) == (None, None, None)
    assert store.claim_waiter(task.due, "new-invocation", now + timedelta(minutes=5), now)
    assert editor.get(task.id).status == "pending"


def test_a_restart_drops_the_leases_of_the_stopped_processs_claims(
    stack: tuple[MotoServer, Editor], tmp_path: Path
) -> None:
    # Given a due task whose occurrence an invocation claimed (a minute's lease), when the stack
    # was killed while delivering it
    server, editor = stack
    task = editor.schedule_in("log", 0)
    store = editor.runtime.store
    now = datetime.now(UTC)
    [entry] = [e for shard in range(store.shards) for e in store.shard_entries(shard, page_size=10)]
    claimed = store.claim(entry, now, now + timedelta(minutes=1), "dead-invocation")
    assert claimed is not None and editor.get(task.id).status == "running"
    snap = take_snapshot(server)
    requests.post(f"{server.url}/moto-api/reset", timeout=5).raise_for_status()
    create_table_and_rule(server, DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
    # When the state is restored into a fresh emulator
    state.restore(EMULATED, snap, now=now.timestamp())
    # Then the occurrence is claimable at once by the new stack's worker (its holder is gone), the
    # attempt it used still counted, and the task is as it was
    [restored] = [e for shard in range(store.shards) for e in store.shard_entries(shard, page_size=10)]
    assert restored.lease_until is None and restored.lease_owner is None
    assert restored.token == claimed.token
    assert editor.get(task.id).status == "pending"  # it read "running" while the dead claim held it
    again = store.claim(restored, now, now + timedelta(minutes=1), "new-invocation")
    assert again is not None and again.attempt == claimed.attempt + 1  # the cut-off delivery counted


def test_save_is_atomic(tmp_path: Path) -> None:
    # Given a saved state
    path = tmp_path / "state.json"
    state.save(path, {"format": state.STATE_FORMAT, "items": [], "rule": {}})
    # When a later save fails half-way (here: something not serialisable)
    with pytest.raises(TypeError):
        state.save(path, {"format": state.STATE_FORMAT, "items": [object()], "rule": {}})
    # Then the old file is intact and no temporary file is left behind
    assert json.loads(path.read_text())["items"] == []
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_an_unknown_state_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text('{"format": 99}')
    with pytest.raises(SystemExit, match="unknown format"):
        state.load(path)


def test_a_frozen_server_serves_only_the_snapshot(aws_credentials: None) -> None:
    # Given a moto server the stack has frozen for its shutdown snapshot
    with moto_server() as server:
        create_table_and_rule(server, DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
        server.notifier.freeze()
        marked = client("dynamodb", server)
        marked.meta.events.register("before-sign", _mark_snapshot_request)
        # When an ordinary client (an abandoned worker) and the snapshot call it
        blocked = threading.Event()

        def ordinary() -> None:
            # held until the server stops, then refused: what an abandoned worker sees
            with contextlib.suppress(EndpointConnectionError):
                client("dynamodb", server).list_tables()
                blocked.set()

        threading.Thread(target=ordinary, daemon=True).start()
        # Then the snapshot is served and the ordinary client waits
        assert scan_items(marked) == []
        assert not blocked.wait(0.5)
