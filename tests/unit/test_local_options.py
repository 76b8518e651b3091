"""Local stack options and the handlers' environment (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from local.emulator import FiringPolicy
from local.options import LocalOptions, handler_environment

NAMES = {"table": "t", "rule": "r", "worker_function": "w"}


def test_flags_win_over_the_environment() -> None:
    env = {"NEXTTICK_PORT": "9001", "NEXTTICK_EMULATOR_JITTER": "0", "NEXTTICK_STATE_DIR": "/x"}
    options = LocalOptions.from_env(env, api_port=9002)
    assert options.api_port == 9002 and options.jitter is False and options.state_dir == Path("/x")
    assert LocalOptions.from_env({}).api_port == 8000


def test_bad_numbers_are_refused_by_name() -> None:
    with pytest.raises(SystemExit, match="NEXTTICK_PORT"):
        LocalOptions.from_env({"NEXTTICK_PORT": "eighty"})
    with pytest.raises(SystemExit, match="NEXTTICK_STOP_GRACE"):
        LocalOptions.from_env({"NEXTTICK_STOP_GRACE": "-1"})


def test_the_stop_grace_comes_from_the_environment_or_the_flag() -> None:
    assert LocalOptions.from_env({}).stop_grace == 5.0
    assert LocalOptions.from_env({"NEXTTICK_STOP_GRACE": "30"}).stop_grace == 30.0
    assert LocalOptions.from_env({"NEXTTICK_STOP_GRACE": "30"}, stop_grace=0.5).stop_grace == 0.5


def test_handlers_get_the_functions_environment_then_the_users_then_the_emulators() -> None:
    function_env = {
        "NEXTTICK_POOL_SIZE": "32",
        "NEXTTICK_WEBHOOK_ALLOWLIST": "",
        "NEXTTICK_TABLE": "cfn-name",
    }
    user = {
        "NEXTTICK_ACTIONS": '{"hook": {"type": "webhook", "url": "http://127.0.0.1:1/h"}}',
        "HOME": "/root",
    }
    env = handler_environment(
        LocalOptions(),
        moto_url="http://m",
        lambda_url="http://l",
        names=NAMES,
        function_env=function_env,
        environ=user,
    )
    assert env["NEXTTICK_POOL_SIZE"] == "32"
    assert env["NEXTTICK_ACTIONS"] == user["NEXTTICK_ACTIONS"] and "HOME" not in env
    assert json.loads(env["NEXTTICK_ACTIONS_CONFIG"]) == {"log": {"type": "log"}}
    assert env["NEXTTICK_WEBHOOK_ALLOWLIST"] == "http://127.0.0.1,http://localhost"
    assert env["NEXTTICK_TABLE"] == "t" and env["NEXTTICK_ENDPOINT_URL"] == "http://m"
    assert env["NEXTTICK_LAMBDA_ENDPOINT_URL"] == "http://l" and env["AWS_ACCESS_KEY_ID"] == "testing"


def test_the_firing_policy_stays_inside_the_minute_and_the_delay_bound() -> None:
    import random

    rng = random.Random(1)
    draws = [FiringPolicy().draw(rng) for _ in range(2000)]
    assert all(0 <= offset < 60 and 0 <= delay <= 5 for offset, delay in draws)
    assert max(offset for offset, _ in draws) > 55 and max(delay for _, delay in draws) > 4.5
    assert FiringPolicy(jitter=False).draw(rng) == (0.0, 0.0)
