"""The worker's invocation loop: passes over what is due, re-arm, wait for the head, hand over.

One invocation:
1. a *pass* reads the entries due by now + CLAIM_AHEAD_SECONDS (a waiting worker wakes
   WAKE_AHEAD_SECONDS before its head) from the shards it works whose recorded head is due, each
   from its cursor (lazy, bounded pages merged in due order), skips live leases, and submits at
   most `pool_size` occurrences at a time to its pool (nexttick.worker.occurrence);
2. passes repeat while one fills the pool; then `rule_sync.rearm()` brings the shard heads of the
   shards it worked up to date and points the rule at the earliest (a head it finds due is passed
   over at once: the re-arm's read stands in for another pass);
3. a head too close to arm (`Outcome.DUE_SOON`) is waited for by one invocation, the rule armed as
   its backstop: a long wait goes to a delayed message carrying the record (handover.py); a short
   one is claimed (`claim_wait`: editors rely on it) and slept here to the exact instant, the claim
   standing through the passes until the re-arm releases it; else it re-invokes itself;
4. before claiming anything it checks the remaining time against a safety margin (the longest
   action timeout plus a few seconds), so no run is cut off with the rule on a past minute;
5. a burst is spread over helper invocations, and invocations running at once share the shards
   (nexttick.worker.sharing).
"""

from __future__ import annotations

import contextvars
import random
from collections.abc import Collection
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime, timedelta

from nexttick import constants
from nexttick.actions import ActionRegistry
from nexttick.observability import logger
from nexttick.rulearm import Outcome
from nexttick.rulehead import DueShards, key_after, read_starts
from nexttick.rulewait import WaitClaim, WaitIntent
from nexttick.runtime import Runtime
from nexttick.store import QueueEntry, RuleState
from nexttick.worker import drain
from nexttick.worker.handover import hand_over, message_record, wait_plan
from nexttick.worker.lease import LeaseKeeper
from nexttick.worker.occurrence import Done, Hook, OccurrenceRunner, no_hook
from nexttick.worker.passmetrics import PassMetrics
from nexttick.worker.report import Held, PassResult, RunReport
from nexttick.worker.sharing import ShardSharing
from nexttick.worker.waking import Waking

# Extra seconds on top of the longest action timeout kept in reserve for completion and re-arm.
SAFETY_SECONDS = 5.0
# Pause when the head is already due yet nothing was claimable (an entry just leased elsewhere):
# no spinning. A head in the future is waited for exactly, never rounded up to this.
MIN_WAIT_SECONDS = 0.05
MIN_REINVOKE_WAIT_SECONDS = 1.0
# A pass whose occurrences still wait or run this long before its claim-ahead window ends reads on
# (docs/worker.md): long enough before the window's end for a read and a claim on a busy host.
ROLL_BEFORE_SECONDS = 0.3


class Worker:
    """Runs what is due until nothing is, then re-arms. One instance per invocation."""

    sharing_class = ShardSharing

    def __init__(
        self,
        runtime: Runtime,
        registry: ActionRegistry,
        *,
        owner: str,
        remaining_ms: float,
        hook: Hook = no_hook,
        rng: random.Random | None = None,
        shards: Collection[int] | None = None,
        leader: str | None = None,
        by_rule: bool = False,
    ) -> None:
        self.runtime = runtime
        self.by_rule = by_rule  # started by the rule's firing: `wait_plan`
        self.store = runtime.store
        self.clock = runtime.clock
        self.settings = runtime.settings
        self.owner = owner
        self.deadline = self.clock.now() + timedelta(milliseconds=remaining_ms)
        # Stop claiming when less than the longest action (plus completion) is left — but never
        # reserve more than half the invocation, or a short timeout would only re-invoke itself.
        self.margin = min(registry.max_timeout_seconds + SAFETY_SECONDS, remaining_ms / 2000)
        self.lease = timedelta(seconds=self.settings.lease_seconds)
        # A pass claims what is due this much ahead; a waiting worker wakes `wake_ahead` before its head.
        self.claim_ahead = timedelta(seconds=constants.CLAIM_AHEAD_SECONDS)
        self.wake_ahead = timedelta(seconds=constants.WAKE_AHEAD_SECONDS)
        self.report = RunReport()
        self.touched: set[int] = set()  # shards taken from (and so written to) since the last re-arm
        self.leases = LeaseKeeper(self.store, self.clock, owner, self.lease)
        self.sharing = self.sharing_class(runtime, owner, shards=shards, leader=leader)
        self.runner = OccurrenceRunner(
            runtime, registry, self.sharing, self.leases, owner=owner, hook=hook, rng=rng or random.Random()
        )
        self.pass_metrics = PassMetrics(self.store)
        self._read: RuleState | None = None  # the record as the last pass read it
        self._blocked: dict[int, datetime] = {}  # the last pass's `Held.blocked`, where bounded
        self.waking = Waking(runtime.rule_sync)  # the claim of a wait it woke from
        self._slept_through: datetime | None = None  # a head whose hand-over failed
        # Per shard, where the next pass reads from while passes follow one another (a burst): past
        # what the last one took, so a burst's finished home items (which stay in the shard until
        # their TTL) are not read again and again. The re-arm's first read starts there too; it
        # reads every such shard again from its cursor, so nothing written meanwhile below these
        # points is missed, and then they are cleared.
        self._resume: dict[int, str] = {}

    # ------------------------------------------------------------------ loop
    def run(self, wake_at: datetime | None = None, record: RuleState | None = None) -> RunReport:
        """Work until nothing is due soon. `wake_at`: the head a handed-over wait is for; the
        invocation first sleeps until just before it, as the invocation that handed it over would
        have (the backstop, and any claim, are that invocation's, and still stand); `record`: the
        rule record that invocation decided the wait on, which its first pass starts from."""
        if wake_at is not None:
            wait_seconds = (wake_at - self.wake_ahead - self.clock.now()).total_seconds()
            if wait_seconds > 0:
                ended = self._sleep(min(wait_seconds, max(self.remaining() - self.margin, 0.0)))
                if ended is not None:
                    return ended
            self.waking.handed_over(wake_at, record)
        pool_size = self.settings.pool_size
        with ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="nexttick-run") as pool:
            while True:
                if self.remaining() < self.margin:
                    return self._hand_off("little time left")
                found = self._pass(pool, pool_size)
                if found is PassResult.FULL:
                    continue  # more may have become due meanwhile
                if self.sharing.group is not None:
                    self.sharing.leave_group()
                if self.remaining() < self.margin:
                    return self._hand_off("little time left")
                # The re-arm starts from the pass's read of the record (nothing of ours wrote it
                # since; the shards it wrote to are read again whatever the record says), or from
                # the release of a claim the passes kept.
                self._read = self.waking.rearm_read(self._read)
                rearm = self.runtime.rule_sync.rearm(
                    self.touched, self._read, self._resume, self._wait_intent(found)
                )
                # The re-arm recorded what it read of these shards: a later re-arm reads again only
                # those a later pass writes to (a worker waiting through a steady load no longer
                # reads every shard it ever touched at each re-arm).
                self.touched, self._resume = set(), {}
                if rearm.outcome is not Outcome.DUE_SOON:
                    return self._finish(rearm.outcome.value)
                assert rearm.head is not None
                if found is PassResult.DRAINED and rearm.head <= self.clock.now() + self.wake_ahead:
                    continue  # became due while the pass ran: pass again, no wait
                ended = self._wait_for(rearm.head, rearm.record)
                if ended is not None:
                    return ended

    def _wait_intent(self, found: PassResult) -> WaitIntent:
        """How `_wait_for` will take a due-soon head (claimed when due within what this invocation
        can wait; passed for without a wait when due by the wake-ahead after a pass that ran
        something), so the re-arm takes the claim in the write that arms its backstop."""
        return WaitIntent(
            owner=self.owner,
            until=self.deadline,
            latest=self.deadline - timedelta(seconds=self.margin),
            after=self.clock.now() + self.wake_ahead if found is PassResult.DRAINED else None,
            blocked=self._blocked,
        )

    def _wait_for(self, head: datetime, record: RuleState | None) -> RunReport | None:
        """Wait for a head too close to arm: claim the wait, then sleep until just before it, or hand
        a long wait to a delayed message. Returns the invocation's report when it ends here, None
        when the loop goes on (after the sleep, or to re-arm first)."""
        wait_seconds = (head - self.clock.now()).total_seconds()
        if self.remaining() - wait_seconds < self.margin:
            # Beyond this invocation: spend what it has first, so a short timeout does not turn
            # into a rapid chain of invocations, then re-invoke.
            usable = self.remaining() - self.margin
            if usable >= MIN_REINVOKE_WAIT_SECONDS:
                return self._sleep(usable)
            return self._reinvoke("next due time is beyond this invocation")
        handing_over, take = wait_plan(
            self.runtime, head - self.wake_ahead, self.by_rule, head == self._slept_through
        )
        claim = self.runtime.rule_sync.claim_wait(head, self.owner, self.deadline, record, take=take)
        carried = message_record(claim, record, self.owner)
        if claim is WaitClaim.COVERED:
            return self._finish("covered", "another invocation is waiting for an earlier time")
        if claim is WaitClaim.MOVED:
            return None  # the record moved since the re-arm: re-arm before sleeping
        wait_seconds = (head - self.wake_ahead - self.clock.now()).total_seconds()
        if wait_seconds <= 0:
            # Already due: held by others (leased), or in shards left to another invocation until
            # it has drained them or its yield expires.
            wait_seconds = max(MIN_WAIT_SECONDS, self.sharing.seconds_until_yield_ends())
        elif handing_over and (delay := hand_over(self.runtime, head, wait_seconds, carried)):
            self.report.handed_over_seconds = delay
            return self._finish("handed-over", "the wait goes on in the invocation its message starts")
        elif claim is WaitClaim.FREE:
            self._slept_through = head  # the send failed: re-arm, then claim the wait and sleep
            return None
        else:  # what is left of it now (a send that did not hand over took some of it)
            wait_seconds = max((head - self.wake_ahead - self.clock.now()).total_seconds(), MIN_WAIT_SECONDS)
        ended = self._sleep(min(wait_seconds, max(self.remaining() - self.margin, MIN_WAIT_SECONDS)))
        self.waking.slept(head, record)
        return ended

    def remaining(self) -> float:
        return (self.deadline - self.clock.now()).total_seconds()

    def _pass(self, pool: ThreadPoolExecutor, pool_size: int) -> PassResult:
        """Submit every claimable entry due by now + `claim_ahead`, at most `pool_size` in flight.
        While what it holds still waits or runs ROLL_BEFORE_SECONDS before that window ends, it
        reads on from after what it took (a *roll*): what comes due just after the window is claimed
        ahead too, instead of by the pass that starts when the last of these has finished."""
        self.report.passes += 1
        held = Held()
        self._blocked = {}
        with self.leases.renewing():
            while True:
                now = self.clock.now()
                until = now + self.claim_ahead
                due = self.runtime.rule_sync.due_shards(until, self.sharing.group, self.waking.pass_read())
                self._read = due.record
                if not due.shards and not held.submitted:
                    return PassResult.EMPTY
                held.blocked = {}  # what the last read found held is what the re-arm's wait goes by
                stopped = self._submit(pool, pool_size, held, due, now, until)
                if stopped or not self._rolls(held, until):
                    break
            self._collect(wait(held.in_flight).done, held)
        self._blocked = {shard: at for shard, at in held.blocked.items() if at is not None}
        for shard, key in held.taken.items():
            self._resume[shard] = held.left.get(shard, key_after(key))
        self.pass_metrics.emit(held.submitted)
        if not held.submitted:
            return PassResult.EMPTY
        return PassResult.FULL if held.full else PassResult.DRAINED

    def _submit(
        self,
        pool: ThreadPoolExecutor,
        pool_size: int,
        held: Held,
        due: DueShards,
        now: datetime,
        until: datetime,
    ) -> bool:
        """Submit the claimable entries of the due shards up to `until`, each shard read from just
        after what the pass took; True when it stopped early (a fan-out, out of time, stopping)."""
        past = {**self._resume, **{shard: key_after(key) for shard, key in held.taken.items()}}
        for entry in self.store.merged_entries(
            up_to=until,
            page_size=self.settings.page_size,
            shards=due.shards,
            cursors=read_starts(due.record.cursors, past),
        ):
            if not self.sharing.takes(entry, now):
                _stop_at(held.left, entry)
                _block(held.blocked, entry, now, until)
                continue  # leased elsewhere (its lease end is part of the head), or not ours now
            if len(held.in_flight) >= pool_size:
                held.full = self.sharing.in_burst = True
                if self.sharing.fan_out():
                    self._stop_before(entry, held)
                    return True  # the next pass reads only this invocation's group
            while len(held.in_flight) >= pool_size:
                self._collect(held.next_done(), held)
            if self.remaining() < self.margin or drain.stopping():
                held.full = True
                self._stop_before(entry, held)
                return True  # out of time, or the process is stopping: finish what is held
            self.touched.add(entry.shard)
            # The invocation's log context (function, request id) follows the occurrence.
            future = pool.submit(contextvars.copy_context().run, self.runner.process, entry)
            held.track(future, entry)
            held.taken[entry.shard] = entry.key
            held.submitted += 1
        return False

    def _stop_before(self, entry: QueueEntry, held: Held) -> None:
        self.sharing.release_probe(entry.shard)
        _stop_at(held.left, entry)

    def _rolls(self, held: Held, until: datetime) -> bool:
        """Whether the pass reads on: it still holds occurrences ROLL_BEFORE_SECONDS before its
        window ends (waiting for them until then). Only a read that ended before its window did
        rolls: one that ran past it (a burst) leaves what came due meanwhile to the next pass, as a
        pool's worth does."""
        if not held.in_flight or self.clock.now() >= until:
            return False
        roll_at = until - timedelta(seconds=ROLL_BEFORE_SECONDS)
        pause = max((roll_at - self.clock.now()).total_seconds(), MIN_WAIT_SECONDS)
        self._collect(wait(held.in_flight, timeout=pause).done, held)
        return bool(held.in_flight) and self.remaining() >= self.margin and not drain.stopping()

    def _collect(self, done: set[Future[Done]], held: Held) -> None:
        """Count the finished occurrences; note in `held.left` each entry left unfinished. The pass
        forgets each one collected: its memory stays bounded by the pool, not the burst."""
        for future in done:
            outcome = future.result()  # a BaseException (crash) propagates and ends the run
            entry = held.in_flight.pop(future)
            if not outcome.result.ended:
                _stop_at(held.left, entry)
            self.report.results[outcome.result] += 1
            self.pass_metrics.count(outcome)

    def _sleep(self, seconds: float) -> RunReport | None:
        """Sleep, then go on (None), or end the invocation when its process is stopping (the local
        stack wakes its sleepers on a stop): it writes nothing more and leaves its wait's claim and
        backstop as they stand, as a frozen Lambda sandbox would, for the next start's sync."""
        self.report.waited_seconds += seconds
        self.clock.sleep(seconds)
        if drain.stopping():
            return self._finish("stopped", "the process is stopping")
        return None

    def _hand_off(self, reason: str) -> RunReport:
        """Out of time: re-arm for what is left, or re-invoke when it is due too soon to arm."""
        rearm = self.runtime.rule_sync.rearm(self.touched, past=self._resume)
        self._resume = {}
        if rearm.outcome is Outcome.DUE_SOON:
            return self._reinvoke(reason)
        return self._finish(rearm.outcome.value)

    def _reinvoke(self, reason: str) -> RunReport:
        self.runtime.trigger.wake("continue")
        return self._finish("reinvoked", reason)

    def _finish(self, outcome: str, reason: str | None = None) -> RunReport:
        if not drain.stopping():  # a stopping process makes no more requests (`_sleep`)
            self.pass_metrics.flush()
        self.report.outcome = outcome
        if self.sharing.helpers_started:
            self.report.results["helpers"] = self.sharing.helpers_started
        logger.info("worker run finished", extra={"report": self.report.to_dict(), "reason": reason})
        return self.report


def _block(blocked: dict[int, datetime | None], entry: QueueEntry, now: datetime, until: datetime) -> None:
    """Note in `blocked` a skipped entry: held by another invocation, it bounds when its shard can
    next give this one anything (its lease's end, or the window's end `until`); skipped for any
    other reason, its shard is not bounded."""
    if entry.shard in blocked and blocked[entry.shard] is None:
        return
    if entry.lease_until is None or not entry.leased_at(now):
        blocked[entry.shard] = None
        return
    bound = min(entry.lease_until, until)
    blocked[entry.shard] = min(blocked.get(entry.shard) or bound, bound)


def _stop_at(left: dict[int, str], entry: QueueEntry) -> None:
    """Keep in `left` the earliest entry of its shard that no later read may start past."""
    left[entry.shard] = min(left.get(entry.shard, entry.key), entry.key)
