"""AWS actions have real deadlines: their clients bound every attempt and the number of attempts, so
the worst case of a delivery is what the action declares (and the worker reserves for it)."""

from __future__ import annotations

import pytest

from nexttick.actions import ActionRegistry, build_registry
from nexttick.actions.aws_targets import EventBridgeAction, LambdaAction, SnsAction, SqsAction
from nexttick.config import NextTickSettings
from tests.support.aws import FAKE_AWS_ENV

DEFINITIONS = {
    "queue": {"type": "sqs", "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/q"},
    "topic": {"type": "sns", "topic_arn": "arn:aws:sns:us-east-1:123456789012:t"},
    "function": {"type": "lambda", "function": "target"},
    "bus": {"type": "eventbridge"},
}


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> ActionRegistry:
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    return build_registry(DEFINITIONS, NextTickSettings(region="us-east-1"))


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
def test_an_aws_action_declares_its_worst_case_and_its_client_keeps_to_it(
    registry: ActionRegistry, name: str
) -> None:
    action = registry.get(name)
    assert isinstance(action, LambdaAction | SqsAction | SnsAction | EventBridgeAction)
    config = action.client.meta.config
    # Every attempt is bounded, and so is the number of attempts (the worker retries with backoff)
    attempts = config.retries["total_max_attempts"]
    assert attempts <= 2 and config.connect_timeout and config.read_timeout
    worst = attempts * (config.connect_timeout + config.read_timeout) + (attempts - 1)  # backoff <= 1 s
    # Then the declared timeout covers the worst case and stays below the default lease
    assert worst <= action.timeout_seconds < NextTickSettings().lease_seconds
