"""Fixture chain: fake credentials -> mock_aws -> resources -> runtime/editor (Given ...)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import coverage
import pytest
import time_machine
from moto import mock_aws

from editor import Editor
from local.botocore_data import share_botocore_data
from local.motopatches import answer_long_polls_on_time, lighten_dynamodb, route_without_listing_moto
from local.resources import create_resources
from nexttick.config import NextTickSettings
from nexttick.worker import drain
from tests.support.aws import FAKE_AWS_ENV, RecordedRuntime


def pytest_configure(config: pytest.Config) -> None:
    """In-process moto is the emulator the local stack and the bench run (local/motopatches.py; its
    answers are held equal to moto's own by tests/integration/test_motopatches*.py): moto's generic
    serializer alone took a third of the fault sweeps' time. Sessions share botocore's parsed data
    (local/botocore_data.py: 12.1 -> 8.0 CPU-minutes for the integration suite)."""
    share_botocore_data()
    lighten_dynamodb()
    route_without_listing_moto()
    answer_long_polls_on_time()


@pytest.fixture(autouse=True)
def worker_claims_resumed() -> Iterator[None]:
    """A test that leaves this process's worker invocations stopped (`nexttick.worker.drain`, which a
    local stack's stop sets) errors here, not in whichever worker test runs next in the process."""
    yield
    if drain.stopping():
        drain.resume()
        pytest.fail("the test left this process's worker invocations stopped (nexttick.worker.drain)")


TESTS = Path(__file__).parent
SUITE_VARIABLE = "TEST_SUITE"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under `make coverage`, what each test runs is counted for its suite (unit, integration,
    infrastructure, e2e): in this process, as its coverage context; in the Python processes the test
    starts, through coverage's start-up hook reading pyproject.toml there, where the context is the
    suite this variable names (coverage's own hand-over would pass this process's start-up context)."""
    measuring = coverage.Coverage.current()
    if measuring is None:
        return
    suite = item.path.relative_to(TESTS).parts[0]
    measuring.switch_context(suite)
    os.environ.update(
        {
            SUITE_VARIABLE: suite,
            "COVERAGE_PROCESS_START": str(TESTS.parent / "pyproject.toml"),
            "COVERAGE_FILE": str(Path(str(measuring.get_option("run:data_file"))).resolve()),
        }
    )


TEST_ACTIONS = {"log": {"type": "log"}, "hook": {"type": "webhook", "url": "http://127.0.0.1:9/hook"}}


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    for name in [n for n in os.environ if n.startswith("NEXTTICK_")]:
        monkeypatch.delenv(name)


@pytest.fixture
def aws(aws_credentials: None) -> Iterator[None]:
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=TEST_ACTIONS)


@pytest.fixture
def resources(aws: None, settings: NextTickSettings) -> NextTickSettings:
    create_resources(settings)
    return settings


@pytest.fixture
def frozen_now() -> Iterator[time_machine.Traveller]:
    """A controllable clock, starting mid-minute so minute-boundary logic is exercised."""
    with time_machine.travel(datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC), tick=False) as traveller:
        yield traveller


@pytest.fixture
def runtime(resources: NextTickSettings) -> RecordedRuntime:
    return RecordedRuntime.recording(resources)


@pytest.fixture
def editor(runtime: RecordedRuntime) -> Editor:
    return Editor(runtime=runtime)
