"""The worker's run loop: claim due occurrences, run them on a bounded pool, complete, re-arm.

One invocation:
1. a *pass* reads the entries due by now + CLAIM_AHEAD_SECONDS from every shard (lazy, bounded pages
   merged in due order), skips live leases, and submits at most `pool_size` occurrences at a time;
   each is claimed with a conditional lease (which counts the attempt), validated against its task,
   run at its instant — an occurrence claimed ahead waits in its pool thread, so at the instant only
   its action remains — (its lease renewed meanwhile, `LeaseKeeper`), and completed;
2. passes repeat while they find work; then `rule_sync.rearm()` points the rule at the head;
3. a head too close to arm (`Outcome.DUE_SOON`) is waited for inside the invocation (Clock.sleep,
   to the exact instant) when the remaining time allows, by the one invocation that claims the wait
   (`claim_wait`; the rule stays armed as its backstop), otherwise the worker re-invokes itself;
4. before claiming anything it checks the remaining time against a safety margin (the longest
   action timeout plus a few seconds), so no run is cut off with the rule on a past minute;
5. a burst is spread over invocations: the first pass to fill the pool splits the shards into
   `max_invocations` groups, keeps the first and starts a helper invocation for each other one
   (`trigger.help`); each drains only its group, then works like any invocation (re-arm, wait);
6. invocations running at once share the rest by shard: a claim lost to another invocation means
   that one is draining the shard, so this one leaves the shard to it for YIELD_SECONDS (its entries
   are skipped without a write) and then looks again with one claim at a time (a probe) until one
   succeeds — the other may have finished, or died. A helper leaves its group's shards to nobody
   but keeps clear of what its leader claimed before splitting; when two invocations both hold
   entries of a shard, the one whose owner id sorts later leaves, so that exactly one keeps it.
"""

from __future__ import annotations

import contextvars
import random
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from nexttick import constants
from nexttick.actions import ActionRegistry, Delivery
from nexttick.observability import Dimensions, MetricUnit, emit_by_dimensions, logger, metrics
from nexttick.rulesync import Outcome, WaitClaim
from nexttick.runtime import Runtime
from nexttick.store import Pointer
from nexttick.store.records import RUNNABLE_NOW, QueueEntry, TaskRecord, TaskStatus, discardable
from nexttick.worker import drain
from nexttick.worker.completion import (
    MAX_ERROR_CHARS,
    Attempt,
    RunOutcome,
    history_expiry,
    history_record,
    misfired,
    plan_completion,
    plan_extra,
    record_only,
)
from nexttick.worker.lease import LeaseKeeper

# Extra seconds on top of the longest action timeout kept in reserve for completion and re-arm.
SAFETY_SECONDS = 5.0
MIN_DEFER = timedelta(seconds=2)
MAX_DEFER = timedelta(seconds=60)
# Pause when the head is already due yet nothing was claimable (an entry just leased elsewhere):
# no spinning. A head in the future is waited for exactly, never rounded up to this.
MIN_WAIT_SECONDS = 0.05
MIN_HAND_OVER_WAIT_SECONDS = 1.0
MAX_CAS_ATTEMPTS = 20
YIELD_SECONDS = 3.0
_LOG_KEYS = ("task_id", "scheduled_for", "attempt")

Hook = Callable[[str, QueueEntry], None]


def _no_hook(_step: str, _entry: QueueEntry) -> None:
    return None


def _live(task: TaskRecord, entry: QueueEntry) -> bool:
    """Whether `entry` is an occurrence `task` still wants run: its schedule's next one while it is
    pending, or its "run now" one while it is pending, paused or failed (a retry)."""
    if entry.token == task.extra_token:
        return task.status in RUNNABLE_NOW
    return task.status == TaskStatus.PENDING and entry.token == task.queue_token


@dataclass
class RunReport:
    """What one invocation did (returned by the handler; counts by result)."""

    results: Counter[str] = field(default_factory=Counter)
    passes: int = 0
    waited_seconds: float = 0.0
    outcome: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "passes": self.passes,
            "waited_seconds": round(self.waited_seconds, 3),
            **dict(sorted(self.results.items())),
        }


@dataclass(frozen=True)
class _Done:
    result: str  # succeeded | failed | retrying | skipped | contended | yielded | stale | deferred | error
    lateness_ms: float | None = None
    action: str | None = None
    kind: str | None = None  # the task's schedule kind: once | cron | every
    started: datetime | None = None  # when the action started (its minute in the lateness histogram)


class Worker:
    """Runs what is due until nothing is, then re-arms. One instance per invocation."""

    def __init__(
        self,
        runtime: Runtime,
        registry: ActionRegistry,
        *,
        owner: str,
        remaining_ms: float,
        hook: Hook = _no_hook,
        rng: random.Random | None = None,
        shards: Collection[int] | None = None,
        leader: str | None = None,
    ) -> None:
        self.runtime = runtime
        self.store = runtime.store
        self.clock = runtime.clock
        self.settings = runtime.settings
        self.registry = registry
        self.owner = owner
        self.deadline = self.clock.now() + timedelta(milliseconds=remaining_ms)
        # Stop claiming when less than the longest action (plus completion) is left — but never
        # reserve more than half the invocation, or a short timeout would only re-invoke itself.
        self.margin = min(registry.max_timeout_seconds + SAFETY_SECONDS, remaining_ms / 2000)
        self.lease = timedelta(seconds=self.settings.lease_seconds)
        # A pass claims what is due this much ahead; a waiting worker wakes this much before its head.
        self.prepare = timedelta(seconds=constants.CLAIM_AHEAD_SECONDS)
        self.retention = timedelta(days=self.settings.retention_days)
        self.hook = hook
        self.rng = rng or random.Random()
        self.report = RunReport()
        self.leases = LeaseKeeper(self.store, self.clock, owner, self.lease)
        # A helper's group of shards (drained first, then it works like any invocation); None: all.
        self.group: frozenset[int] | None = frozenset(shards) if shards is not None else None
        self.leader = leader  # the invocation that started this helper (its claims are left alone)
        self._fanned_out = shards is not None  # a helper starts no helpers
        self._yielded: dict[int, datetime] = {}  # shard -> until when another invocation drains it
        self._contested: set[int] = set()  # shards another invocation works: claimed one at a time
        self._probing: set[int] = set()  # contested shards with a claim in flight
        self._claimed_in: set[int] = set()  # shards this invocation has claimed an entry of
        self._in_burst = False  # a pass has had a full pool: more is due than runs at once
        self._yield_lock = threading.Lock()
        # This pass's lateness per (action, kind), printed as one EMF line each when it ends.
        self._lateness_by_kind: defaultdict[Dimensions, list[float]] = defaultdict(list)

    # ------------------------------------------------------------------ loop
    def run(self) -> RunReport:
        pool_size = self.settings.pool_size
        with ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="nexttick-run") as pool:
            while True:
                if self.remaining() < self.margin:
                    return self._hand_off("little time left")
                if self._pass(pool, pool_size):
                    continue  # more may have become due meanwhile
                if self.group is not None:
                    self._leave_group()
                if self.remaining() < self.margin:
                    return self._hand_off("little time left")
                rearm = self.runtime.rule_sync.rearm()
                if rearm.outcome is not Outcome.DUE_SOON:
                    return self._finish(rearm.outcome.value)
                assert rearm.head is not None
                wait_seconds = (rearm.head - self.clock.now()).total_seconds()
                if self.remaining() - wait_seconds < self.margin:
                    # Beyond this invocation: spend what it has first, so a short timeout does not
                    # turn into a rapid chain of invocations, then hand over to a fresh one.
                    usable = self.remaining() - self.margin
                    if usable >= MIN_HAND_OVER_WAIT_SECONDS:
                        self._sleep(usable)
                        continue
                    return self._reinvoke("next due time is beyond this invocation")
                claim = self.runtime.rule_sync.claim_wait(rearm.head, self.owner, self.deadline)
                if claim is WaitClaim.COVERED:
                    return self._finish("covered", "another invocation is waiting for an earlier time")
                if claim is WaitClaim.MOVED:
                    continue  # the record moved since the re-arm: re-arm before sleeping
                wait_seconds = (rearm.head - self.prepare - self.clock.now()).total_seconds()
                if wait_seconds <= 0:
                    # Already due: held by others (leased), or in shards left to another invocation
                    # until it has drained them or its yield expires.
                    wait_seconds = max(MIN_WAIT_SECONDS, self._seconds_until_yield_ends())
                self._sleep(min(wait_seconds, max(self.remaining() - self.margin, MIN_WAIT_SECONDS)))

    def remaining(self) -> float:
        return (self.deadline - self.clock.now()).total_seconds()

    def _fan_out(self) -> bool:
        """Spread a burst: keep one group of shards, start a helper for each other group. True if
        helpers were started (the caller's pass then ends: the next one reads only its group)."""
        count = min(self.settings.max_invocations, self.store.shards)
        if self._fanned_out or count < 2:
            return False
        self._fanned_out = True
        groups = [[s for s in range(self.store.shards) if s % count == i] for i in range(count)]
        mine = set(groups[0])
        for group in groups[1:]:
            try:
                self.runtime.trigger.help(group, self.owner)
                self.report.results["helpers"] += 1
            except Exception:
                logger.warning("could not start a helper; draining its shards here", exc_info=True)
                mine.update(group)
        if len(mine) == self.store.shards:
            return False
        self.group = frozenset(mine)
        logger.info("burst spread over helper invocations", extra={"groups": groups})
        return True

    def _leave_group(self) -> None:
        """The group is drained: other groups are their helpers' for a while, then contested."""
        mine, self.group = self.group or frozenset(), None
        until = self.clock.now() + timedelta(seconds=YIELD_SECONDS)
        with self._yield_lock:
            for shard in set(range(self.store.shards)) - mine:
                self._yielded[shard] = until
                self._contested.add(shard)

    def _takes(self, entry: QueueEntry, now: datetime) -> bool:
        """Whether this pass submits `entry`: claimable, in this invocation's group (if it has one),
        in no shard left to another, and not behind a probe of its shard."""
        if entry.leased_at(now) or (self.group is not None and entry.shard not in self.group):
            return False
        with self._yield_lock:
            if self._yield_live(entry.shard):
                return False
            if entry.shard in self._contested:
                if entry.shard in self._probing:
                    return False  # the next pass takes it, once the probe claimed or yielded
                self._probing.add(entry.shard)
        return True

    def _left_to_another(self, shard: int) -> bool:
        with self._yield_lock:
            return self._yield_live(shard)

    def _yield_live(self, shard: int) -> bool:
        """`shard` is left to another invocation now (the caller holds the yield lock)."""
        until = self._yielded.get(shard)
        return until is not None and until > self.clock.now()

    def _lost_claim(self, shard: int, held: QueueEntry | None, now: datetime) -> None:
        """A claim in `shard` was lost. To another invocation's live lease: leave the shard to it,
        unless this invocation works the shard too and its owner id sorts first (then the holder
        leaves). To an entry that is gone — another invocation ran it already, or a task write
        replaced it — leave the shard only in a burst (a full pool): a lone worker that raced a
        cancel must not delay the rest of the shard."""
        holder = held.lease_owner if held is not None and held.leased_at(now) else None
        if holder == self.owner or (held is not None and holder is None):
            return  # changed under a task write, or our own resent claim: nobody else is here
        if self.group is not None and shard in self.group and (holder is None or holder == self.leader):
            return  # our group: what the leader claimed before splitting, or an entry just completed
        with self._yield_lock:
            self._contested.add(shard)
            if holder is None and not self._in_burst:
                return
            if holder is None or shard not in self._claimed_in or holder < self.owner:
                self._yielded[shard] = self.clock.now() + timedelta(seconds=YIELD_SECONDS)

    def _release_probe(self, shard: int) -> None:
        with self._yield_lock:
            self._probing.discard(shard)

    def _seconds_until_yield_ends(self) -> float:
        now = self.clock.now()
        with self._yield_lock:
            live = [until for until in self._yielded.values() if until > now]
        return (min(live) - now).total_seconds() if live else 0.0

    def _pass(self, pool: ThreadPoolExecutor, pool_size: int) -> bool:
        """Submit every claimable entry due by now (and the next `prepare`), at most `pool_size` in
        flight. True if any."""
        self.report.passes += 1
        now = self.clock.now()
        in_flight: set[Future[_Done]] = set()
        submitted = 0
        with self.leases.renewing():
            for entry in self.store.merged_entries(
                up_to=now + self.prepare, page_size=self.settings.page_size, shards=self.group
            ):
                if not self._takes(entry, now):
                    continue  # leased elsewhere (its lease end is part of the head), or not ours now
                if len(in_flight) >= pool_size:
                    self._in_burst = True
                    if self._fan_out():
                        self._release_probe(entry.shard)
                        break  # the next pass reads only this invocation's group
                while len(in_flight) >= pool_size:
                    done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                    self._collect(done)
                if self.remaining() < self.margin or drain.stopping():
                    self._release_probe(entry.shard)
                    break  # out of time, or the process is stopping: finish what is held
                # The invocation's log context (function, request id) follows the occurrence into the pool.
                in_flight.add(pool.submit(contextvars.copy_context().run, self._process, entry))
                submitted += 1
            self._collect(wait(in_flight).done)
        if submitted:
            metrics.add_metric(name=constants.METRIC_BATCH_SIZE, unit=MetricUnit.Count, value=submitted)
        self.store.flush_lateness()  # one histogram write per minute this pass ran in; never raises
        lateness_by_kind, self._lateness_by_kind = self._lateness_by_kind, defaultdict(list)
        emit_by_dimensions(constants.METRIC_LATENESS, MetricUnit.Milliseconds, lateness_by_kind)
        return submitted > 0

    def _collect(self, done: set[Future[_Done]]) -> None:
        for future in done:
            outcome = future.result()  # a BaseException (crash) propagates and ends the run
            self.report.results[outcome.result] += 1
            if outcome.result in ("succeeded", "failed", "retrying"):
                metrics.add_metric(name=constants.METRIC_RUNS, unit=MetricUnit.Count, value=1)
            if outcome.result in ("failed", "retrying"):
                metrics.add_metric(name=constants.METRIC_FAILURES, unit=MetricUnit.Count, value=1)
            elif outcome.result == "skipped":
                metrics.add_metric(name=constants.METRIC_SKIPS, unit=MetricUnit.Count, value=1)
            elif outcome.result in ("stale", "error"):
                metrics.add_metric(name=f"{outcome.result}_entries", unit=MetricUnit.Count, value=1)
            if outcome.lateness_ms is not None:
                metrics.add_metric(
                    name=constants.METRIC_LATENESS, unit=MetricUnit.Milliseconds, value=outcome.lateness_ms
                )
                # Also per action and schedule kind: printed by dimension set at the pass's end.
                by = (("action", outcome.action or "unknown"), ("kind", outcome.kind or "unknown"))
                self._lateness_by_kind[by].append(outcome.lateness_ms)
                if outcome.lateness_ms > constants.LATE_RUN_THRESHOLD_SECONDS * 1000:
                    metrics.add_metric(name=constants.METRIC_LATE_RUNS, unit=MetricUnit.Count, value=1)
                if outcome.started is not None:  # written by the pass's end (`flush_lateness`)
                    self.store.note_lateness(outcome.started, outcome.lateness_ms)

    def _sleep(self, seconds: float) -> None:
        self.report.waited_seconds += seconds
        self.clock.sleep(seconds)

    def _hand_off(self, reason: str) -> RunReport:
        """Out of time: re-arm for what is left, or re-invoke when it is due too soon to arm."""
        rearm = self.runtime.rule_sync.rearm()
        if rearm.outcome is Outcome.DUE_SOON:
            return self._reinvoke(reason)
        return self._finish(rearm.outcome.value)

    def _reinvoke(self, reason: str) -> RunReport:
        self.runtime.trigger.wake("continue")
        return self._finish("reinvoked", reason)

    def _finish(self, outcome: str, reason: str | None = None) -> RunReport:
        self.report.outcome = outcome
        logger.info("worker run finished", extra={"report": self.report.to_dict(), "reason": reason})
        return self.report

    # ------------------------------------------------------------------ one occurrence (pool thread)
    def _process(self, entry: QueueEntry) -> _Done:
        logger.thread_safe_append_keys(
            task_id=entry.task_id, scheduled_for=entry.scheduled_for.isoformat(), attempt=entry.attempt
        )
        claimed: QueueEntry | None = None
        try:
            claimed, now, lost = self._claim(entry)
            if claimed is None:
                return _Done(lost)
            self.leases.hold(claimed)
            self.hook("claimed", claimed)
            return self._process_claimed(claimed, now)
        except Exception as exc:  # keep the lease: the occurrence runs again after it, as a new attempt
            logger.exception("occurrence abandoned; it runs again after its lease")
            if claimed is not None:
                self._abandon(claimed, f"{type(exc).__name__}: {exc}")
            return _Done("error")
        finally:
            if claimed is not None:
                self.leases.release(claimed)
            logger.thread_safe_remove_keys(_LOG_KEYS)

    def _claim(self, entry: QueueEntry) -> tuple[QueueEntry | None, datetime, str]:
        """Claim `entry`: the claimed entry, the claim time, and why not when it is not ours. The
        shard's probe (if this was one) ends here, with the claim's result."""
        try:
            self.hook("claim", entry)
            now = self.clock.now()
            if self._left_to_another(entry.shard):
                return None, now, "yielded"  # another invocation took the shard since it was read
            claimed, held = self.store.try_claim(entry, now, lease_until=now + self.lease, owner=self.owner)
            if claimed is None:
                self._lost_claim(entry.shard, held, now)
                return None, now, "contended"
            with self._yield_lock:
                self._claimed_in.add(entry.shard)
                self._contested.discard(entry.shard)
            return claimed, now, ""
        finally:
            self._release_probe(entry.shard)

    def _abandon(self, claimed: QueueEntry, error: str) -> None:
        """Leave the error on the entry, for the claim that finds the attempts exhausted to record."""
        try:
            self.store.abandon(claimed, self.owner, error[:MAX_ERROR_CHARS])
        except Exception:
            logger.warning("could not record why the occurrence was abandoned", exc_info=True)

    def _process_claimed(self, claimed: QueueEntry, now: datetime) -> _Done:
        # Read after the claim, right before running: a cancel or change that committed before this
        # read is honoured (the API answers 202 for a cancel that may have come later).
        task = self.store.get_task(claimed.task_id)
        self.hook("task-read", claimed)
        if task is None or not _live(task, claimed):
            return _Done(self._stale(claimed, task, now))

        ahead = (claimed.run_at - self.clock.now()).total_seconds()
        if ahead > 0:
            self.clock.sleep(ahead)  # claimed and read ahead: at its instant only the action is left
        started = self.clock.now()
        lateness_ms = (started - claimed.run_at).total_seconds() * 1000
        lateness: float | None = None
        if claimed.attempt > task.max_attempts:
            # Every attempt was claimed and none finished: a crash, a timeout or a failing completion.
            last = claimed.attempt - 1
            why = claimed.last_error or "the worker stopped during it (crash or timeout)"
            attempt = Attempt(
                claimed.scheduled_for,
                last,
                started,
                started,
                RunOutcome.FAILED,
                f"attempt {last} did not finish: {why}",
            )
        elif misfired(task, claimed.scheduled_for, started):
            attempt = Attempt(
                claimed.scheduled_for,
                claimed.attempt,
                started,
                started,
                RunOutcome.SKIPPED,
                f"misfire: started {(started - claimed.scheduled_for).total_seconds():.3f}s late, "
                f"grace {task.misfire_grace_seconds}s",
            )
        else:
            attempt = self._run(task, claimed, started)
            lateness = lateness_ms
        self.hook("ran", claimed)
        with drain.completing():  # a stopping process waits for this before freezing its store
            result = self._complete(claimed, task, attempt, fired_at=now)
        logger.info(
            "occurrence finished",
            extra={
                "action": task.action,
                "result": result,
                "lateness_ms": round(lateness_ms, 3),
                "error": attempt.error,
            },
        )
        return _Done(result, lateness, action=task.action, kind=task.schedule_kind.value, started=started)

    def _run(self, task: TaskRecord, entry: QueueEntry, started: datetime) -> Attempt:
        delivery = Delivery(task.id, task.action, task.payload, entry.scheduled_for, started, entry.attempt)
        try:
            self.registry.deliver(delivery)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            return Attempt(
                entry.scheduled_for, entry.attempt, started, self.clock.now(), RunOutcome.FAILED, error
            )
        return Attempt(entry.scheduled_for, entry.attempt, started, self.clock.now(), RunOutcome.SUCCEEDED)

    def _stale(self, entry: QueueEntry, task: TaskRecord | None, now: datetime) -> str:
        """The entry is not the task's live pointer: delete it when it cannot be a write in flight,
        otherwise hide it briefly (our lease) and look again."""
        if discardable(entry, task, now):
            self.store.discard_entry(entry.ref)
            logger.info("stale queue entry deleted", extra={"entry": entry.key})
            return "stale"
        assert entry.created_at is not None, "an entry without a creation time is discardable"
        defer = min(max(MIN_DEFER, (now - entry.created_at) / 2), MAX_DEFER)
        self.store.defer_entry(entry, self.owner, now + defer)
        return "deferred"

    def _complete(
        self, entry: QueueEntry, task: TaskRecord | None, attempt: Attempt, fired_at: datetime
    ) -> str:
        """Record the run, write the outcome with compare-and-set; then delete the claimed entry (by
        token)."""
        result = attempt.outcome.value

        def step(name: str) -> None:
            self.hook(name, entry)

        for _ in range(MAX_CAS_ATTEMPTS):
            if task is None:
                self.store.discard_entry(entry.ref)
                break
            now = self.clock.now()
            pointer = Pointer.SCHEDULE
            if not _live(task, entry):
                # Rescheduled, paused or cancelled while running: record the run only.
                updated, run, outcome = record_only(task, attempt, now), None, attempt.outcome.value
                if entry.token == task.extra_token:  # its "run now" is over: another may be asked for
                    updated = replace(updated, extra_key=None, extra_token=None)
            elif entry.token == task.extra_token:
                plan = plan_extra(task, attempt, now, retention=self.retention, rng=self.rng)
                updated, run, outcome, pointer = plan.record, plan.next_run, plan.result, Pointer.EXTRA
            else:
                plan = plan_completion(task, attempt, now, retention=self.retention, rng=self.rng)
                updated, run, outcome = plan.record, plan.next_run, plan.result
            history = history_record(task, attempt, outcome, run_at=entry.run_at, fired_at=fired_at)
            expires = history_expiry(
                history,
                run.scheduled_for if run is not None else None,
                retention=self.retention,
                slots=self.settings.run_history,
            )
            # Before the task: a crash between the two leaves the record, and the completion that
            # follows (same task version, so the same slot) writes over it.
            self.store.put_run(history, slots=self.settings.run_history, expires_at=expires)
            step("run-recorded")
            updated = replace(updated, run_seq=history.seq)
            if self.store.swap_occurrence(task, updated, run, leaving=entry.ref, step=step, pointer=pointer):
                result = outcome
                break
            task = self.store.get_task(entry.task_id)  # changed meanwhile: decide on the fresh record
        else:
            raise RuntimeError(f"task {entry.task_id} kept changing; completion abandoned")
        return result
