"""bench/shortnotice.py measures what it says: every task of a window runs, each create is the
API's write, and the worker invocations are counted by what started them."""

from __future__ import annotations

from bench.shortnotice import measure


def test_a_short_notice_window_runs_every_task_and_counts_each_function() -> None:
    for ahead_s in (180.0, 10.0):
        result = measure(per_second=1.0, seconds=15, ahead_s=ahead_s)
        assert result["tasks"] == 15
        assert result["finished"] >= result["tasks"], result
        assert result["by_function"]["api"]["wru"] >= 1.0, result  # each create writes its task
        assert result["by_function"]["worker"]["wru"] >= 2.0, result  # each run: claim, outcome
        assert sum(result["worker_invocations"].values()) >= 1, result
