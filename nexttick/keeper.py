"""The keeper: every committed task gets covered, whatever happens to the client that committed it.

An editor commits a task, then arms the rule or invokes the worker. A client that dies in between
(an API Lambda at its timeout, a crashed library user, a killed `nexttick add`) leaves a pending
task that nothing would run. The table's stream is the outbox of those commits: for each batch of
stream records the keeper does what the client may not have done —

* a task whose new image is pending with a queue entry it did not have before (created, rescheduled,
  moved on or queued for a retry by the worker) -> `RuleSync.cover_shard` (head and cursor) for the
  earliest such entry of each queue shard that has not run yet, then `RuleSync.on_task_due` for the
  batch's earliest entry too close to arm that has not run yet (or that a waiter covers) and its
  earliest armable one. Either call covers every later task of
  the batch: a lower that finds (or makes) the record armed at or before a minute covers all later
  minutes (the store/load argument of docs/architecture.md), and an invoked or already waiting
  worker reads the shard heads after these lowerings and re-arms for them;
* a rule-record change of armed minute or version -> `RuleSync.confirm`: the rule is made to match
  the record (a client that died between its CAS and its PutRule);
* a task removed by its TTL whose payload has an item of its own -> that item is deleted (it has
  no TTL: it lives as long as its task).

Both start from a fresh strongly consistent read (one per batch: each step goes on from the record
as the step before read or wrote it), never from a task's images, so a record that arrives twice,
late or out of order is harmless: covering an already covered time costs one read. Before it lowers
a head or invokes a worker for an entry, the keeper reads that entry (strongly consistent, its token
alone): one that already ran needs neither. That is the common case for a task due at once, whose
editor's worker has often run it before its record reaches the keeper; without the read, each
such task would cost a second invocation, and a lowering that sends the next worker to read its
shard again. An entry still there, leased or not, is covered as before. A batch with
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
    finished: int = 0  # scheduled entries read before a cover and found already run (or moved)
    outcomes: list[Outcome] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "scheduled": self.scheduled,
            "rule_moves": self.rule_moves,
            "payloads_dropped": self.payloads_dropped,
            "finished": self.finished,
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


class EntryReader(Protocol):
    def holds_entry(self, shard: int, key: str) -> bool: ...


class Keeper:
    """Covers a batch of stream records (the keeper Lambda's whole job). `payloads`: where removed
    tasks' payload items are deleted (default: the rule sync's store, the task store)."""

    def __init__(self, rule_sync: RuleSync, payloads: PayloadItems | None = None) -> None:
        self.rule_sync = rule_sync
        self.payloads = payloads if payloads is not None else cast(PayloadItems, rule_sync.store)
        self.entries = cast(EntryReader, rule_sync.store)

    def handle(self, records: Iterable[Mapping[str, Any]]) -> KeeperReport:
        report = KeeperReport()
        scheduled: set[tuple[datetime, str, int]] = set()  # newly scheduled entries: due, key, shard
        latest_rule: Mapping[str, Any] | None = None  # the batch's last image of the rule record
        for record in records:
            report.records += 1
            latest_rule = new_rule_image(record) or latest_rule
            entry = scheduled_due(record)
            if entry is not None:
                task_id, due, key = entry
                scheduled.add((due, key, shard_of(task_id, self.rule_sync.store.shards)))
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
                rule_image(latest_rule).armed_minute if latest_rule is not None and not scheduled else UNSEEN
            )
            outcome, rule = self.rule_sync.confirm(seen)
            report.outcomes.append(outcome)
        if scheduled:
            self.cover(scheduled, rule, report)
        return report

    def cover(
        self, scheduled: set[tuple[datetime, str, int]], rule: RuleState | None, report: KeeperReport
    ) -> None:
        """Cover a batch's newly scheduled entries (due time, sort key, queue shard), deciding on
        `rule` (the record as last read or written after the batch's writes; None: read it), and note
        in `report` what it did."""
        unfinished = _UnfinishedEntries(self.entries, report)
        rule = rule or self.rule_sync.store.read_rule_state()
        for shard in sorted({shard for _, _, shard in scheduled}):
            mine = sorted((due, key) for due, key, s in scheduled if s == shard)
            rule = self._cover(shard, mine, rule, unfinished)
        for due, shard in self._representatives(sorted(scheduled), rule, unfinished):
            # The first decides on the record as covered; a second reads it again (the first may
            # have moved it).
            report.outcomes.append(self.rule_sync.on_task_due(due, shard, rule))
            rule = None

    def _cover(
        self, shard: int, entries: list[tuple[datetime, str]], rule: RuleState, unfinished: _UnfinishedEntries
    ) -> RuleState:
        """Lower `shard`'s head and cursor for the earliest of its new `entries` (in order) that they do
        not cover and that has not run yet; covering it covers the later ones. Returns the record as
        read or written."""
        for due, key in entries:
            if self.rule_sync.head_covers(rule, shard, due, key):
                break
            if unfinished(shard, key):
                return self.rule_sync.cover_shard(shard, due, rule, key=key)
        return rule

    def _representatives(
        self, scheduled: list[tuple[datetime, str, int]], rule: RuleState, unfinished: _UnfinishedEntries
    ) -> list[tuple[datetime, int]]:
        """The earliest entry too close to arm that a waiter covers or that has not run yet, and the
        earliest armable one (either may be absent), as due time and shard."""
        timing, now = self.rule_sync.timing, self.rule_sync.clock.now()
        chosen: list[tuple[datetime, int]] = []
        close = [e for e in scheduled if not timing.armable(timing.fire_minute(e[0]), now)]
        for due, key, shard in close:
            if self.rule_sync.waiter_covers(rule, due) or unfinished(shard, key):
                chosen.append((due, shard))
                break
        armable = next((e for e in scheduled if timing.armable(timing.fire_minute(e[0]), now)), None)
        if armable is not None:
            chosen.append((armable[0], armable[2]))
        return chosen


class _UnfinishedEntries:
    """Whether an entry is still in its shard, unfinished: read once per batch and entry, and only
    for an entry the keeper would otherwise act on."""

    def __init__(self, store: EntryReader, report: KeeperReport) -> None:
        self._store = store
        self._report = report
        self._known: dict[tuple[int, str], bool] = {}

    def __call__(self, shard: int, key: str) -> bool:
        if (shard, key) not in self._known:
            held = self._known[shard, key] = self._store.holds_entry(shard, key)
            self._report.finished += not held
        return self._known[shard, key]
