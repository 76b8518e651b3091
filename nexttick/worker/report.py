"""What the worker's invocation loop reports: a pass's result, what a pass holds, what one
invocation did."""

from __future__ import annotations

import queue
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from nexttick.store import QueueEntry
from nexttick.worker.occurrence import Done


class PassResult(Enum):
    """What a pass found: nothing; less than a pool's worth (all of it run); a pool's worth or more,
    or it stopped early (more may be due at once)."""

    EMPTY = "empty"
    DRAINED = "drained"
    FULL = "full"


@dataclass
class RunReport:
    """What one invocation did (returned by the handler; counts by result)."""

    results: Counter[str] = field(default_factory=Counter)
    passes: int = 0
    waited_seconds: float = 0.0
    handed_over_seconds: int = 0  # the delay of the message this invocation's wait went on in
    outcome: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "passes": self.passes,
            "waited_seconds": round(self.waited_seconds, 3),
            **({"handed_over_seconds": self.handed_over_seconds} if self.handed_over_seconds else {}),
            **{str(k): v for k, v in sorted(self.results.items())},
        }


@dataclass
class Held:
    """What a pass holds: its occurrences in flight, and per shard the last entry it took and the
    first no later read may start past (one it did not take, or took and left unfinished:
    abandoned, deferred, another invocation's). `blocked`: per shard where its last read found
    entries leased by others, the earliest instant one of them can be claimed (a lease's end) or
    the read's window ends, whichever is sooner (None: it also skipped an entry for another
    reason, such as a shard left to another invocation)."""

    in_flight: dict[Future[Done], QueueEntry] = field(default_factory=dict)
    taken: dict[int, str] = field(default_factory=dict)
    left: dict[int, str] = field(default_factory=dict)
    blocked: dict[int, datetime | None] = field(default_factory=dict)
    submitted: int = 0
    full: bool = False  # a pool's worth or more, or stopped early: more may be due at once
    # Each occurrence in flight puts its future here when it ends: the pass takes the next one to
    # end in constant time, where `concurrent.futures.wait` would set up a waiter on every future
    # in flight for each one (a tenth of the worker's CPU per fire, sampled with py-spy).
    finished: queue.SimpleQueue[Future[Done]] = field(default_factory=queue.SimpleQueue)

    def track(self, future: Future[Done], entry: QueueEntry) -> None:
        self.in_flight[future] = entry
        future.add_done_callback(self.finished.put)

    def next_done(self) -> set[Future[Done]]:
        """The occurrences in flight that have ended: at least one (waits for it), and any other
        already ended. A future collected another way (a wait for all of them) is passed over."""
        done: set[Future[Done]] = set()
        while not done:
            future = self.finished.get()
            if future in self.in_flight:
                done.add(future)
        while True:
            try:
                future = self.finished.get_nowait()
            except queue.Empty:
                return done
            if future in self.in_flight:
                done.add(future)
