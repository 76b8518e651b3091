"""The store's write protocol (I1): no write clobbers a live queue entry, and a repeated request
completes what an interrupted first attempt left undone.

Same-key interleavings are driven deterministically: every AWS call an actor makes (DynamoDB,
EventBridge, Lambda) is a scheduling point, and a script says which actor runs until which call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from editor import ConflictError, TaskSpec
from nexttick.config import NextTickSettings
from tests.support.api import LambdaApi
from tests.support.interleave import Interleaver, Step
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv

_ACTOR_STEP: ContextVar[Step | None] = ContextVar("actor_step", default=None)


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS)


def _clients(runtime: Any) -> dict[str, Any]:
    return {
        "dynamodb": runtime.store.client,
        "events": runtime.rule.client,
        "lambda": getattr(runtime.trigger, "inner", runtime.trigger).client,
    }


def _label(operation: str, params: dict[str, Any]) -> str:
    """`PutItem Q`, `GetItem T`, `UpdateItem RULE`, `PutRule`, ...: the call and the item kind."""
    key = params.get("Item") or params.get("Key") or {}
    kind = key.get("pk", {}).get("S", "").split("#")[0]
    return f"{operation} {kind}".strip()


@pytest.fixture
def scheduling_points(env: WorkerEnv) -> None:
    """Park the calling actor (if any) before each AWS call; calls from other threads run freely.
    The worker's pool threads inherit the actor through the context it copies into them."""

    def park(*, params: dict[str, Any], model: Any, **_: Any) -> None:
        step = _ACTOR_STEP.get()
        if step is not None:
            step(_label(model.name, params))

    for service, client in _clients(env.runtime).items():
        client.meta.events.register(f"provide-client-params.{service}", park)


Phase = tuple[str, Callable[[str], bool] | None]


def run_script(actors: dict[str, Callable[[], Any]], *phases: Phase) -> Interleaver:
    """Run `actors`, one step at a time: each phase lets its actor run until it is about to make a
    call its predicate matches (that call is left for a later phase) or until it finishes."""
    about_to: dict[str, str] = {}
    script = deque(phases)
    missed: list[str] = []  # phases whose actor finished without reaching the call they stop at

    def choose(parked: list[str]) -> str | None:
        while script:
            name, stop = script[0]
            if name in parked and not (stop is not None and stop(about_to[name])):
                return name
            if name not in parked and stop is not None:
                missed.append(name)
            script.popleft()
        return None  # the script is over but an actor still waits: the run is aborted (a test bug)

    def wrap(name: str, body: Callable[[], Any]) -> Callable[[Step], Any]:
        def actor(step: Step) -> Any:
            def recorded(label: str) -> None:
                about_to[name] = label
                step(label)

            _ACTOR_STEP.set(recorded)
            return body()

        return actor

    runner = Interleaver(choose)
    runner.run({name: wrap(name, body) for name, body in actors.items()})
    assert not runner.aborted, f"script ended with actors still waiting: {runner.trace}"
    assert not missed, f"{missed} never reached the call their phase stops at: {runner.trace}"
    return runner


def before(label: str) -> Callable[[str], bool]:
    return lambda about: about == label


def assert_live_and_runs(env: WorkerEnv, task_id: str) -> None:
    """The task has exactly its one live entry: it is listed, and the worker runs it when due."""
    record = env.runtime.store.get_task(task_id)
    assert record.status == "pending"
    assert [e.token for e in env.entries_of(task_id)] == [record.queue_token]
    assert task_id in [t.id for t in env.editor.list().items]
    runs_before = len(RECORDER.calls[task_id])
    env.travel_to(record.due)
    env.run(remaining_seconds=30)
    assert len(RECORDER.calls[task_id]) == runs_before + 1
    [*_, last] = RECORDER.calls[task_id]
    assert last.envelope["scheduled_for"] == record.due.isoformat().replace("+00:00", "Z")


# ---------------------------------------------------------------- same-key entries


def test_two_concurrent_creates_with_one_client_id_and_one_due_keep_a_live_entry(
    env: WorkerEnv, scheduling_points: None
) -> None:
    # Given two identical creates with one client id and one due time (a client retrying early)
    due = env.now() + timedelta(hours=1)
    spec = TaskSpec(action="record", due=due, id="dup-1")
    # When both write their queue entry before either writes the task; the first then commits the
    # task, and the second finds the id taken and removes its own entry
    runner = run_script(
        {"first": lambda: env.editor.create(spec), "second": lambda: env.editor.create(spec)},
        ("first", before("PutItem T")),
        ("second", before("PutItem T")),
        ("first", None),
        ("second", None),
    )
    # Then both answer with the one task
    assert not runner.errors, runner.errors
    assert (runner.results["first"].created, runner.results["second"].created) == (True, False)
    # And the task still has its live entry: listed, and the worker runs it
    assert_live_and_runs(env, "dup-1")


def test_a_cron_rescheduled_to_the_same_cron_during_its_own_run_keeps_a_live_entry(
    env: WorkerEnv, scheduling_points: None
) -> None:
    # Given an hourly task whose 10:00 occurrence the worker is running
    task = env.editor.schedule_cron("record", "0 * * * *")
    env.travel_to(task.due)
    # When the editor reschedules it to the same cron (next: 11:00) just before the worker writes
    # the 11:00 entry of its own completion; the worker's write then loses the version race
    runner = run_script(
        {
            "worker": lambda: env.worker(remaining_seconds=300).run(),
            "editor": lambda: env.editor.reschedule(task.id, cron="0 * * * *"),
        },
        ("worker", before("PutItem Q")),
        ("editor", None),
        ("worker", None),
    )
    assert not runner.errors, runner.errors
    # Then the run is recorded and the task is at 11:00, the editor's version
    record = env.runtime.store.get_task(task.id)
    assert (record.runs, record.due) == (1, task.due + timedelta(hours=1))
    # And it still has its live entry: listed, and the worker runs the 11:00 occurrence
    assert_live_and_runs(env, task.id)


@pytest.mark.parametrize(
    ("task_id", "task_write"),
    [(None, "UpdateItem Q"), ("given-id", "PutItem T")],
    ids=["home-item", "client-id"],
)
def test_a_same_due_reschedule_racing_an_update_keeps_a_live_entry(
    env: WorkerEnv, scheduling_points: None, task_id: str | None, task_write: str
) -> None:
    # Given a pending one-shot task at version 1 (its task write: into its home item, or its T# item)
    due = env.now() + timedelta(hours=1)
    task = env.editor.schedule_at("record", due, {"v": 1}, id=task_id)
    # When a reschedule to the same due time (If-Match: 1) writes its entry, a payload update
    # commits version 2, and then the reschedule's task write loses the version race
    run_script(
        {
            "reschedule": lambda: env.editor.reschedule(task.id, due=due, expected_version=1),
            "update": lambda: env.editor.update(task.id, payload={"v": 2}),
        },
        ("reschedule", before(task_write)),
        ("update", None),
        ("reschedule", None),
    )
    # Then the update holds
    record = env.runtime.store.get_task(task.id)
    assert (record.version, record.payload, record.due) == (2, {"v": 2}, due)
    # And the task still has its live entry: listed, and the worker runs it
    assert_live_and_runs(env, task.id)


# ---------------------------------------------------------------- retries repair


@pytest.fixture
def fail_once(env: WorkerEnv) -> Iterator[Callable[[str, str], list[str]]]:
    """`fail_once(service, operation)`: the next such call raises as AWS would (the API answers 503);
    returns the list the failure is recorded in."""
    clients = _clients(env.runtime)
    registered: list[tuple[Any, str, Any]] = []

    def arm(service: str, operation: str) -> list[str]:
        failed: list[str] = []

        def fail(**_: Any) -> None:
            if not failed:
                failed.append(operation)
                raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "injected"}}, operation)

        event = f"before-call.{service}.{operation}"
        clients[service].meta.events.register(event, fail)
        registered.append((clients[service], event, fail))
        return failed

    yield arm
    for client, event, handler in registered:
        client.meta.events.unregister(event, handler)


def test_a_create_repeated_after_its_worker_invoke_failed_invokes_the_worker(
    env: WorkerEnv, api: LambdaApi, fail_once: Callable[[str, str], list[str]]
) -> None:
    # Given a create due in 30 s (too close to arm: the worker is invoked directly) whose invoke fails
    failed = fail_once("lambda", "Invoke")
    body = {"action": "record", "delay_seconds": 30, "id": "soon-1"}
    first = api.post("/tasks", body)
    assert (first.status, failed) == (503, ["Invoke"])
    assert env.runtime.store.get_task("soon-1") is not None  # the task was written before the failure
    assert env.runtime.trigger.reasons == []
    # When the client repeats the create with the same id
    again = api.post("/tasks", body)
    # Then it is the existing task, and this time the worker is invoked
    assert again.status == 200 and again.json()["id"] == "soon-1"
    assert env.runtime.trigger.reasons == ["due too soon to arm"]
    assert_live_and_runs(env, "soon-1")


def test_a_reschedule_repeated_with_its_if_match_after_a_failure_completes(
    env: WorkerEnv, api: LambdaApi, fail_once: Callable[[str, str], list[str]]
) -> None:
    # Given a pending task, rescheduled (If-Match: 1) to 30 s from now, and that invoke fails
    task = env.editor.schedule_in("record", 7200)
    failed = fail_once("lambda", "Invoke")
    due = (env.now() + timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    first = api.patch(f"/tasks/{task.id}", {"due": due}, headers={"If-Match": "1"})
    assert (first.status, failed) == (503, ["Invoke"])
    assert env.runtime.store.get_task(task.id).version == 2  # committed before the failure
    # When the client repeats the same request with the same If-Match
    again = api.patch(f"/tasks/{task.id}", {"due": due}, headers={"If-Match": "1"})
    # Then it answers with the task as the first attempt left it, and invokes the worker this time
    assert again.status == 200, again.body
    assert (again.json()["version"], again.json()["due"]) == (2, due)
    assert env.runtime.trigger.reasons == ["due too soon to arm"]
    assert_live_and_runs(env, task.id)


def test_a_stale_if_match_that_is_not_a_repeat_still_fails(env: WorkerEnv, api: LambdaApi) -> None:
    # Given a task changed twice since version 1
    task = env.editor.schedule_in("record", 7200)
    env.editor.update(task.id, payload={"v": 2})
    env.editor.update(task.id, payload={"v": 3})
    # When a change naming version 1 arrives (the task is not in the state it asks for)
    response = api.patch(f"/tasks/{task.id}", {"payload": {"v": 4}}, headers={"If-Match": "1"})
    # Then it is refused, and nothing changed
    assert response.status == 412
    assert env.runtime.store.get_task(task.id).payload == {"v": 3}


def test_a_cancel_repeated_after_its_entry_delete_failed_removes_the_entry(
    env: WorkerEnv, api: LambdaApi, fail_once: Callable[[str, str], list[str]]
) -> None:
    # Given a pending task whose cancel commits the task and then fails to delete its queue entry
    # (a client id's: a home item's entry ends in the task write itself)
    task = env.editor.schedule_in("record", 7200, id="cancel-me")
    failed = fail_once("dynamodb", "DeleteItem")
    first = api.delete(f"/tasks/{task.id}")
    assert (first.status, failed) == (503, ["DeleteItem"])
    assert env.runtime.store.get_task(task.id).status == "cancelled"
    assert len(env.entries_of(task.id)) == 1
    # When the client repeats the cancel
    again = api.delete(f"/tasks/{task.id}")
    # Then it succeeds like the first one should have, and the entry is gone
    assert again.status == 204
    assert env.entries_of(task.id) == []
    assert api.get(f"/tasks/{task.id}").json()["status"] == "cancelled"


# ---------------------------------------------------------------- keys from before the token


def _to_old_key_format(env: WorkerEnv, task_id: str) -> str:
    """Rewrite a task's entry under the key `<instant>#<id>` (as saved local-stack state holds)."""
    [entry] = env.entries_of(task_id)
    old_key = entry.key.rsplit("#", 1)[0]
    client = _clients(env.runtime)["dynamodb"]
    table = env.runtime.settings.table_name
    queue_pk = {"S": f"Q#{entry.shard:03d}"}
    item = client.get_item(TableName=table, Key={"pk": queue_pk, "sk": {"S": entry.key}})["Item"]
    client.put_item(TableName=table, Item={**item, "sk": {"S": old_key}})
    client.delete_item(TableName=table, Key={"pk": queue_pk, "sk": {"S": entry.key}})
    client.update_item(
        TableName=table,
        Key={"pk": {"S": f"T#{task_id}"}, "sk": {"S": "T"}},
        UpdateExpression="SET queue_key = :k",
        ExpressionAttributeValues={":k": {"S": old_key}},
    )
    return old_key


def test_entries_in_the_old_key_format_are_listed_changed_and_run(env: WorkerEnv) -> None:
    # Given two tasks whose entries have keys `<instant>#<id>`, without the token (client ids: saved
    # state from before the token holds no home items)
    run = env.editor.schedule_in("record", 600, id="old-run")
    move = env.editor.schedule_in("record", 900, id="old-move")
    old_keys = {t.id: _to_old_key_format(env, t.id) for t in (run, move)}
    for t in (run, move):
        [old] = env.entries_of(t.id)
        assert (old.key, old.run_at, old.task_id) == (old_keys[t.id], t.due, t.id)
    # Then they are listed and read as before
    assert [t.id for t in env.editor.list().items] == [run.id, move.id]
    assert env.editor.get(run.id).due == run.due
    # And a reschedule replaces the old entry by one in the new format
    moved = env.editor.reschedule(move.id, delay_seconds=3600)
    [new] = env.entries_of(move.id)
    assert new.key.endswith(f"#{move.id}#{new.token}") and new.run_at == moved.due
    # And the worker runs the other one and removes its entry
    env.travel_to(run.due)
    env.run(remaining_seconds=30)
    assert len(RECORDER.calls[run.id]) == 1
    assert env.runtime.store.get_task(run.id).status == "succeeded" and env.entries_of(run.id) == []


def test_cancelling_a_finished_task_still_conflicts(env: WorkerEnv) -> None:
    # Given a one-shot task that ran
    task = env.editor.schedule_in("record", 60)
    env.travel_to(task.due)
    env.run(remaining_seconds=30)
    assert env.editor.get(task.id).status == "succeeded"
    # When it is cancelled, Then that is a conflict naming its status (only a cancel repeats)
    with pytest.raises(ConflictError) as caught:
        env.editor.cancel(task.id)
    assert caught.value.field == "status"
