"""Every name the CDK app uses, in one place (runtime names come from nexttick.constants)."""

from __future__ import annotations

from dataclasses import dataclass

from nexttick import constants

DEFAULT_PREFIX = constants.APP_NAME
DEFAULT_STACK_NAME = "NextTick"
CONFIG_FILE = "nexttick.config.json"

# CDK context keys (cdk.json or `-c key=value`).
CONTEXT_CONFIG_FILE = "nexttick:config"
CONTEXT_OVERRIDES = "nexttick"
CONTEXT_LOCAL = "nexttick:local"
CONTEXT_SYNC_TOKEN = "nexttick:syncToken"

# Lambda handlers (module path inside the bundled asset).
WORKER_HANDLER = "lambdas/worker/handler.handler"
API_HANDLER = "lambdas/api/handler.handler"
KEEPER_HANDLER = "lambdas/keeper/handler.handler"
# Packages shipped in the Lambda asset (runtime code only) and the requirements file bundled with them.
RUNTIME_PACKAGES = ("nexttick", "editor", "lambdas")
# Developer tooling (the local stack, the CLI, the API Gateway adapter, the DynamoDB meter; the
# bench): top-level packages of their own, never in the asset (tests/infrastructure/test_asset.py).
DEV_PACKAGES = ("local", "bench")
REQUIREMENTS_FILE = "requirements.txt"
BUILD_DIR = "build"
LAMBDA_PYTHON_VERSION = "3.12"

# Powertools.
METRICS_NAMESPACE = constants.APP_NAME
SERVICE_NAME = constants.APP_NAME

API_STAGE = "v1"

# Stack outputs.
OUTPUT_API_URL = "ApiUrl"
OUTPUT_TABLE = "TableName"
OUTPUT_RULE = "RuleName"
OUTPUT_WORKER = "WorkerFunctionName"
OUTPUT_KEEPER = "KeeperFunctionName"

# Exactly the DynamoDB actions the store issues (no Scan, no table-level actions).
TABLE_ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
RULE_ACTIONS = ("events:DescribeRule", "events:PutRule")
# The keeper reads and writes the rule record only (its role is limited to that partition key) and
# reads the table's stream.
RULE_RECORD_ACTIONS = ("dynamodb:GetItem", "dynamodb:UpdateItem")
STREAM_ACTIONS = (
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
)

# The keeper's stream trigger (infra/keeper.py); the local stack feeds the stream the same way.
KEEPER_BATCH_SIZE = 100
KEEPER_RETRY_ATTEMPTS = 5  # then the batch's description goes to the on-failure queue (alarmed)
KEEPER_MAX_RECORD_AGE_SECONDS = 3600
KEEPER_TIMEOUT_SECONDS = 30
KEEPER_MEMORY_MB = 256

# The wait hand-over (infra/handover.py): the worker reads the queue's URL from this variable (unset:
# it waits inside its own invocation) and may only send to the queue; the queue's trigger consumes.
HANDOVER_QUEUE_URL_ENV = "NEXTTICK_HANDOVER_QUEUE_URL"
HANDOVER_SEND_ACTIONS = ("sqs:SendMessage",)
HANDOVER_CONSUME_ACTIONS = ("sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage")
# A message lives at most its delay (15 min) plus a visibility timeout per receive: an hour is plenty.
HANDOVER_RETENTION_SECONDS = 3600
HANDOVER_MAX_RECEIVES = 3  # then the message goes to the hand-over's dead-letter queue (alarmed)

# The event the post-deploy step sends to the worker (README, "What a deploy does to a pending schedule").
SYNC_EVENT = {"source": constants.WORKER_EVENT_SOURCE, "action": constants.WORKER_EVENT_SYNC}


@dataclass(frozen=True)
class ResourceNames:
    """Physical names, derived from one prefix. The default prefix gives nexttick.constants' names."""

    prefix: str

    @property
    def table(self) -> str:
        return f"{self.prefix}-tasks"

    @property
    def rule(self) -> str:
        return f"{self.prefix}-next-due"

    @property
    def worker_function(self) -> str:
        return f"{self.prefix}-worker"

    @property
    def keeper_function(self) -> str:
        return f"{self.prefix}-keeper"

    @property
    def keeper_failures(self) -> str:
        return f"{self.prefix}-keeper-failures"

    @property
    def api_function(self) -> str:
        return f"{self.prefix}-api"

    @property
    def api(self) -> str:
        return f"{self.prefix}-api"

    @property
    def dead_letter_queue(self) -> str:
        return f"{self.prefix}-worker-dlq"

    @property
    def handover_queue(self) -> str:
        return f"{self.prefix}-worker-handover"

    @property
    def handover_dead_letter_queue(self) -> str:
        return f"{self.prefix}-worker-handover-dlq"

    @property
    def dashboard(self) -> str:
        return f"{self.prefix}-scheduler"

    @property
    def alarm_topic(self) -> str:
        return f"{self.prefix}-alarms"

    def log_group(self, function_name: str) -> str:
        return f"/aws/lambda/{function_name}"
