"""In-memory models of the rule protocol's world (for exhaustive enumeration), the naive
"read head, then PutRule" synchroniser of the reference proof of concept, and a mutant of our
protocol without its second head read. The last two must FAIL the interleaving tests."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from nexttick.rulesync import Outcome, RearmResult, RuleSync, WaitClaim
from nexttick.schedules import Timing
from nexttick.store.records import RuleState

# ------------------------------------------------------------------------------ the rule record


@dataclass(frozen=True)
class Record:
    """The rule record item; every transition is one linearizable conditional write."""

    armed: datetime | None = None
    version: int = 0
    published: int = 0
    repaired: int | None = None
    kicked: datetime | None = None
    waiter_at: datetime | None = None
    waiter_until: datetime | None = None
    waiter_owner: str | None = None

    def state(self) -> RuleState:
        return RuleState(
            armed_minute=self.armed,
            version=self.version,
            published_version=self.published,
            repair_version=self.repaired,
            kicked_at=self.kicked,
            waiter_at=self.waiter_at,
            waiter_until=self.waiter_until,
            waiter_owner=self.waiter_owner,
        )

    def cas(self, expected: int, minute: datetime | None) -> tuple[Record, int | None]:
        if self.version != expected:
            return self, None
        return replace(self, armed=minute, version=expected + 1), expected + 1

    def confirm(self, version: int) -> tuple[Record, bool]:
        if self.version != version:
            return self, False
        return replace(self, published=version), True

    def claim_repair(self, version: int) -> tuple[Record, bool]:
        if self.version != version or self.published == version or self.repaired == version:
            return self, False
        return replace(self, repaired=version), True

    def claim_waiter(
        self, at: datetime, owner: str, until: datetime, stale_before: datetime, expected: int | None
    ) -> tuple[Record, bool]:
        free = (
            self.waiter_at is None
            or self.waiter_owner == owner
            or self.waiter_at > at
            or (self.waiter_until is not None and self.waiter_until < at)
            or self.waiter_at < stale_before
        )
        if expected is not None and not (self.version == expected == self.published):
            free = False
        if not free:
            return self, False
        return replace(self, waiter_at=at, waiter_until=until, waiter_owner=owner), True

    def release_waiter(self, owner: str, at: datetime) -> tuple[Record, bool]:
        if self.waiter_owner != owner or self.waiter_at != at:
            return self, False
        return replace(self, waiter_at=None, waiter_until=None, waiter_owner=None), True

    def mark_kicked(self, now: datetime, not_since: datetime) -> tuple[Record, bool]:
        if self.kicked is not None and self.kicked >= not_since:
            return self, False
        return replace(self, kicked=now), True


# ------------------------------------------------------------------------------ direct models


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
        self.record = Record()

    @property
    def armed(self) -> datetime | None:
        return self.record.armed

    @property
    def version(self) -> int:
        return self.record.version

    def add(self, task_id: str, due: datetime) -> None:
        self.entries[task_id] = due

    def remove(self, task_id: str) -> None:
        self.entries.pop(task_id, None)

    def read_rule_state(self) -> RuleState:
        return self.record.state()

    def cas_rule_state(self, expected_version: int, armed_minute: datetime | None) -> int | None:
        self.record, result = self.record.cas(expected_version, armed_minute)
        return result

    def confirm_published(self, version: int) -> bool:
        self.record, result = self.record.confirm(version)
        return result

    def claim_repair(self, version: int) -> bool:
        self.record, result = self.record.claim_repair(version)
        return result

    def head(self) -> datetime | None:
        return min(self.entries.values(), default=None)

    def try_mark_kicked(self, now: datetime, not_since: datetime) -> bool:
        self.record, result = self.record.mark_kicked(now, not_since)
        return result

    def claim_waiter(
        self,
        at: datetime,
        owner: str,
        until: datetime,
        stale_before: datetime,
        *,
        expected_version: int | None = None,
    ) -> bool:
        self.record, result = self.record.claim_waiter(at, owner, until, stale_before, expected_version)
        return result

    def release_waiter(self, owner: str, at: datetime) -> bool:
        self.record, result = self.record.release_waiter(owner, at)
        return result


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


# ------------------------------------------------------------------------------ mutants


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

    def claim_wait(self, head: datetime, owner: str, until: datetime) -> WaitClaim:
        return WaitClaim.CLAIMED  # every invocation sleeps for its head


class NoRecheckRuleSync(RuleSync):
    """Our protocol minus the worker's second head read after raising the record."""

    def _recheck_head(self, head: datetime | None, target: datetime | None) -> RearmResult:
        return RearmResult(Outcome.ARMED, head, target)
