"""A task's run history: its newest run on the task item (`last_run`), the ones before in a ring
of `run_history` slots under the task's own partition `T#<id>`, so the whole history is one Query
(and for a task in its home item, one GetItem of that) and never grows past the ring."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import datetime

from pynamodb.pagination import ResultIterator

from nexttick.constants import RUN_SK_PREFIX, SORT_KEY, TASK_SK
from nexttick.store import keys, wire
from nexttick.store.base import StoreBase
from nexttick.store.records import RunRecord, latest_run


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

    def read_runs(self, task_id: str, *, slots: int) -> list[RunRecord] | None:
        """The task's kept runs, newest first, or None when there is no such task: one strongly
        consistent Query of its partition reads the ring and the task item, which holds the newest
        run (a task in its home item: one GetItem of that, and the Query only once it has run more
        than once). A ring that had more slots before keeps its extra records until they expire:
        only the newest `slots` are returned."""
        ring: Iterable[wire.Wire] = ResultIterator(
            self.table.query, (keys.task_pk(task_id),), {"consistent_read": True}
        )
        home = keys.task_key(task_id, self.shards)
        if home[0] != keys.task_pk(task_id):
            item = self.table.get_item(*home, consistent_read=True).get("Item")
            if item is None:
                return None
            task = wire.TASKS.decode(item)
            ring = ring if task.run_seq > 1 else []
            ring = itertools.chain(ring, [{**item, SORT_KEY: {"S": TASK_SK}}])
        runs: dict[int, RunRecord] = {}
        found = False
        for item in ring:
            sort_key = item[SORT_KEY]["S"]
            if sort_key == TASK_SK:
                found = True
                newest = latest_run(wire.TASKS.decode(item))
                if newest is not None:
                    runs[newest.seq] = newest
            elif sort_key.startswith(RUN_SK_PREFIX):
                run = wire.RUNS.decode(item)
                runs.setdefault(run.seq, run)
        if not found:
            return None
        return sorted(runs.values(), key=lambda run: run.seq, reverse=True)[:slots]
