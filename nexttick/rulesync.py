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
  unknown, or written by this invocation); in one write, raise their heads to what was read
  (conditioned on the values read) and CAS the armed minute to the earliest head; read the raised
  shards **again** (an entry the second read finds below the raise is lowered for, and everything
  is decided again); publish, then read the record **again** and lower for any head an editor
  lowered meanwhile. A target that stopped being armable while publishing is decided again, never
  trusted.
* A head too close to arm is waited for in-process by one worker (`claim_wait`). The record names
  it and, until the first worker that runs after its wake time releases the claim, stays armed as
  its backstop: if the sleeper dies, the rule still starts a worker a minute or two later. In
  `second` mode every PutRule names the armed minute's backstop too (`Timing.firings`), so the rule
  armed for a head backs up a wait decided after that minute fired without a write; the rule's own
  early wake hands such a wait over unclaimed.

The editor writes the task then reads the record; the worker writes the record then reads the
shards (or the record); with strongly consistent reads at least one of them sees the other's write,
so no wake-up is lost (docs/architecture.md has the full argument). Shards whose recorded head is
in the future are never read: a sparse queue's wake reads one shard, not all of them. A minute too
close to arm is not armed: the worker is invoked directly instead, unless a sleeping waiter's claim
covers the task.

RuleSync is the protocol's entry point; its parts live beside it: nexttick.rulearm (what it talks to,
and lowering, publishing and confirming the armed minute), nexttick.rulehead (the shards' heads
and cursors, and the worker's refresh of them) and nexttick.rulewait (the one waiter's claim).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime

from nexttick.rulearm import Outcome, RuleArming
from nexttick.rulehead import HeadRead, ShardHeads, head_later
from nexttick.rulewait import WaitClaims, WaitIntent
from nexttick.store.records import RuleState, WaiterClaim

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RearmResult:
    outcome: Outcome
    head: datetime | None
    armed_minute: datetime | None
    # The record as this re-arm's last write returned it, or as it read it when it then wrote
    # nothing but raised heads (a record `claim_wait` may decide on): `claim_wait` starts from it
    # instead of a read.
    record: RuleState | None = None


class RuleSync(ShardHeads, WaitClaims, RuleArming):
    """The re-arm procedure shared by editors and the worker."""

    # ------------------------------------------------------------------ editor side
    def on_task_due(
        self, due: datetime, shard: int, covered: RuleState | None = None, *, key: str | None = None
    ) -> Outcome:
        """Called after an entry due at `due` in queue shard `shard` has been committed (create,
        reschedule, resume, run now). `covered`: what `cover_shard` returned, when the caller lowered
        the head before its task write (then a client that dies right after the write still leaves
        the head lowered: the next worker that wakes for anything reads the shard)."""
        minute = self.timing.fire_minute(due)
        armable = self.timing.armable(minute, self.clock.now())
        if covered is None:
            state, outcome = self._cover_shard_arming(shard, due, key, minute if armable else None)
            if outcome is not None:
                return outcome
        else:
            state = covered
        if not armable:
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
        return self._cover_shard_arming(shard, due, key, None, read)[0]

    def _cover_shard_arming(
        self,
        shard: int,
        due: datetime,
        key: str | None,
        minute: datetime | None,
        read: RuleState | None = None,
    ) -> tuple[RuleState, Outcome | None]:
        """`cover_shard`, with the record's armed minute lowered to `minute` (armable; None: not
        armed here) in the same write when both have to move — a lone task's create writes the
        record once, not twice, before its PutRule. The write is conditioned on the version read, so
        it is the CAS of `lower` decided on the record as read after our entry's write. Returns the
        record to decide on, and the outcome when the folded write armed the rule."""
        state = read or self.store.read_rule_state()
        while True:
            at, below = self._shard_lowering(state, shard, due, key)
            if at is None and below is None:
                return state, None
            if minute is not None and head_later(state.armed_minute, minute):
                written = self.store.lower_shard_and_arm(shard, at, below, state.version, minute)
                if written is not None:
                    return written, self._publish_lowered(written)
            else:
                written = self.store.lower_shard(shard, at, below)
            state = written if written is not None else self.store.read_rule_state()

    @staticmethod
    def _shard_lowering(
        state: RuleState, shard: int, due: datetime, key: str | None
    ) -> tuple[datetime | None, str | None]:
        """What of `shard`'s head and cursor must move down for an entry due at `due` under `key`."""
        at = due if state.knows_head(shard) and head_later(state.head_of(shard), due) else None
        cursor = state.cursor_of(shard)
        below = key if key is not None and cursor is not None and key < cursor else None
        return at, below

    def head_covers(self, state: RuleState, shard: int, due: datetime, key: str) -> bool:
        """`state`'s head and cursor of `shard` already cover an entry due at `due` under `key`:
        nothing to lower for it, nor for any later entry of the shard."""
        return self._shard_lowering(state, shard, due, key) == (None, None)

    def waiter_covers(self, state: RuleState, due: datetime) -> bool:
        """`state` holds a waiter's claim, confirmed published, that wakes by `due` and lives past
        it: a task due then too close to arm is that waiter's to run (see `_hand_to_worker`)."""
        return self._waiter_covers(state, due) and state.published

    def _hand_to_worker(self, due: datetime, state: RuleState) -> Outcome:
        """A due time too close to arm goes to a worker directly, unless a waiter's claim covers it.
        The waiter releases its claim after it wakes, before it reads the queue head, and we read
        the claim after our task write: so that head read finds our task. If the waiter died instead,
        the rule is armed as its backstop, and the worker that firing starts releases the claim the
        same way — which is why the claim counts only while the rule was confirmed to hold the
        record's value (a waiter takes its claim in the CAS that arms the backstop, before the
        PutRule: if it dies in between, we invoke). Only instants are compared (the claim's and our
        due time), never our clock with the waiter's. One waiter, not a herd."""
        if self.waiter_covers(state, due):
            return Outcome.COVERED
        self._wake("due too soon to arm")
        return Outcome.INVOKED

    # ------------------------------------------------------------------ worker side
    def rearm(
        self,
        touched: Collection[int] = (),
        read: RuleState | None = None,
        past: Mapping[int, str] | None = None,
        wait: WaitIntent | None = None,
    ) -> RearmResult:
        """Point the rule at the queue head after a worker run (raise or lower, or the epoch). A head
        too close to arm is returned as DUE_SOON for the caller to keep, with the rule armed as the
        backstop of whoever sleeps for it. `touched`: the shards this invocation wrote entries to;
        `read`: the record as the caller read it with nothing of its own written since; `past`: per
        shard, a key before which the caller took every entry (its passes' reads), where the first
        read of that shard may start — only a hint: the second read starts at the cursor; `wait`:
        how the caller waits for a due-soon head (its claim is then taken with the backstop's CAS,
        and `claim_wait` finds it held)."""
        while True:
            state, read = read or self.store.read_rule_state(), None
            if state.waiter_owner is not None and state.waiter_at is not None and self._woke(state.waiter_at):
                # The waiter's time has come: this invocation (the waiter itself, or one its
                # backstop started) now answers for what editors left to it. Release the claim
                # before the head read, so that read sees every task they committed meanwhile.
                read = self.store.release_waiter(state.waiter_owner, state.waiter_at)
                continue
            found = self._read_heads(state, touched, past or {})
            head = min((h for h in found.heads.values() if h is not None), default=None)
            now = self.clock.now()
            due_soon = head is not None and not self.timing.armable(self.timing.fire_minute(head), now)
            target, latest = self._target(state, head, due_soon, now)
            backstop = latest is not None
            early_enough = latest is not None and self._fires_by(state.armed_minute, latest, now)
            keep = state.armed_minute == target or early_enough
            if due_soon and wait is not None:
                head = wait.claimable_head(found)  # what it waits for: the target stays the backstop
            claim = self._claim_with_cas(state, head, wait, now) if due_soon and not keep else None
            written = self._raise_and_arm(state, found, target, arm=not keep, claim=claim)
            if written is None:
                continue  # a condition failed: read the record and decide again
            if self._settle_heads(found, state):
                past = None  # the second read lowered a head: decide again, reading from the cursors
                continue
            if keep:
                repaired = self._repair_rule(state, verify=not backstop)
                return RearmResult(
                    Outcome.DUE_SOON if due_soon else Outcome.UNCHANGED,
                    head,
                    state.armed_minute,
                    None if repaired else written,
                )
            confirmed = self.publish(written)
            if not self._landed_in_time(target):
                continue  # decide again: the head is kept (DUE_SOON) or armed for a later minute
            if due_soon:
                # Whatever happens next reads the head again (the waiter after waking, a worker it
                # hands over to, or one its backstop starts), so no second read is needed here.
                return RearmResult(Outcome.DUE_SOON, head, target, confirmed)
            return self._recheck_head(head, target, confirmed)

    def _raise_and_arm(
        self,
        state: RuleState,
        found: HeadRead,
        target: datetime | None,
        *,
        arm: bool,
        claim: WaiterClaim | None = None,
    ) -> RuleState | None:
        """The re-arm's write: the record's heads and cursors raised to what `found` read and, with
        `arm`, the armed minute moved to `target` (with `claim` taken) — one conditional write for
        all of it. Returns the record after it (as written; when only heads moved, `state` with the
        raise applied), or None when a condition failed: read the record and decide again."""
        if arm:
            return self.store.rearm_record(state, target, found.raised, found.advanced, claim)
        if found.moves and not self.store.raise_shard_heads(state, found.raised, found.advanced):
            return None
        return found.applied_to(state)

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

    def _target(
        self, state: RuleState, head: datetime | None, due_soon: bool, now: datetime
    ) -> tuple[datetime | None, datetime | None]:
        """The minute to arm, and, when it is a backstop, the latest firing that does as well: any
        at or before it (one that fires before the sleeper wakes starts a worker that re-arms it),
        up to the backstop the rule armed for the head's own minute fires at
        (`Timing.latest_backstop`), so that a wait decided after that minute fired writes nothing."""
        target: datetime | None = None
        latest: datetime | None = None
        if head is not None:
            if due_soon:
                target = self.timing.backstop_minute(head, now)
                latest = self.timing.latest_backstop(head, now)
            else:
                target = self.timing.fire_minute(head)
        if state.waiter_at is not None:
            # A claim whose wake time has not come: editors rely on it, so keep its backstop armed
            # even when its head was cancelled or run elsewhere.
            bound = self.timing.backstop_minute(state.waiter_at, now)
            claims = self.timing.latest_backstop(state.waiter_at, now)
            if target is None or bound < target:
                # A firing after the head's own minute would miss it: it bounds the latest too.
                latest = claims if target is None else min(claims, latest or target)
                target = bound
            elif latest is not None:
                latest = min(latest, claims)
        return target, latest

    def sync(self) -> RearmResult:
        """Re-derive everything from the table and force the rule to match (deploys, `nexttick sync`)."""
        state = self.store.read_rule_state()
        # Bump the version even when the minute is unchanged: forces publishers to re-confirm.
        version = self.store.cas_rule_state(state.version, state.armed_minute)
        if version is None:
            return self.sync()
        self.publish(RuleState(state.armed_minute, version))
        return self.rearm()

    def _repair_rule(self, state: RuleState, *, verify: bool) -> bool:
        """The record already says what we want. Publish it if no PutRule of it was ever confirmed
        (a writer died between CAS and PutRule); with `verify`, also if the rule itself drifted
        (DescribeRule: a deploy reset it, a late PutRule of an older value). Returns whether it
        published (then the record moved on from `state`)."""
        if not state.published:
            self.publish()
            return True
        if not verify:
            return False
        if self.rule.current() != state.armed_minute:
            logger.warning("rule drifted from its record; re-publishing")
            self.publish()
            return True
        return False
