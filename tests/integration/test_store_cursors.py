"""Shard cursors against moto: where a re-arm puts them, that a pass reads a shard from its cursor,
and that an editor writing below one lowers it (nexttick/store/rule.py, "Shard cursors")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nexttick.config import NextTickSettings
from nexttick.store.keys import cursor_at, shard_of
from nexttick.store.mapping import queue_item
from nexttick.store.records import Occurrence
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4)


def _ids_in_shard(env: WorkerEnv, shard: int, n: int) -> list[str]:
    shards = env.runtime.store.shards
    return [i for i in (f"task-{k}" for k in range(400)) if shard_of(i, shards) == shard][:n]


def test_a_rearm_puts_each_cursor_at_the_first_entry_or_the_read_instant(env: WorkerEnv) -> None:
    store = env.runtime.store
    late, early = _ids_in_shard(env, 0, 2)
    # Given one task an hour out and one due a minute ago (never run: no worker woke), in shard 0
    env.editor.schedule_at("record", env.now() + timedelta(hours=1), id=late)
    overdue = env.editor.schedule_at("record", env.now() - timedelta(minutes=1), id=early)
    # When a re-arm reads every shard (none is known yet)
    env.runtime.rule_sync.rearm()
    # Then shard 0's cursor is the overdue entry's key, and every other shard's the instant it read
    cursors = store.read_rule_state().cursors
    assert cursors is not None
    assert cursors[0] == overdue_key(env, overdue.id)
    assert {s: c for s, c in cursors.items() if s != 0} == {s: cursor_at(env.now()) for s in (1, 2, 3)}


def overdue_key(env: WorkerEnv, task_id: str) -> str:
    record = env.runtime.store.get_task(task_id)
    assert record is not None and record.queue_key is not None
    return record.queue_key


def test_a_pass_reads_each_shard_from_its_cursor(env: WorkerEnv) -> None:
    store = env.runtime.store
    # Given cursors raised to now by a re-arm over an empty queue
    env.runtime.rule_sync.rearm()
    (task_id,) = _ids_in_shard(env, 1, 1)
    # And an entry planted below shard 1's cursor without lowering it (what the cursor protocol
    # exists to prevent), then a task due now in the same shard, written as editors write it
    planted = store._new_entry(task_id, Occurrence(env.now() - timedelta(seconds=5), env.now()), env.now())
    queue_item(store.models.queue, planted).save()
    due_now = env.editor.schedule_at("record", env.now(), id=_ids_in_shard(env, 1, 2)[1])
    # When the worker runs
    env.run()
    # Then it ran the task and never read the planted entry
    assert len(RECORDER.calls[due_now.id]) == 1
    assert store.get_entry(1, planted.key) == planted


def test_an_editor_writing_below_a_cursor_lowers_it_and_the_task_runs(env: WorkerEnv) -> None:
    store = env.runtime.store
    # Given cursors raised to now by a re-arm over an empty queue
    env.runtime.rule_sync.rearm()
    env.travel_to(env.now() + timedelta(minutes=5))
    (task_id,) = _ids_in_shard(env, 2, 1)
    # When an editor creates a task that was due before the cursor's instant
    task = env.editor.schedule_at("record", env.now() - timedelta(minutes=10), id=task_id)
    # Then the shard's cursor is lowered to its entry, and the worker runs it
    state = store.read_rule_state()
    assert state.cursor_of(2) == overdue_key(env, task.id)
    env.run()
    assert len(RECORDER.calls[task.id]) == 1
    # And the re-arm after the run raised the cursor again, past the finished entry
    assert store.read_rule_state().cursor_of(2) == cursor_at(env.now())
