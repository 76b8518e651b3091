"""The lateness histogram's pure parts: buckets (upper edge inclusive), the per-minute tally, keys,
and the percentile / late-over arithmetic of a histogram."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from nexttick.store.keys import lateness_key
from nexttick.store.lateness import (
    LATENESS_EDGES_MS,
    LatenessHistogram,
    LatenessTally,
    bucket_of,
    minute_of,
)
from nexttick.store.models import LatenessItem


def histogram(counts: dict[int, int], sum_ms: float = 0.0) -> LatenessHistogram:
    """A histogram with `counts` (bucket index -> runs), the others empty."""
    full = tuple(counts.get(i, 0) for i in range(len(LATENESS_EDGES_MS)))
    return LatenessHistogram(LATENESS_EDGES_MS, full, sum(full), sum_ms)


def test_edges_are_the_documented_ones_and_the_model_has_one_attribute_per_bucket() -> None:
    documented = (10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, math.inf)
    assert documented == LATENESS_EDGES_MS
    assert list(LATENESS_EDGES_MS) == sorted(set(LATENESS_EDGES_MS))
    buckets = {name for name in LatenessItem.get_attributes() if name.startswith("b")}
    assert buckets == {f"b{i}" for i in range(len(LATENESS_EDGES_MS))}


@pytest.mark.parametrize(
    ("lateness_ms", "bucket"),
    [
        (-250.0, 0),  # early (a clock step): the first bucket
        (0.0, 0),
        (10.0, 0),  # an upper edge belongs to its bucket
        (10.001, 1),
        (499.9, 5),
        (1000.0, 6),  # exactly 1 s is not "late over 1 s"
        (1000.5, 7),
        (2999.0, 8),
        (60000.0, 11),
        (60000.1, 12),
        (3.6e6, 12),
        (math.inf, 12),
    ],
)
def test_a_lateness_falls_in_the_first_bucket_whose_upper_edge_is_at_least_it(
    lateness_ms: float, bucket: int
) -> None:
    assert bucket_of(lateness_ms) == bucket


def test_the_tally_adds_up_per_utc_minute_and_forgets_what_it_drains() -> None:
    # Given runs in two minutes, one of them given in another time zone
    tally = LatenessTally()
    nine = datetime(2030, 1, 7, 9, 5, 0, tzinfo=UTC)
    tally.add(nine + timedelta(seconds=59, microseconds=999_999), 3.0)
    tally.add(nine.astimezone(timezone(timedelta(hours=2))) + timedelta(seconds=1), 1500.0)
    tally.add(nine - timedelta(microseconds=1), 45_000.0)
    # When drained, Then one row per minute, in minute order, with the bucket counts and the sum
    (early, early_counts, early_sum), (late, late_counts, late_sum) = tally.drain()
    assert (early, late) == (nine - timedelta(minutes=1), nine)
    assert early_counts[11] == 1 and sum(early_counts) == 1 and early_sum == 45_000.0
    assert late_counts[0] == 1 and late_counts[7] == 1 and sum(late_counts) == 2 and late_sum == 1503.0
    # And a second drain finds nothing
    assert tally.drain() == []


def test_keys_name_the_utc_hour_and_the_minute() -> None:
    at = datetime(2030, 1, 7, 23, 7, 42, tzinfo=timezone(timedelta(hours=-3)))
    assert lateness_key(at) == ("L#2030-01-08T02", "07")
    assert minute_of(at) == datetime(2030, 1, 8, 2, 7, tzinfo=UTC)


def test_percentile_is_the_upper_edge_of_the_bucket_holding_the_nearest_rank() -> None:
    # Given 100 runs: 90 within 10 ms, 8 in (250, 500] ms, 1 in (2.5, 5] s, 1 over a minute
    h = histogram({0: 90, 5: 8, 8: 1, 12: 1}, sum_ms=200_000.0)
    assert h.total == 100 and h.mean_ms == 2000.0
    # Then
    assert h.percentile(50) == 10
    assert h.percentile(90) == 10  # rank 90: the 90th run is the last within 10 ms
    assert h.percentile(91) == 500
    assert h.percentile(98) == 500
    assert h.percentile(99) == 5000
    assert h.percentile(100) == math.inf
    assert h.percentile(0.001) == 10  # rank 1 at least
    assert h.max_bound() == math.inf


def test_percentile_of_a_small_histogram_uses_the_nearest_rank() -> None:
    h = histogram({1: 1, 6: 1, 9: 1})  # 3 runs: (10, 25], (500, 1000], (5, 10] s
    assert [h.percentile(p) for p in (33, 34, 66, 67, 100)] == [25, 1000, 1000, 10000, 10000]
    assert h.max_bound() == 10000


def test_an_empty_histogram_has_no_percentile_no_bound_no_mean() -> None:
    h = histogram({})
    assert h.percentile(50) is None and h.max_bound() is None and h.mean_ms is None
    assert h.late_over(1) == 0


@pytest.mark.parametrize("p", [0, -1, 100.5])
def test_a_percentile_outside_0_to_100_is_refused(p: float) -> None:
    with pytest.raises(ValueError, match="percentile"):
        histogram({0: 1}).percentile(p)


def test_late_over_counts_the_buckets_wholly_above_the_threshold() -> None:
    # Given runs in every bucket: i + 1 runs in bucket i
    h = histogram({i: i + 1 for i in range(len(LATENESS_EDGES_MS))})
    # Then over 1 s: the buckets above the 1000 ms edge (7 .. 12)
    assert h.late_over(1) == sum(range(8, 14))
    assert h.late_over(1.0) == h.late_over(1)
    # Over 60 s: only the last bucket; over 0 s: all but the first (which holds early starts too)
    assert h.late_over(60) == 13
    assert h.late_over(0) == h.total - 1
    # A threshold between edges counts only whole buckets above it: (1, 2.5] s is not all over 2 s
    assert h.late_over(2) == h.late_over(2.5) == sum(range(9, 14))
