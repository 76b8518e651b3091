"""Changing a task: reschedule, update and cancel, and steering it (pause, resume, skip, run now).
Each is one compare-and-set on the task's version (`EditorCore._compare_and_set`); a repeat of a
change that committed finishes what the first attempt may have left undone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from editor.changes import (
    DEFAULT_MAX_CATCH_UP,
    Missed,
    already_applied,
    apply_changes,
    check_missed,
    paused,
    require_changeable,
    resumed,
    skipped,
    updatable,
    version_mismatch,
)
from editor.core import EditorCore, HeadCover
from editor.inputs import TaskChanges
from editor.models import Task
from nexttick.constants import CLAIM_AHEAD_SECONDS
from nexttick.errors import ConflictError, ValidationError
from nexttick.store import Pointer, TaskRecord, TaskStatus
from nexttick.store.keys import split_queue_sort_key
from nexttick.store.records import RUNNABLE_NOW, Occurrence, occurrence_of


class EditorChanges(EditorCore):
    """The Editor's changing part."""

    def reschedule(
        self,
        task_id: str,
        *,
        due: str | datetime | None = None,
        delay_seconds: float | None = None,
        cron: str | None = None,
        timezone: str | None = None,
        every: str | float | timedelta | None = None,
        expected_version: int | None = None,
    ) -> Task:
        """Move a pending task to a new time (or a new recurrence)."""
        times = {
            "due": due,
            "delay_seconds": delay_seconds,
            "cron": cron,
            "timezone": timezone,
            "every": every,
        }
        changes = TaskChanges(**{name: value for name, value in times.items() if value is not None})
        return self.modify(task_id, changes, expected_version=expected_version)

    def update(self, task_id: str, *, expected_version: int | None = None, **fields: Any) -> Task:
        """Change payload and/or policy (max_attempts, retry_backoff_seconds, misfire_grace_seconds, end)."""
        return self.modify(task_id, updatable(fields), expected_version=expected_version)

    def modify(self, task_id: str, changes: TaskChanges, *, expected_version: int | None = None) -> Task:
        """Apply a TaskChanges to a pending task, compare-and-set on its version.

        A repeat of a change that already committed (`expected_version` is the version it started
        from, the task is one version later and already as the change asks) returns the task and
        re-runs its rule sync instead of failing with VersionMismatchError."""
        given = changes.given()
        if not given:
            raise ValidationError("body: no field to change", field="body")

        def attempt(current: TaskRecord) -> Task | None:
            now = self.clock.now()
            if expected_version is not None and current.version != expected_version:
                if current.version == expected_version + 1 and already_applied(current, given, now):
                    self._resync(current)
                    return self._view(current)
                raise version_mismatch(current, expected_version)
            require_changeable(current)
            updated, due = apply_changes(current, given, now)
            parked = current.status == TaskStatus.PAUSED  # a paused task is changed and stays paused
            if due is None:
                return self._view(updated) if self.store.replace_task(updated, current.version) else None
            leaving = self.store.entry_of(current)
            updated = self._mark_left_running(current, updated, now)
            run = occurrence_of(updated, due)
            cover = HeadCover(None if parked else self.runtime.rule_sync)
            if not self.store.swap_occurrence(
                current, updated, run, leaving=leaving, parked=parked, after_entry=cover
            ):
                return None
            if not parked:
                self._cover(updated.id, run.run_at, cover.state)
            return self._view(updated)

        return self._compare_and_set(task_id, attempt)

    def cancel(self, task_id: str, *, expected_version: int | None = None) -> Task:
        """Cancel a pending or paused task (a recurring one stops for good). It stays readable as
        `cancelled`. The answer's `occurrence_may_run` says whether an occurrence may still run:
        one a worker could have claimed before the cancel committed (due, or within
        CLAIM_AHEAD_SECONDS of it) completes, and its outcome shows in `last_run`; nothing after
        it runs.

        Cancelling a cancelled task returns it (whatever `expected_version`), after deleting the
        queue entry an interrupted first cancel may have left."""

        def attempt(current: TaskRecord) -> Task | None:
            if current.status == TaskStatus.CANCELLED:
                self.store.drop_entry_of(current)
                return replace(self._view(current), occurrence_may_run=False)
            if expected_version is not None and current.version != expected_version:
                raise version_mismatch(current, expected_version)
            require_changeable(current)
            now = self.clock.now()
            updated = replace(
                current,
                status=TaskStatus.CANCELLED,
                due=None,
                version=current.version + 1,
                updated_at=now,
                expires_at=now + timedelta(days=self.settings.retention_days),
            )
            if not self.store.swap_occurrence(current, updated, None, leaving=self.store.entry_of(current)):
                return None
            extra = self.store.extra_of(current)
            if extra is not None:  # a waiting "run now" goes too (else the worker drops it as stale)
                self.store.discard_entry(extra)
            may_run = _may_still_run(current, self.clock.now())  # the clock read after the commit
            return replace(self._view(updated), occurrence_may_run=may_run)

        return self._compare_and_set(task_id, attempt)

    # ------------------------------------------------------------------ steer
    def pause(self, task_id: str, *, expected_version: int | None = None) -> Task:
        """Pause a pending task: nothing of its schedule runs until it is resumed; it keeps its next
        due time (its place) and its history. An occurrence already running completes.

        Pausing a paused task returns it (whatever `expected_version`): a repeated request whose
        first attempt committed and then failed."""

        def change(current: TaskRecord, now: datetime) -> tuple[TaskRecord, Occurrence | None, bool]:
            updated = paused(current, now)
            assert updated.due is not None
            return updated, Occurrence(updated.due, updated.due), True

        return self._steer(task_id, expected_version, change, applied=TaskStatus.PAUSED)

    def resume(
        self,
        task_id: str,
        *,
        missed: str | Missed = Missed.ONCE,
        max_catch_up: int = DEFAULT_MAX_CATCH_UP,
        expected_version: int | None = None,
    ) -> Task:
        """Resume a paused task. What fell due while it was paused: `skip` it, run the newest `once`
        now, or run `each` of the newest `max_catch_up` one after the other from now (each under its
        own idempotency key; the misfire grace still applies).

        Resuming a pending task returns it (whatever `expected_version`), as pausing a paused one
        does."""
        policy, catch_up = check_missed(missed, max_catch_up)
        retention = timedelta(days=self.settings.retention_days)

        def change(current: TaskRecord, now: datetime) -> tuple[TaskRecord, Occurrence | None, bool]:
            updated, run = resumed(current, now, policy, catch_up, retention)
            return updated, run, False

        return self._steer(task_id, expected_version, change, applied=TaskStatus.PENDING)

    def skip(self, task_id: str, *, count: int = 1, expected_version: int | None = None) -> Task:
        """Skip the next `count` occurrences of a pending or paused task (a one-shot's only one: it
        ends `skipped`). An occurrence already running completes."""
        retention = timedelta(days=self.settings.retention_days)

        def change(current: TaskRecord, now: datetime) -> tuple[TaskRecord, Occurrence | None, bool]:
            updated, run = skipped(current, count, now, retention)
            return updated, run, current.status == TaskStatus.PAUSED

        return self._steer(task_id, expected_version, change)

    def run_now(self, task_id: str, *, expected_version: int | None = None) -> Task:
        """Run one extra occurrence of a pending or paused task now, with its own idempotency key
        (its scheduled time is now); the schedule is unchanged. On a failed task it is a retry: if
        it succeeds, so has the task. One at a time: 409 while one waits."""

        def change(current: TaskRecord, now: datetime) -> tuple[TaskRecord, Occurrence | None, bool]:
            if current.status not in RUNNABLE_NOW:
                raise ConflictError(
                    f"status: task is {current.status}, not pending, paused or failed", field="status"
                )
            if current.extra_key is not None:
                raise ConflictError(
                    "status: a run-now occurrence of this task is already waiting", field="status"
                )
            return replace(current, version=current.version + 1, updated_at=now), Occurrence(now, now), False

        return self._steer(task_id, expected_version, change, pointer=Pointer.EXTRA)

    def _steer(
        self,
        task_id: str,
        expected_version: int | None,
        change: Callable[[TaskRecord, datetime], tuple[TaskRecord, Occurrence | None, bool]],
        *,
        pointer: Pointer = Pointer.SCHEDULE,
        applied: TaskStatus | None = None,
    ) -> Task:
        """Apply `change(current, now) -> (updated, occurrence or None, parked)` with compare-and-set,
        moving one of the task's pointers to the new occurrence's entry: its schedule's (from the
        entry it leaves; parked for a paused task), or its "run now" one (a new entry beside it).
        A task already in the `applied` status is returned as it is: the change is a repeat of one
        that committed. An entry the first attempt failed to delete is stale: the worker deletes a
        live one when it falls due, the paused listing a parked one."""

        def attempt(current: TaskRecord) -> Task | None:
            if current.status == applied:
                return self._view(current)
            if expected_version is not None and current.version != expected_version:
                raise version_mismatch(current, expected_version)
            now = self.clock.now()
            updated, run, parked = change(current, now)
            leaving = None
            if pointer is Pointer.SCHEDULE:
                leaving = self.store.entry_of(current)
                updated = self._mark_left_running(current, updated, now)
            cover = HeadCover(None if parked else self.runtime.rule_sync)
            if not self.store.swap_occurrence(
                current, updated, run, leaving=leaving, parked=parked, pointer=pointer, after_entry=cover
            ):
                return None
            if run is not None and not parked:
                self._cover(updated.id, run.run_at, cover.state)
            return self._view(updated)

        return self._compare_and_set(task_id, attempt)

    def _mark_left_running(self, current: TaskRecord, updated: TaskRecord, now: datetime) -> TaskRecord:
        """`updated`, marked when the change leaves a schedule occurrence a worker may have claimed
        before the change commits: that occurrence completes (a change never stops a claimed one),
        so a cancel after the change must not answer that nothing runs any more.

        The mark is decided from the clock read before the task write, so the claim-ahead window is
        widened by a lease: a task write that commits more than a lease after that read (SDK retries
        can take longer) is not covered. The occurrence may run until a lease after the latest
        commit so covered (the worker warns when an action's timeout reaches the lease)."""
        if current.status != TaskStatus.PENDING or current.queue_key is None:
            return updated  # a paused task's schedule entry is parked: nothing claims it
        lease = timedelta(seconds=self.settings.lease_seconds)
        if not _claimable_by(current.queue_key, now + lease):
            return updated
        until = now + 2 * lease
        if current.left_running_until is not None:
            until = max(until, current.left_running_until)
        return replace(updated, left_running_until=until)


def _may_still_run(record: TaskRecord, now: datetime) -> bool:
    """Whether an occurrence of `record` may still run after a cancel that committed by `now`: one
    a worker could have claimed by then (the schedule's, or a waiting "run now"), or one an earlier
    change left running (`left_running_until`)."""
    if record.left_running_until is not None and now < record.left_running_until:
        return True
    if record.status not in (TaskStatus.PENDING, TaskStatus.PAUSED):
        return False
    # A paused task's schedule entry is parked: only its "run now" can run.
    keys = (record.extra_key, record.queue_key if record.status == TaskStatus.PENDING else None)
    return any(_claimable_by(key, now) for key in keys if key is not None)


def _claimable_by(queue_key: str, now: datetime) -> bool:
    """Whether a worker could have claimed the entry under `queue_key` by `now`: a worker claims
    one at the earliest CLAIM_AHEAD_SECONDS before its time."""
    return split_queue_sort_key(queue_key)[0] <= now + timedelta(seconds=CLAIM_AHEAD_SECONDS)
