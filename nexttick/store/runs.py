"""A task's run history: one record per attempt, in a ring of `run_history` slots under the task's
own partition, so the whole history is one Query and never grows past the ring."""

from __future__ import annotations

from datetime import datetime

from nexttick.constants import RUN_SK_PREFIX
from nexttick.store import keys, wire
from nexttick.store.base import StoreBase
from nexttick.store.mapping import run_record
from nexttick.store.records import RunRecord


class RunStore(StoreBase):
    """The run records of TaskStore."""

    def put_run(self, run: RunRecord, *, slots: int, expires_at: datetime) -> None:
        """Write `run` into slot `seq % slots`, over the oldest record (or the same run written by an
        earlier try of the same completion: the slot follows from the task's run counter)."""
        self.table.put_item(
            keys.task_pk(run.task_id),
            keys.run_sort_key(run.seq % slots),
            attributes=wire.run_attributes(run, expires_at),
        )

    def read_runs(self, task_id: str, *, slots: int) -> list[RunRecord]:
        """The task's kept runs, newest first (one strongly consistent Query of its partition). A ring
        that had more slots before keeps its extra records until they expire: only the newest
        `slots` are returned."""
        items = self.models.run.query(
            keys.task_pk(task_id),
            range_key_condition=self.models.run.sk.startswith(RUN_SK_PREFIX),
            consistent_read=True,
        )
        runs = sorted((run_record(item) for item in items), key=lambda run: run.seq, reverse=True)
        return runs[:slots]
