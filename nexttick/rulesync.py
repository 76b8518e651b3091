"""Keeps the single EventBridge rule pointed at the next due task (invariants I1, I2).

EventBridge has no compare-and-set, so the truth lives in the table: the rule record says which
minute the rule is armed for (None = the epoch). Every move writes the record with a conditional
write first and only then touches the rule, and every PutRule is followed by a re-read of the
record (`publish`): the last caller to PutRule has therefore put what the record says.

* `on_task_due` (editor, after the task write committed): read the record; if it is already armed
  at or before our minute nothing is written. Otherwise lower it (CAS) and publish.
* `rearm` (worker, after a run): read the record and the queue head, CAS the record to the head's
  minute, publish, then read the head **again** and lower for anything that appeared meanwhile.

The editor writes the task then reads the record; the worker writes the record then reads the
tasks. With strongly consistent reads at least one of them sees the other's write, so no wake-up
is lost (docs/architecture.md has the full argument). A minute too close to arm is not armed:
the worker is invoked directly instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from nexttick.clock import Clock
from nexttick.schedules import Timing
from nexttick.store.records import RuleState

logger = logging.getLogger(__name__)

Step = Callable[[str], None]

# Margin for clock differences between invocations when trusting another worker's wake-up time.
WAITER_SKEW = timedelta(seconds=1)


def _no_step(_: str) -> None:
    return None


class RuleStateStore(Protocol):
    """The part of TaskStore the protocol needs (so tests can model-check it in memory too)."""

    def read_rule_state(self) -> RuleState: ...

    def cas_rule_state(self, expected_version: int, armed_minute: datetime | None) -> int | None: ...

    def head(self) -> datetime | None: ...

    def try_mark_kicked(self, now: datetime, not_since: datetime) -> bool: ...

    def claim_waiter(self, at: datetime, owner: str, until: datetime, now: datetime) -> bool: ...


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


@dataclass(frozen=True)
class RearmResult:
    outcome: Outcome
    head: datetime | None
    armed_minute: datetime | None


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
        step: Step = _no_step,
    ) -> None:
        self.store = store
        self.rule = rule
        self.trigger = trigger
        self.timing = timing
        self.clock = clock
        self.stale_after = stale_after
        self._step = step

    # ------------------------------------------------------------------ editor side
    def on_task_due(self, due: datetime) -> Outcome:
        """Called after a task whose next run is `due` has been committed (create, reschedule)."""
        minute = self.timing.fire_minute(due)
        if not self.timing.armable(minute, self.clock.now()):
            return self._hand_to_worker(due)
        return self.lower(minute)

    def _hand_to_worker(self, due: datetime) -> Outcome:
        """A due time too close to arm goes to a worker directly — unless a worker is already asleep
        in-process until at or before `due` and alive past it: after waking, its head read (which
        follows our task write in real time) finds our task. One waiter, not a herd."""
        self._step("read-state")
        state = self.store.read_rule_state()
        now = self.clock.now()
        if (
            state.waiter_at is not None
            and state.waiter_until is not None
            and now + WAITER_SKEW < state.waiter_at <= due
            and state.waiter_until >= due + WAITER_SKEW
        ):
            return Outcome.COVERED
        self._wake("due too soon to arm")
        return Outcome.INVOKED

    def claim_wait(self, head: datetime, owner: str, until: datetime) -> bool:
        """Worker: become the one invocation that sleeps until `head`. False when another live
        invocation already sleeps until an earlier or equal time (this one can stop)."""
        self._step("claim-waiter")
        return self.store.claim_waiter(head, owner, until, self.clock.now())

    def lower(self, minute: datetime) -> Outcome:
        """Make sure the rule fires at or before `minute` (a future, armable minute)."""
        while True:
            self._step("read-state")
            state = self.store.read_rule_state()
            if state.armed_minute is not None and state.armed_minute <= minute:
                self._kick_if_stalled(state)
                return Outcome.COVERED
            self._step("cas-state")
            if self.store.cas_rule_state(state.version, minute) is None:
                continue  # someone moved it first: decide again on the new value
            self.publish()
            if not self.timing.armable(minute, self.clock.now()):
                # We were too slow: the PutRule may land after the minute began. Do not rely on it.
                self._wake("armed minute reached while publishing")
                return Outcome.INVOKED
            return Outcome.ARMED

    # ------------------------------------------------------------------ worker side
    def rearm(self) -> RearmResult:
        """Point the rule at the queue head after a worker run (raise or lower, or the epoch)."""
        while True:
            self._step("read-state")
            state = self.store.read_rule_state()
            self._step("read-head")
            head = self.store.head()
            target = self.timing.fire_minute(head) if head is not None else None
            if target is not None and not self.timing.armable(target, self.clock.now()):
                return RearmResult(Outcome.DUE_SOON, head, state.armed_minute)
            if state.armed_minute == target:
                self._repair_rule(target)
                return RearmResult(Outcome.UNCHANGED, head, target)
            self._step("cas-state")
            if self.store.cas_rule_state(state.version, target) is None:
                continue
            self.publish()
            # Anything committed before an editor read the old record is visible now.
            self._step("read-head")
            again = self.store.head()
            if again is not None and (target is None or self.timing.fire_minute(again) < target):
                outcome = self.on_task_due(again)
                return RearmResult(outcome, again, self.timing.fire_minute(again))
            return RearmResult(Outcome.ARMED, head, target)

    def sync(self) -> RearmResult:
        """Re-derive everything from the table and force the rule to match (deploys, `nexttick sync`)."""
        self._step("read-state")
        state = self.store.read_rule_state()
        self._step("cas-state")
        # Bump the version even when the minute is unchanged: forces publishers to re-confirm.
        if self.store.cas_rule_state(state.version, state.armed_minute) is None:
            return self.sync()
        self.publish()
        return self.rearm()

    # ------------------------------------------------------------------ shared
    def publish(self) -> None:
        """PutRule what the record says, until the record is unchanged across our PutRule."""
        while True:
            self._step("read-state")
            before = self.store.read_rule_state()
            self._step("put-rule")
            self.rule.put(before.armed_minute)
            self._step("read-state")
            after = self.store.read_rule_state()
            if after.version == before.version:
                return

    def _repair_rule(self, minute: datetime | None) -> None:
        """The record already says `minute`; if the rule itself drifted (crash between CAS and
        PutRule, a deploy that reset it), publish again."""
        self._step("read-rule")
        if self.rule.current() != minute:
            logger.warning("rule drifted from its record; re-publishing")
            self.publish()

    def _kick_if_stalled(self, state: RuleState) -> None:
        """An armed minute far in the past while tasks arrive means a worker run was lost: wake one
        (at most once a minute across all editors)."""
        now = self.clock.now()
        if state.armed_minute is None or state.armed_minute > now - self.stale_after:
            return
        self._step("kick")
        if self.store.try_mark_kicked(now, now - timedelta(minutes=1)):
            self._wake("armed minute is stale")

    def _wake(self, reason: str) -> None:
        self._step("invoke")
        self.trigger.wake(reason)

    # ------------------------------------------------------------------ keeper side
    def confirm(self) -> Outcome:
        """Make the rule match the record (the keeper, after the record moved). A client that died
        between its CAS and its PutRule leaves the record ahead of the rule, and nothing else would
        publish before the next re-arm. A minute no longer armable is handed to the worker: a
        PutRule now might land after the minute began, and the worker's re-arm repairs the rule."""
        self._step("read-state")
        state = self.store.read_rule_state()
        self._step("read-rule")
        if self.rule.current() == state.armed_minute:
            return Outcome.UNCHANGED
        minute = state.armed_minute
        if minute is not None and not self.timing.armable(minute, self.clock.now()):
            self._wake("armed minute was not published in time")
            return Outcome.INVOKED
        self.publish()
        return Outcome.ARMED
