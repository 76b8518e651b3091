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
from nexttick.store.models import QueueItem, TaskItem


def stream_filters() -> list[Mapping[str, Any]]:
    """Only task items and the rule record, inserted or modified, reach the keeper: queue-entry
    and run-record writes (most of the table's traffic) and removals are dropped by Lambda, free of
    charge. A home item (a queue entry carrying its task) passes only without a lease or with a
    "run now" pointer, so a claim does not start the keeper; a removal passes only for a task whose
    payload item is to be deleted with it (nexttick.store.streams.reaches_keeper is the same rule,
    for the local stack). Five patterns: Lambda's limit per event source mapping."""
    changed = lambda_.FilterRule.or_("INSERT", "MODIFY")
    keys = {constants.PARTITION_KEY: {"S": lambda_.FilterRule.begins_with(constants.TASK_PK_PREFIX)}}
    tasks = {"Keys": {**keys, constants.SORT_KEY: {"S": [constants.TASK_SK]}}}
    rule = {
        "Keys": {
            constants.PARTITION_KEY: {"S": [constants.RULE_STATE_PK]},
            constants.SORT_KEY: {"S": [constants.RULE_STATE_SK]},
        }
    }
    home_keys = {constants.PARTITION_KEY: {"S": lambda_.FilterRule.begins_with(constants.QUEUE_PK_PREFIX)}}
    has_task = {TaskItem.action.attr_name: {"S": lambda_.FilterRule.exists()}}
    unleased = {
        "Keys": home_keys,
        "NewImage": {**has_task, QueueItem.lease_owner.attr_name: {"S": lambda_.FilterRule.not_exists()}},
    }
    run_now = {
        "Keys": home_keys,
        "NewImage": {**has_task, TaskItem.extra_key.attr_name: {"S": lambda_.FilterRule.exists()}},
    }
    # A task removed by its TTL whose payload has an item of its own (only task items name one).
    removed = lambda_.FilterCriteria.filter(
        {
            "eventName": lambda_.FilterRule.is_equal("REMOVE"),
            "dynamodb": {"OldImage": {TaskItem.payload_ref.attr_name: {"S": lambda_.FilterRule.exists()}}},
        }
    )
    return [
        *(
            lambda_.FilterCriteria.filter({"eventName": changed, "dynamodb": pattern})
            for pattern in (tasks, rule, unleased, run_now)
        ),
        removed,
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
        store.grant_entry_check(fn, QueueItem.token.attr_name)
        store.grant_payload_removal(fn)
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
