"""Integration fixtures (moto in-process; the chain itself lives in tests/conftest.py)."""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Iterator

import pytest
import time_machine
from moto import mock_aws

from editor import Editor
from tests.support.api import LambdaApi
from tests.support.aws import FAKE_AWS_ENV, RecordedRuntime
from tests.support.worker import WorkerEnv, make_env, make_moto_atomic


@pytest.fixture
def env(
    frozen_now: time_machine.Traveller, runtime: RecordedRuntime, monkeypatch: pytest.MonkeyPatch
) -> WorkerEnv:
    """A worker over moto (transactions made atomic) on the frozen clock, with its editor."""
    make_moto_atomic(monkeypatch)
    return make_env(runtime, frozen_now)


@pytest.fixture
def api(editor: Editor, monkeypatch: pytest.MonkeyPatch) -> LambdaApi:
    """The API Lambda handler, its editor injected (moto-backed), called with REST proxy events."""
    from lambdas.api import handler as module
    from lambdas.api.app import build_app

    monkeypatch.setattr(module, "app", build_app(lambda: editor))
    return LambdaApi(module.handler)


@pytest.fixture(scope="module")
def shared_api() -> Iterator[LambdaApi]:
    """One moto account for a whole module, for tests that only read or add uniquely named tasks
    (building the fixture chain per test costs seconds). Do not mix it with the function-scoped
    chain (`aws`, `editor`, `api`) in one module: moto state would be shared between them."""
    from editor import Editor
    from lambdas.api import handler as module
    from lambdas.api.app import build_app
    from local.resources import create_resources
    from nexttick.config import NextTickSettings
    from nexttick.runtime import Runtime
    from tests.conftest import TEST_ACTIONS

    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("NEXTTICK_")]:
            patch.delenv(name)
        for name, value in FAKE_AWS_ENV.items():
            patch.setenv(name, value)
        with mock_aws(config={"lambda": {"use_docker": False}}):
            settings = NextTickSettings(queue_shards=4, actions_config=TEST_ACTIONS)
            create_resources(settings)
            editor = Editor(runtime=Runtime.build(settings))
            patch.setattr(module, "app", build_app(lambda: editor))
            yield LambdaApi(module.handler)


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """What the Powertools logger writes (its handler keeps the stream it was created with, so
    pytest's output capture does not see it)."""
    from nexttick.observability import logger

    buffer = io.StringIO()
    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    previous = handler.setStream(buffer)
    yield buffer
    handler.setStream(previous)
