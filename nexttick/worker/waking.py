"""What a worker invocation owes the wait it woke from (nexttick.worker.loop): the release of the
wait's claim, and the record its next pass reads the shards from."""

from __future__ import annotations

from datetime import datetime

from nexttick.rulesync import RuleSync
from nexttick.store import RuleState


class Waking:
    """After a wait handed over to this invocation, its first pass reads the shards from the record
    the message carries, or, when that record holds the sender's claim (or the message carries
    none), releases the claim and reads them from the release's answer. After a sleep here, the
    claim stands through the passes, so that editors rely on it rather than invoke a worker while
    this one runs what it woke for: the passes read the shards from the record the wait was decided
    on, and the claim is released before the re-arm reads the heads, so that read sees every task
    an editor committed relying on it (docs/architecture.md, "One waiter, not a herd")."""

    def __init__(self, rule_sync: RuleSync) -> None:
        self.rule_sync = rule_sync
        self._handed_over: datetime | None = None  # the head of a wait handed over to us
        self._carried: RuleState | None = None  # the record its message carried
        self._slept: tuple[datetime, RuleState | None] | None = None  # a head slept for, its record
        self._held: datetime | None = None  # the head of a claim the passes keep

    def handed_over(self, head: datetime, record: RuleState | None) -> None:
        self._handed_over, self._carried = head, record

    def slept(self, head: datetime, record: RuleState | None) -> None:
        self._slept = (head, record)

    def pass_read(self) -> RuleState | None:
        """The record a pass reads the shards from (None: read it)."""
        if self._slept is not None:
            (self._held, record), self._slept = self._slept, None
            return record
        (at, carried), self._handed_over, self._carried = (self._handed_over, self._carried), None, None
        if at is None:
            return None
        if carried is not None and carried.waiter_at != at:
            return carried  # a wait handed over without a claim: nothing to release
        return self.rule_sync.release_wait(at)

    def rearm_read(self, read: RuleState | None) -> RuleState | None:
        """The record the re-arm starts from: `read` (the last pass's), or the answer of the release
        of a claim the passes kept (None: read it)."""
        if self._held is None:
            return read
        at, self._held = self._held, None
        return self.rule_sync.release_wait(at)
