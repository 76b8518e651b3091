"""Run history: every attempt of every occurrence leaves a run record in its task's ring, read newest
first with one Query; a worker that dies around the record's write loses no completed run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from editor import Editor, TaskNotFoundError, ValidationError
from nexttick.config import NextTickSettings
from nexttick.store.records import QueueEntry
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv

LEASE = timedelta(seconds=60)


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(
        queue_shards=4, actions_config=ACTIONS, pool_size=4, lease_seconds=60, run_history=3
    )


class Crash(BaseException):
    """The invocation dies here: nothing after this line runs."""


def crash_after(step: str, task_id: str) -> Callable[[str, QueueEntry], None]:
    """A worker hook that kills the invocation right after `step` of one of `task_id`'s occurrences."""

    def hook(done: str, entry: QueueEntry) -> None:
        if done == step and entry.task_id == task_id:
            raise Crash

    return hook


@pytest.fixture
def calls(env: WorkerEnv) -> Iterator[Counter[str]]:
    """DynamoDB operations made through the store's client, by name."""
    made: Counter[str] = Counter()

    def count(event_name: str, **_: Any) -> None:
        made[event_name.rsplit(".", 1)[-1]] += 1

    client = env.runtime.store.client
    client.meta.events.register("before-call.dynamodb", count)
    yield made
    client.meta.events.unregister("before-call.dynamodb", count)


def test_a_one_shot_run_is_recorded_with_its_times_key_and_lateness(env: WorkerEnv) -> None:
    # Given a one-shot task that runs 0.25 s after it is due
    due = env.now() + timedelta(minutes=2)
    task = env.editor.schedule_at("record", due)
    env.travel_to(due + timedelta(milliseconds=250))
    # When a worker runs it
    env.run(remaining_seconds=20)
    # Then its history holds one run with every field
    page = env.editor.runs(task.id)
    (run,) = page.items
    assert run.number == 1 and run.attempt == 1 and run.outcome == "succeeded" and run.error is None
    assert run.scheduled_for == due and run.run_at == due
    assert due <= run.fired_at <= run.started_at <= run.finished_at
    assert run.idempotency_key == RECORDER.calls[task.id][0].envelope["idempotency_key"]
    assert run.lateness_seconds == pytest.approx((run.started_at - due).total_seconds())
    assert 0.25 <= run.lateness_seconds < 1
    assert page.next_cursor is None
    assert page.lateness.runs == 1 and page.lateness.last_seconds == run.lateness_seconds
    assert page.lateness.p99_seconds == run.lateness_seconds


def test_a_retried_occurrence_keeps_one_record_per_attempt_newest_first(env: WorkerEnv) -> None:
    # Given a task whose action fails on the first attempt only
    due = env.now() + timedelta(minutes=2)
    task = env.editor.schedule_at("record", due, max_attempts=3, retry_backoff_seconds=5)

    def fail_first(envelope: dict[str, Any]) -> None:
        if envelope["attempt"] == 1:
            raise RuntimeError("first attempt refused")

    RECORDER.during[task.id] = fail_first
    # When a worker runs the occurrence and waits for its retry
    env.travel_to(due)
    env.run(remaining_seconds=60)
    # Then the history shows the successful retry first, then the failed attempt with its error
    newest, oldest = env.editor.runs(task.id).items
    assert (newest.number, newest.attempt, newest.outcome) == (2, 2, "succeeded")
    assert (oldest.number, oldest.attempt, oldest.outcome) == (1, 1, "retrying")
    assert oldest.error is not None and "first attempt refused" in oldest.error
    assert newest.scheduled_for == oldest.scheduled_for == due and newest.run_at > oldest.finished_at
    assert newest.idempotency_key == oldest.idempotency_key


@pytest.mark.parametrize(
    ("task_id", "requests"),
    [("given-id", {"Query": 1}), (None, {"GetItem": 1, "Query": 1})],
    ids=["client-id", "home-item"],
)
def test_the_history_is_a_ring_read_with_one_query_and_paged(
    env: WorkerEnv, calls: Counter[str], task_id: str | None, requests: dict[str, int]
) -> None:
    # Given a recurring task that has run five times, with a ring of three runs
    task = env.editor.schedule_every("record", "10s", id=task_id)
    at = task.due
    for _ in range(5):
        env.travel_to(at)
        env.run(remaining_seconds=5)
        at = env.editor.get(task.id).due
    # When its history is read two runs at a time
    calls.clear()
    first = env.editor.runs(task.id, limit=2)
    # Then one Query read it (and the task's home item, when it has one), and the newest three runs
    # are kept
    assert dict(calls) == requests
    assert [run.number for run in first.items] == [5, 4]
    assert first.next_cursor is not None
    second = env.editor.runs(task.id, limit=2, cursor=first.next_cursor)
    assert [run.number for run in second.items] == [3] and second.next_cursor is None
    # And the lateness covers every kept run, not only the page
    kept = first.items + second.items
    assert first.lateness.runs == 3
    assert first.lateness.p99_seconds == max(run.lateness_seconds for run in kept)
    assert [run.scheduled_for for run in kept] == sorted((run.scheduled_for for run in kept), reverse=True)


def test_reading_history_of_unknown_or_unrun_tasks_and_bad_pages(env: WorkerEnv) -> None:
    editor: Editor = env.editor
    with pytest.raises(TaskNotFoundError):
        editor.runs("no-such-task")
    task = editor.schedule_in("record", 3600)
    page = editor.runs(task.id)
    assert page.items == [] and page.next_cursor is None and page.lateness.runs == 0
    with pytest.raises(ValidationError) as bad_limit:
        editor.runs(task.id, limit=0)
    assert bad_limit.value.field == "limit"
    with pytest.raises(ValidationError) as bad_cursor:
        editor.runs(task.id, cursor="not-a-cursor")
    assert bad_cursor.value.field == "cursor"


@pytest.mark.parametrize(
    ("schedule", "dies_after"),
    [
        ("once", "task-replaced"),
        ("once", "entry-deleted"),
        ("every", "entry-put"),
        ("every", "task-replaced"),
        ("every", "entry-deleted"),
    ],
)
def test_a_worker_dying_after_each_completion_write_loses_no_run(
    env: WorkerEnv, schedule: str, dies_after: str
) -> None:
    # Given a task whose first worker dies right after one of its completion's writes (a home item's
    # entry ends in the task write: only a client id's task has an entry delete after it)
    task_id = "given-id" if dies_after == "entry-deleted" else None
    if schedule == "once":
        task = env.editor.schedule_in("record", 120, id=task_id)
    else:
        task = env.editor.schedule_every("record", "10m", id=task_id)
    due = task.due

    env.travel_to(due)
    with pytest.raises(Crash):
        env.run(remaining_seconds=20, hook=crash_after(dies_after, task.id))
    # When a worker comes after the lease (it runs the occurrence again only if its completion
    # had not committed)
    env.travel_to(due + LEASE + timedelta(seconds=1))
    env.run(remaining_seconds=20)
    # Then the occurrence is complete and its history holds one run: the attempt that completed it
    record = env.runtime.store.get_task(task.id)
    assert record.status == ("succeeded" if schedule == "once" else "pending")
    assert record.due == (None if schedule == "once" else due + timedelta(minutes=10))
    delivered = [c.envelope["attempt"] for c in RECORDER.calls[task.id]]
    (run,) = env.editor.runs(task.id).items
    assert (run.number, run.outcome, run.scheduled_for) == (1, "succeeded", due)
    assert run.attempt == delivered[-1] == (2 if dies_after == "entry-put" else 1)
    assert record.run_seq == 1


def test_a_worker_dying_after_moving_the_previous_run_into_the_ring_loses_no_run(env: WorkerEnv) -> None:
    # Given a recurring task that ran once (its run kept on the task item)
    task = env.editor.schedule_every("record", "10m")
    first = task.due
    env.travel_to(first)
    env.run(remaining_seconds=20)
    second = first + timedelta(minutes=10)

    # When the worker of its next occurrence dies right after writing that run into the ring
    env.travel_to(second)
    with pytest.raises(Crash):
        env.run(remaining_seconds=20, hook=crash_after("run-recorded", task.id))
    # And a worker after the lease runs the occurrence again and completes it
    env.travel_to(second + LEASE + timedelta(seconds=1))
    env.run(remaining_seconds=20)
    # Then the history holds both occurrences once each: the first from the ring, the second (the
    # attempt that completed it) from the task item
    runs = env.editor.runs(task.id).items
    assert [(r.number, r.scheduled_for, r.attempt, r.outcome) for r in runs] == [
        (2, second, 2, "succeeded"),
        (1, first, 1, "succeeded"),
    ]
    assert env.runtime.store.get_task(task.id).run_seq == 2


def test_the_api_serves_the_history_as_documented(env: WorkerEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    from lambdas.api import handler as module
    from lambdas.api.app import build_app
    from tests.support.api import LambdaApi

    monkeypatch.setattr(module, "app", build_app(lambda: env.editor))
    api = LambdaApi(module.handler)
    # Given a recurring task created through the API that ran twice
    task = api.post("/tasks", {"action": "record", "every": "10s"}).json()
    at = env.editor.get(task["id"]).due
    for _ in range(2):
        env.travel_to(at)
        env.run(remaining_seconds=5)
        at = env.editor.get(task["id"]).due
    # When its history is read one run per page
    first = api.get(f"/tasks/{task['id']}/runs?limit=1")
    assert first.status == 200, first.body
    body = first.json()
    # Then the newest run comes first, with a cursor to the other
    assert [run["number"] for run in body["items"]] == [2]
    assert set(body["items"][0]) == {
        "number", "scheduled_for", "run_at", "fired_at", "started_at", "finished_at",
        "attempt", "outcome", "error", "idempotency_key", "lateness_seconds",
    }  # fmt: skip
    assert body["lateness"]["runs"] == 2
    second = api.get(f"/tasks/{task['id']}/runs?limit=1&cursor={body['next_cursor']}").json()
    assert [run["number"] for run in second["items"]] == [1] and second["next_cursor"] is None
    # And bad requests name their field; an unknown task is 404
    assert api.get("/tasks/nope/runs").status == 404
    bad = api.get(f"/tasks/{task['id']}/runs?limit=101")
    assert bad.status == 422 and bad.json()["field"] == "limit"
    bad = api.get(f"/tasks/{task['id']}/runs?cursor=abc")
    assert bad.status == 422 and bad.json()["field"] == "cursor"
