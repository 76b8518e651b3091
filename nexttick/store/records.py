"""Plain records exchanged with the layers above (no PynamoDB types leak out of the store)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from nexttick.actions.base import idempotency_key
from nexttick.schedules import DstRepeated, DstSkipped, Recurrence, ScheduleKind, jittered

# How the public records (here and the editor's answers) render and document themselves: no field
# beyond the declared ones, and every field sent (so the schema marks each one required).
PUBLIC_SHAPE = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


# Written with its whole run record (`run_at`, `fired_at`; numbered by the task's `run_seq`): the
# newest run is kept on the task item, and enters the ring of runs only when a newer one takes its
# place (`latest_run`).
@dataclass(frozen=True)
class LastRun:
    """The task's newest attempt."""

    # As the editor publishes it (its own, so that the schema never depends on who asks first).
    __pydantic_config__ = PUBLIC_SHAPE

    started_at: datetime
    finished_at: datetime | None
    outcome: str  # succeeded | failed | retrying | skipped
    error: str | None = None
    scheduled_for: datetime | None = None
    attempt: int = 1
    run_at: Annotated[
        datetime | None, Field(description="The instant the attempt was due (a retry's own time).")
    ] = None
    fired_at: Annotated[datetime | None, Field(description="When a worker claimed the attempt.")] = None


class TaskStatus(StrEnum):
    """A task's status. `running` is never stored: it is derived from a live lease on its entry."""

    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"  # keeps its schedule and history; its entry is parked where no worker reads
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


# A task in one of these is still scheduled: it can be changed, steered or cancelled.
SCHEDULED = frozenset({TaskStatus.PENDING, TaskStatus.PAUSED})
# A task in one of these may run an extra occurrence now ("run now"; for a failed one, a retry).
RUNNABLE_NOW = frozenset({TaskStatus.PENDING, TaskStatus.PAUSED, TaskStatus.FAILED})


@dataclass(kw_only=True)
class TaskFields:
    """A task's own fields, the ones its users see: the stored TaskRecord adds the store's
    bookkeeping to them, the editor's Task what it derives (a live `running`, a retry's time)."""

    id: str
    action: str
    payload: dict[str, Any]
    status: TaskStatus
    schedule_kind: ScheduleKind
    due: Annotated[datetime | None, Field(description="Next due time (UTC); null once finished.")]
    cron: str | None = None
    timezone: str | None = "UTC"
    every_seconds: float | None = None
    end: datetime | None = None
    max_attempts: int = 3
    retry_backoff_seconds: float = 30.0
    misfire_grace_seconds: float | None = None
    # Cron only: what a wall time that a DST change skips or repeats does (nexttick/schedules.py).
    dst_skipped: Annotated[DstSkipped | None, Field(description="`cron` only (null otherwise).")] = None
    dst_repeated: Annotated[DstRepeated | None, Field(description="`cron` only (null otherwise).")] = None
    # Each occurrence starts up to this much after its scheduled time, by a hash of its key.
    jitter_seconds: float | None = None
    attempts: int = 0
    runs: int = 0
    last_run: LastRun | None = None
    version: int = 1
    created_at: datetime
    updated_at: datetime

    def __post_init__(self) -> None:
        # Given as plain strings (the table, JSON, tests) they become the enums all the same.
        self.status = TaskStatus(self.status)
        self.schedule_kind = ScheduleKind(self.schedule_kind)
        if self.dst_skipped is not None:
            self.dst_skipped = DstSkipped(self.dst_skipped)
        if self.dst_repeated is not None:
            self.dst_repeated = DstRepeated(self.dst_repeated)


@dataclass(kw_only=True)
class TaskRecord(TaskFields):
    """One task as stored."""

    timezone: str = "UTC"  # stored for every kind; only a cron schedule uses it
    dst_skipped: DstSkipped = DstSkipped.SKIP  # likewise
    dst_repeated: DstRepeated = DstRepeated.FIRST
    # The live queue entry (sort key, token; `queue_parked`: in the parked partitions, for a paused
    # task); a cancelled task keeps its last one, so that a repeated cancel can still delete it.
    queue_key: str | None = None
    queue_token: str | None = None
    queue_parked: bool = False
    # The entry of a "run now" occurrence (one at a time), beside the schedule's own.
    extra_key: str | None = None
    extra_token: str | None = None
    # Resumed with "each": occurrences up to this one run one by one instead of coalescing.
    catch_up_until: datetime | None = None
    # A change that left an occurrence a worker may have claimed (a reschedule, pause or skip of a
    # due one): that occurrence may still be completing until then (the change's time + a lease).
    left_running_until: datetime | None = None
    request_hash: str | None = None
    expires_at: datetime | None = None
    # Run records written so far: the next one goes to ring slot `run_seq % run_history`.
    run_seq: int = 0
    # The payload's own item (`T#<id>`/`P#<ref>`) when it is larger than INLINE_PAYLOAD_BYTES.
    payload_ref: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """One attempt of one occurrence, as its task's run history keeps it."""

    task_id: str
    seq: int  # the task's run counter when written: orders the history, newest highest
    scheduled_for: datetime
    run_at: datetime  # the instant its queue entry was due (a retry's own time)
    fired_at: datetime  # the worker claimed it
    started_at: datetime
    finished_at: datetime
    attempt: int
    outcome: str  # succeeded | failed | retrying | skipped
    error: str | None = None

    @property
    def lateness_seconds(self) -> float:
        """How long after its due instant the attempt started."""
        return (self.started_at - self.run_at).total_seconds()


def latest_run(task: TaskRecord) -> RunRecord | None:
    """The newest run as the task item keeps it, not yet in the ring; None when the task has not
    run, or when its `last_run` was written before items kept a whole run (the ring holds that run
    already)."""
    last = task.last_run
    if last is None:
        return None
    scheduled_for, run_at, fired_at = last.scheduled_for, last.run_at, last.fired_at
    finished_at = last.finished_at
    if scheduled_for is None or run_at is None or fired_at is None or finished_at is None:
        return None
    return RunRecord(
        task_id=task.id,
        seq=task.run_seq,
        scheduled_for=scheduled_for,
        run_at=run_at,
        fired_at=fired_at,
        started_at=last.started_at,
        finished_at=finished_at,
        attempt=last.attempt,
        outcome=last.outcome,
        error=last.error,
    )


@dataclass(frozen=True)
class EntryRef:
    """Where one queue entry is (`shard`, sort `key`, `parked` or queued) and the `token` that proves
    it is that entry."""

    shard: int
    key: str
    token: str
    parked: bool = False


@dataclass(frozen=True)
class Occurrence:
    """A run to queue: occurrence `scheduled_for`, attempt `attempt`, claimable from `run_at`."""

    run_at: datetime
    scheduled_for: datetime
    attempt: int = 1


def recurrence_of(task: TaskRecord) -> Recurrence:
    """How `task` repeats (a one-shot's is of kind ONCE)."""
    return Recurrence(
        task.schedule_kind,
        cron=task.cron,
        timezone=task.timezone,
        every_seconds=task.every_seconds,
        dst_skipped=task.dst_skipped,
        dst_repeated=task.dst_repeated,
    )


def occurrence_of(task: TaskFields, scheduled_for: datetime) -> Occurrence:
    """The first attempt of occurrence `scheduled_for` of `task`: claimable from its scheduled time
    plus the task's jitter for that occurrence (the same offset however often it is computed)."""
    run_at = jittered(scheduled_for, task.jitter_seconds, idempotency_key(task.id, scheduled_for))
    return Occurrence(run_at, scheduled_for)


@dataclass
class QueueEntry:
    """A pointer into the due-ordered queue: run `task_id` (occurrence `scheduled_for`) at `run_at`.

    `key` is the stored sort key (nexttick.store.keys), kept as read: older entries have another form."""

    shard: int
    run_at: datetime
    task_id: str
    token: str
    scheduled_for: datetime
    key: str
    attempt: int = 1
    lease_until: datetime | None = None
    lease_owner: str | None = None
    created_at: datetime | None = None
    last_error: str | None = None  # the error that ended an abandoned claim
    parked: bool = False  # a paused task's entry (never claimed)
    # The task, as a claim's answer gives it for a home item (the entry that carries its task).
    task: TaskRecord | None = None

    @property
    def ref(self) -> EntryRef:
        return EntryRef(self.shard, self.key, self.token, self.parked)

    def effective_at(self) -> datetime:
        """When this entry can next be claimed: its run time, or the end of a live/abandoned lease."""
        if self.lease_until is not None and self.lease_until > self.run_at:
            return self.lease_until
        return self.run_at

    def leased_at(self, now: datetime) -> bool:
        return self.lease_until is not None and self.lease_until > now


@dataclass(frozen=True)
class WaiterClaim:
    """A worker's claim to be the one invocation sleeping for a due-soon head due `at`, alive until
    `until` (its deadline). It takes the record's claim when there is none, it is the owner's, the
    current one wakes later or is gone by `at`, or should have woken before `stale_before` (waiters
    release their claim on waking: that one died)."""

    at: datetime
    owner: str
    until: datetime
    stale_before: datetime

    def takes_over(self, state: RuleState) -> bool:
        """Whether this claim may replace what `state` holds (the write's condition, as read)."""
        return (
            state.waiter_at is None
            or state.waiter_owner == self.owner
            or state.waiter_at > self.at
            or (state.waiter_until is not None and state.waiter_until < self.at)
            or state.waiter_at < self.stale_before
        )

    def held_in(self, state: RuleState) -> bool:
        """`state` holds exactly this claim."""
        return (state.waiter_owner, state.waiter_at, state.waiter_until) == (self.owner, self.at, self.until)


@dataclass(frozen=True)
class ShardFront:
    """What a read of a queue shard's front found: the earliest time an entry becomes claimable
    (None: the shard holds no entry from where it was read), and the cursor the read justifies —
    the first entry's key, or the key of the read's instant if that sorts first (None: neither)."""

    head: datetime | None
    cursor: str | None


@dataclass
class RuleState:
    """What the single EventBridge rule is armed for (None = the epoch), with a CAS version."""

    armed_minute: datetime | None
    version: int = 0
    # The last version whose value a PutRule was confirmed for (the record did not move across it).
    published_version: int = 0
    # The version a reader took it upon itself to publish (its writer may have died before PutRule).
    repair_version: int | None = None
    kicked_at: datetime | None = None
    # The one worker invocation sleeping in-process for a due-soon head: wakes at `waiter_at`,
    # alive until `waiter_until` (its Lambda deadline). Released by the first worker that runs at or
    # after `waiter_at` (the waiter itself, or the one its backstop firing started).
    waiter_at: datetime | None = None
    waiter_until: datetime | None = None
    waiter_owner: str | None = None
    # Per queue shard, the earliest time any of its entries can be claimed: a lower bound (never
    # later than a claimable entry), None for a shard known to be empty. A shard missing from the
    # map is not known and must be read; `heads` None: the record holds no shard heads yet.
    heads: Mapping[int, datetime | None] | None = None
    # Per queue shard, a sort key no unfinished entry of the shard sorts before: reads of the shard
    # start there. A shard missing from the map (or `cursors` None) is read from its start.
    cursors: Mapping[int, str] | None = None

    def knows_head(self, shard: int) -> bool:
        return self.heads is not None and shard in self.heads

    def head_of(self, shard: int) -> datetime | None:
        """The recorded head of a shard it knows (None: empty)."""
        assert self.heads is not None
        return self.heads[shard]

    def cursor_of(self, shard: int) -> str | None:
        """Where reads of `shard` start (None: at its first entry)."""
        return None if self.cursors is None else self.cursors.get(shard)

    @property
    def published(self) -> bool:
        """The rule was confirmed to hold this record's value (not just a CAS whose writer may have
        died before its PutRule)."""
        return self.published_version == self.version


# An entry is written before the task write that points at it: one no task points at may belong to
# a write still in flight until it is this old ...
STALE_ENTRY_AGE = timedelta(minutes=5)
# ... or until its task was updated this long after it was written (clock skew between writers).
CLOCK_SKEW = timedelta(seconds=5)


def discardable(entry: QueueEntry, task: TaskRecord | None, now: datetime) -> bool:
    """Whether an entry its task does not point at is a leftover (of a crash, or of a cleanup that
    failed) rather than a write in flight: its task changed after it was written, or it is old."""
    created = entry.created_at
    superseded = task is not None and created is not None and created < task.updated_at - CLOCK_SKEW
    return superseded or created is None or now - created >= STALE_ENTRY_AGE
