"""The keeper: a Lambda on the table's stream that covers every committed task change, so liveness
does not depend on the client that wrote it surviving (the transactional-outbox pattern; the
logic is `nexttick.keeper`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from constructs import Construct

from infra import names
from infra.config import InfraConfig
from infra.function import NextTickFunction, failure_queue
from infra.scheduler import grant_scheduling
from infra.task_table import TaskTable
from nexttick import constants


def stream_filters() -> list[Mapping[str, Any]]:
    """Only task items and the rule record, inserted or modified, reach the keeper: queue-entry
    and run-record writes (most of the table's traffic) and removals are dropped by Lambda, free of
    charge."""
    changed = lambda_.FilterRule.or_("INSERT", "MODIFY")
    tasks = (lambda_.FilterRule.begins_with(constants.TASK_PK_PREFIX), [constants.TASK_SK])
    rule = (lambda_.FilterRule.is_equal(constants.RULE_STATE_PK), [constants.RULE_STATE_SK])
    return [
        lambda_.FilterCriteria.filter(
            {
                "eventName": changed,
                "dynamodb": {"Keys": {constants.PARTITION_KEY: {"S": pk}, constants.SORT_KEY: {"S": sk}}},
            }
        )
        for pk, sk in (tasks, rule)
    ]


class Keeper(Construct):
    """The keeper function, its role (the rule record, the stream, the rule, the worker invoke), its
    on-failure queue and — unless `trigger` is False (the moto variant) — its stream trigger.

    The trigger starts at the stream's beginning (the stream is created with it, so nothing is
    replayed), retries a failing batch a bounded number of times while splitting it in two, drops
    records older than an hour, and then sends the batch's description to the on-failure queue
    (alarmed in Monitoring): a batch that cannot be kept is visible instead of blocking the shard."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        store: TaskTable,
        code: lambda_.Code,
        trigger: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        n = config.resource_names
        self.failures = failure_queue(self, "FailureQueue", n.keeper_failures)
        self.handler = NextTickFunction(
            self,
            "Function",
            config=config,
            function_name=n.keeper_function,
            handler=names.KEEPER_HANDLER,
            code=code,
            timeout=Duration.seconds(names.KEEPER_TIMEOUT_SECONDS),
            memory_mb=names.KEEPER_MEMORY_MB,
            description="nexttick keeper: covers committed task changes from the table's stream",
        )
        fn = self.handler.function
        store.grant_rule_record_access(fn)
        store.grant_stream_read(fn)
        grant_scheduling(fn, self, config)
        self.trigger: lambda_.EventSourceMapping | None = None
        if trigger:
            assert store.table.table_stream_arn is not None
            self.trigger = lambda_.EventSourceMapping(
                self,
                "StreamTrigger",
                target=fn,
                event_source_arn=store.table.table_stream_arn,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=names.KEEPER_BATCH_SIZE,
                max_batching_window=Duration.seconds(0),
                bisect_batch_on_error=True,
                retry_attempts=names.KEEPER_RETRY_ATTEMPTS,
                max_record_age=Duration.seconds(names.KEEPER_MAX_RECORD_AGE_SECONDS),
                on_failure=event_sources.SqsDlq(self.failures),
                filters=stream_filters(),
            )
