"""The keeper's decisions on the in-memory model of the rule protocol: which stream records schedule
something (decoded through the data layer's models), one covering call per batch kind (the earliest
due time too close to arm, the earliest armable one), and `RuleSync.confirm`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nexttick.constants import RULE_STATE_PK, RULE_STATE_SK, TASK_SK
from nexttick.keeper import Keeper, moves_rule, scheduled_due
from nexttick.rulearm import Outcome
from nexttick.rulesync import RuleSync
from nexttick.ruletiming import Timing
from nexttick.store.keys import queue_sort_key, shard_of, task_pk
from nexttick.store.models import RuleStateItem, TaskItem
from nexttick.store.records import RuleState
from nexttick.timeutil import to_epoch
from tests.support.rule_models import FixedClock, ModelRule, ModelStore, ModelTrigger

NOW = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)
S = timedelta(seconds=1)


class CountingStore(ModelStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def read_rule_state(self) -> RuleState:
        self.reads += 1
        return super().read_rule_state()


def _world() -> tuple[Keeper, CountingStore, ModelRule, ModelTrigger]:
    store, rule, trigger = CountingStore(), ModelRule(), ModelTrigger()
    sync = RuleSync(store, rule, trigger, Timing(), FixedClock(NOW))
    return Keeper(sync), store, rule, trigger


def task_item(
    task_id: str, status: str = "pending", due: datetime | None = None, run_now: datetime | None = None
) -> dict[str, Any]:
    extra = queue_sort_key(run_now, task_id, "tok") if run_now else None
    entry = queue_sort_key(due, task_id, "q") if due else None  # its schedule's entry, at its due time
    item = TaskItem(
        task_pk(task_id),
        TASK_SK,
        task_id=task_id,
        status=status,
        due=due,
        action="log",
        extra_key=extra,
        queue_key=entry,
        queue_parked=status == "paused",
    )
    return item.serialize(null_check=False)


def rule_item(armed: datetime | None, version: int, waiter_at: datetime | None = None) -> dict[str, Any]:
    item = RuleStateItem(
        RULE_STATE_PK,
        RULE_STATE_SK,
        armed_at=int(to_epoch(armed)) if armed else 0,
        version=version,
        waiter_at=to_epoch(waiter_at) if waiter_at else None,
    )
    return item.serialize(null_check=False)


def record(event: str, new: dict[str, Any] | None, old: dict[str, Any] | None = None) -> dict[str, Any]:
    image = new or old
    assert image is not None
    change: dict[str, Any] = {"Keys": {k: image[k] for k in ("pk", "sk")}}
    if new is not None:
        change["NewImage"] = new
    if old is not None:
        change["OldImage"] = old
    return {"eventName": event, "eventSource": "aws:dynamodb", "dynamodb": change}


def created(task_id: str, due: datetime) -> dict[str, Any]:
    return record("INSERT", task_item(task_id, due=due))


# ---------------------------------------------------------------- what schedules something
@pytest.mark.parametrize(
    ("rec", "expected"),
    [
        (created("a", NOW + 100 * S), NOW + 100 * S),  # a create
        (record("MODIFY", task_item("a", due=NOW + 50 * S), task_item("a", due=NOW + 100 * S)), NOW + 50 * S),
        (record("MODIFY", task_item("a", due=NOW + 9 * S), task_item("a", "failed")), NOW + 9 * S),
        (record("MODIFY", task_item("a", due=NOW + 100 * S), task_item("a", due=NOW + 100 * S)), None),
        (record("MODIFY", task_item("a", "cancelled"), task_item("a", due=NOW + 100 * S)), None),
        (record("MODIFY", task_item("a", "succeeded"), task_item("a", due=NOW + 100 * S)), None),
        (record("REMOVE", None, task_item("a", due=NOW + 100 * S)), None),
        (record("INSERT", {"pk": {"S": "Q#003"}, "sk": {"S": "2030-01-07T09:02:10.000000Z#a#t"}}), None),
        (record("INSERT", rule_item(NOW, 1)), None),
        (
            record(
                "MODIFY", task_item("a", due=NOW + 100 * S, run_now=NOW), task_item("a", due=NOW + 100 * S)
            ),
            NOW,
        ),
        (
            record(
                "MODIFY",
                task_item("a", "paused", NOW + 100 * S, NOW),
                task_item("a", "paused", NOW + 100 * S),
            ),
            NOW,
        ),
        (
            record(
                "MODIFY",
                task_item("a", due=NOW + 100 * S, run_now=NOW),
                task_item("a", due=NOW + 100 * S, run_now=NOW),
            ),
            None,
        ),
        (record("MODIFY", task_item("a", "paused", NOW + 100 * S), task_item("a", due=NOW + 100 * S)), None),
    ],
    ids=[
        "insert",
        "moved",
        "pending-again",
        "payload-update",
        "cancel",
        "done",
        "remove",
        "entry",
        "rule",
        "run-now",
        "run-now-paused",
        "run-now-unchanged",
        "pause",
    ],
)
def test_only_a_pending_task_with_a_new_due_time_schedules_something(
    rec: dict[str, Any], expected: datetime | None
) -> None:
    scheduled = scheduled_due(rec)
    assert (scheduled[1] if scheduled else None) == expected


@pytest.mark.parametrize(
    ("rec", "expected"),
    [
        (record("INSERT", rule_item(NOW + 60 * S, 1)), True),
        (record("MODIFY", rule_item(NOW + 60 * S, 2), rule_item(NOW + 120 * S, 1)), True),
        (record("MODIFY", rule_item(NOW + 60 * S, 2), rule_item(NOW + 60 * S, 1)), True),  # sync's bump
        (record("MODIFY", rule_item(NOW + 60 * S, 2, NOW + 90 * S), rule_item(NOW + 60 * S, 2)), False),
        (record("REMOVE", None, rule_item(NOW + 60 * S, 2)), False),
        (created("a", NOW + 100 * S), False),
    ],
    ids=["first-cas", "moved", "version-bump", "waiter-claim", "remove", "task"],
)
def test_only_a_rule_record_change_of_minute_or_version_moves_the_rule(
    rec: dict[str, Any], expected: bool
) -> None:
    assert moves_rule(rec) is expected


# ---------------------------------------------------------------- one covering call per kind
def test_a_batch_costs_one_call_for_its_earliest_close_due_time_and_one_for_its_earliest_armable_one() -> (
    None
):
    # Given a batch: two tasks too close to arm, three armable ones (one twice, out of order)
    keeper, store, rule, trigger = _world()
    batch = [
        created("far", NOW + 600 * S),
        created("soon-2", NOW + 40 * S),
        created("armable", NOW + 100 * S),
        created("soon-1", NOW + 20 * S),
        created("far", NOW + 600 * S),
        created("later", NOW + 200 * S),
    ]
    # When the keeper handles it
    report = keeper.handle(batch)
    # Then the worker was invoked once (for the earliest close one) and the rule armed once, for the
    # earliest armable minute, which covers the later ones
    assert report.outcomes == [Outcome.INVOKED, Outcome.ARMED]
    assert len(trigger.wakes) == 1 and rule.puts == 1
    assert rule.minute == store.armed == Timing().fire_minute(NOW + 100 * S)
    # When the same batch arrives again (a retry or a duplicate delivery)
    reads, puts = store.reads, rule.puts
    again = keeper.handle(batch[::-1])
    # Then the batch costs one read (every head already covers it; the covers and the close one go on
    # from that read), the armable time one more (the close one may have moved the record), and
    # nothing moves (the close one is handed over again: no waiter claims it in this model)
    assert again.outcomes == [Outcome.INVOKED, Outcome.COVERED]
    assert rule.puts == puts and store.reads == reads + 2


def test_entries_that_already_ran_are_read_once_and_skipped_for_the_next_one() -> None:
    # Given a batch of two tasks too close to arm in one shard, the earlier already run (its worker
    # raised the head past both: the later one's client died before it lowered it)
    keeper, store, _rule, trigger = _world()
    ran, orphan = "a", next(t for t in "bcdefgh" if shard_of(t, store.shards) == shard_of("a", store.shards))
    shard = shard_of(ran, store.shards)
    assert store.raise_shard_heads(store.read_rule_state(), {shard: NOW + 3600 * S})
    store.ended.add(queue_sort_key(NOW + 10 * S, ran, "q"))
    # When the keeper handles it
    report = keeper.handle([created(ran, NOW + 10 * S), created(orphan, NOW + 20 * S)])
    # Then it passed over the one that ran, lowered the head for the other and invoked a worker once
    assert report.finished == 1 and report.outcomes == [Outcome.INVOKED]
    assert store.read_rule_state().head_of(shard) == NOW + 20 * S and len(trigger.wakes) == 1


def test_a_batch_lowers_the_head_of_every_queue_shard_it_wrote_to() -> None:
    # Given a record whose shard heads are both an hour away
    keeper, store, _rule, _trigger = _world()
    hour = NOW + 3600 * S
    assert store.raise_shard_heads(store.read_rule_state(), {0: hour, 1: None})
    ids = {shard_of(task_id, store.shards): task_id for task_id in ("a", "b", "c", "d")}
    # When tasks in both shards were created (an editor died before it lowered their heads)
    keeper.handle(
        [created(ids[0], NOW + 300 * S), created(ids[0], NOW + 200 * S), created(ids[1], NOW + 900 * S)]
    )
    # Then each shard's head is its earliest new entry
    assert store.read_rule_state().heads == {0: NOW + 200 * S, 1: NOW + 900 * S}


def test_a_batch_with_nothing_to_cover_makes_no_call() -> None:
    keeper, store, rule, trigger = _world()
    report = keeper.handle([record("MODIFY", task_item("a", "succeeded"), task_item("a", due=NOW))])
    assert report.outcomes == [] and store.reads == 0 and rule.puts == 0 and trigger.wakes == []


# ---------------------------------------------------------------- confirm
def test_confirm_publishes_a_record_that_is_ahead_of_the_rule() -> None:
    # Given a record lowered by a client that died before its PutRule
    keeper, store, rule, trigger = _world()
    minute = NOW.replace(second=0) + 2 * timedelta(minutes=1)
    store.cas_rule_state(0, minute)
    # When the keeper sees the record move / Then the rule is published to match it
    assert keeper.rule_sync.confirm()[0] is Outcome.ARMED
    assert rule.minute == minute and trigger.wakes == []
    # And a second look changes nothing
    assert keeper.rule_sync.confirm()[0] is Outcome.UNCHANGED and rule.puts == 1


def test_confirm_hands_a_minute_that_is_no_longer_armable_to_the_worker() -> None:
    keeper, store, rule, trigger = _world()
    store.cas_rule_state(0, NOW.replace(second=0) + timedelta(minutes=1))  # starts in 30 s: armable
    store.cas_rule_state(1, NOW.replace(second=0))  # the current minute: too late to publish
    assert keeper.rule_sync.confirm()[0] is Outcome.INVOKED
    assert rule.puts == 0 and len(trigger.wakes) == 1


# ---------------------------------------------------------------- a batch of rule moves only
def _moves(*states: tuple[datetime | None, int]) -> list[dict[str, Any]]:
    """The stream records of the rule record's writes, in the stream's order (armed, version)."""
    images = [rule_item(armed, version) for armed, version in states]
    return [
        record("MODIFY", new, old) for old, new in zip([rule_item(None, 0), *images], images, strict=False)
    ]


def test_a_batch_of_rule_moves_the_rule_already_holds_reads_nothing() -> None:
    # Given a record moved twice and the rule holding its last value
    keeper, store, rule, _ = _world()
    minute = NOW.replace(second=0) + 3 * timedelta(minutes=1)
    store.cas_rule_state(0, minute + timedelta(minutes=1))
    store.cas_rule_state(1, minute)
    rule.put(minute)
    # When the keeper handles their stream records
    report = keeper.handle(_moves((minute + timedelta(minutes=1), 1), (minute, 2)))
    # Then it compares the rule with the last image and reads nothing
    assert report.outcomes == [Outcome.UNCHANGED] and store.reads == 0 and rule.puts == 1


def test_a_batch_of_rule_moves_trusts_only_its_last_image() -> None:
    # Given a rule holding the first of two moves: the second's writer died before its PutRule
    keeper, store, rule, trigger = _world()
    minute = NOW.replace(second=0) + 3 * timedelta(minutes=1)
    store.cas_rule_state(0, minute + timedelta(minutes=1))
    rule.put(minute + timedelta(minutes=1))
    store.cas_rule_state(1, minute)
    # When the keeper handles both records
    report = keeper.handle(_moves((minute + timedelta(minutes=1), 1), (minute, 2)))
    # Then it reads the record and publishes the later value
    assert report.outcomes == [Outcome.ARMED] and store.reads >= 1
    assert rule.minute == minute and trigger.wakes == []


def test_a_batch_that_covers_a_task_reads_the_record_even_if_the_rule_holds_its_image() -> None:
    # Given a task's write and a rule move in one batch, the rule holding the move's minute
    keeper, store, rule, _ = _world()
    minute = NOW.replace(second=0) + 3 * timedelta(minutes=1)
    store.cas_rule_state(0, minute)
    rule.put(minute)
    # When the keeper handles them / Then the cover is decided on a read made after the task's write
    keeper.handle([*_moves((minute, 1)), created("a", minute + 20 * S)])
    assert store.reads >= 1
