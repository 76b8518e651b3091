"""An in-memory model of the rule protocol's world (for exhaustive enumeration), the naive
"read head, then PutRule" synchroniser of the reference proof of concept, and a mutant of our
protocol without its second head read. The last two must FAIL the interleaving tests."""

from __future__ import annotations

from datetime import datetime, timedelta

from nexttick.rulesync import Outcome, RearmResult, RuleSync
from nexttick.schedules import Timing
from nexttick.store.records import RuleState


class FixedClock:
    def __init__(self, now: datetime) -> None:
        self._now = now

    def now(self) -> datetime:
        return self._now

    def sleep(self, seconds: float) -> None:  # pragma: no cover - the protocol never sleeps
        raise AssertionError("rule sync must not sleep")


class ModelStore:
    """Queue head + rule record with the same linearizable semantics as the DynamoDB items."""

    def __init__(self) -> None:
        self.entries: dict[str, datetime] = {}
        self.armed: datetime | None = None
        self.version = 0
        self.kicked: datetime | None = None

    def add(self, task_id: str, due: datetime) -> None:
        self.entries[task_id] = due

    def remove(self, task_id: str) -> None:
        self.entries.pop(task_id, None)

    def read_rule_state(self) -> RuleState:
        return RuleState(armed_minute=self.armed, version=self.version, kicked_at=self.kicked)

    def cas_rule_state(self, expected_version: int, armed_minute: datetime | None) -> int | None:
        if self.version != expected_version:
            return None
        self.armed, self.version = armed_minute, self.version + 1
        return self.version

    def head(self) -> datetime | None:
        return min(self.entries.values(), default=None)

    def try_mark_kicked(self, now: datetime, not_since: datetime) -> bool:
        if self.kicked is not None and self.kicked >= not_since:
            return False
        self.kicked = now
        return True

    def claim_waiter(self, at: datetime, owner: str, until: datetime, now: datetime) -> bool:
        return True  # the modelled worker tail never sleeps

    def snapshot(self) -> tuple[object, ...]:
        return (tuple(sorted(self.entries.items())), self.armed, self.version, self.kicked)


class ModelRule:
    def __init__(self) -> None:
        self.minute: datetime | None = None
        self.puts = 0

    def put(self, minute: datetime | None) -> None:
        self.minute = minute
        self.puts += 1

    def current(self) -> datetime | None:
        return self.minute


class ModelTrigger:
    def __init__(self) -> None:
        self.wakes: list[str] = []

    def wake(self, reason: str) -> None:
        self.wakes.append(reason)


class NaiveRuleSync(RuleSync):
    """The reference proof of concept: read the head, PutRule it. No record, no compare-and-set."""

    uses_record = False

    def on_task_due(self, due: datetime) -> Outcome:
        minute = self.timing.fire_minute(due)
        if not self.timing.armable(minute, self.clock.now()):
            self._wake("due too soon to arm")
            return Outcome.INVOKED
        head = self.store.head()
        self.rule.put(self.timing.fire_minute(head) if head else None)
        return Outcome.ARMED

    def rearm(self) -> RearmResult:
        head = self.store.head()
        target = self.timing.fire_minute(head) if head is not None else None
        if target is not None and not self.timing.armable(target, self.clock.now()):
            return RearmResult(Outcome.DUE_SOON, head, None)
        self.rule.put(target)
        return RearmResult(Outcome.ARMED, head, target)


class NoRecheckRuleSync(RuleSync):
    """Our protocol minus the worker's second head read after raising the record."""

    def rearm(self) -> RearmResult:
        while True:
            state = self.store.read_rule_state()
            head = self.store.head()
            target = self.timing.fire_minute(head) if head is not None else None
            if target is not None and not self.timing.armable(target, self.clock.now()):
                return RearmResult(Outcome.DUE_SOON, head, state.armed_minute)
            if state.armed_minute == target:
                return RearmResult(Outcome.UNCHANGED, head, target)
            if self.store.cas_rule_state(state.version, target) is None:
                continue
            self.publish()
            return RearmResult(Outcome.ARMED, head, target)


def rest_violation(
    timing: Timing,
    now: datetime,
    armed: datetime | None,
    rule_minute: object,
    pending: list[datetime],
    wakes: int,
) -> str | None:
    """I2 at rest: the rule matches the record, fires at or before the earliest armable pending
    minute and not in the past; a pending task too close to arm was handed to the worker."""
    if rule_minute != armed:
        return f"rule {rule_minute} != record {armed}"
    minutes = [timing.fire_minute(d) for d in pending]
    armable = [m for m in minutes if timing.armable(m, now)]
    if len(armable) < len(minutes) and wakes == 0:
        return "a task too close to arm is pending but the worker was never invoked"
    if armable:
        earliest = min(armable)
        if armed is None:
            return f"rule at the epoch while a task fires at {earliest}"
        if armed > earliest:
            return f"lost wake-up: rule armed for {armed}, a task needs {earliest}"
        if armed <= now - timedelta(minutes=1) and armed < earliest:
            return f"rule left on past minute {armed} while tasks are pending"
    return None
