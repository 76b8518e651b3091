"""An action cannot outlive its lease: while an occurrence runs, its worker keeps the lease alive, so
a second worker cannot claim it and deliver it concurrently (I3), however slow the action is."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from editor import Editor
from nexttick.config import NextTickSettings
from nexttick.store.keys import shard_of
from nexttick.timeutil import from_epoch
from tests.support.aws import RecordedRuntime
from tests.support.worker import Recorder, make_moto_atomic

LEASE_SECONDS = 5
ACTION_SECONDS = 8.0
SLOW = Recorder()
STARTED = threading.Event()


def slow_action(envelope: dict[str, Any]) -> None:
    """Stands for an action slower than the lease (e.g. SDK retries of a throttled call)."""
    SLOW.add(envelope)
    STARTED.set()
    time.sleep(ACTION_SECONDS)


@pytest.fixture
def settings() -> NextTickSettings:
    actions = {"slow": {"type": "python", "target": f"{__name__}:slow_action", "timeout_seconds": 10}}
    return NextTickSettings(queue_shards=4, actions_config=actions, pool_size=4, lease_seconds=LEASE_SECONDS)


def test_an_action_slower_than_the_lease_is_delivered_exactly_once(
    runtime: RecordedRuntime, editor: Editor, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexttick.actions import build_registry
    from nexttick.worker import Worker

    make_moto_atomic(monkeypatch)
    SLOW.reset()
    STARTED.clear()
    registry = build_registry(runtime.settings.action_definitions(), runtime.settings)
    # Given a task due now whose action takes longer than the lease (8 s against 5 s)
    task = editor.schedule_in("slow", 0)
    # When one worker runs it
    first = threading.Thread(
        target=lambda: Worker(runtime, registry, owner="first", remaining_ms=60_000).run(), daemon=True
    )
    first.start()
    assert STARTED.wait(10)
    # And, after the first claim's lease would have expired, another worker tries to claim it
    time.sleep(LEASE_SECONDS + 1)
    assert first.is_alive() and len(SLOW.calls[task.id]) == 1
    store = runtime.store
    [entry] = [e for e in store.shard_entries(shard_of(task.id, store.shards)) if e.task_id == task.id]
    now = runtime.clock.now()
    # Then the entry is still leased by the first worker, and the claim is refused
    assert entry.lease_owner == "first" and entry.lease_until is not None and entry.lease_until > now
    assert store.claim(entry, now, from_epoch(now.timestamp() + LEASE_SECONDS), "third") is None
    # And a whole second worker run meanwhile leaves it alone
    Worker(runtime, registry, owner="second", remaining_ms=3_000).run()
    assert len(SLOW.calls[task.id]) == 1
    # And once the first worker finishes, the occurrence was delivered exactly once and succeeded
    first.join(30)
    assert not first.is_alive()
    assert len(SLOW.calls[task.id]) == 1
    record = store.get_task(task.id)
    assert record is not None and record.status == "succeeded" and record.runs == 1
