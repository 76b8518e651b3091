"""bench/targets.py: each headline target is declared once, and both its sentence in the report and
its verdict come from that declaration."""

from __future__ import annotations

import dataclasses
import re
import string

from bench import judge, targets
from bench.results import DEFAULT_BACKENDS
from bench.shortfalls import WHY
from bench.target_model import Target
from bench.targets import TARGETS
from tests.unit.test_bench_report import _detail, _results

# Words of a sentence that are not a checked limit (the results hold no figure for them).
UNCHECKED = {"lateness": "over ≥ 5 min", "putrule": "≪ 1 per task"}


def _placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def _burst() -> Target:
    return next(target for target in TARGETS if target.id == "burst")


def test_a_threshold_changed_in_the_declaration_changes_both_the_sentence_and_the_verdict() -> None:
    # Given the burst target (≥ 20x) and results with a 25x speed-up at 5,000 tasks
    results = _results(_detail())
    [before] = judge.headline(results, (_burst(),))
    assert (before["target"], before["status"]) == ("≥ 20x faster", judge.MET)
    # When a copy of its declaration asks for 30x
    stricter = dataclasses.replace(_burst(), limits=(dataclasses.replace(targets.BURST_SPEEDUP, limit=30),))
    [after] = judge.headline(results, (stricter,))
    # Then the sentence says 30x and the verdict is missed, with the row's why
    assert (after["target"], after["status"]) == ("≥ 30x faster", judge.NOT_MET)
    assert judge.shortfalls(results, (stricter,)) == [
        f"**{after['what']}** — measured {after['measured']}; target ≥ 30x faster. Why: {WHY['burst']}"
    ]
    # And the size the target is set at reads from its declaration too, in its name and its verdict
    smaller = dataclasses.replace(stricter, sizes=(dataclasses.replace(stricter.sizes[0], limit=10_000),))
    [unsized] = judge.headline(results, (smaller,))
    assert unsized["what"].startswith("burst: 10,000 tasks due") and unsized["status"] == judge.NOT_MEASURED


def test_every_limit_is_in_its_sentence_and_every_number_of_a_sentence_is_declared() -> None:
    for target in TARGETS:
        compared = {limit.name for limit in target.limits}
        named = compared | {size.name for size in target.sizes}
        said = _placeholders(target.sentence) | (
            _placeholders(target.what) if isinstance(target.what, str) else set()
        )
        assert compared <= said <= named, target.id
        literal = target.sentence.replace(UNCHECKED.get(target.id, ""), "")
        assert not re.search(r"(?<!\w)\d", literal), (
            f"{target.id}: a number written into the sentence: {literal!r}"
        )


def test_every_target_has_its_own_id_and_section_and_every_why_names_one() -> None:
    ids = [target.id for target in TARGETS]
    assert len(set(ids)) == len(ids)
    assert set(WHY) <= set(ids)
    # And each is measured by a section of the bench (or, its run time, by all of them)
    assert {target.section for target in TARGETS} <= {*DEFAULT_BACKENDS, "all"}


def test_an_any_limit_target_is_met_by_one_limit_and_missed_by_none() -> None:
    # Given the peak RSS target: within 1.25x of the smallest burst's, or within 5 MB of it
    rss = next(target for target in TARGETS if target.id == "burst rss")
    detail = _detail()

    def status(peaks: dict[str, float]) -> str:
        detail["burst"]["peak_rss_mb"] = peaks
        return judge.verdict(rss, _results(detail))

    assert status({"1000": 80.0, "5000": 84.0}) == judge.MET  # both hold
    assert status({"1000": 2.0, "5000": 6.0}) == judge.MET  # 3x, but 4 MB
    assert status({"1000": 40.0, "5000": 48.0}) == judge.MET  # 8 MB, but 1.2x
    assert status({"1000": 20.0, "5000": 30.0}) == judge.NOT_MET  # 1.5x and 10 MB
    # And below the sizes it names (a quick run's 50 → 200) it is not measured
    assert status({"50": 20.0, "200": 30.0}) == judge.NOT_MEASURED


def test_the_waiting_targets_read_second_precisions_waiting_from_the_monthly_bill() -> None:
    # Given months where `second` precision's waiting costs $1.25 at 1/second and $0.50 at 1/day
    waiting = [target for target in TARGETS if target.id in ("waiting", "waiting per task")]
    detail = _detail()
    [month, per_task] = judge.headline(_results(detail), tuple(waiting))
    # Then the month is met (at most $3 at any load) and says where it costs most; without a load of
    # a task a minute, the waiting per million tasks is not measured
    assert (month["target"], month["status"]) == ("≤ $3.00 a month at any load", judge.MET)
    assert month["measured"] == "$1.25 a month at 1/second ($0.50 at 1/day)"
    assert (per_task["target"], per_task["status"]) == ("≤ $20.00 per million tasks", judge.NOT_MEASURED)
    # When the second load is a task a minute whose waiting costs $1.00 a month ($23.15 per million),
    # and the first's $3.50
    for row in detail["monthly"]["rows"]:
        if row["load"] == "1/day":
            row["load"], row["tasks_per_month"] = "1/minute", 43_200
            row["usd"]["waiting"] = 1.0
        elif row["precision"] == "second":
            row["usd"]["waiting"] = 3.5
    [month, per_task] = judge.headline(_results(detail), tuple(waiting))
    # Then both are missed
    assert month["status"] == per_task["status"] == judge.NOT_MET
    assert per_task["measured"] == "$23.15 per million"
