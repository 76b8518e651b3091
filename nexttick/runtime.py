"""Builds the collaborators (store, rule, worker trigger, rule sync) once from settings."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import botocore.session

from nexttick.aws import (
    HANDOVER_BOTO_CONFIG,
    AwsSession,
    EventBridgeRule,
    LambdaWorkerTrigger,
    SqsWaitHandover,
    make_client,
    session_credentials,
)
from nexttick.clock import SYSTEM_CLOCK, Clock
from nexttick.config import NextTickSettings, get_settings
from nexttick.rulearm import WorkerTrigger
from nexttick.rulesync import RuleSync
from nexttick.ruletiming import Timing
from nexttick.store import TaskStore


def timing_from(settings: NextTickSettings) -> Timing:
    return Timing(
        precision=settings.precision,
        delivery_margin_seconds=settings.delivery_margin_seconds,
        settle_seconds=settings.settle_seconds,
    )


class WorkerStarter(WorkerTrigger, Protocol):
    """The worker's own trigger: a wake, and a helper for a burst (Lambda `InvocationType=Event`)."""

    def help(self, shards: Collection[int], leader: str) -> None: ...


class WaitHandover(Protocol):
    """Starts a worker invocation `delay_seconds` from now that sleeps until `wake_at` and then runs
    (a delayed SQS message): what a waiting worker does instead of sleeping through a long wait.
    `record`: the rule record the wait was decided on (`rule_state_message`), for that invocation
    to start from."""

    def send(
        self, delay_seconds: int, wake_at: datetime, record: Mapping[str, Any] | None = None
    ) -> None: ...


@dataclass
class Runtime:
    settings: NextTickSettings
    store: TaskStore
    rule: EventBridgeRule
    trigger: WorkerStarter
    rule_sync: RuleSync
    clock: Clock
    handover: WaitHandover | None = None  # None: a waiting worker sleeps the whole wait

    @classmethod
    def build(
        cls,
        settings: NextTickSettings | None = None,
        *,
        session: AwsSession | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> Runtime:
        settings = settings or get_settings()
        session = session or botocore.session.Session()  # one session: its loaders are shared by clients
        store = TaskStore.from_settings(settings, credentials=session_credentials(session))
        timing = timing_from(settings)
        rule = EventBridgeRule(make_client("events", settings, session), settings.rule_name, timing)
        trigger = LambdaWorkerTrigger(make_client("lambda", settings, session), settings.worker_function)
        rule_sync = RuleSync(
            store,
            rule,
            trigger,
            timing,
            clock,
            stale_after=timedelta(seconds=settings.stale_after_seconds),
        )
        handover = (
            SqsWaitHandover(
                make_client("sqs", settings, session, config=HANDOVER_BOTO_CONFIG),
                settings.handover_queue_url,
            )
            if settings.handover_queue_url
            else None
        )
        return cls(settings, store, rule, trigger, rule_sync, clock, handover)
