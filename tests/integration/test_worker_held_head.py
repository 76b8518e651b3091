"""A head another invocation holds is not polled for. A task created a second before it is due is
claimed ahead by the worker its editor invoked; a second invocation started meanwhile (the
keeper's wake, a rule firing) finds that head leased. It waits for what it can claim — the end of
the window its pass read, or the lease's end if sooner — not for the held entry's due time, which
it would otherwise poll every MIN_WAIT_SECONDS (a release, a read and a claim each time) until the
holder has run it."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from nexttick.config import NextTickSettings, Precision
from nexttick.store.records import QueueEntry
from nexttick.worker import RunReport
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(
        # A lease long enough that the minute of its end is armable: the second invocation, once
        # the head is due and it reads the holder's lease, arms the rule for the lease's end.
        queue_shards=4,
        actions_config=ACTIONS,
        pool_size=4,
        lease_seconds=120,
        precision=Precision.SECOND,
    )


def test_an_invocation_does_not_poll_for_a_head_another_holds(env: WorkerEnv) -> None:
    # Given a deployed scheduler (its sync records every shard's head) and a task due in 0.8 s,
    # claimed ahead by the invocation its editor woke, which holds it
    env.runtime.rule_sync.sync()
    due = env.now() + timedelta(seconds=0.8)
    task = env.editor.schedule_at("record", due)
    claimed, go = threading.Event(), threading.Event()

    def hold(step: str, _entry: QueueEntry) -> None:
        if step == "claimed":
            claimed.set()
            go.wait(30)

    holder_reports: list[RunReport] = []
    holder = threading.Thread(target=lambda: holder_reports.append(env.worker(hook=hold).run()))
    holder.start()
    try:
        assert claimed.wait(10)
        # When a second invocation runs while the first holds the head past its due time
        second = env.run()
    finally:
        go.set()
        holder.join(30)
    # Then the second read the shard a handful of times, not every 50 ms until the holder ran it
    assert second.passes <= 4, second.to_dict()
    assert second.results["succeeded"] == 0
    # And the holder ran the task, once
    assert [r.results["succeeded"] for r in holder_reports] == [1]
    assert len(RECORDER.calls[task.id]) == 1
