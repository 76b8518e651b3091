"""The lease keeper's beat (nexttick/worker/lease.py): it renews a held lease only when the lease
would end within two beats, so an occurrence claimed just before a beat costs no renewal write."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from nexttick.store.records import QueueEntry
from nexttick.worker.lease import LeaseKeeper

NOW = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
LEASE = timedelta(seconds=3)  # a beat each second


class FixedClock:
    def now(self) -> datetime:
        return NOW

    def sleep(self, seconds: float) -> None:  # pragma: no cover - the beat waits in real time
        raise AssertionError("not used")


class RecordingStore:
    def __init__(self) -> None:
        self.renewed: list[tuple[str, datetime]] = []
        self.seen = threading.Event()

    def extend_lease(self, entry: QueueEntry, owner: str, until: datetime) -> bool:
        self.renewed.append((entry.token, until))
        self.seen.set()
        return True


def _entry(token: str, lease_left: timedelta) -> QueueEntry:
    return QueueEntry(
        shard=0,
        run_at=NOW,
        task_id=token,
        token=token,
        scheduled_for=NOW,
        key=f"k-{token}",
        lease_until=NOW + lease_left,
        lease_owner="w",
    )


def test_only_a_lease_ending_within_two_beats_is_renewed() -> None:
    store: Any = RecordingStore()
    keeper = LeaseKeeper(store, FixedClock(), "w", LEASE)
    fresh, aging = _entry("fresh", LEASE), _entry("aging", timedelta(seconds=1.5))
    keeper.hold(fresh)
    keeper.hold(aging)
    with keeper.renewing():
        assert store.seen.wait(10), "a beat renews the aging lease"
        time.sleep(0.05)
    # Then the lease that still had a whole lease left was not renewed, the other once, to a whole
    # lease from now
    assert store.renewed == [("aging", NOW + LEASE)]
    assert aging.lease_until == NOW + LEASE
