"""End to end: a `SIGKILL` of `nexttick local` loses nothing it acknowledged and re-runs nothing that
had completed. The stack runs as a user starts it (the installed entry point, any free port, its own
state directory); tasks are created over HTTP with a webhook action to a loopback receiver.

Before the journal (the state was written only on a clean stop) the restarted stack came up empty:
no pending task was ever delivered, and this test timed out waiting for them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.localstack import LocalStackProcess, Receiver, parse_time, rfc3339, stack_environment

pytestmark = [pytest.mark.xdist_group("kill-e2e"), pytest.mark.slow]

PENDING_COUNT = 100
DONE_COUNT = 10  # due at once, delivered and recorded as succeeded before the kill
PENDING_FROM, PENDING_TO = 20.0, 60.0  # seconds ahead of their creation
QUIET_AFTER = 5.0  # seconds to watch for duplicates after the last expected delivery


@pytest.fixture
def stack_and_receiver(tmp_path: Path) -> Iterator[tuple[LocalStackProcess, Receiver]]:
    receiver = Receiver()
    state_dir = tmp_path / "state"
    env = stack_environment(state_dir, hook_url=receiver.url)
    stack = LocalStackProcess(state_dir, env, tmp_path / "stack.log")
    try:
        yield stack, receiver
    finally:
        stack.kill()
        receiver.shutdown()


def test_a_killed_stack_delivers_every_acknowledged_task_once_and_nothing_twice(
    stack_and_receiver: tuple[LocalStackProcess, Receiver],
) -> None:
    stack, receiver = stack_and_receiver
    stack.start()
    # Given tasks that were due at once, delivered, and recorded as succeeded
    done = [
        stack.post({"action": "hook", "delay_seconds": 0, "id": f"done-{i}"})["id"] for i in range(DONE_COUNT)
    ]
    assert receiver.wait_until(lambda: all(receiver.of(t) for t in done), 60), stack.output()[-4000:]
    deadline = time.monotonic() + 30
    while any(stack.get(t)["status"] != "succeeded" for t in done):
        assert time.monotonic() < deadline, [stack.get(t)["status"] for t in done]
        time.sleep(0.2)
    # And 100 tasks acknowledged with 201, due 20-60 s ahead
    start = time.time()
    pending: dict[str, float] = {}
    for i in range(PENDING_COUNT):
        due = start + PENDING_FROM + (PENDING_TO - PENDING_FROM) * i / (PENDING_COUNT - 1)
        created = stack.post(
            {"action": "hook", "due": rfc3339(due), "id": f"pending-{i}", "payload": {"i": i}}
        )
        pending[created["id"]] = parse_time(created["due"])
    # When the stack is killed right after the last acknowledgement and started again on its state
    stack.kill()
    killed_at = time.time()
    stack.start()
    # Then every pending task is delivered, exactly once
    last_due = max(pending.values())
    assert receiver.wait_until(
        lambda: all(receiver.of(t) for t in pending), max(last_due, time.time()) - time.time() + 60
    ), f"undelivered: {sorted(t for t in pending if not receiver.of(t))}\n{stack.output()[-4000:]}"
    time.sleep(QUIET_AFTER)
    keys = Counter(d.key for t in pending for d in receiver.of(t))
    assert len(keys) == PENDING_COUNT and set(keys.values()) == {1}, keys.most_common(3)
    assert all(stack.get(t)["status"] == "succeeded" for t in pending)
    # And none that had completed before the kill is delivered again
    assert [d.task_id for t in done for d in receiver.of(t) if d.received_at > killed_at] == []
    assert all(len(receiver.of(t)) == 1 for t in done)
    assert stack.stop() == 0
