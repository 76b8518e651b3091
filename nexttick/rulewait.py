"""The one waiter of the rule protocol (nexttick.rulesync): the rule record names the invocation
sleeping in-process for a head too close to arm — its wake time, its deadline, its owner — so that
editors skip the direct invoke for tasks it covers, and one invocation sleeps instead of a herd. Its
claim (taken with the re-arm's CAS that arms the claim's backstop, or in a write of its own), its
release once its wake time has come, and what an editor may rely on (docs/architecture.md, "One
waiter, not a herd").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from nexttick.clock import Clock
from nexttick.rulearm import RuleStateStore
from nexttick.rulehead import HeadRead
from nexttick.ruletiming import Timing
from nexttick.store.records import RuleState, WaiterClaim


class WaitClaim(StrEnum):
    CLAIMED = "claimed"  # this invocation is the one waiter: sleep until the head
    COVERED = "covered"  # another live waiter wakes at or before the head: this one can stop
    MOVED = "moved"  # the record is no longer a published backstop for the head: re-arm first
    FREE = "free"  # no other waiter covers it and the backstop stands; not claimed (`take` False)


@dataclass(frozen=True)
class WaitIntent:
    """What the caller of `rearm` does with a due-soon head: sleep for it as `owner`, alive until
    `until`, if it is due by `latest` (its deadline less its margin) and after `after` (None: any;
    one due sooner is passed for, not waited for). The re-arm then takes the wait's claim in the
    write that arms the claim's backstop, instead of a write of its own after it. `blocked`: per
    shard, the earliest the caller can claim anything there, where its last pass found only
    entries other invocations hold (a lease's end, or the end of the window it read)."""

    owner: str
    until: datetime
    latest: datetime
    after: datetime | None = None
    blocked: Mapping[int, datetime] = field(default_factory=dict)

    def waits_for(self, head: datetime) -> bool:
        return head <= self.latest and (self.after is None or head > self.after)

    def claimable_head(self, found: HeadRead) -> datetime | None:
        """The head this caller can claim: the earliest of the shards' heads, each shard the re-arm
        did not read itself taken no earlier than its `blocked` bound. A head held by another
        invocation is its holder's to run (and to re-arm for after); waiting for its due time would
        wake this caller to find it held again, until the holder has run it."""
        heads = (
            max(head, self.blocked[s]) if s in self.blocked and s not in found.read else head
            for s, head in found.heads.items()
            if head is not None
        )
        return min(heads, default=None)


class WaitClaims:
    """The waiter's claim on the rule record: taken, released, relied on (a base of RuleSync)."""

    store: RuleStateStore
    clock: Clock
    timing: Timing

    @staticmethod
    def _waiter_covers(state: RuleState, due: datetime) -> bool:
        """The record's waiter claim wakes at or before `due` and lives past it."""
        return (
            state.waiter_at is not None
            and state.waiter_until is not None
            and state.waiter_at <= due <= state.waiter_until
        )

    def _claim_with_cas(
        self, state: RuleState, head: datetime | None, wait: WaitIntent | None, now: datetime
    ) -> WaiterClaim | None:
        """The claim the caller's wait for a due-soon `head` takes with the backstop's CAS: None when
        it would not wait for it, or when the record as read holds a claim it may not take over
        (then `claim_wait` answers COVERED, and the write need not fail on it)."""
        if wait is None or head is None or not wait.waits_for(head):
            return None
        claim = self._wait_claim(head, wait.owner, wait.until, now)
        return claim if claim.takes_over(state) else None

    def _wait_claim(self, head: datetime, owner: str, until: datetime, now: datetime) -> WaiterClaim:
        """`owner`'s claim on the wait for `head`, as of `now`: a current claim that should have
        woken more than the skew bound ago belongs to a waiter that died."""
        return WaiterClaim(head, owner, until, now - self.timing.clock_skew)

    def release_wait(self, at: datetime) -> RuleState | None:
        """Release the wait claim for `at` once its time has come (by our clock, within the skew
        bound), as `rearm` would release it: the waiter that slept for it, after its passes and
        before its re-arm reads the heads, or the invocation its wait was handed over to, before its
        first pass reads the shards. Returns the record as the release wrote it, which serves as
        that read of the record (None: not released; read it)."""
        if not self._woke(at):
            return None
        return self.store.release_waiter(None, at)

    def _woke(self, waiter_at: datetime) -> bool:
        """A waiter's wake time has come by our clock, give or take the stated skew bound. Early,
        the claim is only released sooner (editors then invoke directly); late, the backstop stays
        armed and fires once more."""
        return waiter_at <= self.clock.now() + self.timing.clock_skew

    def _fires_by(self, armed: datetime | None, minute: datetime, now: datetime) -> bool:
        """The rule armed for `armed` still fires at or before `minute`: at `armed` if it is still
        armable, else at its backstop (`Timing.firings`)."""
        firing = self.timing.next_firing(armed, now)
        return firing is not None and firing <= minute

    def claim_wait(
        self, head: datetime, owner: str, until: datetime, read: RuleState | None = None, *, take: bool = True
    ) -> WaitClaim:
        """Worker, after `rearm` returned DUE_SOON: become the one invocation that sleeps until `head`.
        Claimed only while the record is a published backstop for `head`, so editors that skip the
        direct invoke for this claim still get a worker if this invocation dies in its sleep.
        `read`: the record as the re-arm's last write returned it. Without `take`, only check: FREE
        when it would claim (a wait handed over needs no claim: the backstop covers it), CLAIMED
        when the claim is already its own (taken with the re-arm's CAS)."""
        while True:
            state, read = read or self.store.read_rule_state(), None
            now = self.clock.now()
            claim = self._wait_claim(head, owner, until, now)
            if (
                state.waiter_owner not in (None, owner)
                and self._waiter_covers(state, head)
                and state.waiter_at is not None
                and state.waiter_at >= claim.stale_before
            ):
                return WaitClaim.COVERED
            backstop = self.timing.latest_backstop(head, now)
            if not (state.published and self._fires_by(state.armed_minute, backstop, now)):
                return WaitClaim.MOVED
            if claim.held_in(state):
                return WaitClaim.CLAIMED  # taken with the re-arm's CAS (`rearm`'s `wait`)
            if not take:
                return WaitClaim.FREE
            if self.store.claim_waiter(
                head, owner, until, claim.stale_before, expected_version=state.version
            ):
                return WaitClaim.CLAIMED
