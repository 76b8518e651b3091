"""What a worker pass counts of the occurrences it finished, added to the metrics once at its end:
one value per count metric and one EMF line of lateness values per dimension set, not a metric
call per run (each `Metrics.add_metric` formats the metric's values so far), and the lateness
histogram's writes (one per minute noted, once the first of it has waited
LATENESS_FLUSH_SECONDS; the invocation writes the rest when it ends)."""

from __future__ import annotations

from collections import Counter, defaultdict

from nexttick import constants
from nexttick.observability import Dimensions, MetricUnit, emit_by_dimensions, metrics
from nexttick.store import TaskStore
from nexttick.worker.occurrence import Done, RunResult


class PassMetrics:
    """The counts and lateness values of one pass, until it emits them."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self._counts: Counter[str] = Counter()
        # Lateness per (action, kind), printed as one EMF line each when the pass ends.
        self._lateness_by_kind: defaultdict[Dimensions, list[float]] = defaultdict(list)

    def count(self, outcome: Done) -> None:
        if outcome.result.ran:
            self._counts[constants.METRIC_RUNS] += 1
        if outcome.result in (RunResult.FAILED, RunResult.RETRYING):
            self._counts[constants.METRIC_FAILURES] += 1
        elif outcome.result is RunResult.SKIPPED:
            self._counts[constants.METRIC_SKIPS] += 1
        elif outcome.result in (RunResult.STALE, RunResult.ERROR):
            self._counts[f"{outcome.result}_entries"] += 1
        if outcome.lateness_ms is not None:
            # Dimensionless (the alarms') and per action and schedule kind.
            by = (("action", outcome.action or "unknown"), ("kind", outcome.kind or "unknown"))
            self._lateness_by_kind[()].append(outcome.lateness_ms)
            self._lateness_by_kind[by].append(outcome.lateness_ms)
            if outcome.lateness_ms > constants.LATE_RUN_THRESHOLD_SECONDS * 1000:
                self._counts[constants.METRIC_LATE_RUNS] += 1
            if outcome.started is not None:  # written by `emit` (`flush_lateness`)
                self.store.note_lateness(outcome.started, outcome.lateness_ms)

    def flush(self) -> None:
        """When the invocation ends: write the lateness it noted and has not written yet."""
        self.store.flush_lateness()

    def emit(self, submitted: int) -> None:
        """At the pass's end: its batch size, its counts, its lateness values and histogram."""
        if submitted:
            metrics.add_metric(name=constants.METRIC_BATCH_SIZE, unit=MetricUnit.Count, value=submitted)
        # One histogram write per minute noted, once the first has waited; never raises.
        self.store.flush_lateness(constants.LATENESS_FLUSH_SECONDS)
        counts, self._counts = self._counts, Counter()
        for name, count in sorted(counts.items()):  # summed by CloudWatch as one value per run would be
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=count)
        lateness_by_kind, self._lateness_by_kind = self._lateness_by_kind, defaultdict(list)
        emit_by_dimensions(constants.METRIC_LATENESS, MetricUnit.Milliseconds, lateness_by_kind)
