"""Shard cursors against moto: where a re-arm puts them, that a pass reads a shard from its cursor,
and that an editor writing below one lowers it (nexttick/store/rule.py, "Shard cursors")."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nexttick.config import NextTickSettings
from nexttick.constants import RULE_STATE_PK
from nexttick.store.keys import cursor_at
from nexttick.store.mapping import queue_item
from nexttick.store.records import Occurrence
from tests.support.oplog import OperationLog
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4)


def test_a_rearm_puts_each_cursor_at_the_first_entry_or_the_read_instant(env: WorkerEnv) -> None:
    store = env.runtime.store
    late, early = env.ids_in_shard(0, 2)
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
    (task_id,) = env.ids_in_shard(1, 1)
    # And an entry planted below shard 1's cursor without lowering it (what the cursor protocol
    # exists to prevent), then a task due now in the same shard, written as editors write it
    planted = store._new_entry(task_id, Occurrence(env.now() - timedelta(seconds=5), env.now()), env.now())
    queue_item(store.models.queue, planted).save()
    due_now = env.editor.schedule_at("record", env.now(), id=env.ids_in_shard(1, 2)[1])
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
    (task_id,) = env.ids_in_shard(2, 1)
    # When an editor creates a task that was due before the cursor's instant
    task = env.editor.schedule_at("record", env.now() - timedelta(minutes=10), id=task_id)
    # Then the shard's cursor is lowered to its entry, and the worker runs it
    state = store.read_rule_state()
    assert state.cursor_of(2) == overdue_key(env, task.id)
    env.run()
    assert len(RECORDER.calls[task.id]) == 1
    # And the re-arm after the run raised the cursor again, past the finished entry
    assert store.read_rule_state().cursor_of(2) == cursor_at(env.now())


def test_a_rearm_after_a_run_raises_the_heads_and_moves_the_armed_minute_in_one_write(env: WorkerEnv) -> None:
    store = env.runtime.store
    log = OperationLog.attach(env.runtime)
    # Given a task in five minutes (the rule is armed for it) and one an hour out, in other shards
    soon_id, later_id = env.ids_in_shard(0, 1)[0], env.ids_in_shard(1, 1)[0]
    soon = env.editor.schedule_at("record", env.now() + timedelta(minutes=5), id=soon_id)
    later = env.editor.schedule_at("record", env.now() + timedelta(hours=1), id=later_id)
    # When the worker runs the first
    env.travel_to(soon.due)
    log.reset()
    env.run(remaining_seconds=30)
    assert len(RECORDER.calls[soon.id]) == 1
    # Then its re-arm wrote the rule record once before its PutRule: shard 0's head raised past the
    # finished entry and the armed minute moved to the later task, in one conditional write
    writes = [
        (operation, params)
        for service, operation, params in log.calls
        if (service, operation) == ("events", "PutRule")
        or (operation == "UpdateItem" and params["Key"]["pk"]["S"] == RULE_STATE_PK)
    ]
    [putrule] = [i for i, (operation, _) in enumerate(writes) if operation == "PutRule"]
    record_writes = [params for operation, params in writes[:putrule] if operation == "UpdateItem"]
    assert len(record_writes) == 1
    names = set(record_writes[0]["ExpressionAttributeNames"].values())
    assert {"heads", "armed_at", "version"} <= names
    state = store.read_rule_state()
    assert state.armed_minute == env.runtime.rule_sync.timing.fire_minute(later.due) and state.published
    assert state.head_of(0) is None and state.head_of(1) == later.due


def test_the_rearm_write_fails_whole_when_the_version_moved_or_a_head_was_lowered(env: WorkerEnv) -> None:
    store = env.runtime.store
    env.runtime.rule_sync.rearm()  # every shard known, empty
    read = store.read_rule_state()
    hour = env.now().replace(microsecond=0) + timedelta(hours=1)
    minute = hour.replace(second=0)
    # When the version moved since the read: nothing is written
    assert store.cas_rule_state(read.version, None) == read.version + 1
    assert store.rearm_record(read, minute, {0: hour}, {}) is None
    moved = store.read_rule_state()
    assert moved.head_of(0) is None and moved.armed_minute is None
    # When a head it raises was lowered since the read: nothing is written either
    assert store.lower_shard(1, env.now(), None) is not None
    assert store.rearm_record(moved, minute, {1: hour}, {}) is None
    lowered = store.read_rule_state()
    assert lowered.head_of(1) is not None and lowered.head_of(1) <= env.now()
    assert lowered.armed_minute is None and lowered.version == moved.version
    # When nothing moved: both are written, the version is the CAS's, and the answer is the record
    written = store.rearm_record(lowered, minute, {0: hour}, {})
    assert written is not None and written == store.read_rule_state()
    assert (written.head_of(0), written.armed_minute, written.version) == (hour, minute, lowered.version + 1)
    assert not written.published  # a PutRule is owed
