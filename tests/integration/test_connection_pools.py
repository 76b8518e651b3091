"""Every AWS client the worker uses keeps a connection per concurrent caller: its pool threads, the
parallel shard reads and the lease renewer (botocore's default of 10 would make the callers above
it open and drop a connection per request)."""

from __future__ import annotations

from typing import Any

import pytest

from nexttick.actions import build_registry
from nexttick.actions.aws_targets import EventBridgeAction, LambdaAction, SnsAction, SqsAction
from nexttick.aws import ACTION_CONNECT_SECONDS, ACTION_READ_SECONDS, LambdaWorkerTrigger
from nexttick.config import NextTickSettings
from nexttick.runtime import Runtime

AWS_ACTIONS = {
    "queue": {"type": "sqs", "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/q"},
    "topic": {"type": "sns", "topic_arn": "arn:aws:sns:us-east-1:123456789012:t"},
    "function": {"type": "lambda", "function": "target"},
    "bus": {"type": "eventbridge"},
}


def _pool(client: Any) -> int:
    return int(client.meta.config.max_pool_connections)


@pytest.mark.parametrize("pool_size", [1, 32, 128])
def test_every_client_of_a_worker_has_a_connection_per_concurrent_caller(aws: None, pool_size: int) -> None:
    settings = NextTickSettings(queue_shards=16, pool_size=pool_size, actions_config=AWS_ACTIONS)
    callers = pool_size + 16 + 1
    assert settings.connection_pool_size == callers
    runtime = Runtime.build(settings)
    assert isinstance(runtime.trigger, LambdaWorkerTrigger)
    dynamodb = runtime.store.client
    assert [_pool(c) for c in (dynamodb, runtime.rule.client, runtime.trigger.client)] == [callers] * 3
    registry = build_registry(settings.action_definitions(), settings)
    for name in AWS_ACTIONS:
        action = registry.get(name)
        assert isinstance(action, LambdaAction | SqsAction | SnsAction | EventBridgeAction)
        assert _pool(action.client) == callers, name
        # and the action's own deadlines are kept
        config = action.client.meta.config
        assert (config.connect_timeout, config.read_timeout) == (ACTION_CONNECT_SECONDS, ACTION_READ_SECONDS)


def test_a_store_with_few_shards_needs_fewer_connections() -> None:
    assert NextTickSettings(queue_shards=4, pool_size=32).connection_pool_size == 32 + 4 + 1
