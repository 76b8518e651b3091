"""The nexttick stack: task store, rule + worker, the worker's wait hand-over, keeper, API and
monitoring, plus the deploy outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import names
from infra.api import Api
from infra.config import InfraConfig
from infra.handover import Handover
from infra.keeper import Keeper
from infra.monitoring import Monitoring
from infra.scheduler import RuleAndWorker
from infra.task_table import TaskTable


class NextTickStack(Stack):
    """`sync_token=None` is the moto variant: it leaves out the post-deploy rule sync (a custom
    resource moto cannot run), the keeper's stream trigger (moto would run the placeholder code on
    every write; the local stack feeds the stream to the keeper itself) and the hand-over queue's
    trigger (the queue and the worker's variable naming it stay, for the local stack to feed the
    queue to the worker)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        code: lambda_.Code,
        sync_token: str | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description="nexttick: serverless scheduler (DynamoDB queue, one rule)",
            **kwargs,
        )
        # The construct id stays "TaskStore": it is part of the table's logical id, and a retained table
        # whose logical id changes is orphaned by the next deploy.
        self.store = TaskTable(self, "TaskStore", config=config)
        self.scheduler = RuleAndWorker(
            self, "Scheduler", config=config, store=self.store, code=code, sync_token=sync_token
        )
        self.handover = Handover(
            self,
            "Handover",
            config=config,
            worker=self.scheduler.worker.function,
            trigger=sync_token is not None,
        )
        self.keeper = Keeper(
            self, "Keeper", config=config, store=self.store, code=code, trigger=sync_token is not None
        )
        self.api = Api(self, "Api", config=config, store=self.store, code=code)
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            worker=self.scheduler.worker.function,
            api_function=self.api.handler.function,
            dead_letter_queue=self.scheduler.dead_letter_queue,
            keeper=self.keeper.handler.function,
            keeper_failures=self.keeper.failures,
            handover_dead_letters=self.handover.dead_letter_queue,
        )
        CfnOutput(self, names.OUTPUT_API_URL, value=self.api.url, description="Base URL (SigV4-signed calls)")
        CfnOutput(self, names.OUTPUT_TABLE, value=self.store.table.table_name, description="Task table")
        CfnOutput(self, names.OUTPUT_RULE, value=self.scheduler.rule.rule_name, description="The one rule")
        CfnOutput(
            self,
            names.OUTPUT_WORKER,
            value=self.scheduler.worker.function.function_name,
            description="Worker function",
        )
        CfnOutput(
            self,
            names.OUTPUT_KEEPER,
            value=self.keeper.handler.function.function_name,
            description="Keeper function (the table's stream)",
        )
