"""AWS clients and the AWS adapters of the rule protocol: the EventBridge rule, the asynchronous
worker invoke and the delayed message a waiting worker hands its wait over with.

Clients come from a botocore session: importing boto3 imports its S3 transfer manager too, about
0.1 s of every cold start that nothing here uses. A caller's boto3 session (the editor library takes
one) is accepted as it is."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeAlias

import botocore.session
from botocore.config import Config

from nexttick.config import NextTickSettings
from nexttick.constants import (
    RULE_DESCRIPTION_PREFIX,
    WORKER_EVENT_HANDOVER,
    WORKER_EVENT_HELP,
    WORKER_EVENT_SOURCE,
    WORKER_EVENT_WAKE,
)
from nexttick.ruletiming import Timing
from nexttick.timeutil import format_instant

if TYPE_CHECKING:
    import boto3

_BOTO_CONFIG = Config(retries={"mode": "standard", "max_attempts": 8}, connect_timeout=5, read_timeout=30)
# Action deliveries get tight bounds instead: an AWS action's worst case (every attempt timing out,
# plus standard mode's backoff of at most 1 s before the second) is ACTION_CALL_SECONDS, which is
# what the worker reserves for it. The worker retries a failed delivery itself, with backoff.
ACTION_CONNECT_SECONDS = 5
ACTION_READ_SECONDS = 20
ACTION_ATTEMPTS = 2
ACTION_CALL_SECONDS = ACTION_ATTEMPTS * (ACTION_CONNECT_SECONDS + ACTION_READ_SECONDS) + 1
ACTION_BOTO_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": ACTION_ATTEMPTS},
    connect_timeout=ACTION_CONNECT_SECONDS,
    read_timeout=ACTION_READ_SECONDS,
)
# A hand-over's message must arrive before its wake: its send gets tight bounds too, and a wait is
# handed over only when it outlasts the send's worst case (HANDOVER_SEND_SECONDS) and the lead.
HANDOVER_ATTEMPTS = 2
HANDOVER_CONNECT_SECONDS = 1
HANDOVER_READ_SECONDS = 1
HANDOVER_SEND_SECONDS = HANDOVER_ATTEMPTS * (HANDOVER_CONNECT_SECONDS + HANDOVER_READ_SECONDS) + 1
HANDOVER_BOTO_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": HANDOVER_ATTEMPTS},
    connect_timeout=HANDOVER_CONNECT_SECONDS,
    read_timeout=HANDOVER_READ_SECONDS,
)
# A boto3 session (what a library user holds) or a botocore one (what the runtime makes).
AwsSession: TypeAlias = "boto3.Session | botocore.session.Session"

# Six fields, year-pinned; each a value or two (an armed minute's and its backstop's: Timing.firings).
_VALUES = r"(\d+(?:,\d+)?)"
_PINNED_CRON = re.compile(rf"^cron\({_VALUES} {_VALUES} {_VALUES} {_VALUES} \? (\d{{4}}(?:,\d{{4}})?)\)$")


def make_client(
    service: str,
    settings: NextTickSettings,
    session: AwsSession | None = None,
    *,
    config: Config = _BOTO_CONFIG,
) -> Any:
    """A client for `service` honouring the configured region and (local) endpoint."""
    session = session or botocore.session.Session()
    create = session.create_client if isinstance(session, botocore.session.Session) else session.client
    endpoint = settings.endpoint_url
    if service == "lambda" and settings.lambda_endpoint_url:
        endpoint = settings.lambda_endpoint_url
    return create(
        service,  # type: ignore[call-overload]
        region_name=settings.region,
        endpoint_url=endpoint,
        config=config.merge(Config(max_pool_connections=settings.connection_pool_size)),
    )


def session_credentials(session: AwsSession | None) -> tuple[str, str, str | None] | None:
    """Frozen credentials of an explicit session (for the PynamoDB connection), else None."""
    if session is None:
        return None
    creds = session.get_credentials()
    if creds is None:
        return None
    frozen = creds.get_frozen_credentials()
    if frozen.access_key is None or frozen.secret_key is None:
        return None
    return frozen.access_key, frozen.secret_key, frozen.token


def parse_rule_minute(expression: str) -> datetime | str | None:
    """The minute a year-pinned cron is armed for, None for the epoch, or the raw text if foreign.
    A cron naming a backstop too fires at every combination of its fields' values; the armed minute
    is the first of the two closest ones: a backstop follows its minute by at most 3 minutes
    (`Timing.backstop_of`), and any other two combinations lie at least 57 minutes apart."""
    fields = _pinned_fields(expression)
    if fields is not None and fields[4] == (1970,):
        return None
    firings = [] if fields is None else _combinations(fields)
    if not firings:
        return expression
    closest = min(itertools.pairwise(firings), key=lambda pair: pair[1] - pair[0], default=None)
    return firings[0] if closest is None else closest[0]


def rule_firings(expression: str) -> list[datetime]:
    """Every minute at which EventBridge fires a year-pinned cron (any combination of its fields'
    values that is a real date), earliest first: what an emulator of the rule fires."""
    fields = _pinned_fields(expression)
    return [] if fields is None or fields[4] == (1970,) else _combinations(fields)


def _combinations(fields: list[tuple[int, ...]]) -> list[datetime]:
    """The real dates among every combination of the fields' values, earliest first."""
    minutes = set()
    for minute, hour, day, month, year in itertools.product(*fields):
        try:
            minutes.add(datetime(year, month, day, hour, minute, tzinfo=UTC))
        except ValueError:
            continue  # a day the month does not have: EventBridge skips it too
    return sorted(minutes)


def _pinned_fields(expression: str) -> list[tuple[int, ...]] | None:
    match = _PINNED_CRON.match(expression.strip())
    if not match:
        return None
    return [tuple(int(v) for v in group.split(",")) for group in match.groups()]


class EventBridgeRule:
    """The single scheduled rule. PutRule replaces the whole rule, so every field is written."""

    def __init__(self, events_client: Any, rule_name: str, timing: Timing) -> None:
        self.client = events_client
        self.name = rule_name
        self.timing = timing

    def put(self, minute: datetime | None) -> None:
        when = format_instant(minute) if minute is not None else "nothing pending"
        self.client.put_rule(
            Name=self.name,
            ScheduleExpression=self.timing.rule_expression(minute),
            State="ENABLED",
            Description=f"{RULE_DESCRIPTION_PREFIX} {when} (managed by nexttick; do not edit)",
        )

    def current(self) -> datetime | str | None:
        """The minute the rule is armed for, or its expression's text when it is not the one this
        precision writes for that minute (its backstop missing or different: a drift to repair)."""
        expression = self.client.describe_rule(Name=self.name).get("ScheduleExpression", "")
        minute = parse_rule_minute(expression)
        if isinstance(minute, str) or self.timing.rule_expression(minute) == expression.strip():
            return minute
        return expression


class LambdaWorkerTrigger:
    """Invokes the worker asynchronously (retried by Lambda on error; may arrive twice)."""

    def __init__(self, lambda_client: Any, function_name: str) -> None:
        self.client = lambda_client
        self.function_name = function_name

    def wake(self, reason: str) -> None:
        self._invoke({"source": WORKER_EVENT_SOURCE, "action": WORKER_EVENT_WAKE, "reason": reason})

    def help(self, shards: Collection[int], leader: str) -> None:
        self._invoke(
            {
                "source": WORKER_EVENT_SOURCE,
                "action": WORKER_EVENT_HELP,
                "shards": sorted(shards),
                "leader": leader,
            }
        )

    def _invoke(self, event: dict[str, Any]) -> None:
        self.client.invoke(
            FunctionName=self.function_name, InvocationType="Event", Payload=json.dumps(event).encode()
        )


class SqsWaitHandover:
    """Sends the delayed message whose delivery (the queue's event source mapping) starts the
    invocation that finishes a wait. SQS delivers at least once, sometimes late: a duplicate is one
    more worker that finds the head taken, and a lost or late message leaves the task to the rule,
    which stays armed as the wait's backstop."""

    def __init__(self, sqs_client: Any, queue_url: str) -> None:
        self.client = sqs_client
        self.queue_url = queue_url

    def send(self, delay_seconds: int, wake_at: datetime, record: Mapping[str, Any] | None = None) -> None:
        body: dict[str, Any] = {
            "source": WORKER_EVENT_SOURCE,
            "action": WORKER_EVENT_HANDOVER,
            "at": wake_at.isoformat(),
        }
        if record is not None:
            body["record"] = dict(record)
        self.client.send_message(
            QueueUrl=self.queue_url, MessageBody=json.dumps(body), DelaySeconds=delay_seconds
        )
