"""End to end: a clean stop records every completed delivery before it exits. Ctrl-C while the
worker delivers a webhook, more tasks coming due meanwhile: the worker claims nothing more, the
delivery completes during the stop and its completion is saved with the state; after a restart it
is `succeeded` and never delivered again, and every other task is delivered exactly once (not
again once the lease of a claim made before the stop is over)."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.localstack import LocalStackProcess, rfc3339, stack_environment
from tests.support.slow_receiver import SlowReceiver

pytestmark = [pytest.mark.xdist_group("stop-e2e"), pytest.mark.slow]

ANSWER_SECONDS = 2.0  # the receiver holds each delivery this long before answering 200
LEASE_SECONDS = 10  # short, so that waiting beyond it stays short
QUEUED = 10  # tasks due one second apart: the first is delivering when Ctrl-C comes
STOP_SECONDS = 60.0


@pytest.fixture
def receiver() -> Iterator[SlowReceiver]:
    server = SlowReceiver(ANSWER_SECONDS)
    yield server
    server.shutdown()


@pytest.fixture
def stack(tmp_path: Path, receiver: SlowReceiver) -> Iterator[LocalStackProcess]:
    env = stack_environment(
        tmp_path / "state", hook_url=receiver.url, NEXTTICK_LEASE_SECONDS=str(LEASE_SECONDS)
    )
    process = LocalStackProcess(tmp_path / "state", env, tmp_path / "stack.log")
    yield process
    process.kill()


def test_a_delivery_completed_during_ctrl_c_is_recorded_and_never_delivered_again(
    stack: LocalStackProcess, receiver: SlowReceiver
) -> None:
    # Given a worker delivering a task to a webhook that answers after two seconds, with more tasks
    # coming due every second behind it (a worker that kept claiming them would always hold some)
    stack.start()
    first_due = time.time() + 3
    for i in range(QUEUED):
        stack.post({"action": "hook", "due": rfc3339(first_due + i), "id": f"task-{i}"})
    assert receiver.arrived.wait(60), stack.output()[-4000:]
    # When the user presses Ctrl-C during the delivery
    assert stack.process is not None
    stack.process.send_signal(signal.SIGINT)
    # Then the stack stops cleanly, once the delivery has completed
    assert stack.process.wait(STOP_SECONDS) == 0, stack.output()[-4000:]
    assert receiver.answered.is_set()
    delivered_before_stop = list(receiver.keys)
    # And when it is started again, the delivery that happened is recorded
    stack.start()
    first = stack.get("task-0")
    assert first["status"] == "succeeded" and first["runs"] == 1, (first, stack.output()[-4000:])
    assert first["last_run"]["outcome"] == "succeeded"
    # And every task is delivered exactly once, even after the leases of claims made before the stop
    time.sleep(LEASE_SECONDS + ANSWER_SECONDS + 10)
    assert Counter(receiver.keys) == Counter(set(receiver.keys)), (delivered_before_stop, receiver.keys)
    assert len(receiver.keys) == QUEUED, stack.output()[-4000:]
    for i in range(QUEUED):
        task = stack.get(f"task-{i}")
        assert task["status"] == "succeeded" and task["runs"] == 1, task
    stack.process.send_signal(signal.SIGINT)
    assert stack.process.wait(STOP_SECONDS) == 0
