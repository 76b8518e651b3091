"""Settings: NEXTTICK_* environment parsed once into a typed model; actions config and overrides."""

from __future__ import annotations

import json
import os

import pydantic
import pytest

from nexttick import constants
from nexttick.config import NextTickSettings, Precision, get_settings


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A clean environment: no NEXTTICK_* variable leaks in from the shell."""
    for name in [n for n in os.environ if n.startswith("NEXTTICK_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    return monkeypatch


def test_defaults_come_from_the_constants_module(env: pytest.MonkeyPatch) -> None:
    settings = NextTickSettings()
    assert settings.table_name == constants.DEFAULT_TABLE_NAME
    assert settings.rule_name == constants.DEFAULT_RULE_NAME
    assert settings.worker_function == constants.DEFAULT_WORKER_FUNCTION_NAME
    assert settings.queue_shards == constants.DEFAULT_QUEUE_SHARDS
    assert settings.precision is Precision.SECOND
    assert settings.region == "eu-central-1"
    assert settings.endpoint_url is None
    assert settings.action_definitions() == {}


def test_environment_variables_are_parsed_into_typed_fields(env: pytest.MonkeyPatch) -> None:
    # Given
    env.setenv("NEXTTICK_TABLE", "my-table")
    env.setenv("NEXTTICK_RULE", "my-rule")
    env.setenv("NEXTTICK_WORKER_FUNCTION", "my-worker")
    env.setenv("NEXTTICK_ENDPOINT_URL", "http://127.0.0.1:5000")
    env.setenv("NEXTTICK_QUEUE_SHARDS", "8")
    env.setenv("NEXTTICK_PRECISION", "minute")
    env.setenv("NEXTTICK_PAGE_SIZE", "250")
    # When
    settings = NextTickSettings()
    # Then
    assert (settings.table_name, settings.rule_name, settings.worker_function) == (
        "my-table",
        "my-rule",
        "my-worker",
    )
    assert settings.endpoint_url == "http://127.0.0.1:5000"
    assert settings.queue_shards == 8
    assert settings.precision is Precision.MINUTE
    assert settings.page_size == 250


def test_nexttick_actions_adds_and_overrides_configured_actions_by_name(env: pytest.MonkeyPatch) -> None:
    # Given a deployment configuration with two actions
    env.setenv(
        "NEXTTICK_ACTIONS_CONFIG",
        json.dumps({"log": {"type": "log"}, "hook": {"type": "webhook", "url": "https://a.example/x"}}),
    )
    # And an override that replaces one and adds another
    env.setenv(
        "NEXTTICK_ACTIONS",
        json.dumps({"hook": {"type": "webhook", "url": "http://127.0.0.1:9000/hook"}, "q": {"type": "sqs"}}),
    )
    # When
    definitions = NextTickSettings().action_definitions()
    # Then the override wins by name, the untouched action stays, the new one is added
    assert definitions == {
        "log": {"type": "log"},
        "hook": {"type": "webhook", "url": "http://127.0.0.1:9000/hook"},
        "q": {"type": "sqs"},
    }


def test_action_definitions_are_copies(env: pytest.MonkeyPatch) -> None:
    settings = NextTickSettings(actions_config={"log": {"type": "log"}})
    settings.action_definitions()["log"]["type"] = "changed"
    assert settings.action_definitions() == {"log": {"type": "log"}}


@pytest.mark.parametrize("value", ["", "   "])
def test_empty_actions_variable_means_no_override(env: pytest.MonkeyPatch, value: str) -> None:
    env.setenv("NEXTTICK_ACTIONS", value)
    settings = NextTickSettings(actions_config={"log": {"type": "log"}})
    assert settings.action_definitions() == {"log": {"type": "log"}}


@pytest.mark.parametrize("variable", ["NEXTTICK_ACTIONS", "NEXTTICK_ACTIONS_CONFIG"])
def test_invalid_json_gives_an_error_naming_the_variable(env: pytest.MonkeyPatch, variable: str) -> None:
    env.setenv(variable, "{'hook': {'type': 'log'}}")  # Python syntax, not JSON
    with pytest.raises(pydantic.ValidationError) as caught:
        NextTickSettings()
    text = str(caught.value)
    assert variable in text
    assert "not valid JSON" in text
    assert "line 1 column 2" in text  # the position of the problem


@pytest.mark.parametrize("value", ['["log"]', '"log"', "42", '{"hook": "webhook"}', '{"hook": ["webhook"]}'])
def test_actions_must_be_an_object_of_objects(env: pytest.MonkeyPatch, value: str) -> None:
    env.setenv("NEXTTICK_ACTIONS", value)
    with pytest.raises(pydantic.ValidationError) as caught:
        NextTickSettings()
    assert "actions" in str(caught.value)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("NEXTTICK_QUEUE_SHARDS", "0"),
        ("NEXTTICK_QUEUE_SHARDS", "257"),
        ("NEXTTICK_QUEUE_SHARDS", "many"),
        ("NEXTTICK_PRECISION", "hour"),
        ("NEXTTICK_PAGE_SIZE", "0"),
        ("NEXTTICK_SETTLE_SECONDS", "51"),
        ("NEXTTICK_LEASE_SECONDS", "1"),
    ],
)
def test_out_of_range_settings_are_rejected(env: pytest.MonkeyPatch, variable: str, value: str) -> None:
    env.setenv(variable, value)
    with pytest.raises(pydantic.ValidationError):
        NextTickSettings()


def test_get_settings_parses_the_environment_once(env: pytest.MonkeyPatch) -> None:
    get_settings.cache_clear()
    try:
        env.setenv("NEXTTICK_TABLE", "first")
        first = get_settings()
        env.setenv("NEXTTICK_TABLE", "second")
        assert get_settings() is first
        assert first.table_name == "first"
    finally:
        get_settings.cache_clear()
