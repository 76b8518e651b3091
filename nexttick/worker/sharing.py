"""How invocations running at once share the queue's shards (the worker's shard arbitration).

A burst is spread over invocations: the first pass to fill the pool splits the shards into
`max_invocations` groups, keeps the first and starts a helper invocation for each other one
(`trigger.help`); each drains only its group, then works like any invocation. Invocations share
the rest by shard: a claim lost to another invocation means that one is draining the shard, so this
one leaves the shard to it for YIELD_SECONDS (its entries are skipped without a write) and then
looks again with one claim at a time (a probe) until one succeeds — the other may have finished, or
died. A helper leaves its group's shards to nobody but keeps clear of what its leader claimed before
splitting; when two invocations both hold entries of a shard, the one whose owner id sorts later
leaves, so that exactly one keeps it.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from datetime import datetime, timedelta

from nexttick.observability import logger
from nexttick.runtime import Runtime
from nexttick.store.records import QueueEntry

YIELD_SECONDS = 3.0


class ShardSharing:
    """One invocation's view of which shards it works now. Thread-safe: the pool's threads report
    claims won and lost while the pass reads on."""

    def __init__(
        self, runtime: Runtime, owner: str, *, shards: Collection[int] | None, leader: str | None
    ) -> None:
        self.runtime = runtime
        self.clock = runtime.clock
        self.shard_count = runtime.store.shards
        self.owner = owner
        # A helper's group of shards (drained first, then it works like any invocation); None: all.
        self.group: frozenset[int] | None = frozenset(shards) if shards is not None else None
        self.leader = leader  # the invocation that started this helper (its claims are left alone)
        self.helpers_started = 0
        self._fanned_out = shards is not None  # a helper starts no helpers
        self._yielded: dict[int, datetime] = {}  # shard -> until when another invocation drains it
        self._contested: set[int] = set()  # shards another invocation works: claimed one at a time
        self._probing: set[int] = set()  # contested shards with a claim in flight
        self._claimed_in: set[int] = set()  # shards this invocation has claimed an entry of
        self.in_burst = False  # a pass has had a full pool: more is due than runs at once
        self._lock = threading.Lock()

    def fan_out(self) -> bool:
        """Spread a burst: keep one group of shards, start a helper for each other group. True if
        helpers were started (the caller's pass then ends: the next one reads only its group)."""
        count = min(self.runtime.settings.max_invocations, self.shard_count)
        if self._fanned_out or count < 2:
            return False
        self._fanned_out = True
        groups = [[s for s in range(self.shard_count) if s % count == i] for i in range(count)]
        mine = set(groups[0])
        for group in groups[1:]:
            try:
                self.runtime.trigger.help(group, self.owner)
                self.helpers_started += 1
            except Exception:
                logger.warning("could not start a helper; draining its shards here", exc_info=True)
                mine.update(group)
        if len(mine) == self.shard_count:
            return False
        self.group = frozenset(mine)
        logger.info("burst spread over helper invocations", extra={"groups": groups})
        return True

    def leave_group(self) -> None:
        """The group is drained: other groups are their helpers' for a while, then contested."""
        mine, self.group = self.group or frozenset(), None
        until = self.clock.now() + timedelta(seconds=YIELD_SECONDS)
        with self._lock:
            for shard in set(range(self.shard_count)) - mine:
                self._yielded[shard] = until
                self._contested.add(shard)

    def takes(self, entry: QueueEntry, now: datetime) -> bool:
        """Whether a pass submits `entry`: claimable, in this invocation's group (if it has one),
        in no shard left to another, and not behind a probe of its shard."""
        if entry.leased_at(now) or (self.group is not None and entry.shard not in self.group):
            return False
        with self._lock:
            if self._yield_live(entry.shard):
                return False
            if entry.shard in self._contested:
                if entry.shard in self._probing:
                    return False  # the next pass takes it, once the probe claimed or yielded
                self._probing.add(entry.shard)
        return True

    def left_to_another(self, shard: int) -> bool:
        with self._lock:
            return self._yield_live(shard)

    def _yield_live(self, shard: int) -> bool:
        """`shard` is left to another invocation now (the caller holds the lock)."""
        until = self._yielded.get(shard)
        return until is not None and until > self.clock.now()

    def won(self, shard: int) -> None:
        """A claim in `shard` succeeded: this invocation works it."""
        with self._lock:
            self._claimed_in.add(shard)
            self._contested.discard(shard)

    def lost(self, shard: int, held: QueueEntry | None, now: datetime) -> None:
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
        with self._lock:
            self._contested.add(shard)
            if holder is None and not self.in_burst:
                return
            if holder is None or shard not in self._claimed_in or holder < self.owner:
                self._yielded[shard] = self.clock.now() + timedelta(seconds=YIELD_SECONDS)

    def release_probe(self, shard: int) -> None:
        with self._lock:
            self._probing.discard(shard)

    def seconds_until_yield_ends(self) -> float:
        now = self.clock.now()
        with self._lock:
            live = [until for until in self._yielded.values() if until > now]
        return (min(live) - now).total_seconds() if live else 0.0
