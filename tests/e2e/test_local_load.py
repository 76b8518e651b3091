"""End to end: the local-stack load generator (bench/localload.py) runs, small, so it cannot rot.

`nexttick local` started as a user starts it, 5 clients x 20 mixed operations over HTTP (create,
get, list, reschedule, cancel), one connection per request. Asserts the figures' keys, that no
request failed to connect or got a 5xx, and that every task created and not cancelled was delivered
exactly once per occurrence (its last due time's, and at most one for a due time a slow reschedule
replaced after it could be claimed) and no cancelled one at all. The timings are bench figures
(`make bench`), not asserted here.
"""

from __future__ import annotations

from collections import Counter

import pytest

from bench import localload

pytestmark = [pytest.mark.xdist_group("local-load-e2e"), pytest.mark.slow]

KEYS = {
    "clients",
    "operations",
    "api_p50_s",
    "api_p99_s",
    "api_max_s",
    "errors",
    "lateness_p50_s",
    "lateness_p99_s",
    "tasks_fired",
    "backend",
}


def test_the_quick_load_run_answers_every_request_and_delivers_every_task_once() -> None:
    # Given the local stack and 5 clients x 20 mixed operations (quick mode)
    # When they run and every task created has had time to fire
    result = localload.load_run(quick=True)
    figures = result.figures()
    # Then the figures have exactly the bench's keys, for 100 operations by 5 clients
    assert set(figures) == KEYS
    assert (figures["clients"], figures["operations"]) == (5, 100)
    assert sum(len(c.latencies) for c in result.clients) == 100
    # And no request failed to connect or got a 5xx, nor an answer its client did not expect
    assert figures["errors"] == 0, [u for c in result.clients for u in c.unexpected]
    assert not [u for c in result.clients for u in c.unexpected]
    # And every task created and not cancelled fired exactly once per occurrence; no cancelled one fired
    delivered = Counter(d.task_id for d in result.deliveries)
    assert result.expected and result.all_delivered
    assert result.duplicates() == {}
    assert result.expected <= set(delivered)
    assert not result.forbidden & set(delivered)
    assert figures["tasks_fired"] == len(set(delivered)) >= len(result.expected)
    assert figures["lateness_p50_s"] is not None and figures["lateness_p99_s"] is not None
