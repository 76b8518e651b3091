"""The model checker with shard cursors (tests/support/rule_models.py): every read of a shard (a
pass, a head read) starts at the cursor the rule record keeps for it, so no unfinished entry may
sort below it. Writers lower it for an entry written below it; the worker raises it to what it read
(conditioned on the value it read) and reads again from where the old cursor stood. Each defect put
back into that protocol is caught."""

from __future__ import annotations

from dataclasses import replace

from tests.support.rule_models import (
    STALE_ENTRY_AGE,
    CursorPastLeaseRuleSync,
    NoCursorLowerRuleSync,
    Plan,
    RecheckFromNewCursorRuleSync,
    Scenario,
    check,
    shard_of,
)
from tests.unit.test_rule_model_heads import LEASE_HOLDER_DIES

M = 60
assert shard_of("d") == shard_of("first")

# `first` (due 09:00:35) is overdue when the worker fired for 09:00 starts at 09:00:40; an editor
# creates `d`, due 09:00:38, in the same shard at that instant. The recorded head (09:00:35) is no
# later than `d`, so an editor that read the record before the worker's raise lowers nothing, while
# the cursor the worker raises to (09:00:40, the instant it read) is past `d`'s key. A pass that
# finds `d`'s entry before its task is written hides it for STALE_ENTRY_AGE in this model (the
# worker hides it 2 to 60 s): that lateness is allowed here, a lost task is not.
CREATE_BELOW_THE_RAISED_CURSOR = Scenario(
    start=40,
    armed=0,
    fired=True,
    queued=(("first", 35),),
    plans=(Plan("fired", 40), Plan("create", 40, "d", 38)),
    horizon=10 * M,
    late_bound=STALE_ENTRY_AGE.total_seconds() + 10,
)


def test_a_create_below_the_raised_cursor_is_found_by_the_second_read() -> None:
    result = check(CREATE_BELOW_THE_RAISED_CURSOR)
    assert result.states > 100, "the search must actually branch"
    assert result.violations == [], result.first()


def test_the_search_catches_a_second_read_from_the_new_cursor() -> None:
    # Given a re-arm that reads the raised shards again from where it just put their cursors (the defect)
    result = check(replace(CREATE_BELOW_THE_RAISED_CURSOR, protocol=RecheckFromNewCursorRuleSync))
    # Then the entry written below the new cursor is never read
    assert result.violations, "a second read from the new cursor must lose the racing create"
    assert result.violations[0][0].startswith(("late: d", "lost", "stalled")), result.first()


def test_the_search_catches_an_editor_that_does_not_lower_the_cursor() -> None:
    # Given editors that lower their shard's head but not its cursor (the defect)
    result = check(replace(CREATE_BELOW_THE_RAISED_CURSOR, protocol=NoCursorLowerRuleSync))
    # Then an entry written after the raise, below the cursor, is never read
    assert result.violations, "a create that does not lower its shard's cursor must be lost"
    assert result.violations[0][0].startswith(("late: d", "lost", "stalled")), result.first()


def test_the_search_catches_a_cursor_raised_past_a_leased_entry() -> None:
    # Given cursors read as the first entry not leased (the defect)
    result = check(replace(LEASE_HOLDER_DIES, protocol=CursorPastLeaseRuleSync))
    # Then the entry of a lease holder that dies is below every later read of its shard
    assert result.violations, "a cursor raised past a lease must strand the entry when its holder dies"
    assert result.violations[0][0].startswith(("late: first", "lost", "stalled")), result.first()
