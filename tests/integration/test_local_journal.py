"""The local stack's journal: what the emulator acknowledged survives a crash, exactly once.

Each test mutates a moto server through real boto3 clients (nexttick's editor and raw calls), then
"crashes": the server and the stack's state object are dropped without a snapshot, moto is reset to
nothing, and a new state object recovers from the same directory into the fresh emulator.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
import requests
from botocore.exceptions import ClientError

from editor import Editor
from local import journal, state
from local.motoserver import EmulatedState, MotoServer
from nexttick.config import NextTickSettings
from nexttick.constants import DEFAULT_RULE_NAME, DEFAULT_TABLE_NAME
from tests.support.local import client, create_table_and_rule, local_worker, moto_server

COUNTER_KEY = {"pk": {"S": "COUNTER"}, "sk": {"S": "C"}}


@dataclass
class Running:
    """A moto server with the stack's table and rule, journaled into `directory`."""

    server: MotoServer
    directory: Path
    local_state: state.LocalState
    lambda_url: str

    @property
    def editor(self) -> Editor:
        settings = NextTickSettings(
            endpoint_url=self.server.url,
            lambda_endpoint_url=self.lambda_url,
            queue_shards=4,
            actions_config={"log": {"type": "log"}},
        )
        return Editor(settings=settings)

    @cached_property
    def dynamodb(self) -> Any:
        return client("dynamodb", self.server)

    @cached_property
    def events(self) -> Any:
        return client("events", self.server)

    def contents(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Every item (a consistent scan) and the rule, as the emulator serves them."""
        items: list[dict[str, Any]] = []
        for page in self.dynamodb.get_paginator("scan").paginate(
            TableName=DEFAULT_TABLE_NAME, ConsistentRead=True
        ):
            items.extend(page["Items"])
        rule = self.events.describe_rule(Name=DEFAULT_RULE_NAME)
        return (
            sorted(items, key=lambda i: (i["pk"]["S"], i["sk"]["S"])),
            {k: rule.get(k) for k in ("ScheduleExpression", "State", "Description")},
        )

    def increment(self, by: int = 1) -> None:
        """A write whose replay as a request would not be idempotent."""
        self.dynamodb.update_item(
            TableName=DEFAULT_TABLE_NAME,
            Key=COUNTER_KEY,
            UpdateExpression="ADD n :by",
            ExpressionAttributeValues={":by": {"N": str(by)}},
        )

    def counter(self) -> int:
        item = self.dynamodb.get_item(TableName=DEFAULT_TABLE_NAME, Key=COUNTER_KEY, ConsistentRead=True)
        return int(item["Item"]["n"]["N"]) if "Item" in item else 0

    def crash(self, *, fresh: bool = False) -> Running:
        """Lose the process: no snapshot, moto reset to nothing; then recover from the directory
        (or start `fresh`)."""
        self.server.notifier.record_with(None)
        self.local_state.close()  # releases the file; a kill leaves the same bytes on disk
        return recover(self.server, self.directory, self.lambda_url, fresh=fresh)


def recover(
    server: MotoServer, directory: Path, lambda_url: str = "", *, fresh: bool = False, **limits: int
) -> Running:
    requests.post(f"{server.url}/moto-api/reset", timeout=10).raise_for_status()
    create_table_and_rule(server, DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
    emulated = EmulatedState("us-east-1", DEFAULT_TABLE_NAME, DEFAULT_RULE_NAME)
    local_state = state.LocalState(directory, emulated, server.notifier.serial, **limits)
    local_state.recover(now=0, fresh=fresh)
    server.notifier.record_with(local_state)
    return Running(server, directory, local_state, lambda_url)


@pytest.fixture
def running(aws_credentials: None, tmp_path: Path) -> Iterator[Running]:
    with moto_server() as server, local_worker() as (endpoint, _, _):
        yield recover(server, tmp_path / "state", endpoint.url)


def _entries(directory: Path) -> list[journal.Entry]:
    return list(journal.read(directory))


def _snapshot_and_the_entries_after_it(directory: Path) -> tuple[dict[str, Any], list[journal.Entry]]:
    """The snapshot, and the journal's entries after it, while a compaction may still be deleting
    the segments it covers: when a segment vanishes between the listing and its read, the read
    starts over (a compaction that ends meanwhile only removes entries from the count after the
    snapshot read first, never adds to it)."""
    for _ in range(100):
        snapshot = state.load(directory / state.STATE_FILE)
        assert snapshot is not None
        try:
            entries = _entries(directory)
        except FileNotFoundError:
            time.sleep(0.05)
            continue
        return snapshot, [entry for entry in entries if entry.seq > snapshot["journal_seq"]]
    raise AssertionError("the journal's segments kept vanishing while read")


def _schedule_a_bit_of_everything(run: Running) -> None:
    editor = run.editor
    editor.schedule_at("log", "2030-01-07T09:30:00Z", {"n": 1})
    editor.schedule_cron("log", "0 9 * * 5", {"n": 2}, timezone="Europe/Berlin")
    editor.schedule_every("log", "1h30m", {"n": 3})
    editor.cancel(editor.schedule_in("log", 3600, {"n": 4}).id)
    moved = editor.schedule_in("log", 7200, {"n": 5})
    editor.reschedule(moved.id, due="2029-05-01T00:00:00Z")
    run.increment(5)
    run.dynamodb.batch_write_item(
        RequestItems={
            DEFAULT_TABLE_NAME: [
                {"PutRequest": {"Item": {"pk": {"S": "RAW"}, "sk": {"S": str(i)}, "v": {"N": str(i)}}}}
                for i in range(3)
            ]
        }
    )
    run.dynamodb.transact_write_items(
        TransactItems=[
            {"Delete": {"TableName": DEFAULT_TABLE_NAME, "Key": {"pk": {"S": "RAW"}, "sk": {"S": "0"}}}},
            {
                "Update": {
                    "TableName": DEFAULT_TABLE_NAME,
                    "Key": {"pk": {"S": "RAW"}, "sk": {"S": "1"}},
                    "UpdateExpression": "SET v = :v",
                    "ExpressionAttributeValues": {":v": {"S": "changed"}},
                }
            },
        ]
    )
    run.dynamodb.delete_item(TableName=DEFAULT_TABLE_NAME, Key={"pk": {"S": "RAW"}, "sk": {"S": "2"}})


def test_every_acknowledged_write_survives_a_crash(running: Running) -> None:
    # Given tasks created, cancelled and rescheduled through the editor (the rule armed for the
    # earliest), and raw puts, updates, deletes, a batch and a transaction
    _schedule_a_bit_of_everything(running)
    before = running.contents()
    assert before[1]["ScheduleExpression"] != "cron(0 0 1 1 ? 1970)"
    written = len(_entries(running.directory))
    # And writes that failed (a condition that does not hold, a transaction cancelled)
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        running.dynamodb.put_item(
            TableName=DEFAULT_TABLE_NAME, Item=COUNTER_KEY, ConditionExpression="attribute_not_exists(pk)"
        )
    with pytest.raises(ClientError, match="TransactionCanceled"):
        running.dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": DEFAULT_TABLE_NAME, "Item": {"pk": {"S": "RAW"}, "sk": {"S": "9"}}}},
                {
                    "ConditionCheck": {
                        "TableName": DEFAULT_TABLE_NAME,
                        "Key": COUNTER_KEY,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    # When the process is lost without a snapshot and a fresh emulator recovers from the journal
    assert not (running.directory / state.STATE_FILE).exists()
    recovered = running.crash()
    # Then the table and the rule are exactly as acknowledged; the failed writes left no entry
    assert len(_entries(running.directory)) == written
    assert recovered.contents() == before
    assert recovered.counter() == 5
    # And recovering wrote nothing to the journal (the restore is not journaled again)
    assert len(_entries(running.directory)) == written


def test_a_torn_last_line_is_ignored_and_later_writes_still_recover(running: Running) -> None:
    # Given acknowledged writes, then one whose journal line a kill cut short
    running.increment()
    running.increment()
    before = running.contents()
    running.increment()
    (_, segment), *_ = journal.segments(running.directory)
    data = segment.read_bytes()
    last_line = data[data.rindex(b"\n", 0, len(data) - 1) + 1 :]
    segment.write_bytes(data[: -len(last_line)] + last_line[: len(last_line) // 2])
    # When the stack recovers
    recovered = running.crash()
    # Then the torn entry is ignored and everything before it is there
    assert recovered.contents() == before
    assert recovered.counter() == 2
    # And what is written after the recovery survives the next crash (the torn line is not in its way)
    recovered.increment(10)
    after = recovered.contents()
    assert recovered.crash().contents() == after


class Crash(BaseException):
    """The process ends here (nothing after this point runs)."""


def _crash_in(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Make compaction stop at one of its steps, leaving the files as a kill there would."""
    if where == "after the rotation":
        monkeypatch.setattr(state, "snapshot", lambda *_, **__: (_ for _ in ()).throw(Crash()))
    elif where == "while writing the snapshot":

        def torn_save(path: Path, content: dict[str, Any]) -> None:
            (path.parent / ".state-torn.json").write_text('{"format": 1, "items": [')
            raise Crash

        monkeypatch.setattr(state, "save", torn_save)
    elif where == "after the snapshot before the truncation":

        def no_drop(self: journal.Journal, seq: int) -> None:
            raise Crash

        monkeypatch.setattr(journal.Journal, "drop_through", no_drop)


@pytest.mark.parametrize(
    "where",
    [
        "after the rotation",
        "while writing the snapshot",
        "after the snapshot before the truncation",
        "after the truncation",
    ],
)
def test_a_crash_anywhere_in_a_compaction_restores_every_write_exactly_once(
    running: Running, where: str
) -> None:
    # Given tasks and a counter incremented before a compaction ...
    _schedule_a_bit_of_everything(running)
    for _ in range(3):
        running.increment()
    expected = running.counter() + 100
    rotate = journal.Journal.rotate

    def rotate_then_write(self: journal.Journal) -> int:
        seq = rotate(self)
        running.increment(100)
        return seq

    with pytest.MonkeyPatch.context() as patch:
        # ... and one more increment landing after the journal rotated but before the items are
        # copied (the copy sees it, and it has an entry after the snapshot's sequence number)
        patch.setattr(journal.Journal, "rotate", rotate_then_write)
        _crash_in(patch, where)
        # When a compaction runs and the process dies at that point
        with contextlib.suppress(Crash):
            running.local_state.compact()
    before = running.contents()
    recovered = running.crash()
    # Then every write is there exactly once (the non-idempotent counter is not counted twice)
    assert recovered.counter() == expected == 108
    assert recovered.contents() == before
    # And a later compaction and crash still recover the same
    recovered.local_state.compact()
    assert recovered.crash().contents() == before


def test_compaction_runs_on_its_own_and_bounds_the_journal(aws_credentials: None, tmp_path: Path) -> None:
    with moto_server() as server:
        # Given a stack whose journal is compacted every 20 entries
        running = recover(server, tmp_path / "state", compact_entries=20)

        # When 200 writes are acknowledged from four threads
        def increments() -> None:
            for _ in range(50):
                running.increment()

        threads = [threading.Thread(target=increments) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Then snapshots were written and the journal holds only what followed the last one (about
        # one threshold, more while a compaction is under way)
        snapshot, after = _snapshot_and_the_entries_after_it(tmp_path / "state")
        assert snapshot["journal_seq"] >= 100
        assert len(after) < 100
        # And after a crash every increment is there once
        assert running.crash().counter() == 200


def test_a_fresh_start_discards_the_snapshot_and_the_journal(running: Running) -> None:
    # Given a snapshot and journaled writes after it
    running.increment()
    running.local_state.compact()
    running.increment()
    # When the stack starts fresh, and later crashes and recovers normally
    fresh = running.crash(fresh=True)
    empty = fresh.contents()
    again = fresh.crash()
    # Then it started empty, and the discarded state does not come back
    assert empty[0] == [] and fresh.counter() == 0
    assert again.contents() == empty


def test_a_write_the_journal_cannot_make_durable_is_never_acknowledged(running: Running) -> None:
    # Given a journal whose fsync fails once (a disk error)
    running.increment()
    fsync = os.fsync
    failures: list[int] = []

    def failing_fsync(fd: int) -> None:
        if not failures:
            failures.append(fd)
            raise OSError(errno.EIO, "I/O error")
        fsync(fd)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", failing_fsync)
        # When a write is made
        with pytest.raises(ClientError, match="500"):
            running.increment()
    # Then neither it nor any later write is acknowledged (the kernel may have dropped the pages
    # and would report the next fsync as a success)
    with pytest.raises(ClientError, match="500"):
        running.increment()
    assert failures
