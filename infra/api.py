"""The HTTP API: a REST API (stage v1) proxying every route to the API Lambda, IAM-authorised."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import names
from infra.config import InfraConfig
from infra.function import NextTickFunction, log_retention
from infra.scheduler import grant_scheduling
from infra.task_table import TaskTable


class Api(Construct):
    """Every method requires SigV4 (AWS_IAM); stage throttling; JSON access logs; X-Ray."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        store: TaskTable,
        code: lambda_.Code,
    ) -> None:
        super().__init__(scope, construct_id)
        n = config.resource_names
        self.handler = NextTickFunction(
            self,
            "Handler",
            config=config,
            function_name=n.api_function,
            handler=names.API_HANDLER,
            code=code,
            timeout=Duration.seconds(29),  # API Gateway's integration limit
            memory_mb=config.api_memory_mb,
            description="nexttick HTTP API",
        )
        store.grant_task_access(self.handler.function)
        grant_scheduling(self.handler.function, self, config)

        self.access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=log_retention(config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.rest_api = apigw.LambdaRestApi(
            self,
            "RestApi",
            rest_api_name=n.api,
            description="nexttick: schedule tasks (SigV4-signed requests only)",
            handler=self.handler.function,
            proxy=True,
            endpoint_types=[apigw.EndpointType.REGIONAL],
            default_method_options=apigw.MethodOptions(authorization_type=apigw.AuthorizationType.IAM),
            # Stage logging needs the account-level CloudWatch role; the stack sets it (retained).
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name=names.API_STAGE,
                throttling_rate_limit=config.api_throttle_rate,
                throttling_burst_limit=config.api_throttle_burst,
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                metrics_enabled=True,
                tracing_enabled=config.tracing,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
            ),
        )

    @property
    def url(self) -> str:
        return self.rest_api.url
