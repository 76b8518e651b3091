"""PynamoDB models of the five item kinds in the single table, bound to a table at runtime."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    MapAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.models import Model

from nexttick.constants import PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE


class LastRunAttribute(MapAttribute[str, Any]):
    started_at = UTCDateTimeAttribute()
    finished_at = UTCDateTimeAttribute(null=True)
    outcome = UnicodeAttribute()
    error = UnicodeAttribute(null=True)
    scheduled_for = UTCDateTimeAttribute(null=True)
    attempt = NumberAttribute(default=1)
    run_at = UTCDateTimeAttribute(null=True)
    fired_at = UTCDateTimeAttribute(null=True)


class TaskItem(Model):
    """pk=T#<id>, sk=T — the task itself, the source of truth."""

    class Meta:
        table_name: str | None = None

    pk = UnicodeAttribute(hash_key=True, attr_name=PARTITION_KEY)
    sk = UnicodeAttribute(range_key=True, attr_name=SORT_KEY)
    task_id = UnicodeAttribute()
    action = UnicodeAttribute()
    payload = JSONAttribute(null=True)  # absent when it is in its own item (`payload_ref`)
    status = UnicodeAttribute()
    schedule_kind = UnicodeAttribute()
    due = UTCDateTimeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    version = NumberAttribute()
    cron = UnicodeAttribute(null=True)
    timezone = UnicodeAttribute(default="UTC")
    every_seconds = NumberAttribute(null=True)
    end = UTCDateTimeAttribute(null=True)
    max_attempts = NumberAttribute()
    retry_backoff_seconds = NumberAttribute()
    misfire_grace_seconds = NumberAttribute(null=True)
    dst_skipped = UnicodeAttribute(default="skip")
    dst_repeated = UnicodeAttribute(default="first")
    jitter_seconds = NumberAttribute(null=True)
    attempts = NumberAttribute(default=0)
    runs = NumberAttribute(default=0)
    last_run = LastRunAttribute(null=True)
    queue_key = UnicodeAttribute(null=True)
    queue_token = UnicodeAttribute(null=True)
    queue_parked = BooleanAttribute(default=False)
    extra_key = UnicodeAttribute(null=True)
    extra_token = UnicodeAttribute(null=True)
    catch_up_until = UTCDateTimeAttribute(null=True)
    left_running_until = UTCDateTimeAttribute(null=True)
    request_hash = UnicodeAttribute(null=True)
    expires_at = TTLAttribute(null=True, attr_name=TTL_ATTRIBUTE)
    run_seq = NumberAttribute(default=0)
    payload_ref = UnicodeAttribute(null=True)


class QueueItem(Model):
    """pk=Q#<shard>, sk=<run_at>#<task id> — one pending occurrence (or retry) in due order."""

    class Meta:
        table_name: str | None = None

    pk = UnicodeAttribute(hash_key=True, attr_name=PARTITION_KEY)
    sk = UnicodeAttribute(range_key=True, attr_name=SORT_KEY)
    task_id = UnicodeAttribute()
    token = UnicodeAttribute()
    scheduled_for = UTCDateTimeAttribute()
    attempt = NumberAttribute(default=1)
    lease_until = NumberAttribute(null=True)  # epoch seconds; compared in conditions
    lease_owner = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute(null=True)
    last_error = UnicodeAttribute(null=True)  # why the last claim was abandoned (if it said)


class RunItem(Model):
    """pk=T#<id>, sk=R#<slot> — one run of the task, in a ring of its last `run_history` runs (the
    newest is on the task item, `last_run`, until a newer one displaces it into the ring)."""

    class Meta:
        table_name: str | None = None

    pk = UnicodeAttribute(hash_key=True, attr_name=PARTITION_KEY)
    sk = UnicodeAttribute(range_key=True, attr_name=SORT_KEY)
    task_id = UnicodeAttribute()
    seq = NumberAttribute()
    scheduled_for = UTCDateTimeAttribute()
    run_at = UTCDateTimeAttribute()
    fired_at = UTCDateTimeAttribute()
    started_at = UTCDateTimeAttribute()
    finished_at = UTCDateTimeAttribute()
    attempt = NumberAttribute()
    outcome = UnicodeAttribute()
    error = UnicodeAttribute(null=True)
    expires_at = TTLAttribute(null=True, attr_name=TTL_ATTRIBUTE)


class RuleStateItem(Model):
    """pk=RULE, sk=STATE — the minute the single EventBridge rule is armed for (0 = epoch), and the
    head of every queue shard."""

    class Meta:
        table_name: str | None = None

    pk = UnicodeAttribute(hash_key=True, attr_name=PARTITION_KEY)
    sk = UnicodeAttribute(range_key=True, attr_name=SORT_KEY)
    armed_at = NumberAttribute(default=0)  # epoch seconds of the armed minute; 0 = epoch expression
    version = NumberAttribute(default=0)
    published = NumberAttribute(default=0)  # the last version a PutRule was confirmed for
    repaired = NumberAttribute(null=True)  # the version a reader took it upon itself to publish
    kicked_at = NumberAttribute(null=True)
    waiter_at = NumberAttribute(null=True)  # epoch seconds the waiting worker wakes at
    waiter_until = NumberAttribute(null=True)  # epoch seconds the waiting worker is alive until
    waiter_owner = UnicodeAttribute(null=True)
    # `<shard>` -> the shard's head in epoch milliseconds (nexttick.store.rule, "shard heads").
    heads: MapAttribute[str, Any] = MapAttribute(null=True)
    # `<shard>` -> the sort key the shard's reads start at (nexttick.store.rule, "shard cursors").
    cursors: MapAttribute[str, Any] = MapAttribute(null=True)


class LatenessItem(Model):
    """pk=L#<YYYY-MM-DDTHH>, sk=<MM> — how late the runs started in one UTC minute were: a count per
    bucket of `nexttick.store.lateness.LATENESS_EDGES_MS` (`b<i>`), added to by every worker pass."""

    class Meta:
        table_name: str | None = None

    pk = UnicodeAttribute(hash_key=True, attr_name=PARTITION_KEY)
    sk = UnicodeAttribute(range_key=True, attr_name=SORT_KEY)
    b0 = NumberAttribute(null=True)
    b1 = NumberAttribute(null=True)
    b2 = NumberAttribute(null=True)
    b3 = NumberAttribute(null=True)
    b4 = NumberAttribute(null=True)
    b5 = NumberAttribute(null=True)
    b6 = NumberAttribute(null=True)
    b7 = NumberAttribute(null=True)
    b8 = NumberAttribute(null=True)
    b9 = NumberAttribute(null=True)
    b10 = NumberAttribute(null=True)
    b11 = NumberAttribute(null=True)
    b12 = NumberAttribute(null=True)
    total = NumberAttribute(null=True, attr_name="count")  # `Model.count` is a classmethod
    sum_ms = NumberAttribute(null=True)
    expires_at = TTLAttribute(null=True, attr_name=TTL_ATTRIBUTE)


@dataclass(frozen=True)
class BoundModels:
    task: type[TaskItem]
    queue: type[QueueItem]
    rule: type[RuleStateItem]
    run: type[RunItem]
    lateness: type[LatenessItem]


def bind_models(
    table_name: str,
    *,
    region: str,
    endpoint_url: str | None,
    credentials: tuple[str, str, str | None] | None = None,
    max_pool_connections: int | None = None,
) -> BoundModels:
    """Subclasses of the models pointed at one table / region / endpoint (one connection each)."""

    def bind(base: type[Model]) -> Any:
        meta_attrs: dict[str, Any] = {
            "table_name": table_name,
            "region": region,
            "host": endpoint_url,
            "max_retry_attempts": 5,
        }
        if max_pool_connections is not None:
            meta_attrs["max_pool_connections"] = max_pool_connections
        if credentials is not None:
            meta_attrs.update(
                aws_access_key_id=credentials[0],
                aws_secret_access_key=credentials[1],
                aws_session_token=credentials[2],
            )
        meta = type("Meta", (), meta_attrs)
        return type(f"{base.__name__}_{table_name.replace('-', '_')}", (base,), {"Meta": meta})

    return BoundModels(
        task=bind(TaskItem),
        queue=bind(QueueItem),
        rule=bind(RuleStateItem),
        run=bind(RunItem),
        lateness=bind(LatenessItem),
    )
