"""The rule record: the minute the single EventBridge rule is armed for (compare-and-set), the
confirmation of its publication, the claims on it (repair, the one waiting worker, a kick), and the
head of every queue shard.

Shard heads: `heads.<shard>` is the earliest time any entry of the shard can be claimed, or later
for none — a lower bound. Whoever writes an entry lowers its shard's head (only ever down, so
concurrent lowerings commute); the worker raises heads to what it read, each conditioned on the
value it read, and reads the shard again afterwards (nexttick.rulehead). The armed minute's CAS
does not look at the heads, nor their writes at the version: they are independent.

Shard cursors: `cursors.<shard>` is a sort key that no unfinished entry of the shard sorts before
(reads of the shard start there). They move as the heads do, in the same writes: lowered by whoever
writes an entry below one, raised by the worker to what it read (conditioned on the value it read)
and followed by a second read from where the old cursor stood."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pynamodb.exceptions import UpdateError
from pynamodb.expressions.condition import Condition

from nexttick.constants import RULE_STATE_PK, RULE_STATE_SK
from nexttick.store.base import StoreBase, condition_failed
from nexttick.store.mapping import head_ms, rule_state
from nexttick.store.records import RuleState, WaiterClaim
from nexttick.timeutil import to_epoch


class RuleStateStore(StoreBase):
    """The rule record of TaskStore."""

    def read_rule_state(self) -> RuleState:
        try:
            item = self.models.rule.get(RULE_STATE_PK, RULE_STATE_SK, consistent_read=True)
        except self.models.rule.DoesNotExist:
            return RuleState(armed_minute=None, version=0)
        return rule_state(item)

    def cas_rule_state(self, expected_version: int, armed_minute: datetime | None) -> int | None:
        """Set the armed minute if the record's version is `expected_version`; returns the new
        version, or None when someone else changed it first."""
        r = self.models.rule
        item = r(RULE_STATE_PK, RULE_STATE_SK)
        actions, condition = self._cas(expected_version, armed_minute)
        try:
            item.update(actions=actions, condition=condition)
        except UpdateError as exc:
            if condition_failed(exc):
                return None
            raise
        return expected_version + 1

    def _cas(self, expected_version: int, armed_minute: datetime | None) -> tuple[list[Any], Condition]:
        """The actions and condition of the armed minute's compare-and-set (None: the epoch, 0)."""
        r = self.models.rule
        armed = int(to_epoch(armed_minute)) if armed_minute is not None else 0
        condition = r.version.does_not_exist() if expected_version == 0 else r.version == expected_version
        return [r.armed_at.set(armed), r.version.set(expected_version + 1)], condition

    def confirm_published(self, version: int) -> RuleState | None:
        """Record that a PutRule of the value at `version` has returned, if the record is still at
        `version` (the publish loop's confirmation); returns the record as written (None: it moved
        meanwhile, publish again)."""
        r = self.models.rule
        return self._update_rule([r.published.set(version)], r.version == version)

    def claim_repair(self, version: int) -> bool:
        """Take it upon the caller to publish the record at `version`, whose PutRule was never
        confirmed (its writer may have died before it). One caller per version wins."""
        r = self.models.rule
        condition = (
            (r.version == version)
            & (r.published.does_not_exist() | (r.published != version))
            & (r.repaired.does_not_exist() | (r.repaired != version))
        )
        return self._update_rule([r.repaired.set(version)], condition) is not None

    def claim_waiter(
        self,
        at: datetime,
        owner: str,
        until: datetime,
        stale_before: datetime,
        *,
        expected_version: int | None = None,
    ) -> bool:
        """Become the one worker sleeping for a due-soon head at `at`, alive until `until` (see
        `WaiterClaim` for when a claim takes over the record's). With `expected_version`: only while
        the record is still at that version, published."""
        r = self.models.rule
        actions, condition = self._waiter_claim(WaiterClaim(at, owner, until, stale_before))
        if expected_version is not None:
            condition = condition & (r.version == expected_version) & (r.published == expected_version)
        return self._update_rule(actions, condition) is not None

    def _waiter_claim(self, claim: WaiterClaim) -> tuple[list[Any], Condition]:
        """The actions and condition of a waiter claim (`WaiterClaim.takes_over`, as the write checks it)."""
        r = self.models.rule
        at = to_epoch(claim.at)
        condition: Condition = (
            r.waiter_at.does_not_exist()
            | (r.waiter_owner == claim.owner)
            | (r.waiter_at > at)
            | (r.waiter_until < at)
            | (r.waiter_at < to_epoch(claim.stale_before))
        )
        actions = [
            r.waiter_at.set(at),
            r.waiter_until.set(to_epoch(claim.until)),
            r.waiter_owner.set(claim.owner),
        ]
        return actions, condition

    def release_waiter(self, owner: str | None, at: datetime) -> RuleState | None:
        """Remove the waiter claim of `owner` (None: whoever holds it) for `at` (and nothing newer);
        returns the record as written (None: no such claim)."""
        r = self.models.rule
        actions = [r.waiter_at.remove(), r.waiter_until.remove(), r.waiter_owner.remove()]
        condition: Condition = r.waiter_at == to_epoch(at)
        if owner is not None:
            condition = (r.waiter_owner == owner) & condition
        return self._update_rule(actions, condition)

    def lower_shard(self, shard: int, at: datetime | None, key: str | None) -> RuleState | None:
        """In one write, lower `shard`'s head to `at` and its cursor to `key` (each only if given, and
        only while the recorded value is later); returns the record as written (None: a condition
        failed — read the record and decide again)."""
        actions, conditions = self._shard_lowering(shard, at, key)
        return self._update_rule(actions, _all(conditions))

    def lower_shard_and_arm(
        self, shard: int, at: datetime | None, key: str | None, expected_version: int, armed_minute: datetime
    ) -> RuleState | None:
        """`lower_shard` and `cas_rule_state` in one write (an editor whose entry is the new earliest
        of its shard and of the queue): returns the record as written (None: a condition failed,
        or the version moved — read the record and decide again)."""
        actions, conditions = self._shard_lowering(shard, at, key)
        cas_actions, cas_condition = self._cas(expected_version, armed_minute)
        return self._update_rule(actions + cas_actions, _all([*conditions, cas_condition]))

    def _shard_lowering(
        self, shard: int, at: datetime | None, key: str | None
    ) -> tuple[list[Any], list[Condition]]:
        """The actions and conditions that lower `shard`'s head to `at` and its cursor to `key`."""
        r = self.models.rule
        actions: list[Any] = []
        conditions: list[Condition] = []
        if at is not None:
            head = r.heads[str(shard)]
            actions.append(head.set(head_ms(at)))
            conditions.append(head > head_ms(at))
        if key is not None:
            cursor = r.cursors[str(shard)]
            actions.append(cursor.set(key))
            conditions.append(cursor > key)
        assert actions, "nothing to lower"
        return actions, conditions

    def raise_shard_heads(
        self,
        read: RuleState,
        heads: Mapping[int, datetime | None],
        cursors: Mapping[int, str] | None = None,
    ) -> bool:
        """Set the given shards' heads (and `cursors`), if each is still what `read` says (a lowering
        since makes it fail: read again). A record without heads (or cursors) gets a map of these
        shards alone."""
        actions, conditions = self._shard_raising(read, heads, cursors or {})
        assert actions, "no shard to raise"
        return self._update_rule(actions, _all(conditions)) is not None

    def rearm_record(
        self,
        read: RuleState,
        armed_minute: datetime | None,
        heads: Mapping[int, datetime | None],
        cursors: Mapping[int, str],
        waiter: WaiterClaim | None = None,
    ) -> RuleState | None:
        """A worker's re-arm in one write: the CAS of the armed minute (from `read`'s version), the
        given shards' heads and cursors raised (each while still what `read` says), and `waiter`'s
        claim taken (if it may). Returns the record as written (None: a condition failed — read the
        record and decide again)."""
        actions, conditions = self._shard_raising(read, heads, cursors)
        cas_actions, cas_condition = self._cas(read.version, armed_minute)
        actions, conditions = actions + cas_actions, [*conditions, cas_condition]
        if waiter is not None:
            claim_actions, claim_condition = self._waiter_claim(waiter)
            actions, conditions = actions + claim_actions, [*conditions, claim_condition]
        return self._update_rule(actions, _all(conditions))

    def _shard_raising(
        self, read: RuleState, heads: Mapping[int, datetime | None], cursors: Mapping[int, str]
    ) -> tuple[list[Any], list[Condition]]:
        """The actions and conditions that set the given shards' heads and cursors while each is
        still what `read` says."""
        r = self.models.rule
        actions: list[Any] = []
        conditions: list[Condition] = []
        # Each map: the record's attribute, its values as read, the new ones, and their stored form.
        maps: list[tuple[Any, Mapping[int, Any] | None, Mapping[int, Any], Callable[[Any], Any]]] = [
            (r.heads, read.heads, heads, head_ms),
            (r.cursors, read.cursors, cursors, str),
        ]
        for attribute, known, new, stored in maps:
            if not new:
                continue
            if known is None:
                actions.append(attribute.set({str(shard): stored(value) for shard, value in new.items()}))
                conditions.append(attribute.does_not_exist())
                continue
            for shard, value in new.items():
                path = attribute[str(shard)]
                actions.append(path.set(stored(value)))
                was = path == stored(known[shard]) if shard in known else path.does_not_exist()
                conditions.append(was)
        return actions, conditions

    def _update_rule(self, actions: list[Any], condition: Condition) -> RuleState | None:
        """One conditional UpdateItem of the rule record; the record as written (its `ALL_NEW`
        answer, no read), or None when the condition failed."""
        item = self.models.rule(RULE_STATE_PK, RULE_STATE_SK)
        try:
            item.update(actions=actions, condition=condition)
        except UpdateError as exc:
            if condition_failed(exc):
                return None
            raise
        return rule_state(item)

    def try_mark_kicked(self, now: datetime, not_since: datetime) -> bool:
        """Claim the right to kick a stalled worker (at most once per window, across editors)."""
        r = self.models.rule
        condition = r.kicked_at.does_not_exist() | (r.kicked_at < to_epoch(not_since))
        return self._update_rule([r.kicked_at.set(to_epoch(now))], condition) is not None


def _all(conditions: list[Condition]) -> Condition:
    """The conjunction of one or more conditions (one conditional write checks them together)."""
    return functools.reduce(operator.and_, conditions)
