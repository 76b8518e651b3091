"""The model checker with shard heads (tests/support/rule_models.py): a pass reads only the shards
whose recorded head is due, so every writer of an entry lowers its shard's head and the worker's
raise is conditioned on what it read and followed by a second read of the raised shards. Editors,
workers racing them and workers dying while they hold a lease lose nothing; each defect put back
into the head protocol is caught."""

from __future__ import annotations

from dataclasses import replace

from tests.support.rule_models import (
    HintPastUnfinishedWorker,
    NoHeadRecheckRuleSync,
    NoLowerRuleSync,
    Plan,
    RaisePastLeaseRuleSync,
    Scenario,
    check,
    shard_of,
)

M = 60
# `b` and `d` share a shard, `first` is in it too: the races below are all about one shard's head.
assert shard_of("b") == shard_of("d") == shard_of("first")

# A task queued half an hour out; an editor creates an earlier one in the same shard.
EARLIER_IN_A_LATER_SHARD = Scenario(
    start=30,
    queued=(("b", 30 * M),),
    armed=30,
    plans=(Plan("create", 30, "d", 5 * M),),
    horizon=35 * M,
)

# The worker fired for 09:00 runs `first` (due 09:01:40) and raises its shard's head, while an
# editor creates `d` in that shard: its read of the head may come before the raise.
CREATE_RACING_THE_RAISE = Scenario(
    start=30,
    armed=0,
    fired=True,
    queued=(("first", 100),),
    plans=(Plan("fired", 30), Plan("create", 100, "d", 5 * M)),
    horizon=10 * M,
)

# A worker claims `first` and may die holding its lease; another invocation refreshes the shard's
# head meanwhile. Lambda retries the dead invocation a minute later.
LEASE_HOLDER_DIES = Scenario(
    start=30,
    armed=0,
    fired=True,
    queued=(("first", 100),),
    plans=(Plan("fired", 30), Plan("invoked", 110)),
    horizon=10 * M,
    crashes=1,
    crashable=("fired@30",),
)


def test_an_editor_lowers_the_head_of_the_shard_it_writes_to() -> None:
    result = check(EARLIER_IN_A_LATER_SHARD)
    assert result.violations == [], result.first()


def test_the_search_catches_an_editor_that_does_not_lower_the_head() -> None:
    # Given editors that leave the shard's head where it was (the defect)
    result = check(replace(EARLIER_IN_A_LATER_SHARD, protocol=NoLowerRuleSync))
    # Then the worker the rule starts for the new task reads no shard, and the task waits for the old head
    assert result.violations, "a create that does not lower its shard's head must be late"
    assert result.violations[0][0].startswith(("late: d", "lost", "stalled")), result.first()


def test_a_create_racing_the_workers_raise_is_found_by_its_second_read() -> None:
    result = check(CREATE_RACING_THE_RAISE)
    assert result.states > 100, "the search must actually branch"
    assert result.violations == [], result.first()


def test_the_search_catches_a_raise_without_the_second_read() -> None:
    # Given a re-arm that trusts its first read of the shards it raises (the defect)
    result = check(replace(CREATE_RACING_THE_RAISE, protocol=NoHeadRecheckRuleSync))
    # Then a create that read the head before the raise is left behind it
    assert result.violations, "a raise without the second read must lose a racing create"
    assert result.violations[0][0].startswith(("late: d", "lost", "stalled")), result.first()


def test_a_lease_holder_that_dies_leaves_the_head_at_its_lease_end() -> None:
    result = check(LEASE_HOLDER_DIES)
    assert result.violations == [], result.first()


def test_the_search_catches_a_raise_past_a_leased_entry() -> None:
    # Given heads read as the first entry not leased (the defect)
    result = check(replace(LEASE_HOLDER_DIES, protocol=RaisePastLeaseRuleSync))
    # Then the entry of the dead holder becomes claimable below the recorded head, and nothing reads it
    assert result.violations, "a head raised past a lease must strand the entry when its holder dies"
    assert result.violations[0][0].startswith(("late: first", "lost", "stalled")), result.first()


# Two invocations pass over `first` just after its instant: one claims it and may die holding the lease; the
# other's claim fails, and its re-arm may die right after raising the shard's head and cursor.
# Lambda retries both a minute later.
CONTENDED_CLAIM_THEN_BOTH_DIE = Scenario(
    start=100,
    armed=0,
    fired=True,
    queued=(("first", 95),),
    plans=(Plan("fired", 100), Plan("invoked", 100)),
    horizon=6 * M,
    crashes=2,
    crashable=("fired@100", "invoked@100"),
)


def test_a_raise_never_passes_an_entry_whose_claim_failed() -> None:
    result = check(CONTENDED_CLAIM_THEN_BOTH_DIE)
    assert result.states > 100, "the search must actually branch"
    assert result.violations == [], result.first()


def test_the_search_catches_a_pass_that_reads_on_past_an_entry_another_holds() -> None:
    # Given passes whose re-arm's first read starts past an entry whose claim failed (the defect)
    result = check(replace(CONTENDED_CLAIM_THEN_BOTH_DIE, worker=HintPastUnfinishedWorker))
    # Then when the holder and the raiser both die, the entry is below every later read of its shard
    assert result.violations, "a raise past another's lease must strand the entry when both die"
    assert result.violations[0][0].startswith(("late: first", "lost", "stalled")), result.first()
