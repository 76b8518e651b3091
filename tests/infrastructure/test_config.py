"""Deployment configuration and action grants: pure (no synth)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import ValidationError

from infra import names
from infra.config import ConfigError, InfraConfig, load_config
from infra.permissions import Grant, action_grants
from nexttick import constants
from nexttick.actions.webhook import DEFAULT_WEBHOOK_ALLOWLIST, parse_allowlist, url_allowed
from nexttick.config import NextTickSettings


def _arn(service: str, resource: str) -> str:
    return f"arn:aws:{service}:us-east-1:123456789012:{resource}"


def test_default_prefix_gives_the_runtime_default_names() -> None:
    n = InfraConfig().resource_names
    assert (n.table, n.rule, n.worker_function, n.api_function) == (
        constants.DEFAULT_TABLE_NAME,
        constants.DEFAULT_RULE_NAME,
        constants.DEFAULT_WORKER_FUNCTION_NAME,
        constants.DEFAULT_API_FUNCTION_NAME,
    )


def test_runtime_environment_parses_into_the_runtime_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a non-default configuration
    config = InfraConfig(
        prefix="staging",
        precision="minute",
        pool_size=64,
        page_size=200,
        queue_shards=32,
        lease_seconds=90,
        retention_days=30,
        actions={"hook": {"type": "webhook", "url": "https://h.example.com/x"}},
        webhook_allowlist=["https://h.example.com/"],
    )
    # When the functions' environment is parsed by the runtime
    for key, value in config.runtime_environment().items():
        monkeypatch.setenv(key, value)
    settings = NextTickSettings()
    # Then the runtime sees exactly the configuration
    assert (settings.table_name, settings.rule_name, settings.worker_function) == (
        "staging-tasks",
        "staging-next-due",
        "staging-worker",
    )
    assert settings.precision.value == "minute"
    assert (settings.pool_size, settings.page_size, settings.queue_shards) == (64, 200, 32)
    assert (settings.lease_seconds, settings.retention_days) == (90, 30)
    assert settings.action_definitions() == {"hook": {"type": "webhook", "url": "https://h.example.com/x"}}


def test_worker_timeout_and_lateness_alarm_follow_the_precision_mode() -> None:
    second, minute = InfraConfig(precision="second"), InfraConfig(precision="minute")
    assert (second.worker_timeout_seconds, minute.worker_timeout_seconds) == (300, 180)
    assert (second.lateness_threshold_ms, minute.lateness_threshold_ms) == (2_000, 90_000)
    assert InfraConfig(lateness_alarm_ms=500).lateness_threshold_ms == 500


def test_file_then_context_object_then_single_keys(tmp_path: Path) -> None:
    # Given a config file, a `nexttick` context object and a single `-c nexttick:<field>` key
    (tmp_path / "custom.json").write_text(json.dumps({"pool_size": 8, "precision": "minute", "prefix": "a"}))
    context = {
        names.CONTEXT_CONFIG_FILE: "custom.json",
        names.CONTEXT_OVERRIDES: {"pool_size": 16, "prefix": "b"},
        "nexttick:pool_size": "24",
        "nexttick:actions": '{"log": {"type": "log"}, "q": {"type": "sqs", "queue_url": "https://sqs.us-east-1.amazonaws.com/1/q"}}',
    }
    # When loaded / Then later sources win, and CLI strings are parsed
    config = load_config(context, tmp_path)
    assert (config.pool_size, config.prefix, config.precision.value) == (24, "b", "minute")
    assert set(config.actions) == {"log", "q"}


def test_missing_config_file_means_defaults(tmp_path: Path) -> None:
    assert load_config({}, tmp_path) == InfraConfig()


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"precision": "hour"}, "precision"),
        ({"log_retention_days": 31}, "log_retention_days"),
        ({"prefix": "Bad Prefix"}, "prefix"),
        ({"actions": {"x": {"type": "carrier-pigeon"}}}, "actions"),
        ({"actions": {"q": {"type": "sqs"}}}, "actions"),
        ({"actions": {"h": {"type": "webhook", "url": "https://evil.example/"}}}, "config"),
        ({"reserved_concurrency": 0}, "reserved_concurrency"),
        ({"max_invocations": 0}, "max_invocations"),
        ({"max_invocations": 10, "reserved_concurrency": 10}, "config"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_invalid_configuration_names_the_field(tmp_path: Path, values: dict[str, object], field: str) -> None:
    (tmp_path / names.CONFIG_FILE).write_text(json.dumps(values))
    with pytest.raises(ConfigError) as info:
        load_config({}, tmp_path)
    assert info.value.field.startswith(field)


def test_action_grants_are_exact_per_kind() -> None:
    grants = action_grants(
        {
            "log": {"type": "log"},
            "hook": {"type": "webhook", "url": "https://h.example.com/"},
            "py": {"type": "python", "target": "json:dumps"},
            "q1": {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/111122223333/orders"},
            "q2": {"type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/111122223333/orders"},
            "t": {"type": "sns", "topic_arn": "arn:aws:sns:eu-west-1:111122223333:alerts"},
            "b": {"type": "eventbridge"},
            "f": {"type": "lambda", "function": "ship", "qualifier": "live"},
        },
        _arn,
    )
    assert grants == [
        Grant(("events:PutEvents",), (_arn("events", "event-bus/default"),)),
        Grant(("lambda:InvokeFunction",), (_arn("lambda", "function:ship") + ":live",)),
        Grant(("sns:Publish",), ("arn:aws:sns:eu-west-1:111122223333:alerts",)),
        Grant(("sqs:SendMessage",), ("arn:aws:sqs:eu-west-1:111122223333:orders",)),
    ]


@pytest.mark.parametrize(
    "definition",
    [
        {"type": "sqs"},
        {"type": "sqs", "queue_url": "https://example.com/not-sqs"},
        {"type": "sns"},
        {"type": "lambda"},
    ],
)
def test_an_action_without_its_target_is_rejected(definition: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=r"actions\.a\."):
        action_grants({"a": definition}, _arn)


def test_local_template_is_cached_per_configuration(local_template: dict[str, object]) -> None:
    # Given the local template synthesized once for CONFIG (session fixture)
    import infra
    from tests.infrastructure.conftest import CONFIG

    # When asked again / Then it comes from the cache (no jsii), identical
    path = infra._local_cache_path(CONFIG)
    assert path.is_file()
    assert infra.synth_template(CONFIG, local=True) == local_template
    # ... and another configuration has another cache entry
    assert infra._local_cache_path(CONFIG.model_copy(update={"pool_size": 7})) != path


def test_stacks_starting_at_once_synthesize_the_local_template_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given no cached local template, and a synth that takes a while (jsii: ~15 s)
    import infra
    from tests.infrastructure.conftest import CONFIG

    synths: list[int] = []

    def slow_synth(config: object, local: bool) -> dict[str, object]:
        synths.append(1)
        time.sleep(0.5)
        return {"Resources": {"n": len(synths)}}

    monkeypatch.setattr(infra, "_synth", slow_synth)
    monkeypatch.setattr(infra, "_local_cache_path", lambda _config: tmp_path / "template.json")
    # When three stacks start at once
    with ThreadPoolExecutor(3) as pool:
        templates = list(pool.map(lambda _: infra.synth_template(CONFIG, local=True), range(3)))
    # Then one of them synthesized it; the others waited for its file
    assert synths == [1]
    assert templates == [{"Resources": {"n": 1}}] * 3


def test_the_deployment_refuses_a_webhook_url_the_worker_would_refuse() -> None:
    # Given an allow-list entry and a URL that merely starts with its text (another host)
    allowlist, url = ["http://localhost"], "http://localhost.example.com/hook"
    actions = {"hook": {"type": "webhook", "url": url}}
    # When the deployment is configured with it, Then it is refused, as the worker refuses it at runtime
    assert not url_allowed(url, allowlist)
    with pytest.raises(ValidationError, match="webhook_allowlist"):
        InfraConfig(actions=actions, webhook_allowlist=allowlist)
    # And a URL at a boundary of the entry is accepted by both
    InfraConfig(
        actions={"hook": {"type": "webhook", "url": "http://localhost:9000/hook"}},
        webhook_allowlist=allowlist,
    )


def test_the_deployment_and_the_worker_share_one_allow_list_default() -> None:
    assert (
        tuple(InfraConfig().webhook_allowlist)
        == DEFAULT_WEBHOOK_ALLOWLIST
        == parse_allowlist(InfraConfig().runtime_environment()["NEXTTICK_WEBHOOK_ALLOWLIST"])
    )
