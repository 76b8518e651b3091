"""cdk-nag AwsSolutions on every synth (a CDK validation plugin: any unacknowledged finding
interrupts synthesis); each acknowledged finding carries its reason, on the narrowest construct."""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, Stack, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

from infra.stack import NextTickStack

XRAY_ONLY_WILDCARD = (
    "The only '*' resource is X-Ray's PutTraceSegments/PutTelemetryRecords (added by tracing=ACTIVE): "
    "X-Ray supports no resource-level permissions. Every other statement names exact ARNs "
    "(asserted by tests/infrastructure)."
)
PYTHON_312 = (
    "Pinned to python3.12 on purpose: dependencies are bundled as cp312 wheels for the Lambda platform "
    "(pydantic-core is compiled) and 3.12 is a supported Lambda runtime; moving to a newer runtime is a "
    "deliberate change of infra.names.LAMBDA_PYTHON_VERSION together with this pin."
)

# (rule id, reason) per finding; the ids are cdk-nag's 'Acknowledge with' identifiers.
FINDINGS = {
    "dead_letter_queue": [
        (
            "AwsSolutions-SQS3",
            "This queue is itself the dead-letter destination of the worker's async invokes.",
        ),
    ],
    "keeper_failures": [
        (
            "AwsSolutions-SQS3",
            "This queue is itself the on-failure destination of the keeper's stream trigger.",
        ),
    ],
    "function_policy": [("AwsSolutions-IAM5[Resource::*]", XRAY_ONLY_WILDCARD)],
    "function": [("AwsSolutions-L1", PYTHON_312)],
    "sync_provider": [
        (
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "CDK's AwsCustomResource provider (runs the post-deploy rule sync) uses the basic execution "
            "role for its own logs only; its one other permission is lambda:InvokeFunction on the worker.",
        )
    ],
    "rest_api": [
        (
            "AwsSolutions-APIG2",
            "Requests are validated in the API Lambda (Powertools resolver with pydantic models), which "
            "answers 4xx naming the offending field; a proxy integration has no per-route models.",
        ),
    ],
    "cloudwatch_role": [
        (
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]",
            "API Gateway's account setting needs this role for stage access/execution logs; the AWS "
            "managed policy only lets API Gateway write logs.",
        ),
    ],
    "method": [
        (
            "AwsSolutions-COG4",
            "Every method is IAM-authorised (SigV4): callers are IAM principals, not Cognito users.",
        ),
    ],
    "stage": [
        (
            "AwsSolutions-APIG3",
            "No WAF by default (at least $5/month plus per-request fees): every request must be SigV4-signed "
            "by an IAM principal and the stage is throttled. Attach a web ACL for internet-facing use.",
        ),
    ],
}


def _ack(construct: IConstruct, kind: str) -> None:
    Validations.of(construct).acknowledge(
        *(Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason) for rule, reason in FINDINGS[kind])
    )


def apply_nag(app: App, stack: NextTickStack, *, tracing: bool) -> None:
    """Register AwsSolutions checks on the app and acknowledge the reasoned findings (the X-Ray
    wildcard only where tracing grants it)."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    scheduler, api, keeper = stack.scheduler, stack.api, stack.keeper
    _ack(scheduler.dead_letter_queue, "dead_letter_queue")
    _ack(keeper.failures, "keeper_failures")
    for fn in (scheduler.worker, api.handler, keeper.handler):
        if tracing:
            _ack(fn.role, "function_policy")
        _ack(fn.function, "function")
    if scheduler.post_deploy_sync is not None:
        provider = Stack.of(stack).node.try_find_child(_sync_provider_id())
        if provider is not None:
            _ack(provider, "sync_provider")
    rest_api = api.rest_api
    _ack(rest_api, "rest_api")
    if rest_api.node.try_find_child("CloudWatchRole") is not None:
        _ack(rest_api.node.find_child("CloudWatchRole"), "cloudwatch_role")
    for method in rest_api.methods:
        _ack(method, "method")
    _ack(rest_api.deployment_stage, "stage")


def _sync_provider_id() -> str:
    """The fixed construct id of CDK's AwsCustomResource singleton provider function."""
    return "AWS679f53fac002430cb0da5b7982bd2287"
