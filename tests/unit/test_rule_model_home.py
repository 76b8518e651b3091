"""The model checker with home items (tests/support/rule_models.py, `home_create_program`): a task
with a generated id is created with one conditional write of task and entry together, and only then
lowers its shard's head and cursor and syncs the rule. A client that dies right after that write has
marked nothing: the keeper alone covers it. Each defect is caught."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.support.rule_models import SOAK, STALE_ENTRY_AGE, NoLowerRuleSync, Plan, check, shard_of
from tests.unit.test_rule_model_crashes import LONE_EDITOR
from tests.unit.test_rule_model_cursors import CREATE_BELOW_THE_RAISED_CURSOR

M = 60

# A lone editor creating a home item, who may die after any step; nothing else happens but the keeper.
LONE_HOME_EDITOR = replace(LONE_EDITOR, plans=(Plan("create_home", 30, "a", 5 * M),))

# The worker fired for 09:00 re-arms past `first` (09:00:35) while an editor creates a home item
# due 09:00:38 in the same shard: the cursor scenario, with the create in one write.
HOME_CREATE_BELOW_THE_RAISED_CURSOR = replace(
    CREATE_BELOW_THE_RAISED_CURSOR,
    plans=(Plan("fired", 40), Plan("create_home", 40, "d", 38)),
    late_bound=STALE_ENTRY_AGE.total_seconds() + 10,
)
assert shard_of("d") == shard_of("first")


def test_the_keeper_covers_a_home_create_whose_client_dies_after_any_step() -> None:
    result = check(LONE_HOME_EDITOR)
    assert result.states > 20, "the search must actually branch"
    assert result.violations == [], result.first()


def test_the_search_catches_a_home_create_without_the_keeper() -> None:
    # Given no keeper: the client that dies right after its one write has covered nothing
    result = check(replace(LONE_HOME_EDITOR, keeper=False, crashable=("editor",)))
    assert result.violations, "a dead client's home item must be lost without the keeper"
    assert result.violations[0][0].startswith(("stalled", "lost")), result.first()


@pytest.mark.skipif(not SOAK, reason="long run (about 2 core-minutes): NEXTTICK_MODEL_SOAK=1")
def test_a_home_create_below_the_raised_cursor_runs() -> None:
    # (the same interleavings as the two-write create of test_rule_model_cursors, with the entry put
    # and the task write merged into one step)
    result = check(HOME_CREATE_BELOW_THE_RAISED_CURSOR)
    assert result.states > 50, "the search must actually branch"
    assert result.violations == [], result.first()


def test_the_search_catches_a_home_create_that_does_not_lower() -> None:
    # Given editors that lower neither head nor cursor after their write (the defect)
    result = check(replace(HOME_CREATE_BELOW_THE_RAISED_CURSOR, protocol=NoLowerRuleSync))
    assert result.violations, "a create that does not lower its shard must be lost or late"
    assert result.violations[0][0].startswith(("late: d", "lost", "stalled")), result.first()
