"""In-memory models of the rule protocol's world.

* Direct models (`ModelStore`, `ModelRule`, `ModelTrigger`, `FixedClock`): plain objects with the
  DynamoDB items' linearizable semantics, for tests that call RuleSync directly.
* The model checker (`Scenario`, `check`): editors, workers (the real `Worker.run` loop over a model
  queue), the keeper and EventBridge are actors whose every AWS call is a scheduling point; a model
  clock advances; any actor may crash after any of its steps; PutRules are slow (sent, then landed,
  with anything in between) and land in any order; every actor's clock is off by a bounded skew.
  `check` explores every schedule within a scenario's budgets, depth first, each distinct state
  once, and reports what violates I1 (every committed task runs, on time) and I2 (the rule at rest).
* Mutants: the protocol with one defect put back. Each must be caught by some scenario.

What the model leaves out is written down in docs/architecture.md ("What the model checks").
"""

from __future__ import annotations

import logging
import os
import pickle
import random
from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from nexttick.config import Precision
from nexttick.keeper import Keeper, KeeperReport
from nexttick.rulearm import UNSEEN, Outcome
from nexttick.rulehead import DueShards, head_later, key_after
from nexttick.rulesync import RearmResult, RuleSync
from nexttick.ruletiming import Timing
from nexttick.rulewait import WaitClaim, WaitIntent
from nexttick.runtime import Runtime
from nexttick.store import rule_state_of_message
from nexttick.store.records import RuleState, ShardFront, WaiterClaim
from nexttick.worker.loop import Worker
from nexttick.worker.report import PassResult, RunReport
from tests.support.interleave import Op, Replay, Stepper

TIMING = Timing(precision=Precision.SECOND)
# The long run (`NEXTTICK_MODEL_SOAK=1`): larger scenarios and budgets than the suite can afford.
SOAK = os.environ.get("NEXTTICK_MODEL_SOAK") == "1"
BASE = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)  # model time 0
S = timedelta(seconds=1)
M = timedelta(minutes=1)
# The model's queue has two shards (a task's shard is a function of its id, as in the store) and a
# pass that finds this many due entries stands for one that fills the pool: it fans out.
SHARDS = 2
FAN_OUT_AT = 2


def shard_of(task_id: str) -> int:
    return sum(map(ord, task_id)) % SHARDS


_UNKNOWN = object()


def _frozen_heads(
    read: RuleState, heads: Mapping[int, datetime | None], cursors: Mapping[int, Any] | None = None
) -> tuple[Any, ...]:
    """A raise's arguments as the model's operations carry them (hashable): the heads as read and
    as set, the cursors as read and as set."""
    before = None if read.heads is None else tuple(sorted(read.heads.items()))
    cursors_before = None if read.cursors is None else tuple(sorted(read.cursors.items()))
    return before, tuple(sorted(heads.items())), cursors_before, tuple(sorted((cursors or {}).items()))


def _frozen(mapping: Mapping[int, Any] | None) -> tuple[tuple[int, Any], ...] | None:
    return None if mapping is None else tuple(sorted(mapping.items()))


def at(seconds: float) -> datetime:
    """The model instant `seconds` after BASE."""
    return BASE + timedelta(seconds=seconds)


# ------------------------------------------------------------------------------ the rule record


@dataclass(frozen=True)
class Record:
    """The rule record item; every transition is one linearizable conditional write."""

    armed: datetime | None = None
    version: int = 0
    published: int = 0
    repaired: int | None = None
    kicked: datetime | None = None
    waiter_at: datetime | None = None
    waiter_until: datetime | None = None
    waiter_owner: str | None = None
    heads: tuple[tuple[int, datetime | None], ...] | None = None  # by shard, sorted; None: none yet
    # By shard, sorted: where reads of the shard start (a queue key, or `(instant,)`); None: none yet.
    cursors: tuple[tuple[int, Any], ...] | None = None

    def state(self) -> RuleState:
        return RuleState(
            armed_minute=self.armed,
            version=self.version,
            published_version=self.published,
            repair_version=self.repaired,
            kicked_at=self.kicked,
            waiter_at=self.waiter_at,
            waiter_until=self.waiter_until,
            waiter_owner=self.waiter_owner,
            heads=None if self.heads is None else dict(self.heads),
            cursors=None if self.cursors is None else dict(self.cursors),
        )

    def lower(self, shard: int, at: datetime | None, key: Any) -> tuple[Record, RuleState | None]:
        """One write lowering the head to `at` and the cursor to `key` (those given), each only while
        the recorded value is later; nothing when a condition fails."""
        heads, cursors = dict(self.heads or ()), dict(self.cursors or ())
        if at is not None:
            if shard not in heads or not head_later(heads[shard], at):
                return self, None
            heads[shard] = at
        if key is not None:
            if shard not in cursors or not cursors[shard] > key:
                return self, None
            cursors[shard] = key
        record = replace(
            self,
            heads=_frozen(heads) if at is not None else self.heads,
            cursors=_frozen(cursors) if key is not None else self.cursors,
        )
        return record, record.state()

    def raise_heads(
        self,
        read: tuple[tuple[int, datetime | None], ...] | None,
        new: tuple[tuple[int, datetime | None], ...],
        cursors_read: tuple[tuple[int, Any], ...] | None = None,
        cursors_new: tuple[tuple[int, Any], ...] = (),
    ) -> tuple[Record, bool]:
        """`read`: the heads (and cursors) as the raiser read them; `new`: what it sets. One write:
        all of it, or nothing when any value changed since the read."""
        changed: dict[str, tuple[tuple[int, Any], ...] | None] = {}
        for name, current, before, wanted in (
            ("heads", self.heads, read, new),
            ("cursors", self.cursors, cursors_read, cursors_new),
        ):
            if not wanted:
                continue
            if before is None:
                if current is not None:
                    return self, False
                changed[name] = wanted
                continue
            if current is None:
                return self, False
            values, was = dict(current), dict(before)
            if any(values.get(shard, _UNKNOWN) != was.get(shard, _UNKNOWN) for shard, _ in wanted):
                return self, False
            changed[name] = _frozen(values | dict(wanted))
        return replace(self, **changed), True  # type: ignore[arg-type]

    def rearm(
        self,
        expected: int,
        minute: datetime | None,
        read: tuple[tuple[int, datetime | None], ...] | None,
        new: tuple[tuple[int, datetime | None], ...],
        cursors_read: tuple[tuple[int, Any], ...] | None,
        cursors_new: tuple[tuple[int, Any], ...],
        waiter: WaiterClaim | None,
    ) -> tuple[Record, RuleState | None]:
        """A re-arm's one write: `cas` (with its claim) and `raise_heads`; nothing when a condition
        fails."""
        if self.version != expected:
            return self, None
        raised, done = self.raise_heads(read, new, cursors_read, cursors_new)
        if not done:
            return self, None
        record, version = raised.cas(expected, minute, waiter)
        if version is None:
            return self, None
        return record, record.state()

    def lower_and_arm(
        self, shard: int, at: datetime | None, key: Any, expected: int, minute: datetime
    ) -> tuple[Record, RuleState | None]:
        """`lower` and `cas` in one write: nothing when either's condition fails."""
        if self.version != expected:
            return self, None
        lowered, result = self.lower(shard, at, key)
        if result is None:
            return self, None
        record = replace(lowered, armed=minute, version=expected + 1)
        return record, record.state()

    def cas(
        self, expected: int, minute: datetime | None, waiter: WaiterClaim | None = None
    ) -> tuple[Record, int | None]:
        """The armed minute's compare-and-set, taking `waiter`'s claim in the same write (if it may)."""
        if self.version != expected:
            return self, None
        record = replace(self, armed=minute, version=expected + 1)
        if waiter is not None:
            if not waiter.takes_over(self.state()):
                return self, None
            record = replace(
                record, waiter_at=waiter.at, waiter_until=waiter.until, waiter_owner=waiter.owner
            )
        return record, expected + 1

    def confirm(self, version: int) -> tuple[Record, RuleState | None]:
        if self.version != version:
            return self, None
        record = replace(self, published=version)
        return record, record.state()

    def claim_repair(self, version: int) -> tuple[Record, bool]:
        if self.version != version or self.published == version or self.repaired == version:
            return self, False
        return replace(self, repaired=version), True

    def claim_waiter(
        self, at: datetime, owner: str, until: datetime, stale_before: datetime, expected: int | None
    ) -> tuple[Record, bool]:
        free = WaiterClaim(at, owner, until, stale_before).takes_over(self.state())
        if expected is not None and not (self.version == expected == self.published):
            free = False
        if not free:
            return self, False
        return replace(self, waiter_at=at, waiter_until=until, waiter_owner=owner), True

    def release_waiter(self, owner: str | None, at: datetime) -> tuple[Record, RuleState | None]:
        if (owner is not None and self.waiter_owner != owner) or self.waiter_at != at:
            return self, None
        record = replace(self, waiter_at=None, waiter_until=None, waiter_owner=None)
        return record, record.state()

    def mark_kicked(self, now: datetime, not_since: datetime) -> tuple[Record, bool]:
        if self.kicked is not None and self.kicked >= not_since:
            return self, False
        return replace(self, kicked=now), True


# ------------------------------------------------------------------------------ direct models


class FixedClock:
    def __init__(self, now: datetime) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now

    def sleep(self, seconds: float) -> None:  # pragma: no cover - the protocol never sleeps
        raise AssertionError("rule sync must not sleep")


class ModelStore:
    """Queue heads + rule record with the same linearizable semantics as the DynamoDB items."""

    shards = SHARDS

    def __init__(self) -> None:
        self.entries: dict[str, datetime] = {}
        self.record = Record()
        self.ended: set[str] = set()  # entry keys that ran (the keeper's `holds_entry` says so)

    @property
    def armed(self) -> datetime | None:
        return self.record.armed

    @property
    def version(self) -> int:
        return self.record.version

    def add(self, task_id: str, due: datetime) -> None:
        self.entries[task_id] = due

    def remove(self, task_id: str) -> None:
        self.entries.pop(task_id, None)

    def read_rule_state(self) -> RuleState:
        return self.record.state()

    def cas_rule_state(self, expected_version: int, armed_minute: datetime | None) -> int | None:
        self.record, result = self.record.cas(expected_version, armed_minute)
        return result

    def confirm_published(self, version: int) -> RuleState | None:
        self.record, result = self.record.confirm(version)
        return result

    def claim_repair(self, version: int) -> bool:
        self.record, result = self.record.claim_repair(version)
        return result

    def head(self) -> datetime | None:
        return min(self.entries.values(), default=None)

    def holds_entry(self, shard: int, key: str) -> bool:
        return key not in self.ended

    def shard_fronts(
        self,
        shards: Collection[int],
        cursors: Mapping[int, str] | None = None,
        *,
        now: datetime | None = None,
    ) -> dict[int, ShardFront]:
        """Heads only: this model's entries have no keys, so its reads justify no cursor."""
        return {
            s: ShardFront(min((d for i, d in self.entries.items() if shard_of(i) == s), default=None), None)
            for s in shards
        }

    def lower_shard(self, shard: int, at: datetime | None, key: str | None) -> RuleState | None:
        self.record, result = self.record.lower(shard, at, key)
        return result

    def lower_shard_and_arm(
        self, shard: int, at: datetime | None, key: str | None, expected_version: int, armed_minute: datetime
    ) -> RuleState | None:
        self.record, result = self.record.lower_and_arm(shard, at, key, expected_version, armed_minute)
        return result

    def raise_shard_heads(
        self,
        read: RuleState,
        heads: Mapping[int, datetime | None],
        cursors: Mapping[int, str] | None = None,
    ) -> bool:
        self.record, result = self.record.raise_heads(*_frozen_heads(read, heads, cursors))
        return result

    def rearm_record(
        self,
        read: RuleState,
        armed_minute: datetime | None,
        heads: Mapping[int, datetime | None],
        cursors: Mapping[int, str],
        waiter: WaiterClaim | None = None,
    ) -> RuleState | None:
        before, new, cursors_before, cursors_new = _frozen_heads(read, heads, cursors)
        self.record, result = self.record.rearm(
            read.version, armed_minute, before, new, cursors_before, cursors_new, waiter
        )
        return result

    def try_mark_kicked(self, now: datetime, not_since: datetime) -> bool:
        self.record, result = self.record.mark_kicked(now, not_since)
        return result

    def claim_waiter(
        self,
        at: datetime,
        owner: str,
        until: datetime,
        stale_before: datetime,
        *,
        expected_version: int | None = None,
    ) -> bool:
        self.record, result = self.record.claim_waiter(at, owner, until, stale_before, expected_version)
        return result

    def release_waiter(self, owner: str | None, at: datetime) -> RuleState | None:
        self.record, result = self.record.release_waiter(owner, at)
        return result


class ModelRule:
    def __init__(self) -> None:
        self.minute: datetime | None = None
        self.puts = 0

    def put(self, minute: datetime | None) -> None:
        self.minute = minute
        self.puts += 1

    def current(self) -> datetime | None:
        return self.minute


class ModelTrigger:
    def __init__(self) -> None:
        self.wakes: list[str] = []

    def wake(self, reason: str) -> None:
        self.wakes.append(reason)


def rest_violation(
    timing: Timing,
    now: datetime,
    armed: datetime | str | None,
    rule_minute: object,
    pending: list[datetime],
    wakes: int,
) -> str | None:
    """I2 at rest: the rule matches the record, fires at or before the earliest armable pending
    minute and not in the past; a pending task too close to arm was handed to the worker."""
    if rule_minute != armed:
        return f"rule {rule_minute} != record {armed}"
    if isinstance(armed, str):
        return f"rule expression {armed!r} is not one the protocol writes"
    minutes = [timing.fire_minute(d) for d in pending]
    armable = [m for m in minutes if timing.armable(m, now)]
    if len(armable) < len(minutes) and wakes == 0:
        return "a task too close to arm is pending but the worker was never invoked"
    if armable:
        earliest = min(armable)
        if armed is None:
            return f"rule at the epoch while a task fires at {earliest}"
        if armed > earliest:
            return f"lost wake-up: rule armed for {armed}, a task needs {earliest}"
        if armed <= now - timedelta(minutes=1) and armed < earliest:
            return f"rule left on past minute {armed} while tasks are pending"
    return None


# ------------------------------------------------------------------------------ mutants


class NaiveRuleSync(RuleSync):
    """The reference proof of concept: read the head, PutRule it. No record, no compare-and-set."""

    uses_record = False

    def on_task_due(
        self, due: datetime, shard: int, covered: RuleState | None = None, *, key: str | None = None
    ) -> Outcome:
        minute = self.timing.fire_minute(due)
        if not self.timing.armable(minute, self.clock.now()):
            self._wake("due too soon to arm")
            return Outcome.INVOKED
        head = self._queue_head()
        self.rule.put(self.timing.fire_minute(head) if head else None)
        return Outcome.ARMED

    def due_shards(
        self, until: datetime, among: Collection[int] | None = None, read: RuleState | None = None
    ) -> DueShards:
        return DueShards(set(range(SHARDS) if among is None else among), RuleState(None, 0))

    def _queue_head(self) -> datetime | None:
        """The proof of concept reads the whole queue's head (the model store answers it)."""
        head: datetime | None = cast(Any, self.store).head()
        return head

    def rearm(
        self,
        touched: Collection[int] = (),
        read: RuleState | None = None,
        past: Mapping[int, str] | None = None,
        wait: WaitIntent | None = None,
    ) -> RearmResult:
        head = self._queue_head()
        target = self.timing.fire_minute(head) if head is not None else None
        if target is not None and not self.timing.armable(target, self.clock.now()):
            return RearmResult(Outcome.DUE_SOON, head, None)
        self.rule.put(target)
        return RearmResult(Outcome.ARMED, head, target)

    def claim_wait(
        self, head: datetime, owner: str, until: datetime, read: RuleState | None = None, *, take: bool = True
    ) -> WaitClaim:
        return WaitClaim.CLAIMED  # every invocation sleeps for its head


class NoRecheckRuleSync(RuleSync):
    """Our protocol minus the worker's second head read after raising the record."""

    def _recheck_head(self, head: datetime | None, target: datetime | None, after: RuleState) -> RearmResult:
        return RearmResult(Outcome.ARMED, head, target)


class NoSettleCheckRuleSync(RuleSync):
    """`rearm` trusts its PutRule however late it returned (defect: a minute that began while
    publishing is left armed, and its head stranded)."""

    def _landed_in_time(self, target: datetime | None) -> bool:
        return True


class NeverRaiseRuleSync(RuleSync):
    """After a run, `rearm` never moves the record later than it is (defect: the rule stays on the
    minute that fired, and editors whose minutes are later believe they are covered)."""

    def _target(
        self, state: RuleState, head: datetime | None, due_soon: bool, now: datetime
    ) -> tuple[datetime | None, datetime | None]:
        target, latest = super()._target(state, head, due_soon, now)
        later = state.armed_minute is not None and (target is None or target > state.armed_minute)
        if later and not due_soon:
            return state.armed_minute, None
        return target, latest


class ClockWaiterRuleSync(RuleSync):
    """The waiter as it was: an editor skips the invoke when, by its own clock, the waiter has not
    woken yet (1 s margin), and nothing marks the wake-up in the record."""

    def _hand_to_worker(self, due: datetime, state: RuleState) -> Outcome:
        now = self.clock.now()
        skew = timedelta(seconds=1)
        if (
            state.waiter_at is not None
            and state.waiter_until is not None
            and now + skew < state.waiter_at <= due
            and state.waiter_until >= due + skew
        ):
            return Outcome.COVERED
        self._wake("due too soon to arm")
        return Outcome.INVOKED

    def _woke(self, waiter_at: datetime) -> bool:
        return False


class TrustUnconfirmedClaimRuleSync(RuleSync):
    """An editor skips the invoke for a waiter's claim on a record whose value no PutRule was
    confirmed for (defect: the waiter takes its claim in the CAS that arms its backstop; if it dies
    before the PutRule, the rule never fires for the tasks the claim covered)."""

    def _hand_to_worker(self, due: datetime, state: RuleState) -> Outcome:
        if self._waiter_covers(state, due):
            return Outcome.COVERED
        self._wake("due too soon to arm")
        return Outcome.INVOKED


class NoBackstopRuleSync(RuleSync):
    """The rule is put for its armed minute alone, without the backstop minute (`Timing.firings`)
    the protocol counts on (defect: a wait decided after the armed minute fired writes nothing, so
    a waiter that dies, or a hand-over message that is lost, takes every task it covered with it)."""

    names_backstop = False


class NoRepairRuleSync(RuleSync):
    """`lower` trusts a record that covers its minute even when no PutRule of it was confirmed
    (defect: a writer that died between its CAS and its PutRule leaves the rule behind for good)."""

    def _repair(self, version: int, minute: datetime) -> Outcome:
        return Outcome.COVERED


class NoHeadRecheckRuleSync(RuleSync):
    """`rearm` raises shard heads without reading the raised shards again (defect: an entry written
    before its editor read the old, lower head is skipped by every pass until something lowers it)."""

    def _reread(self, shards: Collection[int], state: RuleState) -> dict[int, ShardFront]:
        return {}


class RecheckFromNewCursorRuleSync(RuleSync):
    """`rearm` reads the raised shards again from their new cursors, not from where the old ones
    stood (defect: an entry written below the new cursor before its writer read the old one is
    never read again)."""

    def _reread(self, shards: Collection[int], state: RuleState) -> dict[int, ShardFront]:
        return self.store.shard_fronts(shards, self.store.read_rule_state().cursors, now=self.clock.now())


class RaisePastLeaseRuleSync(RuleSync):
    """`rearm` raises a shard's head past its leased entries to the first one not leased (defect:
    when the holder of a lease dies, the entry becomes claimable earlier than the recorded head)."""

    past_lease = "head"

    def __init__(self, store: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(_IgnoringLeases(store, self.past_lease), *args, **kwargs)


class CursorPastLeaseRuleSync(RaisePastLeaseRuleSync):
    """`rearm` raises a shard's cursor past its leased entries to the first one not leased (defect:
    when the holder of a lease dies, its entry is below where every read of the shard starts)."""

    past_lease = "cursor"


class _IgnoringLeases:
    def __init__(self, store: Any, past_lease: str) -> None:
        self._store = store
        self._past_lease = past_lease

    def shard_fronts(
        self,
        shards: Collection[int],
        cursors: Mapping[int, Any] | None = None,
        *,
        now: datetime | None = None,
    ) -> dict[int, ShardFront]:
        fronts: dict[int, ShardFront] = self._store.shard_fronts(
            shards, cursors, now=now, past=self._past_lease
        )
        return fronts

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class NoLowerRuleSync(RuleSync):
    """An editor never lowers its entry's shard head (defect: a pass reads only shards whose
    recorded head is due, so the new entry waits until something else makes its shard due)."""

    @staticmethod
    def _shard_lowering(
        state: RuleState, shard: int, due: datetime, key: str | None
    ) -> tuple[datetime | None, str | None]:
        return None, None


class NoCursorLowerRuleSync(RuleSync):
    """An editor lowers its entry's shard head but never its cursor (defect: an entry written below
    the cursor is never read)."""

    @staticmethod
    def _shard_lowering(
        state: RuleState, shard: int, due: datetime, key: str | None
    ) -> tuple[datetime | None, str | None]:
        return RuleSync._shard_lowering(state, shard, due, None)


# ------------------------------------------------------------------------------ the model checker


@dataclass(frozen=True)
class TaskItem:
    due: datetime
    key: Hashable  # the queue entry it points at
    token: str
    status: str = "pending"  # pending | done | cancelled
    version: int = 1


@dataclass(frozen=True)
class EntryItem:
    task_id: str
    run_at: datetime
    token: str
    created: datetime
    lease_until: datetime | None = None

    def effective_at(self) -> datetime:
        leased = self.lease_until is not None and self.lease_until > self.run_at
        return self.lease_until if leased and self.lease_until is not None else self.run_at


@dataclass(frozen=True)
class RuleCell:
    """The EventBridge rule: the minute it is armed for, and those of its firings (the minute and,
    in `second` mode, its backstop: `Timing.firings`) that the PutRule which set it landed early
    enough for EventBridge to fire (a minute that began, or is about to, is never fired)."""

    minute: datetime | None = None
    firings: tuple[datetime, ...] = ()


@dataclass(frozen=True)
class ActorSpec:
    name: str
    kind: str  # editor | worker | keeper
    program: Callable[[Replay, Scenario, ActorSpec], Any]
    args: tuple[Any, ...] = ()
    skew: float = 0.0  # seconds this actor's clock is ahead (negative: behind)
    retry: ActorSpec | None = None  # what starts again if it crashes (a client retry, a Lambda retry)
    retry_after: float = 0.0


@dataclass(frozen=True)
class ActorState:
    spec: ActorSpec
    history: int  # the stepper's name for (spec, what the log's operations answered)
    log: tuple[Any, ...] = ()
    parked: Op | None = None
    status: str = "ready"  # ready | done | crashed (done and crashed actors leave the state)

    def key(self) -> Hashable:
        return (self.history, self.status, self.parked)


@dataclass
class World:
    """Everything shared: the table (tasks, entries, rule record), the rule, in-flight PutRules,
    what ran when, the keeper's unhandled stream records and pending invocations."""

    time: datetime
    tasks: dict[str, TaskItem] = field(default_factory=dict)
    entries: dict[Hashable, EntryItem] = field(default_factory=dict)
    record: Record = Record()
    rule: RuleCell = RuleCell()
    in_flight: dict[str, datetime | None] = field(default_factory=dict)  # PutRules sent, by sender
    fired: frozenset[datetime] = frozenset()
    runs: tuple[tuple[str, datetime], ...] = ()
    jobs: tuple[tuple[Any, ...], ...] = ()
    spawns: tuple[tuple[datetime, ActorSpec], ...] = ()
    crashes: int = 0
    ticks: int = 0
    dead: frozenset[str] = frozenset()  # actors that crashed (their PutRule may still be in flight)
    keeper: bool = False  # the table's stream feeds a keeper (else nothing records its records)
    handover: str | None = None  # how the hand-over queue delivers a message (Scenario.handover)
    worker_skew: float = 0.0  # the clock of every worker EventBridge or an invoke starts
    backstops: bool = True  # a PutRule names the armed minute's backstop too (NoBackstopRuleSync)

    def clone(self) -> World:
        copy = object.__new__(World)
        copy.__dict__.update(self.__dict__)
        copy.tasks, copy.entries, copy.in_flight = dict(self.tasks), dict(self.entries), dict(self.in_flight)
        return copy

    def key(self) -> Hashable:
        return (
            self.time,
            frozenset(self.tasks.items()),
            frozenset(self.entries.items()),
            self.record,
            self.rule,
            frozenset(self.in_flight.items()),
            self.fired,
            self.runs,
            self.jobs,
            frozenset((when, spec.name) for when, spec in self.spawns),
            self.crashes,
            self.ticks,
            self.dead,
        )

    def head(self) -> datetime | None:
        return min((e.effective_at() for e in self.entries.values()), default=None)

    def shard_front(self, shard: int, cursor: Any, now: datetime | None, past: str = "") -> ShardFront:
        """The shard's front read from `cursor`, as the store reads it: the earliest claimable time
        of its entries from there, and the cursor the read justifies (the first entry's key, or the
        key of `now` if earlier). `past` ("head" or "cursor"): a defective read that skips the leased
        entries for that value."""
        at = self.time
        mine: list[tuple[Any, EntryItem]] = [
            (k, e)
            for k, e in self.entries.items()
            if shard_of(e.task_id) == shard and (cursor is None or k >= cursor)
        ]
        unleased = [(k, e) for k, e in mine if not _leased(e, at)]
        heads = [e.run_at for _, e in unleased] if past == "head" else [e.effective_at() for _, e in mine]
        first = min((k for k, _ in (unleased if past == "cursor" else mine)), default=None)
        bound = (now,) if now is not None else None
        cursor = min((c for c in (first, bound) if c), default=None)  # a model key stands for the sort key
        return ShardFront(min(heads, default=None), cast(str | None, cursor))

    def stream(self, record: tuple[Any, ...]) -> None:
        """A change the table's stream delivers to the keeper (when there is one). Kept as a sorted
        multiset: the keeper handles a batch as a whole, so arrival order does not matter."""
        if self.keeper:
            self.jobs = tuple(sorted((*self.jobs, record)))

    def pending(self) -> list[tuple[str, TaskItem]]:
        return [(i, t) for i, t in self.tasks.items() if t.status == "pending"]


@dataclass(frozen=True)
class Scenario:
    """One bounded world to explore. Times are seconds after BASE (09:00:00)."""

    start: float
    plans: tuple[Plan, ...]
    horizon: float  # model time at which the run is judged
    queued: tuple[tuple[str, float], ...] = ()  # tasks committed and armed before the start
    armed: float | None = None  # the record's (and the rule's) minute at the start, published
    fired: bool = False  # the armed minute has already fired
    protocol: type[RuleSync] = RuleSync
    crashes: int = 0  # crash budget: how many actors may die (after any of their steps)
    crashable: tuple[str, ...] = ("editor", "worker", "helper", "keeper")  # kinds (or names) that may
    retries: bool = True  # Lambda retries an asynchronous invocation that died (False: the local
    # stack's restart, an event dropped after its last retry)
    ticks: int = 0  # how often time may pass while some actor could still step
    tick_seconds: float = 10.0
    fire_offset: float = 30.0  # seconds into its minute at which EventBridge delivers a firing
    keeper: bool = False
    # A waiting worker hands a long wait to a delayed message (None: it sleeps through it), which the
    # queue delivers "once", "twice", "late" (HANDOVER_LATE_SECONDS after its delay), "early" (at
    # once) or not at all ("lost"); a continuation that dies is delivered again after the
    # message's visibility timeout (the worker's timeout), when `retries`.
    handover: str | None = None
    orphan_puts: bool = False  # a dead actor's PutRule in flight may still land before time moves
    fresh_entry_keys: bool = True  # every entry write has its own key, and puts only if it is free
    worker_skew: float = 0.0  # seconds the clocks of the workers it starts are ahead (behind)
    fan_out: bool = False  # a worker that sees FAN_OUT_AT due entries spreads them over two invocations
    worker: type[ModelWorker] | None = None  # the worker class (a mutant); None: ModelWorker
    late_bound: float = TIMING.clock_skew_seconds  # lateness allowed when nobody crashed
    crash_late_bound: float = 240.0  # ... and when someone did
    max_ops: int = 400  # per actor: more means it spins
    max_states: int = 2_000_000  # a search that grows beyond this is cut short (and fails)


@dataclass(frozen=True)
class Plan:
    """An actor the scenario starts at `start` (seconds after BASE)."""

    kind: str  # create | create_home | reschedule | cancel | fired | invoked
    start: float
    task_id: str = ""
    due: float = 0.0
    skew: float = 0.0
    retry: bool = False  # a create whose client retries it (same id) if the editor dies
    attempt: int = 1  # a second request for the same task (a client that did not wait for the first)

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.task_id}" + (f"#{self.attempt}" if self.attempt > 1 else "")


# ---- views: what the code under test calls; every call is one operation of the actor


class ClockView:
    def __init__(self, replay: Replay) -> None:
        self._replay = replay

    def now(self) -> datetime:
        result: datetime = self._replay.call("now", scheduled=False)
        return result

    def sleep(self, seconds: float) -> None:
        self._replay.call("sleep_until", self.now() + timedelta(seconds=max(seconds, 0.0)))


class StoreView:
    """RuleStateStore plus the few task/queue operations the model's editors and worker make."""

    shards = SHARDS

    def __init__(self, replay: Replay) -> None:
        self._call = replay.call

    def read_rule_state(self) -> RuleState:
        return self._call("read_rule_state")

    def cas_rule_state(self, expected_version: int, armed_minute: datetime | None) -> int | None:
        return self._call("cas_rule_state", expected_version, armed_minute)

    def confirm_published(self, version: int) -> RuleState | None:
        return self._call("confirm_published", version)

    def claim_repair(self, version: int) -> bool:
        return self._call("claim_repair", version)

    def head(self) -> datetime | None:
        return self._call("head")

    def shard_fronts(
        self,
        shards: Collection[int],
        cursors: Mapping[int, Any] | None = None,
        *,
        now: datetime | None = None,
        past: str = "",
    ) -> dict[int, ShardFront]:
        """The shards are read in parallel; the model reads them in one step. `past`: a mutant's
        front that skips leased entries for its "head" or its "cursor"."""
        return self._call("shard_fronts", tuple(sorted(shards)), _frozen(cursors), now, past)

    def lower_shard(self, shard: int, at: datetime | None, key: Any) -> RuleState | None:
        return self._call("lower_shard", shard, at, key)

    def lower_shard_and_arm(
        self, shard: int, at: datetime | None, key: Any, expected_version: int, armed_minute: datetime
    ) -> RuleState | None:
        return self._call("lower_shard_and_arm", shard, at, key, expected_version, armed_minute)

    def raise_shard_heads(
        self,
        read: RuleState,
        heads: Mapping[int, datetime | None],
        cursors: Mapping[int, Any] | None = None,
    ) -> bool:
        return self._call("raise_shard_heads", *_frozen_heads(read, heads, cursors))

    def rearm_record(
        self,
        read: RuleState,
        armed_minute: datetime | None,
        heads: Mapping[int, datetime | None],
        cursors: Mapping[int, Any],
        waiter: WaiterClaim | None = None,
    ) -> RuleState | None:
        frozen = _frozen_heads(read, heads, cursors)
        return self._call("rearm_record", read.version, armed_minute, *frozen, waiter)

    def try_mark_kicked(self, now: datetime, not_since: datetime) -> bool:
        return self._call("try_mark_kicked", now, not_since)

    def claim_waiter(
        self,
        at: datetime,
        owner: str,
        until: datetime,
        stale_before: datetime,
        *,
        expected_version: int | None = None,
    ) -> bool:
        return self._call("claim_waiter", at, owner, until, stale_before, expected_version)

    def release_waiter(self, owner: str | None, at: datetime) -> RuleState | None:
        return self._call("release_waiter", owner, at)

    def run(self, task_id: str) -> None:
        self._call("run", task_id, scheduled=False)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Task and queue operations (put_entry, insert_task, get_task, replace_task, delete_entry,
        due_keys, claim_entry, complete, holds_entry, keeper_take, keeper_done)."""
        return lambda *args: self._call(name, *args)


class RuleView:
    """A PutRule is sent with the step before it (sending commutes with everything) and lands as a
    step of its own, when the call returns: anything can happen in between, including other
    PutRules landing first."""

    def __init__(self, replay: Replay) -> None:
        self._call = replay.call

    def put(self, minute: datetime | None) -> None:
        self._call("put_land", self._call("put_send", minute, scheduled=False))

    def current(self) -> datetime | None:
        return self._call("describe")


class TriggerView:
    def __init__(self, replay: Replay) -> None:
        self._call = replay.call

    def wake(self, reason: str) -> None:
        self._call("invoke", reason)

    def help(self, shards: Collection[int], leader: str) -> None:
        self._call("help", tuple(sorted(shards)), leader)


class HandoverView:
    def __init__(self, replay: Replay) -> None:
        self._call = replay.call

    def send(self, delay_seconds: int, wake_at: datetime, record: Mapping[str, Any] | None = None) -> None:
        # Pickled: the model's cursors are tuples, not the strings JSON carries (and bytes keep the
        # model's state hashable).
        self._call("handover", delay_seconds, wake_at, pickle.dumps(record))


@dataclass(frozen=True)
class _Settings:
    pool_size: int = 4
    page_size: int = 100
    lease_seconds: int = 60
    retention_days: int = 7
    max_invocations: int = 1
    # The deployed default is 1 s; the protocol's safety does not depend on it (the scenarios deliver
    # at once and 20 s late too), and at 1 s the search with a tick grows from 1 s to 45 s (explored
    # once, no violation).
    handover_lead_seconds: float = 2.0


@dataclass(frozen=True)
class _Registry:
    max_timeout_seconds: float = 10.0


SETTINGS = _Settings()
FAN_OUT_SETTINGS = _Settings(max_invocations=2)
_RNG = random.Random(0)  # the model's completions draw no jitter; this saves seeding one per replay
WORKER_SECONDS = 300.0  # the worker Lambda's timeout in the model
STALE_ENTRY_AGE = timedelta(minutes=5)


def _runtime(replay: Replay, scenario: Scenario) -> Runtime:
    clock = ClockView(replay)
    store, rule, trigger = StoreView(replay), RuleView(replay), TriggerView(replay)
    sync = scenario.protocol(store, rule, trigger, TIMING, clock)
    settings = FAN_OUT_SETTINGS if scenario.fan_out else SETTINGS
    handover = HandoverView(replay) if scenario.handover else None
    return Runtime(settings, store, rule, trigger, sync, clock, handover)  # type: ignore[arg-type]


class ModelWorker(Worker):
    """The real run loop (re-arm, claim the wait, sleep, hand over, a burst's fan-out and a helper
    leaving its group) over the model queue: a pass claims each due entry of the shards it takes
    (lease + task check in one step), runs it, and completes it. It claims nothing ahead of its
    instant (`claim_ahead` and `wake_ahead` are zero): claim, read and run are one step here. A
    lost claim does not make it leave a shard (the model's claim does not name the holder): yields
    and probes only save writes, and the model checks what runs and when, not what it costs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.claim_ahead = self.wake_ahead = timedelta(0)

    def _pass(self, pool: Any, pool_size: int) -> PassResult:
        self.report.passes += 1
        now = self.clock.now()
        submitted, full = 0, False
        queue = cast(StoreView, self.store)  # the model's runtime holds a StoreView
        read = self.waking.pass_read()  # as the real pass: what the wake gives, else a read
        due = self.runtime.rule_sync.due_shards(now + self.claim_ahead, self.sharing.group, read)
        self._read = due.record
        keys = queue.due_keys(now, tuple(sorted(due.shards)), _frozen(due.record.cursors))
        if len(keys) >= FAN_OUT_AT and self.sharing.fan_out():
            return PassResult.FULL  # as the real pass: the next one reads only this invocation's group
        kept: set[int] = set()  # shards where an entry it took is left unfinished
        for key in keys:
            shard = shard_of(key[1])
            group = self.sharing.group
            if (group is not None and shard not in group) or self.sharing.left_to_another(shard):
                continue
            full = full or submitted >= pool_size  # one more than the pool holds at once
            if self.remaining() < self.margin:
                full = True
                break
            self.touched.add(shard)
            submitted += 1
            task_id = queue.claim_entry(key, now, now + self.lease)
            if task_id is None:
                kept.add(shard)  # contended, deferred (a write in flight) or stale (deleted)
            else:
                queue.run(task_id)  # with the claim: recording a run commutes with everything
                queue.complete(task_id, key)
            # As the real pass: just after `key` (a model key is a tuple ending in a string).
            self._note_taken(shard, cast(str, (*key[:-1], key_after(key[-1]))), kept)
        if not submitted:
            return PassResult.EMPTY
        return PassResult.FULL if full else PassResult.DRAINED

    def _note_taken(self, shard: int, key: str, kept: set[int]) -> None:
        """As the real pass: the re-arm's first read of the shard may start past what it took, but
        never past an entry it left unfinished (the model does not tell a stale entry's deletion
        from the other outcomes of a claim that fails, so it stops at all of them)."""
        if shard not in kept:
            self._resume[shard] = key

    def _finish(self, outcome: str, reason: str | None = None) -> RunReport:
        self.report.outcome = outcome
        return self.report


class HintPastUnfinishedWorker(ModelWorker):
    """A pass lets the re-arm's first read start past an entry whose claim failed (defect: a raise
    from that read passes an entry another invocation holds; if the raiser dies before its second
    read, and the holder dies too, the entry is below every later read of its shard)."""

    def _note_taken(self, shard: int, key: str, kept: set[int]) -> None:
        self._resume[shard] = key


def worker_program(replay: Replay, scenario: Scenario, spec: ActorSpec) -> None:
    """A worker invocation; a helper's spec carries its group of shards and its leader."""
    rt = _runtime(replay, scenario)
    shards, leader = spec.args if spec.args else (None, None)
    worker = (scenario.worker or ModelWorker)(
        rt,
        _Registry(),
        owner=spec.name,
        remaining_ms=WORKER_SECONDS * 1000,
        rng=_RNG,
        shards=shards,
        leader=leader,
        by_rule=spec.name.startswith("fired@"),  # the rule's firing, or Lambda's retry of it
    )
    worker.run()


def continuation_program(replay: Replay, scenario: Scenario, spec: ActorSpec) -> None:
    """The invocation a hand-over message starts: it sleeps until the wait's head, then runs from the
    record the message carries."""
    wake_at, carried = spec.args
    record = pickle.loads(carried)
    worker = (scenario.worker or ModelWorker)(
        _runtime(replay, scenario), _Registry(), owner=spec.name, remaining_ms=WORKER_SECONDS * 1000, rng=_RNG
    )
    worker.run(wake_at, None if record is None else rule_state_of_message(record))


class WakeIgnoringWorker(ModelWorker):
    """A continuation that starts working at once instead of sleeping until its wait's head (defect:
    delivered early, it finds the claim of the invocation that handed the wait over still live,
    takes it for another waiter and stops, leaving the head to the backstop a minute later)."""

    def run(self, wake_at: datetime | None = None, record: RuleState | None = None) -> RunReport:
        return super().run(None)


def create_program(replay: Replay, scenario: Scenario, spec: ActorSpec) -> None:
    """Editor create: entry, its shard's head, then task (only if the id is free), then the rule sync.
    A repeat of an existing id (the client retrying) removes its own entry and syncs the existing
    task again."""
    task_id, due = spec.args
    rt = _runtime(replay, scenario)
    store: Any = rt.store
    token = spec.name  # a fresh token for every attempt
    fresh = scenario.fresh_entry_keys
    key = (due, task_id, token) if fresh else (due, task_id)
    store.put_entry(key, task_id, due, token, fresh)
    # Before the task write, as the editor.
    covered = rt.rule_sync.cover_shard(shard_of(task_id), due, key=cast(str, key))
    if not store.insert_task(task_id, due, key, token):
        store.delete_entry(key, token)
        existing = store.get_task(task_id)
        if existing is not None and existing.status == "pending":
            rt.rule_sync.on_task_due(existing.due, shard_of(task_id), key=existing.key)
        return
    rt.rule_sync.on_task_due(due, shard_of(task_id), covered)


def home_create_program(replay: Replay, scenario: Scenario, spec: ActorSpec) -> None:
    """Editor create of a task with a generated id: its home item (task and entry in one
    conditional write), then the rule sync, which lowers its shard's head and cursor (with the armed
    minute, in one write, when both move). A client that dies after the write leaves only the keeper
    to cover the task."""
    task_id, due = spec.args
    rt = _runtime(replay, scenario)
    store: Any = rt.store
    key = (due, task_id, task_id)  # the home key: its token is part of the id
    if not store.insert_home(task_id, due, key):
        return  # a generated id is never taken: nothing else to do
    rt.rule_sync.on_task_due(due, shard_of(task_id), key=cast(str, key))


def reschedule_program(replay: Replay, scenario: Scenario, spec: ActorSpec) -> None:
    """Editor reschedule: new entry, its shard's head, task (compare-and-set), delete the old entry,
    rule sync."""
    task_id, due = spec.args
    rt = _runtime(replay, scenario)
    store: Any = rt.store
    current = store.get_task(task_id)
    if current is None or current.status != "pending":
        return
    token = spec.name
    key = (due, task_id, token)
    store.put_entry(key, task_id, due, token, True)
    covered = rt.rule_sync.cover_shard(shard_of(task_id), due, key=cast(str, key))
    updated = replace(current, due=due, key=key, token=token, version=current.version + 1)
    if not store.replace_task(task_id, current.version, updated):
        store.delete_entry(key, token)
        return
    store.delete_entry(current.key, current.token)
    rt.rule_sync.on_task_due(due, shard_of(task_id), covered)


def cancel_program(replay: Replay, scenario: Scenario, spec: ActorSpec) -> None:
    """Editor cancel: task (compare-and-set, cancelled), then delete its entry."""
    (task_id,) = spec.args
    store: Any = StoreView(replay)
    current = store.get_task(task_id)
    if current is None or current.status != "pending":
        return
    if store.replace_task(task_id, current.version, replace(current, status="cancelled")):
        store.delete_entry(current.key, current.token)


def keeper_program(replay: Replay, scenario: Scenario, spec: ActorSpec) -> None:
    """The keeper's contract (nexttick/keeper.py), on the unhandled stream records: `confirm` after a
    rule-record move (from the last move's image when the records schedule nothing);
    then the real `Keeper.cover` of the newly scheduled entries (`cover_shard` for each shard's
    earliest entry its head does not cover and that has not run yet; `on_task_due` for the earliest
    one too close to arm that a waiter covers or that has not run yet, and the earliest armable one;
    whether an entry has run is read, once, only where it decides a cover). Records are dropped
    only after it finished (a crash: delivered again)."""
    rt = _runtime(replay, scenario)
    store: Any = rt.store
    jobs, last_armed = store.keeper_take()
    record: RuleState | None = None
    if any(job[0] == "rule" for job in jobs):
        # Nothing to cover: the last move's image will do.
        seen = last_armed if not any(job[0] == "due" for job in jobs) else UNSEEN
        _, record = rt.rule_sync.confirm(seen)
    # A job ("due", due, shard, key) is the keeper's (due, key, shard).
    scheduled = {(job[1], job[3], job[2]) for job in jobs if job[0] == "due"}
    if scheduled:
        Keeper(rt.rule_sync).cover(scheduled, record, KeeperReport())
    store.keeper_done(jobs)


PROGRAMS: dict[str, Callable[[Replay, Scenario, ActorSpec], Any]] = {
    "create": create_program,
    "create_home": home_create_program,
    "reschedule": reschedule_program,
    "cancel": cancel_program,
}


_RULE_STATE_FIELDS = tuple(f.name for f in fields(RuleState))


def _freeze(value: Any) -> Hashable:
    """An answer as a hashable value that tells apart any two answers the code could tell apart
    (the search merges states, and the stepper histories, on it)."""
    if isinstance(value, RuleState):
        return tuple(_freeze(getattr(value, name)) for name in _RULE_STATE_FIELDS)
    if isinstance(value, Mapping):
        return tuple(sorted(value.items()))
    return value


# ---- the world's side of every operation


# The rule record's conditional updates other than the CAS (which also streams a change).
_RECORD_UPDATES: dict[str, Callable[..., tuple[Record, Any]]] = {
    "confirm_published": Record.confirm,
    "claim_repair": Record.claim_repair,
    "claim_waiter": Record.claim_waiter,
    "release_waiter": Record.release_waiter,
    "try_mark_kicked": Record.mark_kicked,
}


def perform(world: World, spec: ActorSpec, op: Op, position: int) -> Any:
    """Apply one operation of `spec`'s actor to `world` (linearizable, like the real items).
    `position` (the operation's place in the actor's log) names what it starts, so that the same
    history always gives the same names."""
    name, args, now = op.name, op.args, world.time
    if name == "now":
        return now + timedelta(seconds=spec.skew)
    if name == "sleep_until":
        return None
    if name == "read_rule_state":
        return world.record.state()
    if name == "cas_rule_state":
        world.record, result = world.record.cas(*args)
        if result is not None:
            world.stream(("rule",))
        return result
    if name in _RECORD_UPDATES:
        world.record, result = _RECORD_UPDATES[name](world.record, *args)
        return result
    if name == "head":
        return world.head()
    if name == "shard_fronts":
        shards, cursors, read_at, past = args
        starts = dict(cursors or ())
        return {shard: world.shard_front(shard, starts.get(shard), read_at, past) for shard in shards}
    if name == "lower_shard":
        world.record, lowered = world.record.lower(*args)
        return lowered
    if name == "lower_shard_and_arm":
        world.record, armed = world.record.lower_and_arm(*args)
        if armed is not None:
            world.stream(("rule",))
        return armed
    if name == "raise_shard_heads":
        world.record, raised = world.record.raise_heads(*args)
        return raised
    if name == "rearm_record":
        world.record, written = world.record.rearm(*args)
        if written is not None:
            world.stream(("rule",))
        return written
    if name == "put_send":
        world.in_flight[spec.name] = args[0]  # one at a time: the call returns when it landed
        return spec.name
    if name == "put_land":
        _land(world, args[0])
        return None
    if name == "describe":
        return world.rule.minute
    if name == "invoke":
        world.spawns += ((now, _worker_spec(world, f"{spec.name}>{position}", retries=2)),)
        return None
    if name == "help":
        helper = _worker_spec(world, f"{spec.name}+{position}", retries=2, args=args)
        world.spawns += ((now, helper),)
        return None
    if name == "handover":
        delay, wake_at, record = args
        first = "~" not in spec.name  # sent by the invocation that claimed the wait first
        for copy, seconds in enumerate(_deliveries(world.handover, delay, first=first)):
            continuation = _continuation_spec(world, f"{spec.name}~{position}" + "'" * copy, wake_at, record)
            world.spawns += ((now + timedelta(seconds=seconds), continuation),)
        return None
    return _queue_op(world, spec, name, args)


def _land(world: World, sender: str) -> None:
    minute = world.in_flight.pop(sender)
    settle = timedelta(seconds=TIMING.settle_seconds - TIMING.clock_skew_seconds)
    world.rule = RuleCell(minute, tuple(f for f in _rule_firings(world, minute) if f - world.time >= settle))


def _rule_firings(world: World, minute: datetime | None) -> tuple[datetime, ...]:
    """The minutes the rule put for `minute` fires at."""
    if minute is None:
        return ()
    return TIMING.firings(minute) if world.backstops else (minute,)


def _queue_op(world: World, spec: ActorSpec, name: str, args: tuple[Any, ...]) -> Any:
    now = world.time
    if name == "put_entry":
        key, task_id, run_at, token, conditional = args
        if conditional and key in world.entries:
            return False
        world.entries[key] = EntryItem(task_id, run_at, token, now)
        return True
    if name == "insert_task":
        task_id, due, key, token = args
        if task_id in world.tasks:
            return False
        world.tasks[task_id] = TaskItem(due, key, token)
        world.stream(("due", due, shard_of(task_id), key))
        return True
    if name == "insert_home":
        task_id, due, key = args
        if task_id in world.tasks or key in world.entries:
            return False
        world.entries[key] = EntryItem(task_id, due, task_id, now)
        world.tasks[task_id] = TaskItem(due, key, task_id)
        world.stream(("due", due, shard_of(task_id), key))
        return True
    if name == "get_task":
        return world.tasks.get(args[0])
    if name == "replace_task":
        task_id, expected, item = args
        current = world.tasks.get(task_id)
        if current is None or current.version != expected:
            return False
        world.tasks[task_id] = item
        if item.status == "pending" and item.due != current.due:
            world.stream(("due", item.due, shard_of(task_id), item.key))
        return True
    if name == "delete_entry":
        key, token = args
        entry = world.entries.get(key)
        if entry is None or entry.token != token:
            return False
        del world.entries[key]
        return True
    if name == "due_keys":
        until, shards, cursors = args
        starts = dict(cursors or ())
        due = [
            (e.run_at, repr(k), k)
            for k, e in world.entries.items()
            if e.run_at <= until
            and shard_of(e.task_id) in shards
            and (starts.get(shard_of(e.task_id)) is None or k >= starts[shard_of(e.task_id)])
        ]
        return tuple(k for _, _, k in sorted(due) if not _leased(world.entries[k], until))
    if name == "claim_entry":
        key, claim_now, lease_until = args
        entry = world.entries.get(key)
        if entry is None or _leased(entry, claim_now):
            return None  # contended
        task = world.tasks.get(entry.task_id)
        if task is None:
            if now - entry.created >= STALE_ENTRY_AGE:
                del world.entries[key]
            else:  # a create still in flight, or one that died: hidden for a while
                world.entries[key] = replace(entry, lease_until=entry.created + STALE_ENTRY_AGE)
            return None
        if task.status != "pending" or task.token != entry.token:
            del world.entries[key]  # superseded
            return None
        world.entries[key] = replace(entry, lease_until=lease_until)
        return entry.task_id
    if name == "holds_entry":
        return args[1] in world.entries
    if name == "run":
        world.runs = tuple(sorted((*world.runs, (args[0], now))))
        return None
    if name == "complete":
        task_id, key = args
        entry = world.entries.pop(key, None)
        task = world.tasks[task_id]
        if entry is not None and task.status == "pending" and task.token == entry.token:
            world.tasks[task_id] = replace(task, status="done", version=task.version + 1)
        return None
    if name == "keeper_take":  # the records not yet handled, and the armed minute of the last move
        return world.jobs, world.record.armed
    if name == "keeper_done":
        remaining = list(world.jobs)
        for record in args[0]:
            remaining.remove(record)
        world.jobs = tuple(remaining)
        return None
    raise AssertionError(f"unknown model operation {name}")


def _leased(entry: EntryItem, now: datetime) -> bool:
    return entry.lease_until is not None and entry.lease_until > now


def _worker_spec(world: World, name: str, *, retries: int, args: tuple[Any, ...] = ()) -> ActorSpec:
    """A worker invocation (kind `helper` when `args` name a group of shards and a leader)."""
    skew = world.worker_skew
    retry = _retry_worker(name, retries, skew, args) if retries else None
    kind = "helper" if args else "worker"
    return ActorSpec(name, kind, worker_program, args, skew, retry, retry_after=60.0)


HANDOVER_LATE_SECONDS = 20.0


def _deliveries(mode: str | None, delay: float, *, first: bool) -> tuple[float, ...]:
    """When the queue delivers a message sent with `delay` (seconds after the send), by `mode`; only
    the `first` message of a chain of hand-overs is duplicated (each copy starts a chain of its own)."""
    return {
        "once": (delay,),
        "twice": (delay, delay) if first else (delay,),
        "late": (delay + HANDOVER_LATE_SECONDS,),
        "early": (0.0,),
        "lost": (),
    }[mode or "once"]


def _next_firing(world: World) -> datetime | None:
    """The first minute the rule will still fire at."""
    return next((f for f in world.rule.firings if f not in world.fired), None)


def _continuation_spec(world: World, name: str, wake_at: datetime, record: bytes) -> ActorSpec:
    """The invocation a hand-over message starts; one that dies is delivered once more, after the
    message's visibility timeout."""
    args = (wake_at, record)
    again = ActorSpec(name + "/2", "worker", continuation_program, args, world.worker_skew)
    return ActorSpec(name, "worker", continuation_program, args, world.worker_skew, again, WORKER_SECONDS)


def _retry_worker(name: str, retries: int, skew: float, args: tuple[Any, ...]) -> ActorSpec:
    """Lambda retries an asynchronous invocation that failed (about a minute later)."""
    again = _retry_worker(name + "'", retries - 1, skew, args) if retries > 1 else None
    kind = "helper" if args else "worker"
    return ActorSpec(name + "'", kind, worker_program, args, skew, again, retry_after=60.0)


# ---- exploration


@dataclass(frozen=True)
class Node:
    world: World
    actors: tuple[ActorState, ...]
    trace: tuple[Any, ...] | None = None  # (move, parent trace): a persistent list


@dataclass
class Result:
    states: int = 0
    violations: list[tuple[str, list[str]]] = field(default_factory=list)

    def first(self) -> str:
        """The first violation and the schedule that led to it."""
        problem, trace = self.violations[0]
        if len(trace) > 150:
            trace = [*trace[:30], f"... {len(trace) - 130} moves ...", *trace[-100:]]
        return problem + "\n  " + "\n  ".join(trace)


def _trace(node: Node) -> list[str]:
    """The schedule that led to `node`, one line per move: time, move, actor, its operation."""
    steps: list[str] = []
    trace = node.trace
    while trace is not None:
        when, kind, name, op = trace[0]
        line = f"{when:%H:%M:%S} {kind} {name}".rstrip()
        if op is not None:
            line += f": {op.name}{_short(op.args)}"
        steps.append(line)
        trace = trace[1]
    return steps[::-1]


class Checker:
    """Depth-first search over the schedules of one scenario (each distinct state expanded once).

    At every state the moves are: any ready actor takes its next step (or takes it and then dies,
    within the crash budget), time passes (within the tick budget), a dead actor's PutRule lands
    (with `orphan_puts`). When no actor can step, time jumps to the next event (a sleeper's wake, a
    firing, a Lambda retry) and a run ends when nothing is left before the horizon: then it is judged."""

    def __init__(self, scenario: Scenario, *, max_violations: int = 1) -> None:
        self.scenario = scenario
        self.max_violations = max_violations
        self.result = Result()
        self._stepper = Stepper(_freeze)

    # -- the initial state
    def initial(self) -> Node | None:
        sc = self.scenario
        world = World(
            time=at(sc.start),
            keeper=sc.keeper,
            worker_skew=sc.worker_skew,
            handover=sc.handover,
            backstops=getattr(sc.protocol, "names_backstop", True),
        )
        for task_id, due in sc.queued:
            key, token = (at(due), task_id, f"{task_id}.0"), f"{task_id}.0"
            world.entries[key] = EntryItem(task_id, at(due), token, world.time)
            world.tasks[task_id] = TaskItem(at(due), key, token)
        # The record holds every shard's head and cursor, as the last re-arm before the start left it.
        fronts = {shard: world.shard_front(shard, None, world.time) for shard in range(SHARDS)}
        heads = tuple((shard, front.head) for shard, front in fronts.items())
        cursors = tuple((shard, front.cursor) for shard, front in fronts.items())
        world.record = Record(heads=heads, cursors=cursors)
        if sc.armed is not None:
            minute = at(sc.armed)
            world.record = Record(armed=minute, version=1, published=1, heads=heads, cursors=cursors)
            world.rule = RuleCell(minute, _rule_firings(world, minute))
            if sc.fired:
                world.fired = frozenset({minute})
        for plan in sc.plans:
            world.spawns += ((at(plan.start), self._plan_spec(world, plan)),)
        return self._settle(Node(world, ()))

    def _plan_spec(self, world: World, plan: Plan) -> ActorSpec:
        if plan.kind in ("fired", "invoked"):
            spec = _worker_spec(world, f"{plan.kind}@{plan.start:g}", retries=2)
            return replace(spec, skew=plan.skew)
        name, program = plan.name, PROGRAMS[plan.kind]
        if plan.kind == "cancel":
            return ActorSpec(name, "editor", program, (plan.task_id,), plan.skew)
        args = (plan.task_id, at(plan.due))
        retry = ActorSpec(name + "'", "editor", program, args, plan.skew) if plan.retry else None
        return ActorSpec(name, "editor", program, args, plan.skew, retry)

    # -- moves
    def moves(self, node: Node) -> list[tuple[str, str]]:
        sc, world = self.scenario, node.world
        moves: list[tuple[str, str]] = []
        for actor in node.actors:
            if actor.status == "ready" and self._enabled(world, actor):
                moves.append(("step", actor.spec.name))
                if world.crashes < sc.crashes and {actor.spec.kind, actor.spec.name} & set(sc.crashable):
                    moves.append(("crash", actor.spec.name))
        if moves and world.ticks < sc.ticks:
            moves.append(("tick", ""))
        if sc.orphan_puts:
            moves += [("land", sender) for sender in world.in_flight if sender in world.dead]
        return moves

    @staticmethod
    def _enabled(world: World, actor: ActorState) -> bool:
        op = actor.parked
        if op is not None and op.name == "sleep_until":
            return bool(world.time + timedelta(seconds=actor.spec.skew) >= op.args[0])
        return True

    def apply(self, node: Node, move: tuple[str, str]) -> Node | None:
        kind, name = move
        world = node.world.clone()
        actors = list(node.actors)
        label: tuple[Any, ...] = (world.time, kind, name, None)
        if kind == "tick":
            world.ticks += 1
            step = world.time + timedelta(seconds=self.scenario.tick_seconds)
            nxt = self._next_event(world, actors)
            self._advance(world, step if nxt is None else min(step, nxt))
        elif kind == "land":
            _land(world, name)
        else:
            index = next(i for i, a in enumerate(actors) if a.spec.name == name)
            actor = actors[index]
            label = (world.time, kind, name, actor.parked)
            stepped = self._step(world, actor, node)
            if stepped is None:
                return None
            if kind == "crash":
                if stepped.status != "ready":
                    return None  # it finished: the same as the plain step
                world.crashes += 1
                self._after_crash(world, stepped)
                stepped = replace(stepped, status="crashed")
            if stepped.status == "ready":
                actors[index] = stepped
            else:  # what an actor did lives on in the world; its log no longer matters
                del actors[index]
        return self._settle(Node(world, tuple(actors), (label, node.trace)))

    def _step(
        self, world: World, actor: ActorState, node: Node | None, *, first: bool = False
    ) -> ActorState | None:
        spec = actor.spec
        outcome = self._stepper.step(
            lambda replay: spec.program(replay, self.scenario, spec),
            actor.log,
            actor.history,
            lambda op, position: perform(world, spec, op, position),
            may_perform=not first,
            max_ops=self.scenario.max_ops,
        )
        if outcome.error is not None:
            self._violation(f"{spec.name} raised {outcome.error!r}", node)
            return None
        if len(outcome.log) > self.scenario.max_ops:
            self._violation(f"{spec.name} spins: over {self.scenario.max_ops} operations", node)
            return None
        status = "ready" if outcome.parked_at is not None else "done"
        return ActorState(spec, outcome.history, outcome.log, outcome.parked_at, status)

    def _after_crash(self, world: World, actor: ActorState) -> None:
        world.dead |= {actor.spec.name}
        if not self.scenario.orphan_puts:
            world.in_flight.pop(actor.spec.name, None)  # the request never reached EventBridge
        retry = actor.spec.retry
        if retry is not None and (actor.spec.kind == "editor" or self.scenario.retries):
            world.spawns += ((world.time + timedelta(seconds=actor.spec.retry_after), retry),)

    def _next_event(self, world: World, actors: list[ActorState] | tuple[ActorState, ...]) -> datetime | None:
        times = [when for when, _ in world.spawns]
        for actor in actors:
            if actor.status == "ready" and actor.parked is not None and actor.parked.name == "sleep_until":
                times.append(actor.parked.args[0] - timedelta(seconds=actor.spec.skew))
        firing = self._firing(world)
        if firing is not None:
            times.append(firing)
        later = [t for t in times if t > world.time]
        return min(later) if later else None

    def _firing(self, world: World) -> datetime | None:
        """When the rule's next firing is delivered (None: it fires no more)."""
        minute = _next_firing(world)
        return None if minute is None else minute + timedelta(seconds=self.scenario.fire_offset)

    def _settle(self, node: Node) -> Node | None:
        """Start whatever is due at the current instant: a firing, invocations, the keeper."""
        world, actors = node.world, list(node.actors)
        firing = self._firing(world)
        minute = _next_firing(world)
        if firing is not None and minute is not None and firing <= world.time:
            world.fired |= {minute}
            name = f"fired@{minute:%H:%M}"
            world.spawns += ((world.time, _worker_spec(world, name, retries=2)),)
        due = [spec for when, spec in world.spawns if when <= world.time]
        world.spawns = tuple((when, spec) for when, spec in world.spawns if when > world.time)
        if world.jobs and not any(a.spec.kind == "keeper" for a in actors):
            # A keeper started after one died gets a name of its own, as a retried worker or client
            # does: the workers it invokes are named after it, and two live actors never share a name.
            restarts = sum(1 for name in world.dead if name.rstrip("'") == "keeper")
            due.append(ActorSpec("keeper" + "'" * restarts, "keeper", keeper_program))
        live = {a.spec.name for a in actors}
        for spec in due:
            assert spec.name not in live, f"two live actors named {spec.name}"
            live.add(spec.name)
            primed = self._step(world, ActorState(spec, self._stepper.start(spec)), node, first=True)
            if primed is None:
                return None
            if primed.status == "ready":
                actors.append(primed)
        return Node(world, tuple(actors), node.trace)

    # -- judging
    def _violation(self, problem: str, node: Node | None) -> None:
        self.result.violations.append((problem, _trace(node) if node is not None else []))

    def judge(self, node: Node) -> str | None:
        """At the end of a run: every committed task ran, on time (I1), and the rule is at rest:
        equal to the record and armed in time for whatever is still pending (I2)."""
        sc, world = self.scenario, node.world
        horizon = at(sc.horizon)
        # Time that passed while an actor was slow delays what it was doing by as much.
        late_bound = (sc.crash_late_bound if world.crashes else sc.late_bound) + world.ticks * sc.tick_seconds
        live = bool(node.actors)
        for task_id, task in sorted(world.tasks.items()):
            runs = [t for i, t in world.runs if i == task_id]
            if task.status == "cancelled":
                continue
            if not runs and task.due + timedelta(seconds=late_bound) >= horizon:
                minute = TIMING.fire_minute(task.due)
                if not live and not any(f <= minute for f in world.rule.firings):
                    return f"lost wake-up: {task_id} needs minute {minute:%H:%M}; {_describe(world)}"
                continue
            if not runs:
                return f"lost: {task_id} (due {task.due:%H:%M:%S}) never ran; {_describe(world)}"
            late = (min(runs) - task.due).total_seconds()
            if late > late_bound:
                return f"late: {task_id} ran {late:.0f} s after its due time; {_describe(world)}"
            if late < -TIMING.clock_skew_seconds:
                return f"early: {task_id} ran {-late:.0f} s before its due time"
            if len(runs) > 1 and not world.crashes:
                return f"ran twice: {task_id}, and nobody crashed"
        at_rest = not live and not world.in_flight and getattr(sc.protocol, "uses_record", True)
        if at_rest and world.rule.minute != world.record.armed:
            return f"at rest the rule says {world.rule.minute} but the record {world.record.armed}"
        return None

    # -- the search
    def run(self) -> Result:
        """Depth first, with sleep sets: after exploring move `a` from a state, a sibling move `b`
        that commutes with `a` (no shared item, or both only read it) leaves `a` asleep in `b`'s
        subtree, since `b; a` reaches the state `a; b` already did. A state seen before is explored
        again only for the moves its earlier visit left asleep (sleep sets with state caching)."""
        # A drifted rule is logged in earnest: quiet while searching, then as it was (later tests in
        # this process read the logger's INFO lines).
        nexttick_logger = logging.getLogger("nexttick")
        level = nexttick_logger.level
        nexttick_logger.setLevel(logging.ERROR)
        try:
            return self._search()
        finally:
            nexttick_logger.setLevel(level)

    def _search(self) -> Result:
        visited: dict[int, frozenset[tuple[str, str]]] = {}
        frames: list[_Frame] = []

        def push(node: Node | None, sleep: frozenset[tuple[str, str]]) -> None:
            if node is None:
                return
            key = hash((node.world.key(), frozenset(a.key() for a in node.actors)))
            moves = self.moves(node)
            if key in visited:
                before = visited[key]
                if before <= sleep:
                    return
                todo = [m for m in moves if m in before and m not in sleep]
                visited[key] = before & sleep
            else:
                visited[key] = sleep
                todo = [m for m in moves if m not in sleep]
                if not moves:
                    self._idle(node, push)
                    return
            frames.append(_Frame(node, sleep, todo))

        push(self.initial(), frozenset())
        while frames and len(self.result.violations) < self.max_violations:
            if len(visited) > self.scenario.max_states:
                self._violation(f"search cut short at {len(visited)} states", None)
                break
            frame = frames[-1]
            if not frame.todo:
                frames.pop()
                continue
            move = frame.todo.pop(0)
            child = self.apply(frame.node, move)
            asleep = frame.sleep | frozenset(frame.done)
            frame.done.append(move)
            push(child, frozenset(m for m in asleep if self._independent(frame.node, m, move)))
        self.result.states = len(visited)
        return self.result

    def _idle(self, node: Node, push: Callable[[Node | None, frozenset[tuple[str, str]]], None]) -> None:
        """No actor can step: jump to the next event, or judge the run."""
        nxt = self._next_event(node.world, node.actors)
        if nxt is None and node.world.pending():
            # The past-minute check: nothing will ever happen again, yet tasks are pending (the rule
            # is on a minute that fired, or will not fire, and no worker will run).
            self._violation(f"stalled: tasks pending, no worker will run; {_describe(node.world)}", node)
        elif nxt is None or nxt > at(self.scenario.horizon):
            problem = self.judge(node)
            if problem is not None:
                self._violation(problem, node)
        else:
            world = node.world.clone()
            self._advance(world, nxt)
            push(self._settle(Node(world, node.actors, node.trace)), frozenset())

    def _advance(self, world: World, to: datetime) -> None:
        """Time passes. A dead actor's PutRule that has not landed by now never will: a request
        reaches EventBridge within moments of being sent, or not at all."""
        world.time = to
        for sender in [s for s in world.in_flight if s in world.dead]:
            del world.in_flight[sender]

    def _independent(self, node: Node, a: tuple[str, str], b: tuple[str, str]) -> bool:
        """Moves `a` and `b` commute from `node`: different actors whose next operations share no
        item that either writes (appends to the keeper's batch commute, as do runs and PutRule sends)."""
        if a[1] == b[1] or "tick" in (a[0], b[0]) or ("crash" == a[0] == b[0]):
            return False
        first, second = self._access(node, a), self._access(node, b)
        return not any(item in second and _conflict(mode, second[item]) for item, mode in first.items())

    def _access(self, node: Node, move: tuple[str, str]) -> dict[str, str]:
        kind, name = move
        if kind == "land":
            return {"rule": "w"}
        actor = next(a for a in node.actors if a.spec.name == name)
        return _touches(actor.parked, keeper=node.world.keeper)


@dataclass
class _Frame:
    node: Node
    sleep: frozenset[tuple[str, str]]
    todo: list[tuple[str, str]]
    done: list[tuple[str, str]] = field(default_factory=list)


_RECORD_WRITES = {
    "cas_rule_state",
    "claim_repair",
    "claim_waiter",
    "try_mark_kicked",
}
_RECORD_WRITES_RETURNING = {"confirm_published", "release_waiter"}  # they return the whole record
# The record's shard heads and cursors, read by whatever returns the whole record.
_ALL_HEADS = {f"{value}:{shard}": "r" for value in ("heads", "cursors") for shard in range(SHARDS)}


def _queue(shards: Collection[int], mode: str) -> dict[str, str]:
    return {f"queue:{shard}": mode for shard in shards}


def _touches(op: Op | None, *, keeper: bool) -> dict[str, str]:
    """The items an operation reads ("r"), writes ("w") or appends to ("a"). The rule record's
    shard heads count as items of their own (their conditional writes look at nothing else), as do
    the queue's shards (a task's entries are all in its shard)."""
    if op is None:
        return {}
    name, args = op.name, op.args
    jobs = {"jobs": "a"} if keeper else {}
    if name == "read_rule_state":
        return {"record": "r", **_ALL_HEADS}
    if name == "cas_rule_state":
        return {"record": "w", **jobs}
    if name in _RECORD_WRITES:
        return {"record": "w"}
    if name in _RECORD_WRITES_RETURNING:
        return {"record": "w", **_ALL_HEADS}
    if name in ("lower_shard", "lower_shard_and_arm"):  # returns the whole record as written
        shard, at, key = args[:3]
        lowered = {f"heads:{shard}": "w"} if at is not None else {}
        lowered |= {f"cursors:{shard}": "w"} if key is not None else {}
        if name == "lower_shard_and_arm":  # a CAS too
            return {"record": "w", **_ALL_HEADS, **lowered, **jobs}
        return {"record": "r", **_ALL_HEADS, **lowered}
    if name in ("raise_shard_heads", "rearm_record"):
        raising = args if name == "raise_shard_heads" else args[2:6]
        written: dict[str, str] = {}
        for value, read, new in (("heads", raising[0], raising[1]), ("cursors", raising[2], raising[3])):
            if new:
                shards = range(SHARDS) if read is None else [shard for shard, _ in new]
                written |= {f"{value}:{shard}": "w" for shard in shards}
        if name == "rearm_record":  # a CAS too, which returns the whole record as written
            return {"record": "w", **_ALL_HEADS, **written, **jobs}
        return written
    if name == "head":
        return _queue(range(SHARDS), "r")
    if name == "shard_fronts":
        return _queue(args[0], "r")
    if name == "due_keys":
        return _queue(args[1], "r")
    if name == "holds_entry":
        return _queue([args[0]], "r")
    if name == "put_entry":
        return _queue([shard_of(args[1])], "w")
    if name == "delete_entry":
        return _queue([shard_of(args[0][1])], "w")
    if name == "claim_entry":
        return {**_queue([shard_of(args[0][1])], "w"), f"task:{args[0][1]}": "r"}
    if name == "complete":
        return {**_queue([shard_of(args[0])], "w"), f"task:{args[0]}": "w"}
    if name == "get_task":
        return {f"task:{args[0]}": "r"}
    if name in ("insert_task", "replace_task"):
        return {f"task:{args[0]}": "w", **jobs}
    if name == "insert_home":
        return {**_queue([shard_of(args[0])], "w"), f"task:{args[0]}": "w", **jobs}
    if name == "put_land":
        return {"rule": "w"}
    if name == "describe":
        return {"rule": "r"}
    if name == "keeper_take":
        return {"jobs": "r", "record": "r"}
    if name == "keeper_done":
        return {"jobs": "w"}
    return {}  # put_send, invoke, help, handover, run, sleep_until: private, or appends that commute


def _conflict(a: str, b: str) -> bool:
    """Two accesses to one item do not commute unless both read, both append, or one appends and
    the other removes what it read before (the keeper's batch)."""
    return {a, b} not in ({"r"}, {"a"}, {"a", "w"})


def check(scenario: Scenario, *, max_violations: int = 1) -> Result:
    return Checker(scenario, max_violations=max_violations).run()


def _short(args: tuple[Any, ...]) -> str:
    return f"({', '.join(_show(a) for a in args)})" if args else ""


def _show(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%H:%M:%S")
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    if isinstance(value, TaskItem):
        return f"task(due {_show(value.due)}, {value.token}, {value.status}, v{value.version})"
    return repr(value)


def _describe(world: World) -> str:
    rule = world.rule
    armed = world.record.armed
    return (
        f"at {world.time:%H:%M:%S} the rule is at {rule.minute and rule.minute.strftime('%H:%M')}"
        f"{'' if rule.firings else ' (will not fire)'}, the record at {armed and armed.strftime('%H:%M')}"
        f", waiter {world.record.waiter_owner}"
    )
