"""Steering without deleting: pause / resume (skip, once, each), skip the next occurrences, run now —
through the editor and a real worker on moto (travelling clock), including a worker or an editor
that dies between the writes of each."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from editor import ConflictError, ValidationError, VersionMismatchError
from nexttick.config import NextTickSettings
from nexttick.store.records import QueueEntry
from tests.support.api import LambdaApi
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv

LEASE = timedelta(seconds=60)
TEN_MIN = timedelta(minutes=10)


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4, lease_seconds=60)


@pytest.fixture
def api(env: WorkerEnv, monkeypatch: pytest.MonkeyPatch) -> LambdaApi:
    """The API handler, its editor the test's (moto, travelling clock)."""
    from lambdas.api import handler as module
    from lambdas.api.app import build_app

    monkeypatch.setattr(module, "app", build_app(lambda: env.editor))
    return LambdaApi(module.handler)


class Crash(BaseException):
    """The process dies here: nothing after this line runs."""


def scheduled(env: WorkerEnv, task_id: str) -> list[Any]:
    """The occurrences delivered to `task_id`, by scheduled time."""
    return [call.envelope["scheduled_for"] for call in RECORDER.calls[task_id]]


def parked_entries(env: WorkerEnv, task_id: str) -> list[QueueEntry]:
    from nexttick.store.keys import shard_of

    store = env.runtime.store
    shard = shard_of(task_id, store.shards)
    return [e for e in store.shard_entries(shard, parked=True) if e.task_id == task_id]


def dying_after(env: WorkerEnv, step: str) -> Any:
    """Make the editor's next task change die right after `step` of the write protocol; returns
    the undo."""

    def die(name: str) -> None:
        if name == step:
            raise Crash

    store = env.runtime.store
    original = store.swap_occurrence
    store.swap_occurrence = lambda *a, **kw: original(*a, **{**kw, "step": die})
    return lambda: setattr(store, "swap_occurrence", original)


def test_a_paused_task_keeps_its_place_runs_nothing_and_is_listed_as_paused(env: WorkerEnv) -> None:
    task = env.editor.schedule_every("record", "10m")
    paused = env.editor.pause(task.id, expected_version=1)
    assert (paused.status, paused.due, paused.version) == ("paused", task.due, 2)
    # When its due time passes with a worker running
    env.travel_to(task.due + timedelta(seconds=1))
    env.run(remaining_seconds=5)
    # Then nothing ran, and it is listed as paused, not as queued
    assert RECORDER.calls[task.id] == []
    assert [t.id for t in env.editor.list(status="paused").items] == [task.id]
    assert env.editor.list().items == []
    assert [e.key for e in env.entries_of(task.id)] == []  # no entry a worker reads
    # And pausing it again (a repeated request) returns it as it is
    assert env.editor.pause(task.id, expected_version=1) == env.editor.get(task.id)
    # But a finished task cannot be paused: a conflict naming the status
    env.editor.cancel(task.id)
    with pytest.raises(ConflictError) as finished:
        env.editor.pause(task.id)
    assert finished.value.field == "status"


@pytest.mark.parametrize(
    ("missed", "ran_count", "first_ran"),
    [("skip", 0, None), ("once", 1, 4), ("each", 3, 2)],
)
def test_resume_applies_its_policy_to_what_was_missed(
    env: WorkerEnv, missed: str, ran_count: int, first_ran: int | None
) -> None:
    # Given a task every 10 minutes, paused before its first occurrence, for 5 occurrences
    task = env.editor.schedule_every("record", "10m")
    first = task.due
    env.editor.pause(task.id)
    now = first + 4 * TEN_MIN + timedelta(minutes=2)
    env.travel_to(now)
    # When it is resumed (catching up at most 3) and a worker runs until nothing is due
    resumed = env.editor.resume(task.id, missed=missed, max_catch_up=3)
    assert resumed.status == "pending"
    env.run(remaining_seconds=30)
    # Then the missed ones ran as the policy says, each under its own key, newest kept
    expected = [first + k * TEN_MIN for k in range(first_ran, 5)] if first_ran is not None else []
    assert scheduled(env, task.id) == [at.isoformat().replace("+00:00", "Z") for at in expected]
    assert len(expected) == ran_count
    # And the schedule goes on at its next occurrence after now, without drift
    assert env.editor.get(task.id).due == first + 5 * TEN_MIN


def test_resuming_a_one_shot_past_due_runs_it_or_skips_it(env: WorkerEnv) -> None:
    ran = env.editor.schedule_in("record", 60)
    dropped = env.editor.schedule_in("record", 60)
    for task in (ran, dropped):
        env.editor.pause(task.id)
    env.travel_to(ran.due + timedelta(minutes=5))
    env.editor.resume(ran.id, missed="once")
    ended = env.editor.resume(dropped.id, missed="skip")
    env.run(remaining_seconds=10)
    assert env.editor.get(ran.id).status == "succeeded" and len(RECORDER.calls[ran.id]) == 1
    assert ended.status == "skipped" and RECORDER.calls[dropped.id] == []


def test_skip_moves_past_the_next_occurrences_and_ends_a_one_shot(env: WorkerEnv) -> None:
    every = env.editor.schedule_every("record", "10m")
    once = env.editor.schedule_in("record", 600)
    assert env.editor.skip(every.id, count=3).due == every.due + 3 * TEN_MIN
    assert env.editor.skip(once.id).status == "skipped"
    with pytest.raises(ValidationError) as bad:
        env.editor.skip(every.id, count=0)
    assert bad.value.field == "count"
    # A paused task skips too, and stays paused
    env.editor.pause(every.id)
    assert env.editor.skip(every.id).due == every.due + 4 * TEN_MIN
    assert env.editor.get(every.id).status == "paused"
    # And nothing runs at the skipped times
    env.travel_to(every.due + 3 * TEN_MIN + timedelta(seconds=1))
    env.run(remaining_seconds=5)
    assert RECORDER.calls[every.id] == [] and RECORDER.calls[once.id] == []


def test_run_now_runs_one_extra_occurrence_and_leaves_the_schedule(env: WorkerEnv) -> None:
    task = env.editor.schedule_every("record", "1h")
    # When it is run now (twice asked: the second waits for the first)
    extra = env.editor.run_now(task.id, expected_version=1)
    assert extra.run_now_at is not None and extra.due == task.due
    with pytest.raises(ConflictError):
        env.editor.run_now(task.id)
    env.run(remaining_seconds=10)
    # Then it ran once, now, under its own key, and the schedule is as it was
    (call,) = RECORDER.calls[task.id]
    assert call.envelope["scheduled_for"] == extra.run_now_at.isoformat().replace("+00:00", "Z")
    after = env.editor.get(task.id)
    assert after.due == task.due and after.run_now_at is None and after.runs == 1
    assert env.editor.runs(task.id).items[0].scheduled_for == extra.run_now_at
    # And a paused task can be run now, and stays paused
    env.editor.pause(task.id)
    env.editor.run_now(task.id)
    env.run(remaining_seconds=10)
    assert len(RECORDER.calls[task.id]) == 2 and env.editor.get(task.id).status == "paused"
    with pytest.raises(VersionMismatchError):
        env.editor.run_now(task.id, expected_version=1)


def test_a_failing_run_now_is_retried_then_cleared(env: WorkerEnv) -> None:
    task = env.editor.schedule_every("record", "1h", max_attempts=2, retry_backoff_seconds=1)

    def fail_first(envelope: dict[str, Any]) -> None:
        if envelope["attempt"] == 1:
            raise RuntimeError("refused once")

    RECORDER.during[task.id] = fail_first
    env.editor.run_now(task.id)
    env.run(remaining_seconds=30)
    attempts = [c.envelope["attempt"] for c in RECORDER.calls[task.id]]
    assert attempts == [1, 2]
    after = env.editor.get(task.id)
    assert after.run_now_at is None and after.due == task.due and after.last_run.outcome == "succeeded"
    assert [r.outcome for r in env.editor.runs(task.id).items] == ["succeeded", "retrying"]


@pytest.mark.parametrize("dies_after", ["entry-put", "task-replaced"])
def test_an_editor_dying_in_a_pause_leaves_the_task_paused_or_untouched(
    env: WorkerEnv, dies_after: str
) -> None:
    task = env.editor.schedule_in("record", 120)
    undo = dying_after(env, dies_after)
    with pytest.raises(Crash):
        env.editor.pause(task.id)
    undo()
    status = env.editor.get(task.id).status
    env.travel_to(task.due + LEASE)
    env.run(remaining_seconds=10)
    # Then the task is either paused (nothing ran) or still pending (it ran once): never both
    ran = len(RECORDER.calls[task.id])
    assert (status, ran) in (("paused", 0), ("pending", 1))
    assert status == ("pending" if dies_after == "entry-put" else "paused")


def test_the_paused_listing_deletes_what_a_dead_resume_left_and_spares_a_pause_in_flight(
    env: WorkerEnv,
) -> None:
    # Given a task paused, then resumed 10 s later by an editor that dies before deleting the
    # parked entry it leaves
    resumed = env.editor.schedule_every("record", "10m")
    env.editor.pause(resumed.id)
    env.travel_to(env.clock.now() + timedelta(seconds=10))
    undo = dying_after(env, "task-replaced")
    with pytest.raises(Crash):
        env.editor.resume(resumed.id)
    undo()
    assert env.editor.get(resumed.id).status == "pending" and len(parked_entries(env, resumed.id)) == 1
    # And a pause whose editor died after writing the parked entry, before the task write
    pausing = env.editor.schedule_every("record", "10m")
    undo = dying_after(env, "entry-put")
    with pytest.raises(Crash):
        env.editor.pause(pausing.id)
    undo()
    # When the paused tasks are listed
    assert env.editor.list(status="paused").items == []
    # Then the leftover of the resume is gone; the young entry (it could be a pause in flight) stays
    assert parked_entries(env, resumed.id) == []
    assert len(parked_entries(env, pausing.id)) == 1
    # And once it is older than any write in flight, the next listing deletes it too
    env.travel_to(env.clock.now() + timedelta(minutes=6))
    assert env.editor.list(status="paused").items == []
    assert parked_entries(env, pausing.id) == []


@pytest.mark.parametrize("task_id", [None, "given-id"], ids=["home-item", "client-id"])
@pytest.mark.parametrize("step", ["claimed", "ran"])
def test_a_pause_racing_a_claimed_occurrence(env: WorkerEnv, step: str, task_id: str | None) -> None:
    # Given a worker that has claimed (or already run) the occurrence when the pause commits (a home
    # item's claim answers with its task: that is the worker's read of it; a client id's task is
    # read right after the claim)
    task = env.editor.schedule_every("record", "10m", id=task_id)
    stopped = step == "claimed" and task_id is not None

    def pause_now(name: str, entry: QueueEntry) -> None:
        if name == step and entry.task_id == task.id:
            env.editor.pause(task.id)

    env.travel_to(task.due)
    env.run(remaining_seconds=10, hook=pause_now)
    # Then a pause before the worker read the task stops it; after, the run completes and is
    # recorded, and either way the task stays paused at its place
    assert len(RECORDER.calls[task.id]) == (0 if stopped else 1)
    after = env.editor.get(task.id)
    assert after.status == "paused" and after.due == task.due
    assert len(env.editor.runs(task.id).items) == (0 if stopped else 1)


def test_the_api_steers_with_if_match(api: LambdaApi) -> None:
    task = api.post("/tasks", {"action": "record", "every": "10m"}).json()
    base = f"/tasks/{task['id']}"
    stale = api.post(f"{base}/pause", headers={"If-Match": '"7"'})
    assert stale.status == 412
    paused = api.post(f"{base}/pause", headers={"If-Match": '"1"'})
    assert paused.status == 200 and paused.json()["status"] == "paused" and paused.headers["etag"] == '"2"'
    # And a repeated pause (its If-Match now behind) answers with the paused task, unchanged
    again = api.post(f"{base}/pause", headers={"If-Match": '"1"'})
    assert again.status == 200 and again.json()["status"] == "paused" and again.headers["etag"] == '"2"'
    assert [t["id"] for t in api.get("/tasks?status=paused").json()["items"]] == [task["id"]]
    assert api.post(f"{base}/skip", {"count": 2}).json()["due"] != task["due"]
    bad = api.post(f"{base}/resume", {"missed": "later"})
    assert bad.status == 422 and bad.json()["field"] == "missed"
    resumed = api.post(f"{base}/resume", {"missed": "skip"})
    assert resumed.status == 200 and resumed.json()["status"] == "pending"
    # And a repeated resume answers with the pending task, unchanged
    again = api.post(f"{base}/resume", {"missed": "skip"})
    assert again.status == 200 and again.json() == resumed.json()
    now = api.post(f"{base}/run-now")
    assert now.status == 200 and now.json()["run_now_at"] is not None
    assert api.post(f"{base}/run-now").status == 409
    assert api.post("/tasks/nope/pause").status == 404
    assert api.delete(base).status in (202, 204) and api.get(base).json()["status"] == "cancelled"
    # And a finished task can be neither paused nor resumed
    assert api.post(f"{base}/pause").json()["field"] == "status"
    assert api.post(f"{base}/resume").status == 409


def test_a_paused_task_still_lists_its_upcoming_runs_and_errors_name_only_the_field(api: LambdaApi) -> None:
    task = api.post("/tasks", {"action": "record", "every": "10m"}).json()
    api.post(f"/tasks/{task['id']}/pause")
    items = api.get(f"/tasks/{task['id']}/upcoming?count=2").json()["items"]
    assert items[0]["scheduled_for"] == task["due"]
    bad = api.post(f"/tasks/{task['id']}/skip", {"count": 0})
    assert bad.status == 422 and bad.json()["field"] == "count"
    assert "also invalid" not in bad.json()["message"]


def test_steering_bodies_are_optional_objects_never_null(env: WorkerEnv, api: LambdaApi) -> None:
    task = api.post("/tasks", {"action": "record", "every": "10m"}).json()
    json_type = {"content-type": "application/json"}
    for body, status in (("null", 422), ("[]", 422), ("{}", 200)):
        answer = api.request("POST", f"/tasks/{task['id']}/skip", body=body, headers=json_type)
        assert answer.status == status, (body, answer.body)
        if status == 422:
            assert answer.json()["field"] == "body"
    assert api.request("POST", f"/tasks/{task['id']}/skip").status == 200  # no body at all
    assert env.editor.get(task["id"]).due == datetime.fromisoformat(task["due"]) + 2 * TEN_MIN


def test_run_now_on_a_failed_task_is_a_retry_that_succeeds_it(env: WorkerEnv) -> None:
    # Given a one-shot task that failed its only attempt
    task = env.editor.schedule_in("record", 60, max_attempts=1)
    outcomes = iter([RuntimeError("down"), RuntimeError("still down"), None])

    def flaky(envelope: dict[str, Any]) -> None:
        error = next(outcomes)
        if error is not None:
            raise error

    RECORDER.during[task.id] = flaky
    env.travel_to(task.due)
    env.run(remaining_seconds=10)
    assert env.editor.get(task.id).status == "failed"
    # When it is retried and fails again, then retried (a minute later) and succeeds
    env.travel_to(task.due + timedelta(minutes=1))
    env.editor.run_now(task.id)
    env.run(remaining_seconds=10)
    assert env.editor.get(task.id).status == "failed"
    env.travel_to(task.due + timedelta(minutes=2))
    env.editor.run_now(task.id)
    env.run(remaining_seconds=10)
    # Then it has succeeded, each retry under its own key, every attempt in its history
    after = env.editor.get(task.id)
    assert after.status == "succeeded" and after.run_now_at is None and after.runs == 3
    assert len({c.envelope["idempotency_key"] for c in RECORDER.calls[task.id]}) == 3
    assert [r.outcome for r in env.editor.runs(task.id).items] == ["succeeded", "failed", "failed"]
    with pytest.raises(ConflictError):  # a succeeded task has nothing to retry
        env.editor.run_now(task.id)


def test_a_paused_task_can_be_changed_and_stays_paused(env: WorkerEnv) -> None:
    task = env.editor.schedule_every("record", "10m")
    env.editor.pause(task.id)
    # When a paused task is rescheduled and its payload changed
    moved = env.editor.reschedule(task.id, every="1h", expected_version=2)
    patched = env.editor.update(task.id, payload={"v": 2})
    # Then it stays paused, at its new time, listed as paused, and nothing runs at it
    assert (moved.status, patched.status, patched.payload) == ("paused", "paused", {"v": 2})
    assert [t.due for t in env.editor.list(status="paused").items] == [moved.due]
    env.travel_to(moved.due + timedelta(seconds=1))
    env.run(remaining_seconds=5)
    assert RECORDER.calls[task.id] == []
    # And once resumed, it runs on the new schedule
    env.editor.resume(task.id, missed="once")
    env.run(remaining_seconds=10)
    assert scheduled(env, task.id) == [moved.due.isoformat().replace("+00:00", "Z")]
