"""The correctness contract checked on a world at rest (docs/reliability.md).

`Ledger` is what the clients asked for — every task id a client tried to create, every due time it
asked for, every cancel it sent — whether or not the request committed (a client that crashed or
got an error cannot know). `check_invariants` reads what is committed (strongly consistent, through
a clean TaskStore and the rule itself) and holds it against the ledger and the deliveries:

* I1 no loss — a committed pending task has a live queue entry; at the end (`final`) no pending
  task is overdue, a one-shot ended succeeded (a delivery of that occurrence exists), cancelled
  (a cancel was sent), or failed only if its action always fails (I4); a recurring task was
  delivered at every time of its recurrence up to now (or, after a late run, coalesced: missed
  occurrences fold into the next by design), nothing after its cancel.
* I2 convergence — unless a worker invocation is pending, the rule is armed at or before the
  earliest pending task's fire minute (its precision lead included), not for a past minute, not
  for a minute that will not fire, and agrees with its record.
* I3 duplicates only with the same key — every delivery's key is `<task id>:<scheduled time>`,
  a one-shot is delivered only at times a client asked for, and without faults or crashes
  nothing is delivered twice.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter

from nexttick.ruletiming import Timing
from nexttick.store import TaskStore
from nexttick.store.records import QueueEntry, TaskRecord, TaskStatus
from nexttick.timeutil import floor_minute, parse_instant
from nexttick.worker.occurrence import UNFINISHED_ATTEMPT

_SAME_INSTANT = timedelta(milliseconds=1)
# A run's completion reads its clock after the action started (fired_at); occurrences up to this
# much after the last start of the previous run may have been coalesced into the next.
COMPLETION_SLACK = timedelta(seconds=90)


@dataclass
class Intent:
    """What clients asked for one task id."""

    task_id: str
    kind: str  # once | cron | every
    action: str
    dues: list[datetime] = field(default_factory=list)  # one-shot: every due time asked for
    cancel_sent: datetime | None = None  # when the first cancel was sent
    pause_sent: bool = False  # a client paused it (a paused task runs nothing until resumed)


class Ledger:
    """The clients' side of the story (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.intents: dict[str, Intent] = {}

    def create(self, task_id: str, kind: str, action: str, due: datetime | None = None) -> None:
        with self._lock:
            intent = self.intents.setdefault(task_id, Intent(task_id, kind, action))
            if due is not None:
                intent.dues.append(due)

    def reschedule(self, task_id: str, due: datetime) -> None:
        with self._lock:
            self.intents[task_id].dues.append(due)

    def cancel(self, task_id: str, at: datetime) -> None:
        with self._lock:
            intent = self.intents[task_id]
            if intent.cancel_sent is None:
                intent.cancel_sent = at

    def pause(self, task_id: str) -> None:
        with self._lock:
            self.intents[task_id].pause_sent = True

    def ids(self) -> list[str]:
        with self._lock:
            return list(self.intents)

    def get(self, task_id: str) -> Intent:
        with self._lock:
            return self.intents[task_id]


@dataclass(frozen=True)
class Violation:
    invariant: str  # I1 | I2 | I3 | I4
    task_id: str | None
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant} {self.task_id or '-'}: {self.detail}"


@dataclass
class InvariantReport:
    violations: list[Violation] = field(default_factory=list)
    figures: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def lost(self) -> list[str]:
        """Tasks with an I1 violation (committed and not run as asked)."""
        return sorted({v.task_id for v in self.violations if v.invariant == "I1" and v.task_id})

    def of(self, invariant: str) -> list[Violation]:
        return [v for v in self.violations if v.invariant == invariant]

    def add(self, invariant: str, task_id: str | None, detail: str) -> None:
        self.violations.append(Violation(invariant, task_id, detail))

    def summary(self, limit: int = 20) -> str:
        lines = [str(v) for v in self.violations[:limit]]
        if len(self.violations) > limit:
            lines.append(f"... and {len(self.violations) - limit} more")
        return "\n".join(lines) or "all invariants hold"


@dataclass
class _Snapshot:
    now: datetime
    rule_minute: datetime | str | None
    armed_minute: datetime | None
    tasks: dict[str, TaskRecord]
    entries: dict[str, QueueEntry | None]  # pending task id -> its live entry (None: missing)


def _snapshot(store: TaskStore, rule: Any, now: datetime, task_ids: Sequence[str]) -> _Snapshot:
    tasks = store.get_tasks(task_ids) if task_ids else {}
    entries: dict[str, QueueEntry | None] = {}
    for task in tasks.values():
        if task.status != TaskStatus.PENDING:
            continue
        ref = store.entry_of(task)
        entry = store.get_entry(ref.shard, ref.key) if ref is not None else None
        entries[task.id] = entry if entry is not None and entry.token == task.queue_token else None
    return _Snapshot(now, rule.current(), store.read_rule_state().armed_minute, tasks, entries)


def check_invariants(
    store: TaskStore,
    rule: Any,
    timing: Timing,
    now: datetime,
    ledger: Ledger,
    deliveries: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    final: bool,
    invocation_pending: bool = False,
    will_fire: Callable[[datetime], bool] | None = None,
    faults: bool = True,
) -> InvariantReport:
    """Check I1-I3 (and I4 for tasks whose action always fails) on a world at rest.

    `store`/`rule`: a clean TaskStore and EventBridgeRule (no faults). `final`: the world was driven
    past every due time, so nothing may be pending for the past. `invocation_pending`: a worker
    invocation is queued or running (then the rule need not cover the head). `will_fire`: the
    emulated EventBridge's word that an armed minute still fires. `faults`: faults or crashes
    happened (duplicates are allowed only then)."""
    report = InvariantReport()
    snap = _snapshot(store, rule, now, ledger.ids())
    report.figures["requested"] = len(ledger.ids())
    report.figures["committed"] = len(snap.tasks)
    for task_id in ledger.ids():
        intent = ledger.get(task_id)
        task = snap.tasks.get(task_id)
        delivered = list(deliveries.get(task_id, ()))
        report.figures["deliveries"] += len(delivered)
        if task is None:
            if delivered:
                report.add("I1", task_id, f"delivered {len(delivered)}x but never committed")
            continue
        report.figures[f"status:{task.status}"] += 1
        _check_keys(report, task, intent, delivered, faults)
        if task.status == TaskStatus.PENDING:
            entry = snap.entries.get(task_id)
            if entry is None:
                report.add(
                    "I1", task_id, f"pending (due {task.due}) without a live queue entry: nothing runs it"
                )
            elif final and entry.effective_at() <= now:
                report.add(
                    "I1", task_id, f"pending and overdue at rest: runnable since {entry.effective_at()}"
                )
        if final:
            if task.schedule_kind == "once":
                _check_once(report, task, intent, delivered, faults)
            else:
                _check_recurring(report, task, intent, delivered, now)
    _check_rule(report, snap, timing, invocation_pending, will_fire)
    report.figures["lost"] = len(report.lost)
    return report


def _unfinished(task: TaskRecord) -> bool:
    """The task failed because every attempt was claimed and none finished (each ended by a crash
    or a fault before its delivery): the claim that found the attempts exhausted recorded it. An
    always-failing task with few attempts can end so under crashes without its action ever running;
    one whose action succeeds is still held to I1, however many attempts it has."""
    error = task.last_run.error if task.last_run is not None else None
    return error is not None and UNFINISHED_ATTEMPT in error


def _scheduled(envelope: Mapping[str, Any]) -> datetime:
    return parse_instant(str(envelope["scheduled_for"]), "scheduled_for")


def _check_keys(
    report: InvariantReport,
    task: TaskRecord,
    intent: Intent,
    delivered: list[Mapping[str, Any]],
    faults: bool,
) -> None:
    """I3: one key per occurrence, `<id>:<scheduled time>`; duplicates only after faults."""
    keys: Counter[str] = Counter()
    for envelope in delivered:
        key = envelope["idempotency_key"]
        if key != f"{task.id}:{envelope['scheduled_for']}":
            report.add("I3", task.id, f"delivery key {key!r} is not <id>:<scheduled time>")
        keys[key] += 1
    duplicates = sum(count - 1 for count in keys.values())
    report.figures["duplicates"] += duplicates
    if duplicates and not faults:
        report.add("I3", task.id, f"{duplicates} duplicate deliveries without any fault or crash")
    if task.schedule_kind == "once":
        for envelope in delivered:
            at = _scheduled(envelope)
            if not any(abs(at - due) < _SAME_INSTANT for due in intent.dues):
                report.add("I3", task.id, f"one-shot delivered for {at}, which no client asked for")


def _check_once(
    report: InvariantReport,
    task: TaskRecord,
    intent: Intent,
    delivered: list[Mapping[str, Any]],
    faults: bool,
) -> None:
    status = task.status
    if status == TaskStatus.SUCCEEDED:
        ran = task.last_run.scheduled_for if task.last_run is not None else None
        if ran is None or not any(abs(_scheduled(e) - ran) < _SAME_INSTANT for e in delivered):
            report.add("I1", task.id, f"succeeded for {ran} but no delivery of that occurrence")
        if intent.action == "fail":
            report.add("I4", task.id, "an always-failing action ended succeeded")
    elif status == TaskStatus.CANCELLED:
        if intent.cancel_sent is None:
            report.add("I1", task.id, "cancelled, but no client cancelled it")
    elif status == TaskStatus.FAILED:
        if intent.action != "fail":
            error = task.last_run.error if task.last_run else None
            report.add("I1", task.id, f"failed although its action succeeds: {error}")
        elif not delivered and not (faults and _unfinished(task)):
            report.add("I4", task.id, "failed without ever being delivered")
    elif status == TaskStatus.PAUSED and not intent.pause_sent:
        report.add("I1", task.id, "paused, but no client paused it")
    elif status == TaskStatus.SKIPPED and task.misfire_grace_seconds is None:
        report.add("I1", task.id, "skipped without a misfire grace")


def _recurrence(task: TaskRecord, until: datetime) -> list[datetime]:
    """The task's occurrence times after its creation, up to `until` (computed here, not by nexttick)."""
    times: list[datetime] = []
    if task.schedule_kind == "every":
        assert task.every_seconds is not None
        step = timedelta(seconds=task.every_seconds)
        at = task.created_at + step
        while at <= until:
            times.append(at)
            at += step
        return times
    assert task.cron is not None
    zone = ZoneInfo(task.timezone or "UTC")
    it = croniter(task.cron, task.created_at.astimezone(zone))
    while (at := it.get_next(datetime).astimezone(task.created_at.tzinfo)) <= until:
        times.append(at)
    return times


def _check_recurring(
    report: InvariantReport,
    task: TaskRecord,
    intent: Intent,
    delivered: list[Mapping[str, Any]],
    now: datetime,
) -> None:
    """Every occurrence up to now was delivered, or coalesced into the next after a late run."""
    until = task.updated_at if task.status == TaskStatus.CANCELLED else now
    expected = _recurrence(task, until)
    starts: dict[datetime, datetime] = {}  # scheduled -> latest start of its deliveries
    for envelope in delivered:
        at = _scheduled(envelope)
        match = next((t for t in expected if abs(t - at) < _SAME_INSTANT), None)
        if match is None:
            report.add("I1", task.id, f"delivered for {at}, not a time of its recurrence up to {until}")
            continue
        fired = parse_instant(str(envelope["fired_at"]), "fired_at")
        starts[match] = max(starts.get(match, fired), fired)
    previous: datetime | None = None
    for at in expected:
        if at in starts:
            previous = at
            continue
        if task.status == TaskStatus.CANCELLED and not any(t > at for t in starts):
            break  # nothing ran after it: the cancel came first
        if previous is not None and at <= starts[previous] + COMPLETION_SLACK:
            report.figures["coalesced"] += 1
            continue
        report.add("I1", task.id, f"occurrence {at} never delivered (last delivered: {previous})")
        break
    if task.status == TaskStatus.PENDING and task.due is not None and task.due <= now:
        report.add("I1", task.id, f"recurring task's next due {task.due} is in the past at rest")
    if task.status not in (TaskStatus.PENDING, TaskStatus.CANCELLED):
        report.add("I1", task.id, f"recurring task ended {task.status}")
    elif task.status == TaskStatus.CANCELLED and intent.cancel_sent is None:
        report.add("I1", task.id, "cancelled, but no client cancelled it")


def _check_rule(
    report: InvariantReport,
    snap: _Snapshot,
    timing: Timing,
    invocation_pending: bool,
    will_fire: Callable[[datetime], bool] | None,
) -> None:
    """I2 at rest: the rule covers the earliest pending task, or a worker invocation is pending."""
    live = {task_id: entry for task_id, entry in snap.entries.items() if entry is not None}
    if not live:
        return
    first_id, first = min(live.items(), key=lambda item: item[1].effective_at())
    due = first.effective_at()
    wanted = timing.fire_minute(due)
    armed = snap.rule_minute
    report.figures["pending"] = len(live)
    if invocation_pending:
        return
    where = f"earliest pending {first_id} runnable at {due} (fire minute {wanted}); rule armed for {armed}"
    if not isinstance(armed, datetime):
        report.add("I2", first_id, f"{where}: nothing will fire")
        return
    if armed > wanted:
        report.add("I2", first_id, f"{where}: armed late")
    if armed < floor_minute(snap.now) or (will_fire is not None and not will_fire(armed)):
        report.add("I2", first_id, f"{where}: that minute will not fire (now {snap.now})")
    if snap.armed_minute != armed:
        report.add("I2", first_id, f"{where}: its record says {snap.armed_minute}")
