"""The lateness histogram: how late the runs started in each UTC minute were, in fixed buckets.

A worker pass adds up the lateness of the occurrences it executed per minute (`LatenessTally`, in
memory). At its end, once what it noted first has waited LATENESS_FLUSH_SECONDS, and always when the
invocation ends, it writes ONE `UpdateItem` per minute noted, `ADD`ing its bucket counts, `count` and
`sum_ms` (`LatenessStore.flush_lateness`). `ADD` is atomic, so invocations running at once add up
correctly. Cost: a write per minute per invocation, and one more each LATENESS_FLUSH_SECONDS a
waiter goes on passing — not one per run, nor one per pass.

The maximum is not stored: an atomic "raise only" needs a conditional write (a second write when it
fails). `LatenessHistogram.max_bound` is the upper edge of the highest non-empty bucket instead.

Best-effort telemetry (the run history and the metrics are the record): a failed write is logged
and its counts dropped, and a write whose answer was lost and that the SDK sent again is counted
twice. Items: pk `L#<YYYY-MM-DDTHH>`, sk `<MM>` (docs/architecture.md, data model), TTL 2 days.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pynamodb.attributes import NumberAttribute
from pynamodb.expressions.update import Action

from nexttick.observability import logger
from nexttick.store import keys
from nexttick.store.base import StoreBase
from nexttick.store.models import LatenessItem

# Upper edges of the buckets, in ms: bucket i holds a lateness in (edge[i-1], edge[i]] (bucket 0
# everything up to 10 ms, early starts included). Stored as attributes b0 .. b12: the data layout.
LATENESS_EDGES_MS: tuple[float, ...] = (
    10,
    25,
    50,
    100,
    250,
    500,
    1000,
    2500,
    5000,
    10000,
    30000,
    60000,
    math.inf,
)
LATENESS_RETENTION = timedelta(days=2)


def bucket_of(lateness_ms: float) -> int:
    """The index of the bucket holding `lateness_ms`: the first whose upper edge is at least it."""
    return bisect.bisect_left(LATENESS_EDGES_MS, lateness_ms)


def minute_of(instant: datetime) -> datetime:
    """The UTC minute `instant` lies in."""
    return instant.astimezone(UTC).replace(second=0, microsecond=0)


@dataclass(frozen=True)
class LatenessHistogram:
    """The runs started in a window, by lateness bucket (`counts[i]`: up to `edges[i]` ms)."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    total: int
    sum_ms: float

    @property
    def mean_ms(self) -> float | None:
        return self.sum_ms / self.total if self.total else None

    def percentile(self, p: float) -> float | None:
        """The upper edge of the bucket holding the `p`-th percentile (nearest rank, 0 < p <= 100;
        `inf` for the last bucket); None when empty."""
        if not 0 < p <= 100:
            raise ValueError(f"percentile must be in (0, 100], not {p}")
        if not self.total:
            return None
        rank = max(1, math.ceil(p * self.total / 100))
        seen = 0
        for edge, count in zip(self.edges, self.counts, strict=True):
            seen += count
            if seen >= rank:
                return edge
        return self.max_bound()

    def max_bound(self) -> float | None:
        """An upper bound of the latest run: the upper edge of the highest non-empty bucket."""
        nonempty = [edge for edge, count in zip(self.edges, self.counts, strict=True) if count]
        return nonempty[-1] if nonempty else None

    def late_over(self, seconds: float) -> int:
        """Runs in the buckets whose lower edge is at least `seconds` (`late_over(1)`: the runs more
        than 1 s late). A threshold between two edges counts only the buckets wholly above it."""
        threshold = seconds * 1000
        lower_edges = (-math.inf, *self.edges[:-1])
        return sum(c for lower, c in zip(lower_edges, self.counts, strict=True) if lower >= threshold)


def empty_counts() -> list[int]:
    return [0] * len(LATENESS_EDGES_MS)


class LatenessTally:
    """Lateness added up per UTC minute, in memory, until it is written (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._minutes: dict[datetime, tuple[list[int], list[float]]] = {}
        self._since: float | None = None  # time.monotonic() of the first add since the last drain

    def add(self, started: datetime, lateness_ms: float) -> None:
        minute = minute_of(started)
        with self._lock:
            counts, total = self._minutes.setdefault(minute, (empty_counts(), [0.0]))
            counts[bucket_of(lateness_ms)] += 1
            total[0] += lateness_ms
            if self._since is None:
                self._since = time.monotonic()

    def waited(self, seconds: float) -> bool:
        """Something was added `seconds` or more ago (real time) and not drained since."""
        with self._lock:
            return self._since is not None and time.monotonic() - self._since >= seconds

    def drain(self) -> list[tuple[datetime, list[int], float]]:
        """(minute, bucket counts, sum of lateness in ms) of every minute added to, and forget them."""
        with self._lock:
            minutes, self._minutes, self._since = self._minutes, {}, None
        return [(minute, counts, total[0]) for minute, (counts, total) in sorted(minutes.items())]


class LatenessStore(StoreBase):
    """The lateness histogram of TaskStore."""

    # Set up by TaskStore. One per store, so the invocations sharing a process (the local stack runs
    # several in threads) share it: a pass's flush writes what any of them noted, which `ADD` makes
    # no different from each writing its own.
    _lateness_tally: LatenessTally

    def note_lateness(self, started: datetime, lateness_ms: float) -> None:
        """Count a run that started at `started`, `lateness_ms` late (memory only: see flush)."""
        self._lateness_tally.add(started, lateness_ms)

    def flush_lateness(self, once_waited: float = 0.0) -> None:
        """Write what was noted: one `UpdateItem` per minute — only once the first of it has waited
        `once_waited` seconds (0: now). Never raises: a failed write is logged and its counts are
        dropped (the histogram is best-effort telemetry)."""
        if once_waited > 0 and not self._lateness_tally.waited(once_waited):
            return
        for minute, counts, sum_ms in self._lateness_tally.drain():
            try:
                self.add_lateness(minute, counts, sum_ms)
            except Exception:
                logger.warning(
                    "could not add to the lateness histogram; these runs are missing from it",
                    extra={"minute": minute.isoformat(), "runs": sum(counts)},
                    exc_info=True,
                )

    def add_lateness(self, minute: datetime, counts: Sequence[int], sum_ms: float) -> None:
        """Add bucket `counts` (one per edge) and their lateness `sum_ms` to `minute`'s item, in one
        atomic `UpdateItem` (the item is created by the first)."""
        if len(counts) != len(LATENESS_EDGES_MS) or min(counts) < 0:
            raise ValueError(f"expected {len(LATENESS_EDGES_MS)} bucket counts (>= 0), got {counts}")
        model = self.models.lateness
        minute = minute_of(minute)
        actions: list[Action] = [_bucket(model, i).add(n) for i, n in enumerate(counts) if n]
        if not actions:
            return
        actions += [
            model.total.add(sum(counts)),
            model.sum_ms.add(round(sum_ms, 3)),
            model.expires_at.set(minute + LATENESS_RETENTION),
        ]
        model(*keys.lateness_key(minute)).update(actions=actions)

    def lateness_histogram(self, since: datetime, until: datetime) -> LatenessHistogram:
        """The runs of the minutes that start in [since, until): one eventually consistent Query per
        UTC hour the window touches (an hour is one partition)."""
        model = self.models.lateness
        first = _ceil_minute(since)
        last = _ceil_minute(until) - timedelta(minutes=1)
        counts, total, sum_ms = empty_counts(), 0, 0.0
        hour = first.replace(minute=0)
        while first <= last and hour <= last:  # (an empty window reads nothing)
            low, high = max(first, hour), min(last, hour + timedelta(minutes=59))
            pk, low_sk = keys.lateness_key(low)
            _, high_sk = keys.lateness_key(high)
            for item in model.query(pk, range_key_condition=model.sk.between(low_sk, high_sk)):
                for i in range(len(counts)):
                    counts[i] += int(getattr(item, f"b{i}") or 0)
                total += int(item.total or 0)
                sum_ms += float(item.sum_ms or 0)
            hour += timedelta(hours=1)
        return LatenessHistogram(LATENESS_EDGES_MS, tuple(counts), total, sum_ms)


def _bucket(model: type[LatenessItem], index: int) -> NumberAttribute:
    bucket: NumberAttribute = getattr(model, f"b{index}")
    return bucket


def _ceil_minute(instant: datetime) -> datetime:
    floor = minute_of(instant)
    return floor if floor == instant.astimezone(UTC) else floor + timedelta(minutes=1)


__all__ = [
    "LATENESS_EDGES_MS",
    "LatenessHistogram",
    "LatenessStore",
    "LatenessTally",
    "bucket_of",
    "minute_of",
]
