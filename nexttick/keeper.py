"""The keeper: every committed task gets covered, whatever happens to the client that committed it.

An editor commits a task, then arms the rule or invokes the worker. A client that dies in between
(an API Lambda at its timeout, a crashed library user, a killed `nexttick add`) leaves a pending
task that nothing would run. The table's stream is the outbox of those commits: for each batch of
stream records the keeper does what the client may not have done —

* a task whose new image is pending with a queue entry it did not have before (created, rescheduled,
  moved on or queued for a retry by the worker) -> `RuleSync.cover_shard` (head and cursor) for the
  earliest such entry of each queue shard, then `RuleSync.on_task_due` for the batch's earliest
  entry time too close to arm and its earliest armable one. Either call covers every later task of
  the batch: a lower that finds (or makes) the record armed at or before a minute covers all later
  minutes (the store/load argument of docs/architecture.md), and an invoked or already waiting
  worker reads the shard heads after these lowerings and re-arms for them;
* a rule-record change of armed minute or version -> `RuleSync.confirm`: the rule is made to match
  the record (a client that died between its CAS and its PutRule);
* a task removed by its TTL whose payload has an item of its own -> that item is deleted (it has
  no TTL: it lives as long as its task).

Both start from a fresh strongly consistent read (one per batch: each step goes on from the record
as the step before read or wrote it), never from a task's images, so a record that arrives twice,
late or out of order is harmless: covering an already covered time costs one read. A batch with
only rule-record changes reads nothing when the rule already holds the minute of the record's last
image in it: the stream delivers that item's writes in order, so a later one comes in a later batch.
Queue entries, other removals and other item changes are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, cast

from nexttick.rulearm import UNSEEN, Outcome
from nexttick.rulesync import RuleSync
from nexttick.store.keys import shard_of, split_queue_sort_key
from nexttick.store.records import RUNNABLE_NOW, RuleState, TaskStatus
from nexttick.store.streams import (
    ItemKind,
    item_kind,
    new_rule_image,
    removed_payload,
    rule_image,
    task_image,
)

_CHANGES = ("INSERT", "MODIFY")


@dataclass
class KeeperReport:
    """What one batch held and what the keeper did about it."""

    records: int = 0
    scheduled: int = 0  # task changes that set a pending due time
    rule_moves: int = 0  # rule-record changes of armed minute or version
    payloads_dropped: int = 0  # payload items of tasks their TTL removed
    outcomes: list[Outcome] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "scheduled": self.scheduled,
            "rule_moves": self.rule_moves,
            "payloads_dropped": self.payloads_dropped,
            "outcomes": [o.value for o in self.outcomes],
        }


def scheduled_due(record: Mapping[str, Any]) -> tuple[str, datetime, str] | None:
    """The task, and the time and sort key of the entry a task stream record newly schedules, or
    None (not a task, not pending, entries unchanged, a removal): its schedule's entry (next
    occurrence or retry), or a "run now" occurrence just asked for (pending, paused, or a failed
    task's retry), whichever is earlier."""
    change = record.get("dynamodb", {})
    if record.get("eventName") not in _CHANGES or item_kind(change.get("Keys", {})) is not ItemKind.TASK:
        return None
    new = task_image(change["NewImage"])
    old = task_image(change["OldImage"]) if "OldImage" in change else None
    wanted: list[str] = []  # entry keys: they sort by run time first
    # A payload or policy update leaves the entry as it was: it was covered when it was written.
    new_entry = old is None or old.status != TaskStatus.PENDING or old.entry_key != new.entry_key
    if new.status == TaskStatus.PENDING and new.entry_key is not None and new_entry:
        wanted.append(new.entry_key)
    new_run_now = old is None or old.run_now_key != new.run_now_key
    if new.run_now_key is not None and new.status in RUNNABLE_NOW and new_run_now:
        wanted.append(new.run_now_key)
    if not wanted:
        return None
    key = min(wanted)
    return new.task_id, split_queue_sort_key(key)[0], key


def moves_rule(record: Mapping[str, Any]) -> bool:
    """True for a rule-record change of armed minute or version (not a waiter claim or a kick)."""
    change = record.get("dynamodb", {})
    if record.get("eventName") not in _CHANGES or item_kind(change.get("Keys", {})) is not ItemKind.RULE:
        return False
    if "OldImage" not in change:
        return True
    return rule_image(change["OldImage"]) != rule_image(change["NewImage"])


class PayloadItems(Protocol):
    def drop_payload(self, task_id: str, ref: str) -> None: ...


class Keeper:
    """Covers a batch of stream records (the keeper Lambda's whole job). `payloads`: where removed
    tasks' payload items are deleted (default: the rule sync's store, the task store)."""

    def __init__(self, rule_sync: RuleSync, payloads: PayloadItems | None = None) -> None:
        self.rule_sync = rule_sync
        self.payloads = payloads if payloads is not None else cast(PayloadItems, rule_sync.store)

    def handle(self, records: Iterable[Mapping[str, Any]]) -> KeeperReport:
        report = KeeperReport()
        earliest: dict[int, tuple[datetime, str]] = {}  # by queue shard: due time, entry key
        latest_rule: Mapping[str, Any] | None = None  # the batch's last image of the rule record
        for record in records:
            report.records += 1
            latest_rule = new_rule_image(record) or latest_rule
            scheduled = scheduled_due(record)
            if scheduled is not None:
                task_id, due, key = scheduled
                shard = shard_of(task_id, self.rule_sync.store.shards)
                earliest[shard] = min((due, key), earliest.get(shard, (due, key)))
                report.scheduled += 1
            elif moves_rule(record):
                report.rule_moves += 1
            elif (payload := removed_payload(record)) is not None:
                self.payloads.drop_payload(*payload)
                report.payloads_dropped += 1
        rule: RuleState | None = None  # the record as last read or written here (after the batch's writes)
        if report.rule_moves:
            # With nothing to cover, the batch's last image of the record will do for the comparison
            # with the rule; a cover needs a read made after its entry's write.
            seen = (
                rule_image(latest_rule).armed_minute if latest_rule is not None and not earliest else UNSEEN
            )
            outcome, rule = self.rule_sync.confirm(seen)
            report.outcomes.append(outcome)
        for shard, (due, key) in earliest.items():
            rule = self.rule_sync.cover_shard(shard, due, rule, key=key)
        shards = {due: shard for shard, (due, _) in earliest.items()}
        for due in self._representatives(set(shards)):
            # The first decides on the record as covered; a second reads it again (the first may
            # have moved it).
            report.outcomes.append(self.rule_sync.on_task_due(due, shards[due], rule))
            rule = None
        return report

    def _representatives(self, dues: set[datetime]) -> list[datetime]:
        """The earliest due time too close to arm and the earliest armable one (either may be absent)."""
        timing, now = self.rule_sync.timing, self.rule_sync.clock.now()
        ordered = sorted(dues)
        close = next((d for d in ordered if not timing.armable(timing.fire_minute(d), now)), None)
        armable = next((d for d in ordered if timing.armable(timing.fire_minute(d), now)), None)
        return [d for d in (close, armable) if d is not None]
