"""Arming the one EventBridge rule (nexttick.rulesync's protocol): what the protocol talks to (the
rule record's store, the rule, the worker's trigger) and the moves that arm the rule: lowering the
record's armed minute (a conditional write) and publishing it, each PutRule confirmed by a
conditional write that the record did not move across it (`publish`); the editors' repair of a value
never confirmed, and the keeper's `confirm`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from nexttick.clock import Clock
from nexttick.ruletiming import Timing
from nexttick.store.records import RuleState, ShardFront, WaiterClaim


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

    def lower_shard_and_arm(
        self, shard: int, at: datetime | None, key: str | None, expected_version: int, armed_minute: datetime
    ) -> RuleState | None: ...

    def raise_shard_heads(
        self,
        read: RuleState,
        heads: Mapping[int, datetime | None],
        cursors: Mapping[int, str] | None = None,
    ) -> bool: ...

    def rearm_record(
        self,
        read: RuleState,
        armed_minute: datetime | None,
        heads: Mapping[int, datetime | None],
        cursors: Mapping[int, str],
        waiter: WaiterClaim | None = None,
    ) -> RuleState | None: ...

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

    def release_waiter(self, owner: str | None, at: datetime) -> RuleState | None: ...


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


class _Unseen:
    """No stream image of the record was seen (`confirm` reads it)."""


UNSEEN = _Unseen()


class RuleArming:
    """Moves the rule record's armed minute and makes the rule match it (a base of RuleSync)."""

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
            return self._publish_lowered(RuleState(minute, version))

    def _publish_lowered(self, written: RuleState) -> Outcome:
        """Publish the armed minute our CAS just lowered the record to (`written`)."""
        self.publish(written)
        assert written.armed_minute is not None
        if not self.timing.armable(written.armed_minute, self.clock.now()):
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
    def confirm(self, seen: datetime | _Unseen | None = UNSEEN) -> tuple[Outcome, RuleState | None]:
        """Make the rule match the record (the keeper, after the record moved). A client that died
        between its CAS and its PutRule leaves the record ahead of the rule, and nothing else would
        publish before the next re-arm. A minute no longer armable is handed to the worker: a
        PutRule now might land after the minute began, and the worker's re-arm repairs the rule.
        `seen`: the armed minute of the record's latest stream image the caller holds; if the rule
        already holds it, nothing is read (any later write of the record reaches the caller in a
        later batch of the stream, which delivers one item's writes in order). Returns what it did
        and the record as it last read or wrote it (None: not read)."""
        if not isinstance(seen, _Unseen) and self.rule.current() == seen:
            return Outcome.UNCHANGED, None
        state = self.store.read_rule_state()
        if self.rule.current() == state.armed_minute:
            return Outcome.UNCHANGED, state
        minute = state.armed_minute
        if minute is not None and not self.timing.armable(minute, self.clock.now()):
            self._wake("armed minute was not published in time")
            return Outcome.INVOKED, state
        return Outcome.ARMED, self.publish()
