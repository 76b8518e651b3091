"""The single EventBridge rule, the worker it targets, the worker's dead-letter queue, and the
post-deploy step that re-derives the rule from the table (README, "What a deploy does to a
pending schedule")."""

from __future__ import annotations

import json

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra import names
from infra.config import InfraConfig
from infra.function import NextTickFunction, failure_queue, function_arn
from infra.permissions import action_grants
from infra.task_table import TaskTable
from nexttick import constants

EPOCH_DESCRIPTION = f"{constants.RULE_DESCRIPTION_PREFIX} nothing pending (managed by nexttick; do not edit)"


def rule_arn(scope: Construct, rule_name: str) -> str:
    """The rule's ARN from its fixed name (no reference, so roles can name it without a cycle)."""
    return Stack.of(scope).format_arn(
        service="events", resource="rule", resource_name=rule_name, arn_format=ArnFormat.SLASH_RESOURCE_NAME
    )


def grant_scheduling(grantee: iam.IGrantable, scope: Construct, config: InfraConfig) -> None:
    """What every caller of the rule protocol needs: PutRule/DescribeRule on the one rule, and an
    asynchronous invoke of the worker (when a task is due too soon to arm)."""
    n = config.resource_names
    iam.Grant.add_to_principal(
        grantee=grantee, actions=list(names.RULE_ACTIONS), resource_arns=[rule_arn(scope, n.rule)]
    )
    iam.Grant.add_to_principal(
        grantee=grantee,
        actions=["lambda:InvokeFunction"],
        resource_arns=[function_arn(scope, n.worker_function)],
    )


class RuleAndWorker(Construct):
    """One rule, created at the epoch and afterwards owned by the runtime; the worker it fires."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        store: TaskTable,
        code: lambda_.Code,
        sync_token: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        n = config.resource_names
        self.dead_letter_queue = failure_queue(self, "DeadLetterQueue", n.dead_letter_queue)
        self.worker = NextTickFunction(
            self,
            "Worker",
            config=config,
            function_name=n.worker_function,
            handler=names.WORKER_HANDLER,
            code=code,
            timeout=Duration.seconds(config.worker_timeout_seconds),
            memory_mb=config.worker_memory_mb,
            description="nexttick worker: runs due tasks, re-arms the rule",
            reserved_concurrency=config.reserved_concurrency,
        )
        fn = self.worker.function
        # Async invokes (the rule, editors' wake-ups): 2 retries, then the event goes to the DLQ.
        fn.configure_async_invoke(
            retry_attempts=2, on_failure=destinations.SqsDestination(self.dead_letter_queue)
        )
        store.grant_task_access(fn)
        grant_scheduling(fn, self, config)
        stack = Stack.of(self)
        for grant in action_grants(
            config.actions, lambda service, resource: stack.format_arn(service=service, resource=resource)
        ):
            iam.Grant.add_to_principal(
                grantee=fn, actions=list(grant.actions), resource_arns=list(grant.resources)
            )

        # Every property is constant: CloudFormation only updates (and so resets) the rule when
        # the template's rule changes, and the post-deploy sync repairs it whenever a deploy runs.
        self.rule = events.Rule(
            self,
            "Rule",
            rule_name=n.rule,
            description=EPOCH_DESCRIPTION,
            schedule=events.Schedule.expression(constants.EPOCH_EXPRESSION),
            targets=[targets.LambdaFunction(fn)],
        )

        self.post_deploy_sync: cr.AwsCustomResource | None = None
        if sync_token is not None:
            self.post_deploy_sync = self._post_deploy_sync(fn, sync_token)

    def _post_deploy_sync(self, fn: lambda_.Function, sync_token: str) -> cr.AwsCustomResource:
        """Invoke the worker with the sync event after every deploy (the token changes per synth).

        The call names the worker and rule by their fixed names, so the explicit dependencies
        below are the only ordering: after the rule, the worker's code, role, policy and async
        configuration are all in place."""
        n = self.config.resource_names
        call = cr.AwsSdkCall(
            service="Lambda",
            action="invoke",
            parameters={
                "FunctionName": n.worker_function,
                "InvocationType": "Event",
                "Payload": json.dumps({**names.SYNC_EVENT, "deploy": sync_token}, sort_keys=True),
            },
            physical_resource_id=cr.PhysicalResourceId.of(f"{n.rule}-sync"),
            output_paths=["StatusCode"],  # 202 for an accepted async invoke
        )
        sync = cr.AwsCustomResource(
            self,
            "PostDeploySync",
            on_create=call,
            on_update=call,
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [
                    iam.PolicyStatement(
                        actions=["lambda:InvokeFunction"], resources=[function_arn(self, n.worker_function)]
                    )
                ]
            ),
            install_latest_aws_sdk=False,
            timeout=Duration.minutes(2),
        )
        sync.node.add_dependency(self.rule)
        sync.node.add_dependency(self.worker)
        return sync
