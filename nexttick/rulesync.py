"""Keeps the single EventBridge rule pointed at the next due task (invariants I1, I2).

EventBridge has no compare-and-set, so the truth lives in the table: the rule record says which
minute the rule is armed for (None = the epoch). Every move writes the record with a conditional
write first and only then touches the rule, and every PutRule is confirmed by a conditional write
that the record did not move across it (`publish`): the last caller to PutRule has therefore put
what the record says, and the record tells whether its value was ever confirmed (`published`).

* `on_task_due` (editor, after the task write committed): read the record and lower the head of the
  entry's queue shard if it is later (the record as written is what the rest decides on); if the
  record is already armed at or before our minute nothing else is written — unless that value was
  never confirmed, when its writer may have died before its PutRule: then we publish it. Otherwise
  lower it (CAS), publish.
* `rearm` (worker, after a run): read the record; read the shards whose recorded head is due (or
  unknown, or written by this invocation), raise their heads to what was read (conditioned on the
  values read) and read those shards **again**; CAS the armed minute to the earliest head, publish,
  then read the record **again** and lower for any head an editor lowered meanwhile. A target that
  stopped being armable while publishing is decided again, never trusted.
* A head too close to arm is waited for in-process by one worker (`claim_wait`). The record names
  it and, until the first worker that runs after its wake time releases the claim, stays armed as
  its backstop: if the sleeper dies, the rule still starts a worker about a minute later.

The editor writes the task then reads the record; the worker writes the record then reads the
shards (or the record); with strongly consistent reads at least one of them sees the other's write,
so no wake-up is lost (docs/architecture.md has the full argument). Shards whose recorded head is
in the future are never read: a sparse queue's wake reads one shard, not all of them. A minute too
close to arm is not armed: the worker is invoked directly instead, unless a sleeping waiter's claim
covers the task.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from nexttick.clock import Clock
from nexttick.ruletiming import Timing
from nexttick.store.records import RuleState, ShardFront

logger = logging.getLogger(__name__)


class RuleStateStore(Protocol):
    """The part of TaskStore the protocol needs (so tests can model-check it in memory too)."""

    def read_rule_state(self) -> RuleState: ...

    def cas_rule_state(self, expected_version: int, armed_minute: datetime | None) -> int | None: ...

    def confirm_published(self, version: int) -> RuleState | None: ...

    def claim_repair(self, version: int) -> bool: ...

    @property
    def shards(self) -> int: ...

    def shard_fronts(
        self,
        shards: Collection[int],
        cursors: Mapping[int, str] | None = None,
        *,
        now: datetime | None = None,
    ) -> dict[int, ShardFront]: ...

    def lower_shard(self, shard: int, at: datetime | None, key: str | None) -> RuleState | None: ...

    def raise_shard_heads(
        self,
        read: RuleState,
        heads: Mapping[int, datetime | None],
        cursors: Mapping[int, str] | None = None,
    ) -> bool: ...

    def try_mark_kicked(self, now: datetime, not_since: datetime) -> bool: ...

    def claim_waiter(
        self,
        at: datetime,
        owner: str,
        until: datetime,
        stale_before: datetime,
        *,
        expected_version: int | None = None,
    ) -> bool: ...

    def release_waiter(self, owner: str, at: datetime) -> RuleState | None: ...


class RuleTarget(Protocol):
    """The EventBridge rule: set to one UTC minute (None = epoch), read back its minute."""

    def put(self, minute: datetime | None) -> None: ...

    def current(self) -> datetime | str | None: ...


class WorkerTrigger(Protocol):
    """Starts the worker now, asynchronously (Lambda `InvocationType=Event`)."""

    def wake(self, reason: str) -> None: ...


class Outcome(StrEnum):
    COVERED = "covered"  # armed at or before the wanted minute, or a waiting worker covers it
    ARMED = "armed"  # record and rule moved
    INVOKED = "invoked"  # too close to arm: the worker was invoked directly
    UNCHANGED = "unchanged"  # worker: the record already matched the head
    DUE_SOON = "due-soon"  # worker: the head is too close to arm; the caller must keep working


class WaitClaim(StrEnum):
    CLAIMED = "claimed"  # this invocation is the one waiter: sleep until the head
    COVERED = "covered"  # another live waiter wakes at or before the head: this one can stop
    MOVED = "moved"  # the record is no longer a published backstop for the head: re-arm first


@dataclass(frozen=True)
class RearmResult:
    outcome: Outcome
    head: datetime | None
    armed_minute: datetime | None
    # The record as this re-arm's last write returned it, when nothing of ours came after that
    # write: `claim_wait` starts from it instead of a read.
    record: RuleState | None = None


@dataclass(frozen=True)
class DueShards:
    """The shards a pass reads, and the record it read them from (a re-arm right after an empty
    pass starts from it instead of a read)."""

    shards: set[int]
    record: RuleState


class RuleSync:
    """The re-arm procedure shared by editors and the worker."""

    def __init__(
        self,
        store: RuleStateStore,
        rule: RuleTarget,
        trigger: WorkerTrigger,
        timing: Timing,
        clock: Clock,
        *,
        stale_after: timedelta = timedelta(minutes=20),
    ) -> None:
        self.store = store
        self.rule = rule
        self.trigger = trigger
        self.timing = timing
        self.clock = clock
        self.stale_after = stale_after

    # ------------------------------------------------------------------ editor side
    def on_task_due(
        self, due: datetime, shard: int, covered: RuleState | None = None, *, key: str | None = None
    ) -> Outcome:
        """Called after an entry due at `due` in queue shard `shard` has been committed (create,
        reschedule, resume, run now). `covered`: what `cover_shard` returned, when the caller lowered
        the head before its task write (then a client that dies right after the write still leaves
        the head lowered: the next worker that wakes for anything reads the shard)."""
        state = covered or self.cover_shard(shard, due, key=key)
        minute = self.timing.fire_minute(due)
        if not self.timing.armable(minute, self.clock.now()):
            return self._hand_to_worker(due, state)
        return self.lower(minute, state)

    def cover_shard(
        self, shard: int, due: datetime, read: RuleState | None = None, *, key: str | None = None
    ) -> RuleState:
        """Make the record's head of `shard` no later than `due`, and its cursor no later than `key`
        (an entry due then, under that sort key, is written, or about to be). Returns the record as
        read after any lowering (or as the lowering wrote it): decisions about the rule are made on
        it, so that a worker that raised the head before our lowering reads the record again after
        it. `read`: the record as the caller read it after the
        entry was written (any read after it will do: a raise it misses is followed by the raiser's
        second read of the shard, which finds the entry)."""
        state = read or self.store.read_rule_state()
        while True:
            at = due if state.knows_head(shard) and head_later(state.head_of(shard), due) else None
            cursor = state.cursor_of(shard)
            below = key if key is not None and cursor is not None and key < cursor else None
            if at is None and below is None:
                return state
            written = self.store.lower_shard(shard, at, below)
            state = written if written is not None else self.store.read_rule_state()

    def _hand_to_worker(self, due: datetime, state: RuleState) -> Outcome:
        """A due time too close to arm goes to a worker directly, unless a waiter's claim covers it.
        The waiter releases its claim when it wakes, before it reads the queue head, and we read the
        claim after our task write: so that head read finds our task. If the waiter died instead,
        the rule is armed as its backstop, and the worker that firing starts releases the claim the
        same way. Only instants are compared (the claim's and our due time), never our clock with
        the waiter's. One waiter, not a herd."""
        if self._waiter_covers(state, due):
            return Outcome.COVERED
        self._wake("due too soon to arm")
        return Outcome.INVOKED

    @staticmethod
    def _waiter_covers(state: RuleState, due: datetime) -> bool:
        """The record's waiter claim wakes at or before `due` and lives past it."""
        return (
            state.waiter_at is not None
            and state.waiter_until is not None
            and state.waiter_at <= due <= state.waiter_until
        )

    def lower(self, minute: datetime, read: RuleState | None = None) -> Outcome:
        """Make sure the rule fires at or before `minute` (a future, armable minute); `read`: the
        record as the caller last read it."""
        while True:
            state, read = read or self.store.read_rule_state(), None
            if state.armed_minute is not None and state.armed_minute <= minute:
                if not state.published:
                    return self._repair(state.version, state.armed_minute)
                self._kick_if_stalled(state)
                return Outcome.COVERED
            version = self.store.cas_rule_state(state.version, minute)
            if version is None:
                continue  # someone moved it first: decide again on the new value
            self.publish(RuleState(minute, version))
            if not self.timing.armable(minute, self.clock.now()):
                # We were too slow: the PutRule may land after the minute began. Do not rely on it.
                self._wake("armed minute reached while publishing")
                return Outcome.INVOKED
            return Outcome.ARMED

    def _repair(self, version: int, minute: datetime) -> Outcome:
        """The record covers our minute, but no PutRule of its value was ever confirmed: its writer
        may have died between its CAS and its PutRule, and nothing else would publish before the
        next re-arm. Publish it ourselves (one reader per version; the writer, if alive, does too).
        A minute that is no longer armable goes to the worker instead of a PutRule that may land late."""
        if not self.store.claim_repair(version):
            return Outcome.COVERED
        self.publish()
        if not self.timing.armable(minute, self.clock.now()):
            self._wake("unconfirmed armed minute is no longer armable")
            return Outcome.INVOKED
        return Outcome.COVERED

    # ------------------------------------------------------------------ worker side
    def due_shards(self, until: datetime, among: Collection[int] | None = None) -> DueShards:
        """Those of `among` (default: all shards) whose recorded head is due by `until` or not
        known: the only ones that can hold an entry claimable by then (a pass reads these, and no
        other)."""
        state = self.store.read_rule_state()
        shards = range(self.store.shards) if among is None else among
        return DueShards({s for s in shards if not state.knows_head(s) or _due(state, s, until)}, state)

    def rearm(
        self,
        touched: Collection[int] = (),
        read: RuleState | None = None,
        past: Mapping[int, str] | None = None,
    ) -> RearmResult:
        """Point the rule at the queue head after a worker run (raise or lower, or the epoch). A head
        too close to arm is returned as DUE_SOON for the caller to keep, with the rule armed as the
        backstop of whoever sleeps for it. `touched`: the shards this invocation wrote entries to;
        `read`: the record as the caller read it with nothing of its own written since; `past`: per
        shard, a key before which the caller took every entry (its passes' reads), where the first
        read of that shard may start — only a hint: the second read starts at the cursor."""
        while True:
            state, read = read or self.store.read_rule_state(), None
            if state.waiter_owner is not None and state.waiter_at is not None and self._woke(state.waiter_at):
                # The waiter's time has come: this invocation (the waiter itself, or one its
                # backstop started) now answers for what editors left to it. Release the claim
                # before the head read, so that read sees every task they committed meanwhile.
                read = self.store.release_waiter(state.waiter_owner, state.waiter_at)
                continue
            state, heads = self._refresh_heads(state, touched, past or {})
            head = min((h for h in heads.values() if h is not None), default=None)
            now = self.clock.now()
            due_soon = head is not None and not self.timing.armable(self.timing.fire_minute(head), now)
            target, backstop = self._target(state, head, due_soon, now)
            early_enough = target is not None and backstop and self._fires_by(state.armed_minute, target, now)
            if state.armed_minute == target or early_enough:
                self._repair_rule(state, verify=not backstop)
                return RearmResult(
                    Outcome.DUE_SOON if due_soon else Outcome.UNCHANGED, head, state.armed_minute
                )
            version = self.store.cas_rule_state(state.version, target)
            if version is None:
                continue
            confirmed = self.publish(RuleState(target, version))
            if not self._landed_in_time(target):
                continue  # decide again: the head is kept (DUE_SOON) or armed for a later minute
            if due_soon:
                # Whatever happens next reads the head again (the waiter after waking, a worker it
                # hands over to, or one its backstop starts), so no second read is needed here.
                return RearmResult(Outcome.DUE_SOON, head, target, confirmed)
            return self._recheck_head(head, target, confirmed)

    def _refresh_heads(
        self, state: RuleState, touched: Collection[int], past: Mapping[int, str]
    ) -> tuple[RuleState, dict[int, datetime | None]]:
        """Every shard's head: as recorded where that is later than now (nothing there can be due
        yet), else read from the shard (from its cursor) — where the recorded head is due, unknown,
        or the shard was written by this invocation. The record's heads and cursors are raised to
        what was read (each only if still the value `state` holds: a lowering since means read
        again), then the raised shards are read **again**, from where their cursors stood: an entry
        written before its writer read the old, lower head or cursor was not lowered for by that
        writer, and this second read finds it (then we lower for it). A shard whose first read
        started `past` its cursor (what the caller's passes took: a burst's finished home items) is
        always read again from its cursor, so the hint saves one of the two walks over those items
        and decides nothing: whatever the first read missed, the second finds."""
        while True:
            now = self.clock.now()
            stale = [
                s
                for s in range(self.store.shards)
                if s in touched or not state.knows_head(s) or _due(state, s, now)
            ]
            starts = read_starts(state.cursors, {s: past[s] for s in stale if s in past})
            hinted = {s for s in stale if starts.get(s) != state.cursor_of(s)}
            fronts = self.store.shard_fronts(stale, starts, now=now) if stale else {}
            raised = {
                s: front.head
                for s, front in fronts.items()
                if not state.knows_head(s) or head_later(front.head, state.head_of(s))
            }
            advanced = {
                s: front.cursor
                for s, front in fronts.items()
                if front.cursor is not None and _cursor_later(front.cursor, state.cursor_of(s))
            }
            if (raised or advanced) and not self.store.raise_shard_heads(state, raised, advanced):
                state = self.store.read_rule_state()
                continue
            recheck = raised.keys() | advanced.keys() | hinted
            again = self._reread(recheck, state) if recheck else {}
            read: dict[int, datetime | None] = {}
            for shard, front in fronts.items():
                latest = again.get(shard, front)
                recorded = raised.get(shard, state.head_of(shard) if state.knows_head(shard) else None)
                cursor = advanced.get(shard, state.cursor_of(shard))
                at = latest.head if latest.head is not None and head_later(recorded, latest.head) else None
                below = latest.cursor if _cursor_later(cursor, latest.cursor) else None
                if at is not None or below is not None:
                    # An entry its writer has not lowered for yet (or one we raised past): lower.
                    self.store.lower_shard(shard, at, below)
                read[shard] = latest.head
            recorded_heads = {
                s: state.head_of(s) for s in range(self.store.shards) if s not in read and state.knows_head(s)
            }
            return state, recorded_heads | read

    def _reread(self, shards: Collection[int], state: RuleState) -> dict[int, ShardFront]:
        """The second read of the shards whose heads or cursors were just raised, from where their
        cursors stood before (`state`)."""
        return self.store.shard_fronts(shards, state.cursors, now=self.clock.now())

    def _landed_in_time(self, target: datetime | None) -> bool:
        """Our PutRule for `target` returned while the minute was still armable. A slower one may
        have landed after the minute began, and EventBridge never fires a minute that has passed."""
        return target is None or self.timing.armable(target, self.clock.now())

    def _recheck_head(self, head: datetime | None, target: datetime | None, after: RuleState) -> RearmResult:
        """After moving the record: a head an editor lowered before it read the old record is
        recorded now (the second read of the store/load argument); lower for it. `after`: the
        record as our publication's confirmation wrote it — a read after our CAS, which is all the
        argument needs."""
        state = after
        recorded = [
            (h, s) for s in range(self.store.shards) if state.knows_head(s) and (h := state.head_of(s))
        ]
        unknown = [s for s in range(self.store.shards) if not state.knows_head(s)]
        recorded += (
            [(f.head, s) for s, f in self.store.shard_fronts(unknown).items() if f.head is not None]
            if unknown
            else []
        )
        if recorded:
            again, shard = min(recorded)
            if target is None or self.timing.fire_minute(again) < target:
                outcome = self.on_task_due(again, shard)
                return RearmResult(outcome, again, self.timing.fire_minute(again))
        return RearmResult(Outcome.ARMED, head, target)

    def _woke(self, waiter_at: datetime) -> bool:
        """A waiter's wake time has come by our clock, give or take the stated skew bound. Early,
        the claim is only released sooner (editors then invoke directly); late, the backstop stays
        armed and fires once more."""
        return waiter_at <= self.clock.now() + self.timing.clock_skew

    def _target(
        self, state: RuleState, head: datetime | None, due_soon: bool, now: datetime
    ) -> tuple[datetime | None, bool]:
        """The minute to arm, and whether it is a backstop: then any armable minute at or before it
        does as well (one that fires before the sleeper wakes starts a worker that re-arms it)."""
        target: datetime | None = None
        backstop = False
        if head is not None:
            if due_soon:
                target, backstop = self.timing.backstop_minute(head, now), True
            else:
                target = self.timing.fire_minute(head)
        if state.waiter_at is not None:
            # A claim whose wake time has not come: editors rely on it, so keep its backstop armed
            # even when its head was cancelled or run elsewhere.
            bound = self.timing.backstop_minute(state.waiter_at, now)
            if target is None or bound < target:
                target, backstop = bound, True
        return target, backstop

    def _fires_by(self, armed: datetime | None, minute: datetime, now: datetime) -> bool:
        """The rule armed for `armed` fires at or before `minute` (it is still armable)."""
        return armed is not None and armed <= minute and self.timing.armable(armed, now)

    def claim_wait(
        self, head: datetime, owner: str, until: datetime, read: RuleState | None = None
    ) -> WaitClaim:
        """Worker, after `rearm` returned DUE_SOON: become the one invocation that sleeps until `head`.
        Claimed only while the record is a published backstop for `head`, so editors that skip the
        direct invoke for this claim still get a worker if this invocation dies in its sleep.
        `read`: the record as the re-arm's last write returned it."""
        while True:
            state, read = read or self.store.read_rule_state(), None
            now = self.clock.now()
            stale_before = now - self.timing.clock_skew
            if (
                state.waiter_owner not in (None, owner)
                and self._waiter_covers(state, head)
                and state.waiter_at is not None
                and state.waiter_at >= stale_before
            ):
                return WaitClaim.COVERED
            backstop = self.timing.backstop_minute(head, now)
            if not (state.published and self._fires_by(state.armed_minute, backstop, now)):
                return WaitClaim.MOVED
            if self.store.claim_waiter(head, owner, until, stale_before, expected_version=state.version):
                return WaitClaim.CLAIMED

    def sync(self) -> RearmResult:
        """Re-derive everything from the table and force the rule to match (deploys, `nexttick sync`)."""
        state = self.store.read_rule_state()
        # Bump the version even when the minute is unchanged: forces publishers to re-confirm.
        version = self.store.cas_rule_state(state.version, state.armed_minute)
        if version is None:
            return self.sync()
        self.publish(RuleState(state.armed_minute, version))
        return self.rearm()

    # ------------------------------------------------------------------ shared
    def publish(self, written: RuleState | None = None) -> RuleState:
        """PutRule what the record says, until the record is unchanged across our PutRule: the
        confirmation is a conditional write of the version put, which also tells later readers
        that this value reached the rule. `written`: what our own CAS just wrote (no read needed
        first; if the record moved since, the confirmation fails and we read). Returns the record
        as the confirmation wrote it."""
        before = written
        while True:
            if before is None:
                before = self.store.read_rule_state()
            self.rule.put(before.armed_minute)
            confirmed = self.store.confirm_published(before.version)
            if confirmed is not None:
                return confirmed
            before = None

    def _repair_rule(self, state: RuleState, *, verify: bool) -> None:
        """The record already says what we want. Publish it if no PutRule of it was ever confirmed
        (a writer died between CAS and PutRule); with `verify`, also if the rule itself drifted
        (DescribeRule: a deploy reset it, a late PutRule of an older value)."""
        if not state.published:
            self.publish()
            return
        if not verify:
            return
        if self.rule.current() != state.armed_minute:
            logger.warning("rule drifted from its record; re-publishing")
            self.publish()

    def _kick_if_stalled(self, state: RuleState) -> None:
        """An armed minute far in the past while tasks arrive means a worker run was lost: wake one
        (at most once a minute across all editors)."""
        now = self.clock.now()
        if state.armed_minute is None or state.armed_minute > now - self.stale_after:
            return
        if self.store.try_mark_kicked(now, now - timedelta(minutes=1)):
            self._wake("armed minute is stale")

    def _wake(self, reason: str) -> None:
        self.trigger.wake(reason)

    # ------------------------------------------------------------------ keeper side
    def confirm(self) -> tuple[Outcome, RuleState]:
        """Make the rule match the record (the keeper, after the record moved). A client that died
        between its CAS and its PutRule leaves the record ahead of the rule, and nothing else would
        publish before the next re-arm. A minute no longer armable is handed to the worker: a
        PutRule now might land after the minute began, and the worker's re-arm repairs the rule.
        Returns what it did and the record as it last read or wrote it."""
        state = self.store.read_rule_state()
        if self.rule.current() == state.armed_minute:
            return Outcome.UNCHANGED, state
        minute = state.armed_minute
        if minute is not None and not self.timing.armable(minute, self.clock.now()):
            self._wake("armed minute was not published in time")
            return Outcome.INVOKED, state
        return Outcome.ARMED, self.publish()


def head_later(head: datetime | None, than: datetime | None) -> bool:
    """Whether shard head `head` is later than `than` (None: an empty shard, later than anything)."""
    if head is None:
        return than is not None
    return than is not None and head > than


def read_starts(cursors: Mapping[int, str] | None, past: Mapping[int, str]) -> dict[int, str]:
    """Where each shard's reads start: its cursor, or the key in `past` (what the reader already
    took) where that is later."""
    starts = dict(cursors or {})
    starts.update((s, key) for s, key in past.items() if _cursor_later(key, starts.get(s)))
    return starts


def _cursor_later(cursor: str | None, than: str | None) -> bool:
    """Whether shard cursor `cursor` is past `than` (None: the shard's start, before anything)."""
    return cursor is not None and (than is None or cursor > than)


def _due(state: RuleState, shard: int, by: datetime) -> bool:
    """The recorded head of a known shard is due by `by`."""
    return _head_due(state.head_of(shard), by)


def _head_due(head: datetime | None, by: datetime) -> bool:
    """A shard head (None: empty) is due by `by`."""
    return head is not None and head <= by
