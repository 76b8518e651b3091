"""Helpers for local-stack integration tests: a moto server over HTTP, a controllable clock, and a
recording in-process "worker" behind the local Lambda Invoke endpoint."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import boto3
import requests

from local.lambdas import InvokeEndpoint, LocalFunction
from local.motoserver import MotoServer


class SettableClock:
    """A clock the test moves by hand (the emulator only reads `now`)."""

    def __init__(self, now: datetime) -> None:
        self.current = now

    def now(self) -> datetime:
        return self.current

    def sleep(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


@dataclass
class Recorder:
    """A handler that records its invocations (event, remaining ms) and can be told to fail."""

    fail_times: int = 0
    calls: list[tuple[dict[str, Any], int]] = field(default_factory=list)
    called: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        with self.called:
            self.calls.append((event, context.get_remaining_time_in_millis()))
            self.called.notify_all()
            if len(self.calls) <= self.fail_times:
                raise RuntimeError("boom")
        return {"ok": True, "echo": event}

    def wait_for(self, count: int, timeout: float = 10.0) -> bool:
        with self.called:
            return self.called.wait_for(lambda: len(self.calls) >= count, timeout)


@contextmanager
def moto_server() -> Iterator[MotoServer]:
    server = MotoServer().start()
    # moto's backends are per process: start from nothing whatever ran in this process before.
    requests.post(f"{server.url}/moto-api/reset", timeout=10).raise_for_status()
    try:
        yield server
    finally:
        server.stop()


def client(service: str, server: MotoServer) -> Any:
    return boto3.session.Session(region_name="us-east-1").client(service, endpoint_url=server.url)  # type: ignore[call-overload]


@contextmanager
def local_worker(
    name: str = "nexttick-worker", *, fail_times: int = 0, retry_delays: tuple[float, ...] = (0.05, 0.05)
) -> Iterator[tuple[InvokeEndpoint, LocalFunction, Recorder]]:
    recorder = Recorder(fail_times=fail_times)
    function = LocalFunction(
        name, recorder, timeout_seconds=300, region="us-east-1", concurrency=2, retry_delays=retry_delays
    )
    endpoint = InvokeEndpoint([function]).start()
    try:
        yield endpoint, function, recorder
    finally:
        endpoint.stop()
        function.stop(grace=1)


def create_table_and_rule(server: MotoServer, table: str, rule: str) -> None:
    """The table (keys, TTL) and the rule at the epoch, quickly (the stack itself deploys the CDK
    template; integration tests of its parts do not need the whole template)."""
    from nexttick.constants import EPOCH_EXPRESSION
    from tests.support.aws import create_keyed_table

    create_keyed_table(client("dynamodb", server), table)
    client("events", server).put_rule(Name=rule, ScheduleExpression=EPOCH_EXPRESSION, State="ENABLED")
