"""The local stack's state across restarts and crashes: every table item and the rule.

Two files in the state directory: `state.json`, a snapshot (written atomically: temp file, fsync,
rename, directory fsync), and the journal (local.journal): the after-images of every write
the emulator acknowledged since that snapshot, fsynced before the response left. On start the
snapshot plus the journal entries after its `journal_seq` are the state; a `SIGKILL` at any moment
loses nothing acknowledged.

Compaction (every COMPACT_ENTRIES entries or COMPACT_BYTES, and at a clean stop) folds the journal
into a new snapshot without stopping the emulator: rotate the journal (the older segments end at
`seq`), copy the items in short holds of the server's serial lock, make every entry appended so far
durable, write the snapshot with `journal_seq = seq`, delete the older segments. A write that lands
while the items are copied has an entry after `seq`, and replaying an after-image is idempotent, so
the snapshot plus the entries after `seq` is exact whatever the copy caught. A crash before the
rename leaves the old snapshot and every segment; after it, the entries up to `seq` are skipped.

Restored into a fresh emulator directly (local.motoserver.EmulatedState), not through the
server: nothing restored is journaled again, and 10,000 tasks take well under a second. Items whose
TTL has passed are dropped, as DynamoDB would have done. What the stopped process's invocations
held is dropped too, since none of them is still running (the state directory's lock keeps a second
stack off it): the rule record's waiter claim, which would keep the next start's worker from
waiting, its shard heads, which may stand at the end of a dropped lease (the first worker reads
every shard and records them again; its shard cursors stay, since an entry whose lease is dropped
keeps its key), and the claim leases of queue entries, whose occurrences
would otherwise wait out the rest of their lease (up to a minute) before running again. An
occurrence whose delivery was cut off runs again at once, under the same idempotency key, exactly
as after its lease.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from local import journal
from local.motoserver import RULE_CHANGING_TARGETS, EmulatedState
from nexttick.constants import (
    PARTITION_KEY,
    QUEUE_PK_PREFIX,
    RULE_STATE_PK,
    RULE_STATE_SK,
    SORT_KEY,
    TTL_ATTRIBUTE,
)
from nexttick.store.streams import ItemKind, item_kind

logger = logging.getLogger("local-stack")

STATE_FORMAT = 1
STATE_FILE = "state.json"
_TEMP_PREFIX = ".state-"
# The rule record's attributes naming the invocation sleeping for the head and its shard heads
# (which may stand at the end of a lease the restart drops: without them, the first worker reads
# every shard), and a queue entry's claim lease (nexttick.store.models).
DROPPED_RULE_ATTRIBUTES = ("waiter_at", "waiter_until", "waiter_owner", "heads")
LEASE_ATTRIBUTES = ("lease_until", "lease_owner")
# Compaction bounds what a start replays (~10 µs an entry) and the journal's size on disk.
COMPACT_ENTRIES = 20_000
COMPACT_BYTES = 64 << 20
# Items copied per hold of the server's serial lock while compacting (~10 ms of other requests' wait).
COPY_BATCH = 500

Key = tuple[tuple[tuple[str, Any], ...], ...]


def snapshot(
    emulated: EmulatedState, exclusive: AbstractContextManager[Any], journal_seq: int
) -> dict[str, Any]:
    """Every item and the rule, copied in batches, each under `exclusive` (the server's serial lock)."""
    with exclusive:
        keys = emulated.keys()
        rule = emulated.rule()
    items: list[dict[str, Any]] = []
    for start in range(0, len(keys), COPY_BATCH):
        with exclusive:
            found = emulated.get(keys[start : start + COPY_BATCH])
        items.extend(item for item in found if item is not None)
    return _state(items, rule, journal_seq)


def _state(items: Iterable[dict[str, Any]], rule: dict[str, Any] | None, journal_seq: int) -> dict[str, Any]:
    return {
        "format": STATE_FORMAT,
        "saved_at": time.time(),
        "journal_seq": journal_seq,
        "items": sorted(items, key=lambda i: (i[PARTITION_KEY]["S"], i[SORT_KEY]["S"])),
        "rule": rule or {"expression": None, "description": "", "state": "ENABLED"},
    }


def save(path: Path, state: dict[str, Any]) -> None:
    """Write `state` to `path` atomically and durably: a reader sees the old file or the new one,
    never half, and after a power cut the one it saw last."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(state, handle, separators=(",", ":"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    journal.sync_directory(path.parent)


def load(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    if state.get("format") != STATE_FORMAT:
        raise SystemExit(f"error: {path} has an unknown format; move it away or start with --fresh")
    return state


def replay(
    saved: dict[str, Any] | None, entries: Iterable[journal.Entry], key_names: tuple[str, str]
) -> dict[str, Any]:
    """The snapshot with the journal entries after its `journal_seq` applied, in order."""
    last = saved.get("journal_seq", 0) if saved else 0
    items = {_key(i, key_names): i for i in saved["items"]} if saved else {}
    rule = saved["rule"] if saved else None
    for entry in entries:
        if entry.seq <= last:
            continue
        for key, item in entry.items:
            if item is None:
                items.pop(_key(key, key_names), None)
            else:
                items[_key(key, key_names)] = item
        if entry.rule_changed:
            rule = entry.rule
        last = entry.seq
    return _state(items.values(), rule, last)


def restore(emulated: EmulatedState, state: dict[str, Any], now: float) -> int:
    """Write the saved items (minus TTL-expired ones) and the saved rule; returns the tasks restored."""
    items = [_without_claims(i) for i in state["items"] if not _expired(i, now)]
    emulated.put(items)
    if state["rule"].get("expression"):
        emulated.put_rule(state["rule"])
    return sum(1 for i in items if item_kind(i) is ItemKind.TASK)


def _key(item: dict[str, Any], key_names: tuple[str, str]) -> Key:
    return tuple(tuple(item[name].items()) for name in key_names)


def _without_claims(item: dict[str, Any]) -> dict[str, Any]:
    """The item without what an invocation of the stopped process held in it."""
    if (item[PARTITION_KEY]["S"], item[SORT_KEY]["S"]) == (RULE_STATE_PK, RULE_STATE_SK):
        return {k: v for k, v in item.items() if k not in DROPPED_RULE_ATTRIBUTES}
    if item[PARTITION_KEY]["S"].startswith(QUEUE_PK_PREFIX):
        return {k: v for k, v in item.items() if k not in LEASE_ATTRIBUTES}
    return item


def _expired(item: dict[str, Any], now: float) -> bool:
    ttl = item.get(TTL_ATTRIBUTE, {}).get("N")
    return ttl is not None and float(ttl) < now


class LocalState:
    """The state directory's snapshot and journal for one running stack: `recover` on start,
    then the moto server's write recorder (`watches`, `record`, `flush`), `compact` at a clean
    stop (and on its own as the journal grows), `close` last."""

    def __init__(
        self,
        directory: Path,
        emulated: EmulatedState,
        exclusive: threading.Lock,
        *,
        compact_entries: int = COMPACT_ENTRIES,
        compact_bytes: int = COMPACT_BYTES,
    ) -> None:
        self.directory = directory
        self.path = directory / STATE_FILE
        self.emulated = emulated
        self._exclusive = exclusive
        self._compact_entries, self._compact_bytes = compact_entries, compact_bytes
        self._compacting = threading.Lock()
        self._background: threading.Thread | None = None
        self._auto_compact = True
        self._journal: journal.Journal | None = None
        self._key_names: tuple[str, str] = ("", "")

    def recover(
        self, now: float, *, fresh: bool = False, progress: Callable[[str], None] = lambda _: None
    ) -> int:
        """Restore the snapshot and the journal after it into the (empty) emulated table and rule,
        or when `fresh` discard both; then open a new journal segment. Returns the tasks restored."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for leftover in self.directory.glob(f"{_TEMP_PREFIX}*"):  # a snapshot a crash cut short
            leftover.unlink()
        self._key_names = self.emulated.key_names()
        saved = load(self.path)
        base = saved.get("journal_seq", 0) if saved else 0
        entries = [entry for entry in journal.read(self.directory) if entry.seq > base]
        recovered = replay(saved, entries, self._key_names)
        last = recovered["journal_seq"]
        if fresh:
            # An empty snapshot past every entry first: a crash before the deletes still starts empty.
            save(self.path, _state([], None, last))
            for _, path in journal.segments(self.directory):
                path.unlink()
            entries, tasks = [], 0
        else:
            if saved is not None or entries:
                journaled = (
                    f" and {len(entries)} journaled change{'s' * (len(entries) != 1)}" if entries else ""
                )
                progress(f"restoring the saved state from {self.path}{journaled} ...")
            tasks = restore(self.emulated, recovered, now)
        self._journal = journal.Journal(self.directory, last + 1, backlog=len(entries))
        return tasks

    # ------------------------------------------------------------- write recorder
    def watches(self, target: str | None) -> bool:
        return target in journal.DYNAMODB_WRITES or target in RULE_CHANGING_TARGETS

    def record(self, target: str, request: bytes, environ: dict[str, Any]) -> None:
        """Append what a successful write changed (called under the server's serial lock)."""
        if self._journal is None or f"/{self.emulated.region}/" not in environ.get("HTTP_AUTHORIZATION", ""):
            return
        body = json.loads(request)
        if target in RULE_CHANGING_TARGETS:
            if (
                body.get("Name") != self.emulated.rule_name
                or body.get("EventBusName", "default") != "default"
            ):
                return
            self._journal.append([], rule_changed=True, rule=self.emulated.rule())
        else:
            keys = journal.written_keys(target, body, self.emulated.table_name, self._key_names)
            if not keys:
                return
            self._journal.append(list(zip(keys, self.emulated.get(keys), strict=True)))
        if (
            self._auto_compact
            and self._background is None
            and self._journal.due(self._compact_entries, self._compact_bytes)
        ):
            self._background = threading.Thread(
                target=self._compact_in_background, name="journal-compaction", daemon=True
            )
            self._background.start()

    def flush(self) -> None:
        if self._journal is not None:
            self._journal.sync()

    # ------------------------------------------------------------- compaction
    def compact(self) -> None:
        """Fold the journal into a new snapshot (see the module docstring for why this is exact and
        safe to cut anywhere)."""
        assert self._journal is not None
        with self._compacting:
            seq = self._journal.rotate()
            state = snapshot(self.emulated, self._exclusive, seq)
            self._journal.sync()  # every write the copy may have caught is durable before the snapshot
            save(self.path, state)
            self._journal.drop_through(seq)

    def _compact_in_background(self) -> None:
        try:
            self.compact()
        except Exception:
            self._auto_compact = False
            logger.exception("compacting the journal failed; it grows until the next clean stop")
        finally:
            self._background = None

    def close(self) -> None:
        """Close the journal (after a compaction under way has finished)."""
        with self._compacting:
            if self._journal is not None:
                self._journal.close()
