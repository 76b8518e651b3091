"""The shards' heads and cursors in the rule record (nexttick.rulesync's protocol): how they
compare, where a shard's reads start, which shards a pass reads, and the worker's refresh of them
from the queue (read, raise to what was read, read again, lower for what the second read found).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from nexttick.clock import Clock
from nexttick.rulearm import RuleStateStore
from nexttick.store.records import RuleState, ShardFront


@dataclass(frozen=True)
class DueShards:
    """The shards a pass reads, and the record it read them from (a re-arm right after an empty
    pass starts from it instead of a read)."""

    shards: set[int]
    record: RuleState


@dataclass(frozen=True)
class HeadRead:
    """A re-arm's first read of the shards: how the record's heads and cursors move up to what it
    found, and every shard's head (as read, else as recorded)."""

    raised: dict[int, datetime | None]
    advanced: dict[int, str]
    hinted: set[int]  # read from past their cursors (the caller's hint): always read again
    heads: dict[int, datetime | None]
    read: frozenset[int]  # the shards whose heads were read from the table, not the record

    @property
    def moves(self) -> bool:
        """The record's heads or cursors move up."""
        return bool(self.raised or self.advanced)

    def applied_to(self, state: RuleState) -> RuleState:
        """`state` as its raise to this read leaves it: the raised shards' heads and cursors as
        written (the other shards' as `state` read them)."""
        return replace(
            state,
            heads={**(state.heads or {}), **self.raised} if self.raised else state.heads,
            cursors={**(state.cursors or {}), **self.advanced} if self.advanced else state.cursors,
        )


class ShardHeads:
    """The worker's reads of the shards' heads and cursors (a base of RuleSync)."""

    store: RuleStateStore
    clock: Clock

    def due_shards(
        self, until: datetime, among: Collection[int] | None = None, read: RuleState | None = None
    ) -> DueShards:
        """Those of `among` (default: all shards) whose recorded head is due by `until` or not
        known: the only ones that can hold an entry claimable by then (a pass reads these, and no
        other). `read`: the record as the caller's own write just returned it (else it is read)."""
        state = read or self.store.read_rule_state()
        shards = range(self.store.shards) if among is None else among
        return DueShards({s for s in shards if not state.knows_head(s) or _due(state, s, until)}, state)

    def _read_heads(self, state: RuleState, touched: Collection[int], past: Mapping[int, str]) -> HeadRead:
        """The first read of a re-arm: every shard's head, as recorded where that is later than now
        (nothing there can be due yet), else read from the shard (from its cursor) — where the
        recorded head is due, unknown, or the shard was written by this invocation — and how the
        record's heads and cursors move up to what was read. Writes nothing: the caller raises them
        (each conditioned on the value `state` holds: a lowering since means read again), in the
        write that moves the armed minute when that moves too, and then calls `_settle_heads`."""
        now = self.clock.now()
        stale = [
            s
            for s in range(self.store.shards)
            if s in touched or not state.knows_head(s) or _due(state, s, now)
        ]
        starts = read_starts(state.cursors, {s: past[s] for s in stale if s in past})
        fronts = self.store.shard_fronts(stale, starts, now=now) if stale else {}
        raised = {
            s: front.head
            for s, front in fronts.items()
            if not state.knows_head(s) or head_later(front.head, state.head_of(s))
        }
        advanced = {
            s: front.cursor
            for s, front in fronts.items()
            if front.cursor is not None and _cursor_later(front.cursor, state.cursor_of(s))
        }
        recorded = {
            s: state.head_of(s) for s in range(self.store.shards) if s not in fronts and state.knows_head(s)
        }
        return HeadRead(
            raised=raised,
            advanced=advanced,
            hinted={s for s in stale if starts.get(s) != state.cursor_of(s)},
            heads=recorded | {s: front.head for s, front in fronts.items()},
            read=frozenset(fronts),
        )

    def _settle_heads(self, found: HeadRead, state: RuleState) -> bool:
        """After the raise of `found` (from `state`): read the raised shards **again**, from where
        their cursors stood: an entry written before its writer read the old, lower head or cursor
        was not lowered for by that writer, and this second read finds it; lower for it. A shard
        whose first read started past its cursor (`past`: what the caller's passes took, a burst's
        finished home items) is always read again from its cursor, so the hint saves one of the two
        walks over those items and decides nothing: whatever the first read missed, the second
        finds. Returns whether it lowered anything (then what was decided on the first read is
        decided again)."""
        recheck = found.raised.keys() | found.advanced.keys() | found.hinted
        again = self._reread(recheck, state) if recheck else {}
        lowered = False
        for shard, latest in again.items():
            recorded = found.raised.get(shard, state.head_of(shard) if state.knows_head(shard) else None)
            cursor = found.advanced.get(shard, state.cursor_of(shard))
            at = latest.head if latest.head is not None and head_later(recorded, latest.head) else None
            below = latest.cursor if _cursor_later(cursor, latest.cursor) else None
            if at is not None or below is not None:
                # An entry its writer has not lowered for yet (or one we raised past): lower.
                self.store.lower_shard(shard, at, below)
                lowered = True
        return lowered

    def _reread(self, shards: Collection[int], state: RuleState) -> dict[int, ShardFront]:
        """The second read of the shards whose heads or cursors were just raised, from where their
        cursors stood before (`state`)."""
        return self.store.shard_fronts(shards, state.cursors, now=self.clock.now())


def head_later(head: datetime | None, than: datetime | None) -> bool:
    """Whether shard head `head` is later than `than` (None: an empty shard, later than anything)."""
    if head is None:
        return than is not None
    return than is not None and head > than


def read_starts(cursors: Mapping[int, str] | None, past: Mapping[int, str]) -> dict[int, str]:
    """Where each shard's reads start: its cursor, or the key in `past` (what the reader already
    took) where that is later."""
    starts = dict(cursors or {})
    starts.update((s, key) for s, key in past.items() if _cursor_later(key, starts.get(s)))
    return starts


def key_after(key: str) -> str:
    """The sort key just after `key`: a read from it starts past `key` and before any later key."""
    return key + "\x00"


def _cursor_later(cursor: str | None, than: str | None) -> bool:
    """Whether shard cursor `cursor` is past `than` (None: the shard's start, before anything)."""
    return cursor is not None and (than is None or cursor > than)


def _due(state: RuleState, shard: int, by: datetime) -> bool:
    """The recorded head of a known shard is due by `by`."""
    return _head_due(state.head_of(shard), by)


def _head_due(head: datetime | None, by: datetime) -> bool:
    """A shard head (None: empty) is due by `by`."""
    return head is not None and head <= by
