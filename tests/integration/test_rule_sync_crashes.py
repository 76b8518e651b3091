"""The rule protocol when a caller dies or is slow between its record write and its PutRule
(against moto, on a travelling clock): an armed record whose PutRule never happened is published by
the next editor that relies on it, and a re-arm whose PutRule lands too late keeps the head itself."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from editor import Editor
from nexttick.config import NextTickSettings
from nexttick.rulearm import Outcome
from nexttick.rulesync import RuleSync
from nexttick.runtime import Runtime
from tests.support.worker import ACTIONS, RECORDER, WorkerEnv

S = timedelta(seconds=1)
M = timedelta(minutes=1)


class Killed(BaseException):
    """The Lambda running the caller stopped at its timeout (nothing after this line runs)."""


class DyingRule:
    """The EventBridge rule of a caller that dies when it calls PutRule (before the call is sent)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def put(self, minute: datetime | None) -> None:
        raise Killed

    def current(self) -> datetime | str | None:
        return self.inner.current()


class SlowRule:
    """The EventBridge rule whose next PutRule takes `delay` to return (throttling, retries)."""

    def __init__(self, inner: Any, env: WorkerEnv, delay: timedelta) -> None:
        self.inner, self.env, self.delay = inner, env, delay

    def put(self, minute: datetime | None) -> None:
        self.env.travel_to(self.env.now() + self.delay)
        self.delay = timedelta(0)
        self.inner.put(minute)

    def current(self) -> datetime | str | None:
        return self.inner.current()


@pytest.fixture
def settings() -> NextTickSettings:
    return NextTickSettings(queue_shards=4, actions_config=ACTIONS, pool_size=4)


def editor_with_rule(env: WorkerEnv, rule: Any) -> Editor:
    """An editor (its own invocation) whose rule sync talks to `rule`."""
    rt = env.runtime
    sync = RuleSync(rt.store, rule, rt.trigger, rt.rule_sync.timing, rt.clock)
    return Editor(runtime=Runtime(rt.settings, rt.store, rt.rule, rt.trigger, sync, rt.clock))


def arm_current_minute(env: WorkerEnv) -> datetime:
    """The rule armed (record and rule) for the current minute: it has just fired."""
    current = env.now().replace(second=0, microsecond=0)
    store = env.runtime.store
    assert store.cas_rule_state(store.read_rule_state().version, current) is not None
    env.runtime.rule_sync.publish()
    return current


# ---------------------------------------------------------------- a crash between CAS and PutRule


def test_an_armed_record_whose_writer_died_before_its_putrule_is_published_by_the_next_editor(
    env: WorkerEnv,
) -> None:
    # Given an editor that lowered the record for its task and died before its PutRule
    timing = env.runtime.rule_sync.timing
    first_due = env.now() + 10 * M
    with pytest.raises(Killed):
        editor_with_rule(env, DyingRule(env.runtime.rule)).schedule_at("record", first_due)
    assert env.runtime.store.read_rule_state().armed_minute == timing.fire_minute(first_due)
    assert env.runtime.rule.current() is None  # the rule never moved
    # When another editor creates a later task (the record already covers its minute)
    env.editor.schedule_at("record", first_due + 5 * M)
    # Then the rule is armed for the first task's minute: the second editor published the record
    assert env.runtime.rule.current() == timing.fire_minute(first_due)


def test_an_unpublished_minute_that_is_no_longer_armable_is_handed_to_the_worker(env: WorkerEnv) -> None:
    # Given an editor that lowered the record for a task 2 minutes away and died before its PutRule
    first_due = env.now() + 2 * M
    with pytest.raises(Killed):
        editor_with_rule(env, DyingRule(env.runtime.rule)).schedule_at("record", first_due, id="first")
    # When, 70 s later (its minute has begun), another editor creates a later task
    env.travel_to(env.now() + 70 * S)
    env.editor.schedule_at("record", first_due + 30 * M)
    # Then the worker is invoked (a PutRule now would land after the minute began)
    assert env.runtime.trigger.reasons != []
    # And that worker runs the first task at its due time
    env.run()
    assert [c.at for c in RECORDER.calls["first"]] == [first_due]


# ---------------------------------------------------------------- a slow PutRule in the worker's re-arm


def test_a_rearm_whose_putrule_lands_after_the_minute_began_keeps_the_head(env: WorkerEnv) -> None:
    # Given the rule firing for the current minute, and a task (created meanwhile) whose minute is
    # the next one: the editor found the record already at an earlier minute and wrote nothing
    arm_current_minute(env)
    timing = env.runtime.rule_sync.timing
    due = env.now().replace(second=0, microsecond=0) + 2 * M + 15 * S
    assert timing.fire_minute(due) == env.now().replace(second=0, microsecond=0) + M
    task = env.editor.schedule_at("record", due)
    assert env.runtime.rule.current() == env.now().replace(second=0, microsecond=0)
    # When the worker re-arms for that minute and its PutRule takes 25 s (lands 5 s before the
    # minute: EventBridge may not fire it)
    env.runtime.rule_sync.rule = SlowRule(env.runtime.rule, env, 25 * S)
    report = env.run()
    # Then the worker keeps the task and runs it at its due time
    assert [c.at for c in RECORDER.calls[task.id]] == [due], report.to_dict()
    assert env.runtime.rule_sync.timing.armable(timing.fire_minute(due), env.now()) is False


def test_rearm_reports_due_soon_when_its_target_stopped_being_armable_while_publishing(
    env: WorkerEnv,
) -> None:
    # Given a record at the current minute and a head whose minute is barely armable
    arm_current_minute(env)
    due = env.now().replace(second=0, microsecond=0) + 2 * M + 15 * S
    env.editor.schedule_at("record", due)
    # When a re-arm's PutRule takes 25 s
    env.runtime.rule_sync.rule = SlowRule(env.runtime.rule, env, 25 * S)
    result = env.runtime.rule_sync.rearm()
    # Then the re-arm hands the head back to its worker instead of trusting the rule
    assert (result.outcome, result.head) == (Outcome.DUE_SOON, due)
