"""The handlers' log lines: each carries its own function's Lambda context, also while the worker
and the API run in threads of one process (the local stack); the log action shows its payload; a
worker run and an API request in the local stack's human format."""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from lambdas.worker import handler as worker_handler
from local.logs import human_format
from nexttick.config import NextTickSettings
from nexttick.observability import logger
from tests.support.api import LambdaApi
from tests.support.worker import ACTIONS, FakeContext, WorkerEnv

SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
WORKER_MESSAGES = {"worker invoked", "task delivered", "occurrence finished", "worker run finished"}
TIME = r"\d\d:\d\d:\d\d\.\d{3}"

HOLDING = threading.Event()
API_ANSWERED = threading.Event()


def hold_until_the_api_answered(envelope: dict[str, Any]) -> None:
    """A python action: its delivery (on the worker's pool) waits until the API has answered."""
    HOLDING.set()
    if not API_ANSWERED.wait(30):
        raise TimeoutError("the API did not answer")


@pytest.fixture
def settings() -> NextTickSettings:
    hold = {"type": "python", "target": f"{__name__}:hold_until_the_api_answered", "timeout_seconds": 60}
    return NextTickSettings(queue_shards=4, actions_config={**ACTIONS, "hold": hold}, pool_size=4)


@pytest.fixture
def env(env: WorkerEnv, monkeypatch: pytest.MonkeyPatch) -> WorkerEnv:
    """The worker Lambda handler serves this environment's runtime and registry."""
    monkeypatch.setattr(worker_handler, "_deps", (env.runtime, env.registry))
    HOLDING.clear()
    API_ANSWERED.clear()
    return env


@pytest.fixture
def human_logs(logs: io.StringIO) -> Iterator[io.StringIO]:
    """The same, written as `nexttick local` prints it by default."""
    handler = logger.registered_handler
    formatter, filters = handler.formatter, list(handler.filters)
    human_format(handler)
    yield logs
    handler.setFormatter(formatter)
    handler.filters = filters


def worker_context(env: WorkerEnv) -> FakeContext:
    return FakeContext(env.clock, remaining_seconds=120)


def json_lines(logs: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in logs.getvalue().splitlines()]


def test_worker_and_api_lines_carry_their_own_function_while_both_run(
    env: WorkerEnv, api: LambdaApi, logs: io.StringIO
) -> None:
    # Given two due tasks, one of which holds its delivery until the API has answered a request
    due = env.now() + timedelta(minutes=1)
    env.editor.schedule_at("hold", due)
    env.editor.schedule_at("log", due, {"hello": "world"})
    env.travel_to(due + timedelta(seconds=1))
    context = worker_context(env)
    # When the worker runs in one thread and the API answers a request in another meanwhile
    with ThreadPoolExecutor(max_workers=2) as pool:
        worker = pool.submit(worker_handler.handler, SCHEDULED, context)
        assert HOLDING.wait(30)
        answered = pool.submit(api.post, "/tasks", {"action": "log", "delay_seconds": 3600})
        assert answered.result(30).status == 201
        API_ANSWERED.set()
        assert worker.result(60)["succeeded"] == 2
    # Then each line names the function that logged it, with that invocation's request id
    lines = json_lines(logs)
    [api_line] = [line for line in lines if line["message"] == "api request"]
    assert api_line["function_name"] == "nexttick-api" and api_line["correlation_id"]
    worker_lines = [line for line in lines if line["message"] in WORKER_MESSAGES]
    assert {line["message"] for line in worker_lines} == WORKER_MESSAGES
    assert {(line["function_name"], line["function_request_id"]) for line in worker_lines} == {
        ("nexttick-worker", context.aws_request_id)
    }, worker_lines
    assert not [line for line in worker_lines if "correlation_id" in line]


def test_the_log_action_logs_the_payload_it_delivers(env: WorkerEnv, logs: io.StringIO) -> None:
    # Given a due task of the log action with a payload
    due = env.now() + timedelta(minutes=1)
    task = env.editor.schedule_at("log", due, {"hello": "world"})
    env.travel_to(due)
    # When the worker delivers it
    assert worker_handler.handler(SCHEDULED, worker_context(env))["succeeded"] == 1
    # Then its line shows the delivery, payload included
    [delivered] = [line for line in json_lines(logs) if line["message"] == "task delivered"]
    assert delivered["delivery"]["task_id"] == task.id
    assert delivered["delivery"]["payload"] == {"hello": "world"}


def test_a_worker_run_and_an_api_request_read_as_one_line_per_event(
    env: WorkerEnv, api: LambdaApi, human_logs: io.StringIO
) -> None:
    # Given a log task and a python-action task, both due two seconds ago
    due = env.now() + timedelta(minutes=1)
    logged = env.editor.schedule_at("log", due, {"hello": "world"})
    recorded = env.editor.schedule_at("record", due)
    env.travel_to(due + timedelta(seconds=2))
    # When the worker runs, and then the API answers a request
    assert worker_handler.handler(SCHEDULED, worker_context(env))["succeeded"] == 2
    assert api.post("/tasks", {"action": "log", "delay_seconds": 3600}).status == 201
    # Then each event is one line: the log delivery with its payload, the other occurrence's result
    lines = human_logs.getvalue().splitlines()
    assert re.fullmatch(rf"{TIME} worker invoked: scheduled", lines[0])
    assert sorted(line[13:] for line in lines[1:3]) == sorted(
        [
            f'delivered {logged.id} (log) +2000 ms  {{"hello": "world"}}',
            f"succeeded {recorded.id} (record) +2000 ms",
        ]
    )
    assert re.fullmatch(rf"{TIME} worker finished: \w+  passes=\d+ waited_seconds=0\.0 succeeded=2", lines[3])
    assert re.fullmatch(rf"{TIME} api POST /tasks 201 \d+ ms", lines[4])
    assert len(lines) == 5
