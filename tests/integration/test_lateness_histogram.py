"""The lateness histogram against moto: a worker writes its runs' lateness per UTC minute in
buckets (one UpdateItem per minute, when the invocation ends or once what a pass noted first has
waited LATENESS_FLUSH_SECONDS), concurrent adds sum, a window reads only its minutes, and a failing
histogram write never fails the occurrence."""

from __future__ import annotations

import io
import math
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from nexttick.config import NextTickSettings
from nexttick.store.lateness import LATENESS_EDGES_MS, bucket_of
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv

BUCKETS = len(LATENESS_EDGES_MS)


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4)


def counts(**by_bucket: int) -> list[int]:
    """Bucket counts from `b<i>=n` keywords."""
    full = [0] * BUCKETS
    for name, n in by_bucket.items():
        full[int(name.removeprefix("b"))] = n
    return full


def dynamodb_calls(env: WorkerEnv, operation: str) -> list[dict[str, Any]]:
    """The parameters of every `operation` the store sends from now on (its one shared client)."""
    seen: list[dict[str, Any]] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        seen.append(params)

    client = env.runtime.store.client
    client.meta.events.register(f"before-parameter-build.dynamodb.{operation}", before)
    return seen


def test_a_worker_pass_lands_each_runs_lateness_in_its_bucket_and_minute(env: WorkerEnv) -> None:
    # Given four tasks that the worker will start 5 ms, 300 ms, 3 s and 45 s late, at 09:05:20
    store = env.runtime.store
    start = datetime(2030, 1, 7, 9, 5, 20, tzinfo=UTC)
    late_by = [timedelta(milliseconds=5), timedelta(milliseconds=300), timedelta(seconds=3)]
    late_by.append(timedelta(seconds=45))
    tasks = [env.editor.schedule_at("record", start - late) for late in late_by]
    writes = dynamodb_calls(env, "UpdateItem")
    # When the worker runs at 09:05:20
    env.travel_to(start)
    report = env.run()
    assert report.results["succeeded"] == 4 and all(RECORDER.calls[t.id] for t in tasks)
    # Then the minute 09:05 holds one run in each of their buckets, their count and their sum
    item = store.models.lateness.get("L#2030-01-07T09", "05")
    stored = [int(getattr(item, f"b{i}") or 0) for i in range(BUCKETS)]
    assert stored == counts(b0=1, b5=1, b8=1, b11=1)
    assert [bucket_of(late.total_seconds() * 1000) for late in late_by] == [0, 5, 8, 11]
    assert item.total == 4 and item.sum_ms == pytest.approx(5 + 300 + 3000 + 45000)
    # expiring two days after its minute
    assert item.expires_at == datetime(2030, 1, 9, 9, 5, tzinfo=UTC)
    # written by one UpdateItem for the whole pass
    assert [w["Key"]["pk"]["S"] for w in writes if w["Key"]["pk"]["S"].startswith("L#")] == [
        "L#2030-01-07T09"
    ]

    # When a later pass, in the next minute, runs one more task 1.5 s late
    later = start + timedelta(seconds=50)
    env.editor.schedule_at("record", later - timedelta(milliseconds=1500))
    env.travel_to(later)
    env.run()
    # Then it is counted in 09:06, and 09:05 is as it was
    assert store.models.lateness.get("L#2030-01-07T09", "06").b7 == 1
    assert store.models.lateness.get("L#2030-01-07T09", "05").total == 4
    # And the hour's histogram holds all five
    hour = store.lateness_histogram(datetime(2030, 1, 7, 9, tzinfo=UTC), datetime(2030, 1, 7, 10, tzinfo=UTC))
    assert hour.counts == tuple(counts(b0=1, b5=1, b7=1, b8=1, b11=1)) and hour.total == 5
    assert hour.sum_ms == pytest.approx(49805)
    # with its percentiles and late runs read off the buckets
    assert hour.percentile(50) == 1000 * 2.5  # 3rd of 5: the 1.5 s run, in (1 s, 2.5 s]
    assert hour.percentile(20) == 10 and hour.percentile(99) == 60000
    assert hour.late_over(1) == 3 and hour.late_over(10) == 1
    assert hour.max_bound() == 60000


def test_a_waiter_running_one_task_per_pass_writes_the_histogram_once_per_minute(env: WorkerEnv) -> None:
    # Given five tasks due 3 s apart within one minute: a second-mode waiter passes once for each
    start = datetime(2030, 1, 7, 9, 5, 10, tzinfo=UTC)
    env.travel_to(start - timedelta(seconds=2))
    tasks = [env.editor.schedule_at("record", start + timedelta(seconds=3 * i)) for i in range(5)]
    writes = dynamodb_calls(env, "UpdateItem")
    # When one invocation runs them all, sleeping between them (in less real time than a flush waits)
    report = env.run()
    assert report.results["succeeded"] == 5 and report.passes >= 5
    assert all(len(RECORDER.calls[t.id]) == 1 for t in tasks)
    # Then the minute's histogram was written once, when the invocation ended, with all five runs
    assert [w["Key"]["sk"]["S"] for w in writes if w["Key"]["pk"]["S"].startswith("L#")] == ["05"]
    assert env.runtime.store.models.lateness.get("L#2030-01-07T09", "05").total == 5


def test_a_pass_writes_the_histogram_once_what_it_noted_first_has_waited(
    env: WorkerEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a run noted by a pass, and a flush that waits 10 s (real time) for more to add to it
    store = env.runtime.store
    minute = datetime(2030, 1, 7, 9, 5, tzinfo=UTC)
    clock = [100.0]
    monkeypatch.setattr("nexttick.store.lateness.time.monotonic", lambda: clock[0])
    store.note_lateness(minute, 4.0)
    # When a pass ends 9 s later, Then nothing is written yet
    clock[0] += 9
    store.flush_lateness(10.0)
    assert store.lateness_histogram(minute, minute + timedelta(minutes=1)).total == 0
    # When another run is noted and a pass ends 10 s after the first, Then both are written
    store.note_lateness(minute, 30.0)
    clock[0] += 1
    store.flush_lateness(10.0)
    assert store.lateness_histogram(minute, minute + timedelta(minutes=1)).total == 2
    # And what is noted after that waits its own 10 s, unless the invocation ends (flush at once)
    store.note_lateness(minute, 5.0)
    store.flush_lateness(10.0)
    assert store.lateness_histogram(minute, minute + timedelta(minutes=1)).total == 2
    store.flush_lateness()
    assert store.lateness_histogram(minute, minute + timedelta(minutes=1)).total == 3


def test_a_pass_without_executed_runs_writes_no_histogram(env: WorkerEnv) -> None:
    # Given a task not due yet
    env.editor.schedule_at("record", env.now() + timedelta(hours=1))
    writes = dynamodb_calls(env, "UpdateItem")
    # When the worker runs, Then it writes nothing to the histogram
    env.run()
    assert [w for w in writes if w["Key"]["pk"]["S"].startswith("L#")] == []


def test_concurrent_adds_to_one_minute_sum(env: WorkerEnv) -> None:
    # Given eight invocations adding to the same minute at once, five times each
    store = env.runtime.store
    minute = datetime(2030, 1, 7, 9, 5, tzinfo=UTC)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def invocation(n: int) -> None:
        try:
            barrier.wait()
            for _ in range(5):
                store.add_lateness(minute, counts(b0=1, b7=n), sum_ms=1.5 + 1500.0 * n)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=invocation, args=(n,)) for n in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    # Then every add counted: ADD is atomic, nothing is read and written back
    item = store.models.lateness.get("L#2030-01-07T09", "05")
    assert item.b0 == 40 and item.b7 == 5 * sum(range(1, 9))
    assert item.total == 40 + 5 * 36
    assert item.sum_ms == pytest.approx(5 * (8 * 1.5 + 1500.0 * 36))


def test_a_window_sums_only_the_minutes_inside_it_with_one_query_per_hour(env: WorkerEnv) -> None:
    # Given one run in each of six minutes, each in its own bucket, around 09:00 - 10:00
    store = env.runtime.store
    nine = datetime(2030, 1, 7, 9, tzinfo=UTC)
    minutes = [-1, 0, 30, 59, 60, 61]
    for bucket, offset in enumerate(minutes):
        store.add_lateness(
            nine + timedelta(minutes=offset), counts(**{f"b{bucket}": 1}), sum_ms=float(bucket)
        )
    queries = dynamodb_calls(env, "Query")
    # When the histogram of [09:00, 10:00) is read
    hour = store.lateness_histogram(nine, nine + timedelta(hours=1))
    # Then it holds 09:00, 09:30 and 09:59, not 08:59 nor 10:00
    assert hour.counts == tuple(counts(b1=1, b2=1, b3=1)) and hour.total == 3 and hour.sum_ms == 6
    # read with one eventually consistent Query of the hour's partition
    [query] = queries
    assert query["ExpressionAttributeValues"][":0"] == {"S": "L#2030-01-07T09"}
    assert not query.get("ConsistentRead")

    # When a window spans three hours and starts and ends inside minutes
    queries.clear()
    wide = store.lateness_histogram(nine - timedelta(seconds=90), nine + timedelta(minutes=60, seconds=1))
    # Then the minutes that start inside it count: 08:59 (starts after 08:58:30) to 10:00, not 10:01
    assert wide.counts == tuple(counts(b0=1, b1=1, b2=1, b3=1, b4=1)) and wide.total == 5
    assert len(queries) == 3  # the hours 08, 09 and 10
    # And a minute that starts before the window does not count
    assert store.lateness_histogram(
        nine - timedelta(seconds=30), nine + timedelta(minutes=1)
    ).counts == tuple(counts(b1=1))
    # And an empty window reads nothing
    queries.clear()
    assert store.lateness_histogram(nine, nine).total == 0 and queries == []
    assert store.lateness_histogram(nine, nine).percentile(99) is None


def test_a_failing_histogram_write_does_not_fail_the_occurrence(env: WorkerEnv, logs: io.StringIO) -> None:
    # Given the histogram's UpdateItem fails (throttled, say), and only that write
    refused: list[str] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        pk = params["Key"]["pk"]["S"]
        if pk.startswith("L#"):
            refused.append(pk)
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "injected"}},
                "UpdateItem",
            )

    client = env.runtime.store.client
    client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", before)
    due = env.now() + timedelta(minutes=2)
    task = env.editor.schedule_at("record", due)
    # When the worker runs it 2 s late
    env.travel_to(due + timedelta(seconds=2))
    report = env.run()
    # Then the occurrence succeeded and is recorded as such
    assert report.results["succeeded"] == 1 and len(RECORDER.calls[task.id]) == 1
    record = env.runtime.store.get_task(task.id)
    assert record.status == "succeeded" and record.last_run.outcome == "succeeded"
    # And the histogram write was tried, failed, and said so
    assert refused == ["L#2030-01-07T09"]
    assert "could not add to the lateness histogram" in logs.getvalue()
    assert env.runtime.store.lateness_histogram(due, due + timedelta(hours=1)).total == 0


def test_add_lateness_refuses_a_wrong_number_of_buckets(env: WorkerEnv) -> None:
    minute = datetime(2030, 1, 7, 9, 5, tzinfo=UTC)
    with pytest.raises(ValueError, match="bucket counts"):
        env.runtime.store.add_lateness(minute, [1, 2, 3], sum_ms=1.0)
    assert LATENESS_EDGES_MS[-1] == math.inf


def test_the_api_answers_the_last_hours_histogram(env: WorkerEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    from lambdas.api import handler as module
    from lambdas.api.app import build_app
    from tests.support.api import LambdaApi

    monkeypatch.setattr(module, "app", build_app(lambda: env.editor))
    api = LambdaApi(module.handler)
    # Given two runs, one on time and one 3 s late
    on_time = env.editor.schedule_in("record", 60)
    late = env.editor.schedule_in("record", 60)
    env.travel_to(on_time.due)
    env.runtime.store.note_lateness(on_time.due, 4.0)
    env.runtime.store.note_lateness(late.due, 3000.0)
    env.runtime.store.flush_lateness()
    # When the last hour is read through the API
    body = api.get("/lateness?minutes=60").json()
    # Then it counts both, one over 1 s, with the buckets' edges (the last one unbounded)
    assert (body["runs"], body["late_over_1s"]) == (2, 1)
    assert body["p50_ms"] == 10 and body["max_ms"] == 5000
    assert [b["count"] for b in body["buckets"] if b["count"]] == [1, 1]
    assert body["buckets"][-1]["le_ms"] is None
    bad = api.get("/lateness?minutes=0")
    assert bad.status == 422 and bad.json()["field"] == "minutes"
