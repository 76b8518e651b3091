"""A nexttick Lambda function: its own role (no managed policies), log group with retention, X-Ray."""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import InfraConfig

_ARCHITECTURES = {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64}


def failure_queue(scope: Construct, construct_id: str, queue_name: str) -> sqs.Queue:
    """Where a function's events that could not be handled are kept for two weeks (encrypted, TLS only)."""
    return sqs.Queue(
        scope,
        construct_id,
        queue_name=queue_name,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )


def function_arn(scope: Construct, function_name: str) -> str:
    """A function's ARN from its (fixed) name: references without a dependency cycle."""
    return Stack.of(scope).format_arn(
        service="lambda",
        resource="function",
        resource_name=function_name,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


class NextTickFunction(Construct):
    """One function, one least-privilege role. Callers add the statements it needs."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        function_name: str,
        handler: str,
        code: lambda_.Code,
        timeout: Duration,
        memory_mb: int,
        description: str,
        reserved_concurrency: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=config.resource_names.log_group(function_name),
            retention=log_retention(config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{function_name}: least privilege (nexttick)",
        )
        # Log writes on this function's group only (instead of AWSLambdaBasicExecutionRole).
        iam.Grant.add_to_principal(
            grantee=self.role,
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resource_arns=[self.log_group.log_group_arn],
        )
        self.function = lambda_.Function(
            self,
            "Function",
            function_name=function_name,
            description=description,
            runtime=lambda_.Runtime.PYTHON_3_12,
            architecture=_ARCHITECTURES[config.architecture],
            handler=handler,
            code=code,
            timeout=timeout,
            memory_size=memory_mb,
            environment=config.runtime_environment(),
            role=self.role,
            log_group=self.log_group,
            tracing=lambda_.Tracing.ACTIVE if config.tracing else lambda_.Tracing.DISABLED,
            reserved_concurrent_executions=reserved_concurrency,
        )


_RETENTION = {
    1: logs.RetentionDays.ONE_DAY, 3: logs.RetentionDays.THREE_DAYS, 5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK, 14: logs.RetentionDays.TWO_WEEKS, 30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS, 90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS, 150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS, 365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS, 545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS, 1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS, 3653: logs.RetentionDays.TEN_YEARS,
}  # fmt: skip


def log_retention(days: int) -> logs.RetentionDays:
    """RetentionDays for a number of days (InfraConfig only admits these values)."""
    return _RETENTION[days]
