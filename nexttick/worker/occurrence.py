"""One occurrence, in a pool thread: claim it, check it against its task, run it at its instant,
and complete it (the task's outcome and the attempt's run record by compare-and-set, leaving the
entry).

Claimed with a conditional lease (which counts the attempt) up to CLAIM_AHEAD_SECONDS before its
instant: an occurrence claimed ahead waits in its pool thread, so at the instant only its action
remains; its lease is renewed meanwhile (`LeaseKeeper`). An entry that is not its task's live
pointer is deleted when it cannot be a write in flight, else hidden briefly and looked at again.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from nexttick.actions import ActionRegistry, Delivery
from nexttick.constants import MAX_CAS_ATTEMPTS
from nexttick.observability import logger
from nexttick.runtime import Runtime
from nexttick.store import Pointer
from nexttick.store.records import (
    RUNNABLE_NOW,
    QueueEntry,
    TaskRecord,
    TaskStatus,
    discardable,
    latest_run,
)
from nexttick.worker import drain
from nexttick.worker.completion import (
    MAX_ERROR_CHARS,
    Attempt,
    RunOutcome,
    history_expiry,
    misfired,
    plan_completion,
    plan_extra,
    record_only,
)
from nexttick.worker.lease import LeaseKeeper
from nexttick.worker.sharing import ShardSharing

MIN_DEFER = timedelta(seconds=2)
MAX_DEFER = timedelta(seconds=60)
_LOG_KEYS = ("task_id", "scheduled_for", "attempt")
# How the claim that finds a task's attempts exhausted words the failure it records.
UNFINISHED_ATTEMPT = "did not finish"


class RunResult(StrEnum):
    """What became of one occurrence this invocation took up (counted in its RunReport)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRYING = "retrying"  # failed, with attempts left: queued again
    SKIPPED = "skipped"  # misfired
    CONTENDED = "contended"  # another invocation's claim won
    YIELDED = "yielded"  # its shard was left to another invocation
    STALE = "stale"  # not its task's live pointer any more: deleted
    DEFERRED = "deferred"  # not live, but maybe a write in flight: hidden briefly
    ERROR = "error"  # abandoned: runs again after its lease

    @property
    def ran(self) -> bool:
        return self in (RunResult.SUCCEEDED, RunResult.FAILED, RunResult.RETRYING)

    @property
    def ended(self) -> bool:
        """The entry is finished: a later read of its shard may start past it. Otherwise it stays
        in the queue, leased or hidden, and runs again, with no task write (nothing on the stream)
        to lead a worker back to it."""
        return self not in (RunResult.CONTENDED, RunResult.YIELDED, RunResult.DEFERRED, RunResult.ERROR)


@dataclass(frozen=True)
class Done:
    result: RunResult
    lateness_ms: float | None = None
    action: str | None = None
    kind: str | None = None  # the task's schedule kind: once | cron | every
    started: datetime | None = None  # when the action started (its minute in the lateness histogram)


Hook = Callable[[str, QueueEntry], None]


def no_hook(_step: str, _entry: QueueEntry) -> None:
    return None


def live(task: TaskRecord, entry: QueueEntry) -> bool:
    """Whether `entry` is an occurrence `task` still wants run: its schedule's next one while it is
    pending, or its "run now" one while it is pending, paused or failed (a retry)."""
    if entry.token == task.extra_token:
        return task.status in RUNNABLE_NOW
    return task.status == TaskStatus.PENDING and entry.token == task.queue_token


class OccurrenceRunner:
    """Claims, runs and completes occurrences for one invocation (`process`, from its pool)."""

    def __init__(
        self,
        runtime: Runtime,
        registry: ActionRegistry,
        sharing: ShardSharing,
        leases: LeaseKeeper,
        *,
        owner: str,
        hook: Hook,
        rng: random.Random,
    ) -> None:
        self.store = runtime.store
        self.clock = runtime.clock
        self.settings = runtime.settings
        self.registry = registry
        self.sharing = sharing
        self.leases = leases
        self.owner = owner
        self.hook = hook
        self.rng = rng
        self.retention = timedelta(days=self.settings.retention_days)

    def process(self, entry: QueueEntry) -> Done:
        logger.thread_safe_append_keys(
            task_id=entry.task_id, scheduled_for=entry.scheduled_for.isoformat(), attempt=entry.attempt
        )
        claimed: QueueEntry | None = None
        try:
            claimed, now, lost = self._claim(entry)
            if claimed is None:
                assert lost is not None
                return Done(lost)
            self.leases.hold(claimed)
            self.hook("claimed", claimed)
            return self._process_claimed(claimed, now)
        except Exception as exc:  # keep the lease: the occurrence runs again after it, as a new attempt
            logger.exception("occurrence abandoned; it runs again after its lease")
            if claimed is not None:
                self._abandon(claimed, f"{type(exc).__name__}: {exc}")
            return Done(RunResult.ERROR)
        finally:
            if claimed is not None:
                self.leases.release(claimed)
            logger.thread_safe_remove_keys(_LOG_KEYS)

    def _claim(self, entry: QueueEntry) -> tuple[QueueEntry | None, datetime, RunResult | None]:
        """Claim `entry`: the claimed entry, the claim time, and why not when it is not ours. The
        shard's probe (if this was one) ends here, with the claim's result."""
        try:
            self.hook("claim", entry)
            now = self.clock.now()
            if self.sharing.left_to_another(entry.shard):
                return None, now, RunResult.YIELDED  # another invocation took the shard since it was read
            claimed, held = self.store.try_claim(
                entry, now, lease_until=now + self.leases.lease, owner=self.owner
            )
            if claimed is None:
                self.sharing.lost(entry.shard, held, now)
                return None, now, RunResult.CONTENDED
            self.sharing.won(entry.shard)
            return claimed, now, None
        finally:
            self.sharing.release_probe(entry.shard)

    def _abandon(self, claimed: QueueEntry, error: str) -> None:
        """Leave the error on the entry, for the claim that finds the attempts exhausted to record."""
        try:
            self.store.abandon(claimed, self.owner, error[:MAX_ERROR_CHARS])
        except Exception:
            logger.warning("could not record why the occurrence was abandoned", exc_info=True)

    def _process_claimed(self, claimed: QueueEntry, now: datetime) -> Done:
        # As of the claim (a home item's claim answers with its task; any other entry's task is read
        # right after it): a cancel or change that committed before is honoured (the API answers
        # 202 for a cancel that may have come later).
        task = (
            self.store.with_payload(claimed.task)
            if claimed.task is not None
            else self.store.get_task(claimed.task_id)
        )
        self.hook("task-read", claimed)
        if task is None or not live(task, claimed):
            return Done(self._stale(claimed, task, now))

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
                f"attempt {last} {UNFINISHED_ATTEMPT}: {why}",
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
            result = self._complete(claimed, task, replace(attempt, run_at=claimed.run_at, fired_at=now))
        logger.info(
            "occurrence finished",
            extra={
                "action": task.action,
                "result": result,
                "lateness_ms": round(lateness_ms, 3),
                "error": attempt.error,
            },
        )
        return Done(result, lateness, action=task.action, kind=task.schedule_kind.value, started=started)

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

    def _stale(self, entry: QueueEntry, task: TaskRecord | None, now: datetime) -> RunResult:
        """The entry is not the task's live pointer: delete it when it cannot be a write in flight,
        otherwise hide it briefly (our lease) and look again."""
        if discardable(entry, task, now):
            self.store.discard_entry(entry.ref)
            logger.info("stale queue entry deleted", extra={"entry": entry.key})
            return RunResult.STALE
        assert entry.created_at is not None, "an entry without a creation time is discardable"
        defer = min(max(MIN_DEFER, (now - entry.created_at) / 2), MAX_DEFER)
        self.store.defer_entry(entry, self.owner, now + defer)
        return RunResult.DEFERRED

    def _complete(self, entry: QueueEntry, task: TaskRecord | None, attempt: Attempt) -> RunResult:
        """Write the outcome with compare-and-set, the attempt's run record on the task item; then
        delete the claimed entry (by token). The run the task item kept before goes to the ring of
        runs first."""
        result = RunResult(attempt.outcome.value)

        def step(name: str) -> None:
            self.hook(name, entry)

        for _ in range(MAX_CAS_ATTEMPTS):
            if task is None:
                self.store.discard_entry(entry.ref)
                break
            now = self.clock.now()
            pointer = Pointer.SCHEDULE
            if not live(task, entry):
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
            displaced = latest_run(task)
            if displaced is not None:
                # Before the task: a crash between the two leaves the record, and the completion
                # that follows (same task version, so the same run and slot) writes it again.
                expires = history_expiry(
                    displaced,
                    run.scheduled_for if run is not None else None,
                    retention=self.retention,
                    slots=self.settings.run_history,
                )
                self.store.put_run(displaced, slots=self.settings.run_history, expires_at=expires)
                step("run-recorded")
            updated = replace(updated, run_seq=task.run_seq + 1)  # its `last_run` is this attempt
            if self.store.swap_occurrence(task, updated, run, leaving=entry.ref, step=step, pointer=pointer):
                result = RunResult(outcome)
                step("completed")
                break
            task = self.store.get_task(entry.task_id)  # changed meanwhile: decide on the fresh record
        else:
            raise RuntimeError(f"task {entry.task_id} kept changing; completion abandoned")
        return result
