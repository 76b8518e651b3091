"""The local stack's write-ahead journal: what each acknowledged write to the emulator changed.

An entry holds the after-images of what one successful request changed (every item it wrote, as
moto stored it, or None where it deleted; the rule, when it changed) rather than the request, so
replaying an entry twice gives what replaying it once gives. That lets a snapshot be taken while
writes go on (local.state) and makes replay exact: it never re-evaluates a condition.

Entries live in segment files `journal-<first seq>.log`, one line each,
`<crc32 of the JSON, 8 hex> <JSON>\\n`, appended with one write() under the server's serial lock
(so sequence order is the order moto applied them) and fsynced before the response leaves (group
commit: one fsync covers every entry appended before it). A line that is cut short or fails its
checksum ends its segment's valid entries (a process killed mid-write leaves one at the end).
Each process appends to a fresh segment; compaction starts another, and the older ones are deleted
once a snapshot holding their effects is durable.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEGMENT_PREFIX = "journal-"
SEGMENT_SUFFIX = ".log"

_DYNAMODB = "DynamoDB_20120810."
DYNAMODB_WRITES = frozenset(
    _DYNAMODB + name
    for name in ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")
)


@dataclass(frozen=True)
class Entry:
    """One acknowledged write: the items it left (key -> item, None = deleted) and, when the
    write changed the rule, the rule it left (`rule_changed`; `rule` None = deleted)."""

    seq: int
    items: list[tuple[dict[str, Any], dict[str, Any] | None]]
    rule_changed: bool = False
    rule: dict[str, Any] | None = None

    def encode(self) -> bytes:
        body: dict[str, Any] = {"seq": self.seq, "items": [list(pair) for pair in self.items]}
        if self.rule_changed:
            body["rule"] = self.rule
        payload = json.dumps(body, separators=(",", ":")).encode()
        return b"%08x %s\n" % (zlib.crc32(payload), payload)

    @staticmethod
    def decode(line: bytes) -> Entry | None:
        """The entry on a complete, intact line; None for a torn or corrupt one."""
        checksum, _, payload = line.rstrip(b"\n").partition(b" ")
        if not line.endswith(b"\n") or checksum != b"%08x" % zlib.crc32(payload):
            return None
        body = json.loads(payload)
        return Entry(
            body["seq"], [(key, item) for key, item in body["items"]], "rule" in body, body.get("rule")
        )


def written_keys(
    target: str, request: dict[str, Any], table: str, key_names: tuple[str, str]
) -> list[dict[str, Any]]:
    """The keys of `table` a successful DynamoDB write request wrote or deleted."""
    hash_name, range_name = key_names

    def key(body: dict[str, Any]) -> dict[str, Any]:
        source = body["Item"] if "Item" in body else body["Key"]
        return {hash_name: source[hash_name], range_name: source[range_name]}

    operation = target.removeprefix(_DYNAMODB)
    if operation == "BatchWriteItem":
        writes = request["RequestItems"].get(table, [])
        return [key(w.get("PutRequest") or w["DeleteRequest"]) for w in writes]
    if operation == "TransactWriteItems":
        bodies = (
            item.get("Put") or item.get("Update") or item.get("Delete") for item in request["TransactItems"]
        )
        return [key(body) for body in bodies if body is not None and body["TableName"] == table]
    return [key(request)] if request["TableName"] == table else []


def segments(directory: Path) -> list[tuple[int, Path]]:
    """(first sequence number, path) of every segment, oldest first."""
    found = []
    for path in directory.glob(f"{SEGMENT_PREFIX}*{SEGMENT_SUFFIX}"):
        number = path.name.removeprefix(SEGMENT_PREFIX).removesuffix(SEGMENT_SUFFIX)
        if number.isdigit():
            found.append((int(number), path))
    return sorted(found)


def read(directory: Path) -> Iterator[Entry]:
    """Every valid entry, in sequence order. Each segment is fsynced first: what this start
    replays must not be lost to a power cut after a later entry that depends on it is durable."""
    for _, path in segments(directory):
        with path.open("rb") as handle:
            os.fsync(handle.fileno())
            for line in handle:
                entry = Entry.decode(line)
                if entry is None:
                    break
                yield entry


def sync_directory(directory: Path) -> None:
    """Make the directory's entries (a created, renamed or deleted file) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """Appends entries to the current segment; `sync` makes them durable, `rotate` starts a new
    segment, `drop_through` deletes segments a durable snapshot has made redundant."""

    def __init__(self, directory: Path, next_seq: int, *, backlog: int = 0) -> None:
        self.directory = directory
        self._lock = threading.Lock()  # the current segment, sequence numbers, sizes
        self._sync_lock = threading.Lock()  # one fsync (or rotation) at a time
        self._seq = next_seq - 1  # last appended
        self._synced = self._seq
        self._entries = backlog  # in the segments since the last rotation (a start's replayed ones too)
        self._bytes = 0
        self._fd = self._open_segment(next_seq)

    @property
    def last_seq(self) -> int:
        return self._seq

    def due(self, entries: int, size: int) -> bool:
        """Whether the segments since the last rotation hold at least `entries` entries or `size` bytes."""
        return self._entries >= entries or self._bytes >= size

    def _open_segment(self, first_seq: int) -> int:
        # A segment of this name holds no valid entry (else the next number would be higher): at
        # most the torn line a killed process left.
        path = self.directory / f"{SEGMENT_PREFIX}{first_seq:012d}{SEGMENT_SUFFIX}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        sync_directory(self.directory)
        return fd

    def append(
        self,
        items: list[tuple[dict[str, Any], dict[str, Any] | None]],
        *,
        rule_changed: bool = False,
        rule: dict[str, Any] | None = None,
    ) -> int:
        """Write one entry (not yet durable: see `sync`); returns its sequence number. A failed
        write closes the journal: a line cut short would hide every entry after it, so no later
        write may be acknowledged."""
        with self._lock:
            if self._fd < 0:
                raise RuntimeError("the journal is closed")
            line = Entry(self._seq + 1, items, rule_changed, rule).encode()
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:
                self._fail()
                raise
            self._seq += 1
            self._entries += 1
            self._bytes += len(line)
            return self._seq

    def sync(self) -> None:
        """Return once every entry appended before this call is on disk. Concurrent callers share
        an fsync: whoever holds the sync lock covers everything appended so far."""
        if self._synced >= self._seq:
            return
        with self._sync_lock:
            with self._lock:
                wanted, fd = self._seq, self._fd
            if self._synced >= wanted:
                return
            if fd < 0:
                raise RuntimeError("the journal failed; entries it holds may not be durable")
            try:
                os.fsync(fd)
            except OSError:
                # After a failed fsync the kernel may drop the dirty pages and report the next one
                # as a success: nothing after this may be acknowledged.
                with self._lock:
                    self._fail()
                raise
            self._synced = max(self._synced, wanted)

    def _fail(self) -> None:
        """Close the journal for good after an I/O error (holding `_lock`)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def rotate(self) -> int:
        """Make everything appended so far durable and start a new segment; returns the last
        sequence number in the older segments."""
        with self._sync_lock, self._lock:
            os.fsync(self._fd)
            os.close(self._fd)
            self._synced = self._seq
            self._fd = self._open_segment(self._seq + 1)
            self._entries = self._bytes = 0
            return self._seq

    def drop_through(self, seq: int) -> None:
        """Delete the segments whose entries all have sequence numbers up to `seq` (those started
        before the segment a rotation returning `seq` opened)."""
        for first, path in segments(self.directory):
            if first <= seq:
                path.unlink(missing_ok=True)
        sync_directory(self.directory)

    def close(self) -> None:
        with self._sync_lock, self._lock:
            if self._fd >= 0:
                os.fsync(self._fd)
                os.close(self._fd)
                self._synced = self._seq
                self._fd = -1
