"""Leases kept alive while their occurrences run, so that no action outlives its lease.

A lease is a liveness signal, not a time budget: SDK retries, a slow webhook or a Python action
that cannot be interrupted may take longer than any fixed lease, and a lapsed lease lets a second
worker deliver the same occurrence concurrently. One thread per pass renews every lease the worker
holds each third of the lease (a conditional write on the owner) once it has less than two beats
left: a live worker's claim never lapses, a dead worker's lapses within one lease (Lambda stops the
renewals with the process at its timeout). Renewals cost one write per held entry every other beat,
only for occurrences that run longer than a beat and a half: an occurrence claimed just before a
beat is not renewed by it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from nexttick.clock import Clock
from nexttick.observability import logger
from nexttick.store import TaskStore
from nexttick.store.records import QueueEntry


class LeaseKeeper:
    """Renews the leases of the entries one worker holds (`hold` after a claim, `release` when done)."""

    def __init__(self, store: TaskStore, clock: Clock, owner: str, lease: timedelta) -> None:
        self.store = store
        self.clock = clock
        self.owner = owner
        self.lease = lease
        self.interval = lease.total_seconds() / 3
        self._held: dict[str, QueueEntry] = {}
        self._lock = threading.Lock()

    def hold(self, entry: QueueEntry) -> None:
        with self._lock:
            self._held[entry.token] = entry

    def release(self, entry: QueueEntry) -> None:
        with self._lock:
            self._held.pop(entry.token, None)

    @contextmanager
    def renewing(self) -> Iterator[None]:
        """Renew held leases in a background thread for the duration of the block (one pass)."""
        stop = threading.Event()
        thread = threading.Thread(target=self._beat, args=(stop,), name="nexttick-lease", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _beat(self, stop: threading.Event) -> None:
        # Real time, not the clock: the lease guards against elapsed time whatever the clock says.
        while not stop.wait(self.interval):
            with self._lock:
                held = list(self._held.values())
            due = self.clock.now() + 2 * timedelta(seconds=self.interval)
            for entry in held:
                if entry.lease_until is None or entry.lease_until < due:
                    self._renew(entry)

    def _renew(self, entry: QueueEntry) -> None:
        until = self.clock.now() + self.lease
        try:
            kept = self.store.extend_lease(entry, self.owner, until)
        except Exception:  # a throttled write: the next beat tries again, well within the lease
            logger.warning("lease renewal failed", extra={"task_id": entry.task_id}, exc_info=True)
            return
        if not kept:  # completed or cancelled meanwhile (the entry is gone), or lost after a lapse
            logger.info("lease no longer held", extra={"task_id": entry.task_id})
            self.release(entry)
            return
        entry.lease_until = until
