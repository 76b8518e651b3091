"""The keeper against moto: a client that dies anywhere inside a create does not strand its task.

The editor's process "dies" right after one of its AWS calls (an exception raised from botocore's
`after-call` hook on each of its clients: the call was applied, nothing after it runs) — after the
entry put, the task put, the rule-record read, the CAS, the PutRule, ... each in turn. Then the
table's stream records (read through the real DynamoDB Streams API) go to the keeper Lambda
handler, and a committed task is covered: the rule armed at or before its minute (due in 100 s) or
the worker invoked (due in 20 s, too close to arm). Without the keeper these tasks stay pending for
ever: nothing arms the rule and nothing invokes the worker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from editor import Editor, TaskSpec
from lambdas.keeper import handler as keeper_handler
from local.lambdas import LambdaContext
from nexttick.aws import parse_rule_minute
from nexttick.config import NextTickSettings
from nexttick.constants import RULE_STATE_PK, RULE_STATE_SK
from nexttick.runtime import Runtime
from nexttick.worker import RunOutcome
from tests.support.aws import RecordedRuntime, streams_client
from tests.support.worker import WorkerEnv

ARMABLE_IN = timedelta(seconds=100)  # frozen at 09:00:30: fires in the 09:01 minute, 30 s away
CLOSE_IN = timedelta(seconds=20)  # too close to arm: the worker must be invoked


class ClientDied(BaseException):
    """The editor's process ends here (not an Exception: nothing in the editor may catch it)."""


@dataclass
class Stream:
    """The table's stream, read from a position on, as Lambda's event source mapping reads it."""

    client: Any
    arn: str
    iterator: str = ""

    def mark(self) -> None:
        shard = self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"][0]["ShardId"]
        self.iterator = self.client.get_shard_iterator(
            StreamArn=self.arn, ShardId=shard, ShardIteratorType="LATEST"
        )["ShardIterator"]

    def records(self) -> list[dict[str, Any]]:
        """Everything written since `mark()`, as a Lambda event's records."""
        page = self.client.get_records(ShardIterator=self.iterator)
        self.iterator = page["NextShardIterator"]
        return [
            {
                **record,
                "eventSourceARN": self.arn,
                "dynamodb": {
                    **record["dynamodb"],
                    "ApproximateCreationDateTime": record["dynamodb"][
                        "ApproximateCreationDateTime"
                    ].timestamp(),
                },
            }
            for record in page["Records"]
        ]


@pytest.fixture
def stream(resources: NextTickSettings) -> Stream:
    """The task table with its stream on (new and old images), as the CDK construct defines it."""
    dynamodb = boto3.client("dynamodb", region_name=resources.region)
    described = dynamodb.update_table(
        TableName=resources.table_name,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )["TableDescription"]
    client = streams_client(resources.region)
    return Stream(client, described["LatestStreamArn"])


@pytest.fixture
def keeper(resources: NextTickSettings, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordedRuntime]:
    """The keeper Lambda's own container: its runtime, whose worker invokes are recorded."""
    runtime = RecordedRuntime.recording(resources)
    monkeypatch.setattr(keeper_handler, "_keeper", None)
    keeper_handler.use(runtime)
    yield runtime


def run_keeper(stream: Stream) -> dict[str, Any]:
    result: dict[str, Any] = keeper_handler.handler(
        {"Records": stream.records()}, LambdaContext("nexttick-keeper", 30, "us-east-1")
    )
    return result


def dying_after(runtime: RecordedRuntime, calls: int) -> Callable[[], list[str]]:
    """Make the runtime's process die right after its `calls`-th AWS call (any service); returns
    the operations made so far."""
    made: list[str] = []

    def after_call(*, model: Any, **_: Any) -> None:
        made.append(f"{model.service_model.service_name}.{model.name}")
        if len(made) == calls:
            raise ClientDied(made[-1])

    clients = {
        id(c): c
        for c in (
            runtime.store.client,
            runtime.rule.client,
            runtime.trigger.inner.client,
        )
    }
    for client in clients.values():
        client.meta.events.register("after-call", after_call)
    return lambda: list(made)


def _calls_of(runtime: RecordedRuntime) -> list[str]:
    """The AWS operations `runtime`'s clients make from now on."""
    calls: list[str] = []
    for client in (runtime.store.client, runtime.rule.client, runtime.trigger.inner.client):
        client.meta.events.register("after-call", lambda *, model, **_: calls.append(model.name))
    return calls


def reset_rule(runtime: Runtime) -> None:
    """Nothing armed, no record: each crash point starts from the same world."""
    runtime.store.models.rule(RULE_STATE_PK, RULE_STATE_SK).delete()
    runtime.rule.put(None)


def rule_minute(runtime: Runtime) -> datetime | str | None:
    return parse_rule_minute(
        runtime.rule.client.describe_rule(Name=runtime.settings.rule_name)["ScheduleExpression"]
    )


@pytest.mark.parametrize("due_in", [ARMABLE_IN, CLOSE_IN], ids=["due-in-100s", "due-in-20s"])
def test_a_task_committed_by_a_client_that_died_at_any_call_is_covered_by_the_keeper(
    editor: Editor,
    runtime: RecordedRuntime,
    keeper: RecordedRuntime,
    stream: Stream,
    frozen_now: Any,
    due_in: timedelta,
) -> None:
    now = runtime.clock.now()
    due = now + due_in
    minute = runtime.rule_sync.timing.fire_minute(due)
    armable = runtime.rule_sync.timing.armable(minute, now)
    assert armable is (due_in == ARMABLE_IN)
    made: Callable[[], list[str]] = list
    for n in range(1, 20):
        # Given a fresh world and a client whose process dies right after its n-th AWS call
        reset_rule(runtime)
        keeper.trigger.reasons.clear()
        stream.mark()
        made = dying_after(runtime, n)
        task_id = f"crash-{due_in.seconds}-{n}"
        # When it creates a task
        try:
            editor.create(TaskSpec(action="log", due=due, id=task_id))
        except ClientDied:
            pass
        else:
            break  # the create needs fewer calls: every crash point is done
        ops = made()
        committed = runtime.store.get_task(task_id) is not None
        # And the keeper processes the stream records of what it committed
        report = run_keeper(stream)
        where = f"died after call {n} ({ops[-1]}) of {ops}; keeper: {report}"
        if not committed:
            # Then nothing was accepted and nothing is armed or invoked
            assert rule_minute(runtime) is None and keeper.trigger.reasons == [], where
        elif armable:
            # Then the rule fires at or before the task's minute, and agrees with its record
            armed = rule_minute(runtime)
            assert isinstance(armed, datetime) and armed <= minute, where
            assert runtime.store.read_rule_state().armed_minute == armed, where
        else:
            # Then the worker was invoked
            assert keeper.trigger.reasons, where
    else:
        pytest.fail("the create never completed")
    # The crash points covered every call of a create (the last run completed without one)
    assert n >= 4, made()


def test_duplicate_and_out_of_order_records_are_harmless_and_cost_reads_only(
    editor: Editor, runtime: RecordedRuntime, keeper: RecordedRuntime, stream: Stream, frozen_now: Any
) -> None:
    # Given a client that died right after its task write, and the keeper that covered the task
    now = runtime.clock.now()
    stream.mark()
    made = dying_after(runtime, 4)  # read the id, put the entry, read the record (its head), put the task
    with pytest.raises(ClientDied):
        editor.create(TaskSpec(action="log", due=now + ARMABLE_IN, id="dup"))
    assert made() == ["dynamodb.GetItem", "dynamodb.PutItem", "dynamodb.GetItem", "dynamodb.PutItem"]
    records = stream.records()
    context = LambdaContext("nexttick-keeper", 30, "us-east-1")
    keeper_handler.handler({"Records": records}, context)
    armed, state = rule_minute(runtime), runtime.store.read_rule_state()
    assert armed == runtime.rule_sync.timing.fire_minute(now + ARMABLE_IN)
    # When the same records arrive again, reversed, and then twice in one batch
    calls = _calls_of(keeper)
    keeper_handler.handler({"Records": records[::-1]}, context)
    keeper_handler.handler({"Records": records + records}, context)
    # Then nothing moved and the keeper only read (the rule record, and the rule once per record move)
    assert rule_minute(runtime) == armed and runtime.store.read_rule_state() == state
    assert set(calls) <= {"GetItem", "DescribeRule"}, calls
    assert keeper.trigger.reasons == []


def test_a_record_cas_whose_minute_has_begun_is_handed_to_the_worker_not_published(
    editor: Editor, runtime: RecordedRuntime, keeper: RecordedRuntime, stream: Stream, frozen_now: Any
) -> None:
    # Given a client that died right after its CAS (the record says 09:01, the rule is at the epoch)
    now = runtime.clock.now()
    stream.mark()
    made = dying_after(runtime, 5)  # read the id, put the entry, read the record, put the task, CAS
    with pytest.raises(ClientDied):
        editor.create(TaskSpec(action="log", due=now + ARMABLE_IN, id="late"))
    assert made()[-1] == "dynamodb.UpdateItem", made()
    assert rule_minute(runtime) is None
    # When the keeper gets the records only after that minute began (a throttled or failing keeper)
    frozen_now.move_to(now + timedelta(seconds=45))
    report = run_keeper(stream)
    # Then it does not publish a minute that may never fire: the worker is invoked instead
    assert "invoked" in report["outcomes"], report
    assert rule_minute(runtime) is None
    assert keeper.trigger.reasons


def test_changes_that_schedule_nothing_new_are_ignored_without_a_call(
    editor: Editor, runtime: RecordedRuntime, keeper: RecordedRuntime, stream: Stream, frozen_now: Any
) -> None:
    # Given tasks created normally (their rule is armed)
    now = runtime.clock.now()
    kept = editor.create(TaskSpec(action="log", due=now + ARMABLE_IN, id="kept")).task
    gone = editor.create(TaskSpec(action="log", due=now + 2 * ARMABLE_IN, id="gone")).task
    stream.mark()
    # When one's payload changes (same due time) and the other is cancelled
    editor.update(kept.id, payload={"v": 2})
    editor.cancel(gone.id)
    records = stream.records()
    assert {r["eventName"] for r in records} >= {"MODIFY", "REMOVE"}
    calls: list[str] = []
    for client in (keeper.store.client, keeper.rule.client):
        client.meta.events.register("after-call", lambda *, model, **_: calls.append(model.name))
    report = keeper_handler.handler({"Records": records}, LambdaContext("nexttick-keeper", 30, "us-east-1"))
    # Then the keeper saw them and made no AWS call at all (queue entries, removals, no new due time)
    assert report["records"] == len(records) and report["outcomes"] == [], report
    assert calls == []


def test_a_reschedule_whose_client_died_is_covered(
    editor: Editor, runtime: RecordedRuntime, keeper: RecordedRuntime, stream: Stream, frozen_now: Any
) -> None:
    # Given a task far ahead, armed normally
    now = runtime.clock.now()
    editor.create(TaskSpec(action="log", due=now + timedelta(hours=2), id="moved"))
    # When its client moves it to 100 s from now and dies right after the task write
    stream.mark()
    ops = dying_after(runtime, 4)  # read task, put new entry, read the record (its head), replace task
    with pytest.raises(ClientDied):
        editor.reschedule("moved", due=now + ARMABLE_IN)
    moved = runtime.store.get_task("moved")
    assert moved is not None and moved.due == now + ARMABLE_IN, ops()
    assert rule_minute(runtime) == runtime.rule_sync.timing.fire_minute(now + timedelta(hours=2))
    run_keeper(stream)
    # Then the rule fires at the new, earlier minute
    assert rule_minute(runtime) == runtime.rule_sync.timing.fire_minute(now + ARMABLE_IN)


def run_at_once(env: WorkerEnv, task_id: str) -> None:
    """Create a task due in a second (its editor invokes the worker), and run the worker then."""
    now = env.now()
    env.editor.create(TaskSpec(action="log", due=now + timedelta(seconds=1), id=task_id))
    env.travel_to(now + timedelta(seconds=1.5))
    assert env.run(60).results[RunOutcome.SUCCEEDED] == 1


def test_a_task_its_editors_worker_already_ran_costs_the_keeper_a_read_and_no_invocation(
    env: WorkerEnv, runtime: RecordedRuntime, keeper: RecordedRuntime, stream: Stream
) -> None:
    # Given a task due at once: its editor invoked the worker, which ran it before the keeper got
    # the create's record (the common case for a task due now)
    stream.mark()
    run_at_once(env, "at-once")
    assert runtime.trigger.reasons == ["due too soon to arm"]
    # When the keeper handles the records
    calls = _calls_of(keeper)
    report = run_keeper(stream)
    # Then it read the entry, found it had run, and neither lowered a head nor invoked a worker
    assert report["finished"] == 1 and "invoked" not in report["outcomes"], report
    assert keeper.trigger.reasons == []
    assert "UpdateItem" not in calls and "Invoke" not in calls, calls


def test_a_batch_whose_first_close_task_ran_still_invokes_a_worker_for_a_later_one_whose_client_died(
    env: WorkerEnv, runtime: RecordedRuntime, keeper: RecordedRuntime, stream: Stream
) -> None:
    # Given a task due at once, run by the worker its editor invoked
    stream.mark()
    run_at_once(env, "ran")
    # And then a task due 20 s later whose client died right after its task write (no invoke)
    invoked = list(runtime.trigger.reasons)
    # (read the id, put the entry, read the record, lower the head the worker raised, put the task)
    made = dying_after(runtime, 5)
    with pytest.raises(ClientDied):
        env.editor.create(TaskSpec(action="log", due=env.now() + CLOSE_IN, id="orphan"))
    assert made()[-1] == "dynamodb.PutItem" and runtime.trigger.reasons == invoked, made()
    # When the keeper gets both creates in one batch
    report = run_keeper(stream)
    # Then the first one having run does not end its search: the orphan gets a worker
    assert report["finished"] == 1 and "invoked" in report["outcomes"], report
    assert keeper.trigger.reasons == ["due too soon to arm"]
