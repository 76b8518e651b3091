"""DST policy per schedule, jitter, upcoming runs and dry-run creates, through the editor, the API
and a real worker (moto in-process, a travelling clock)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nexttick.config import NextTickSettings
from tests.support.api import LambdaApi
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4, lease_seconds=60)


@pytest.fixture
def api(env: WorkerEnv, monkeypatch: pytest.MonkeyPatch) -> LambdaApi:
    from lambdas.api import handler as module
    from lambdas.api.app import build_app

    monkeypatch.setattr(module, "app", build_app(lambda: env.editor))
    return LambdaApi(module.handler)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_shift_runs_a_wall_time_in_the_spring_gap_after_it_and_upcoming_says_so(
    env: WorkerEnv, api: LambdaApi
) -> None:
    # Given, the day before Berlin springs forward, a 02:30 cron with each gap policy
    env.travel_to(utc(2030, 3, 30, 12))
    shift = api.post(
        "/tasks",
        {"action": "record", "cron": "30 2 * * *", "timezone": "Europe/Berlin", "dst_skipped": "shift"},
    ).json()
    skip = api.post("/tasks", {"action": "record", "cron": "30 2 * * *", "timezone": "Europe/Berlin"}).json()
    assert (shift["dst_skipped"], shift["dst_repeated"], skip["dst_skipped"]) == ("shift", "first", "skip")
    # When their upcoming runs are read
    shifted = api.get(f"/tasks/{shift['id']}/upcoming?count=2").json()
    skipped = api.get(f"/tasks/{skip['id']}/upcoming?count=2").json()
    # Then `shift` runs 02:30 as 03:30 CEST (01:30 UTC) on the gap day, marked; `skip` goes on to
    # the next day and lists the skipped wall time
    assert shifted["timezone"] == "Europe/Berlin"
    first = shifted["items"][0]
    assert (first["scheduled_for"], first["dst"]) == ("2030-03-31T01:30:00Z", "shifted")
    assert first["local"] == "2030-03-31T03:30:00+02:00"
    assert skipped["items"][0]["scheduled_for"] == "2030-04-01T00:30:00Z"
    assert skipped["items"][0]["skipped"] == ["2030-03-31T02:30:00"] and skipped["items"][0]["dst"] is None
    # And a worker runs the shifted occurrence at that instant
    env.travel_to(utc(2030, 3, 31, 1, 30))
    env.run(remaining_seconds=20)
    (run,) = env.editor.runs(shift["id"]).items
    assert run.scheduled_for == utc(2030, 3, 31, 1, 30) and run.outcome == "succeeded"
    assert env.editor.get(skip["id"]).due == utc(2030, 4, 1, 0, 30)


def test_both_runs_a_repeated_wall_time_twice_in_the_autumn_fold(env: WorkerEnv, api: LambdaApi) -> None:
    # Given a 01:30 New York cron that runs both passes of the repeated hour
    env.travel_to(utc(2030, 11, 2, 12))
    task = api.post(
        "/tasks",
        {"action": "record", "cron": "30 1 * * *", "timezone": "America/New_York", "dst_repeated": "both"},
    ).json()
    upcoming = api.get(f"/tasks/{task['id']}/upcoming?count=3").json()["items"]
    assert [(u["scheduled_for"], u["dst"]) for u in upcoming] == [
        ("2030-11-03T05:30:00Z", "repeated-first"),
        ("2030-11-03T06:30:00Z", "repeated-second"),
        ("2030-11-04T06:30:00Z", None),
    ]
    assert [u["local"] for u in upcoming[:2]] == ["2030-11-03T01:30:00-04:00", "2030-11-03T01:30:00-05:00"]
    # When workers run at each pass
    for at in (utc(2030, 11, 3, 5, 30), utc(2030, 11, 3, 6, 30)):
        env.travel_to(at)
        env.run(remaining_seconds=20)
    # Then both ran, each with its own idempotency key, and the next is the day after
    runs = env.editor.runs(task["id"]).items
    assert [r.scheduled_for for r in runs] == [utc(2030, 11, 3, 6, 30), utc(2030, 11, 3, 5, 30)]
    assert len({r.idempotency_key for r in runs}) == 2
    assert env.editor.get(task["id"]).due == utc(2030, 11, 4, 6, 30)


def test_jitter_delays_each_occurrence_deterministically_and_never_runs_early(
    env: WorkerEnv, api: LambdaApi
) -> None:
    # Given a task every minute with up to 30 s of jitter
    task = api.post("/tasks", {"action": "record", "every": "60s", "jitter_seconds": 30}).json()
    upcoming = api.get(f"/tasks/{task['id']}/upcoming?count=3").json()["items"]
    starts = [datetime.fromisoformat(u["run_at"]) for u in upcoming]
    offsets = [
        (s - datetime.fromisoformat(u["scheduled_for"])).total_seconds()
        for s, u in zip(starts, upcoming, strict=True)
    ]
    assert all(0 <= o < 30 for o in offsets) and len(set(offsets)) == 3  # spread, never early
    assert api.get(f"/tasks/{task['id']}/upcoming?count=3").json()["items"] == upcoming  # deterministic
    # When a worker runs at the scheduled time, then at the jittered start
    first = datetime.fromisoformat(upcoming[0]["scheduled_for"])
    env.travel_to(first)
    env.worker(remaining_seconds=0.2).run()
    ran_before = list(RECORDER.calls[task["id"]])
    env.travel_to(starts[0])
    env.run(remaining_seconds=20)
    # Then nothing ran before the jittered start, and its lateness counts from that start
    assert ran_before == [] or ran_before[0].at >= starts[0]
    (run,) = env.editor.runs(task["id"]).items
    assert run.run_at == starts[0] and run.started_at >= starts[0] and run.scheduled_for == first
    assert run.idempotency_key == f"{task['id']}:{upcoming[0]['scheduled_for']}"


def test_a_dry_run_validates_and_previews_without_writing(env: WorkerEnv, api: LambdaApi) -> None:
    body = {"action": "record", "cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "id": "preview-me"}
    # When a create is dry-run
    response = api.post("/tasks?dry_run=true", body)
    # Then it answers the task as it would be and five occurrences, and nothing was written
    assert response.status == 200, response.body
    preview = response.json()
    assert preview["task"]["id"] == "preview-me" and preview["task"]["status"] == "pending"
    assert len(preview["upcoming"]) == 5
    assert preview["upcoming"][0]["scheduled_for"] == preview["task"]["due"]
    assert api.get("/tasks/preview-me").status == 404
    assert api.get("/tasks").json()["items"] == []
    # And an invalid body is refused exactly as a create would be
    bad = api.post("/tasks?dry_run=true", {**body, "cron": "61 * * * *"})
    assert bad.status == 422 and bad.json()["field"] == "cron"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"every": "1h", "dst_skipped": "shift"}, "dst_skipped"),
        ({"delay_seconds": 60, "dst_repeated": "both"}, "dst_repeated"),
        ({"cron": "0 9 * * *", "dst_skipped": "later"}, "dst_skipped"),
        ({"cron": "0 9 * * *", "dst_repeated": "twice"}, "dst_repeated"),
        ({"every": "1h", "jitter_seconds": 3601}, "jitter_seconds"),
        ({"every": "1h", "jitter_seconds": -1}, "jitter_seconds"),
    ],
)
def test_bad_policies_are_422_naming_the_field_and_write_nothing(
    api: LambdaApi, body: dict[str, Any], field: str
) -> None:
    response = api.post("/tasks", {"action": "record", **body})
    assert response.status == 422 and response.json()["field"] == field
    assert api.get("/tasks").json()["items"] == []


def test_policies_change_with_patch_and_only_on_cron(env: WorkerEnv, api: LambdaApi) -> None:
    env.travel_to(utc(2030, 11, 2, 12))
    cron = api.post(
        "/tasks", {"action": "record", "cron": "30 1 * * *", "timezone": "America/New_York"}
    ).json()
    every = api.post("/tasks", {"action": "record", "every": "1h"}).json()
    # When the cron task's fold policy is patched to `last`
    patched = api.patch(f"/tasks/{cron['id']}", {"dst_repeated": "last"}, headers={"If-Match": '"1"'})
    assert patched.status == 200, patched.body
    # Then its next occurrence is the second pass, and its zone and expression are kept
    assert (
        patched.json()["due"] == "2030-11-03T06:30:00Z" and patched.json()["timezone"] == "America/New_York"
    )
    assert api.get(f"/tasks/{cron['id']}/upcoming?count=1").json()["items"][0]["dst"] == "repeated-second"
    # And a DST policy on an interval task is refused, naming the field
    refused = api.patch(f"/tasks/{every['id']}", {"dst_skipped": "shift"})
    assert refused.status == 422 and refused.json()["field"] == "dst_skipped"
    # And jitter can be set and cleared
    jittered = api.patch(f"/tasks/{every['id']}", {"jitter_seconds": 10}).json()
    assert jittered["jitter_seconds"] == 10 and jittered["next_attempt_at"] is not None
    cleared = api.patch(f"/tasks/{every['id']}", {"jitter_seconds": None}).json()
    assert cleared["jitter_seconds"] is None and cleared["next_attempt_at"] is None


def test_upcoming_of_finished_unknown_and_bad_counts(env: WorkerEnv, api: LambdaApi) -> None:
    task = api.post("/tasks", {"action": "record", "delay_seconds": 60}).json()
    items = api.get(f"/tasks/{task['id']}/upcoming").json()["items"]
    assert [u["scheduled_for"] for u in items] == [task["due"]]
    api.delete(f"/tasks/{task['id']}")
    assert api.get(f"/tasks/{task['id']}/upcoming").json()["items"] == []
    assert api.get("/tasks/nope/upcoming").status == 404
    for count in (0, 101):
        bad = api.get(f"/tasks/{task['id']}/upcoming?count={count}")
        assert bad.status == 422 and bad.json()["field"] == "count"
