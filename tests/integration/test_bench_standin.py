"""The bench's in-memory DynamoDB stand-in (bench/standin.py) answers as moto does.

One recorded sequence of the store's own operations — bulk insert, creates (one refused: the id
exists), reads of present and missing tasks, BatchGetItem, paged shard and merged queries, claims
that succeed and that fail on their condition, lease writes, completions (one losing its CAS),
reschedule, cancel, deletes of present and gone entries, the rule record's compare-and-sets and
claims — then a worker run of 50 due tasks on a pool of 4, is driven against moto and against the
stand-in, on the same frozen clock and with the same entry tokens. Every step's result (records,
booleans, errors), the worker's report, the rule it left, the final table and the raw error shapes
must be identical.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from botocore.exceptions import ClientError
from moto import mock_aws

from bench.harness import HANDOVER_QUEUE, pending_once
from bench.standin import StandIn
from bench.standin_table import ACCOUNT
from local.resources import create_resources
from nexttick.aws import make_client
from nexttick.config import NextTickSettings
from nexttick.runtime import Runtime
from nexttick.store import keys
from nexttick.store import queue as queue_module
from nexttick.store.records import Occurrence, TaskStatus
from nexttick.timeutil import format_instant
from tests.support.worker import ACTIONS, RECORDER, make_env, make_moto_atomic

NOW = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)
HOUR = timedelta(hours=1)
# One invocation (no helper invocations): the same run on both backends.
SETTINGS: dict[str, Any] = {
    "queue_shards": 4,
    "actions_config": ACTIONS,
    "pool_size": 4,
    "max_invocations": 1,
}


class _CountingUuid:
    """Stands for the `uuid` module in nexttick.store.queue: entry tokens from a counter, so both
    backends write the same keys (entries are only created single-threaded here)."""

    def __init__(self) -> None:
        self._next = itertools.count(1)
        self._lock = threading.Lock()

    def uuid4(self) -> uuid.UUID:
        with self._lock:
            return uuid.UUID(int=next(self._next))


@dataclass
class Outcome:
    steps: list[tuple[str, Any]]
    report: dict[str, Any]
    rule: Any
    table: list[dict[str, Any]]
    raw: list[tuple[str, Any]]


def _home_id(due: datetime, n: int) -> str:
    """A generated id's form with a fixed token, so both backends hold the same keys."""
    return keys.new_home_id(due)[:12] + f"{n:016x}"


def _result(call: Callable[[], Any]) -> Any:
    """What a call returned, or the name of the error it raised."""
    try:
        return call()
    except Exception as exc:
        return f"raised {type(exc).__name__}"


def _drive(
    runtime: Runtime, traveller: time_machine.Traveller
) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """The recorded sequence, then the worker run; each step's result, and the worker's report."""
    traveller.move_to(NOW)
    store = runtime.store
    steps: list[tuple[str, Any]] = []

    def step(label: str, call: Callable[[], Any]) -> None:
        steps.append((label, _result(call)))

    # Given a burst due now (7 distinct instants), tasks due in an hour, and tasks for the sequence
    due = [
        pending_once(f"due{i:02d}", NOW - timedelta(seconds=i % 7), NOW, action="record") for i in range(50)
    ]
    later = [
        pending_once(f"later{i}", NOW + HOUR + timedelta(seconds=i), NOW, action="record") for i in range(6)
    ]
    # and home items (generated ids, here with fixed tokens): the worker completes them with the
    # store's hand-built SET/REMOVE update, which the stand-in applies without moto's parser
    home_dues = [NOW - timedelta(seconds=i % 5) for i in range(10)]
    homes = [pending_once(_home_id(at, i), at, NOW, action="record") for i, at in enumerate(home_dues)]
    store.bulk_insert(due + later + homes, NOW)
    for i in range(6):
        store.create_task(pending_once(f"s{i}", NOW + 2 * HOUR + timedelta(minutes=i), NOW))

    # reads: missing and present tasks, BatchGetItem, paged queries (ExclusiveStartKey), the head
    step("create an existing id", lambda: store.create_task(pending_once("s0", NOW + 3 * HOUR, NOW)))
    step("get missing", lambda: store.get_task("nope"))
    step("get", lambda: store.get_task("s1"))
    step("batch get", lambda: store.get_tasks(["s0", "s1", "nope", "later3"]))
    step(
        "shards, pages of 2", lambda: [[e.key for e in store.shard_entries(s, page_size=2)] for s in range(4)]
    )
    step("merged due now, pages of 3", lambda: list(store.merged_entries(up_to=NOW, page_size=3)))
    step(
        "merged between",
        lambda: [e.key for e in store.merged_entries(up_to=NOW + 2 * HOUR, after_key=format_instant(NOW))],
    )
    step("head", store.head)

    # claims and leases on the sequence's own entries
    entries = {e.task_id: e for e in store.merged_entries(after_key=format_instant(NOW + HOUR), page_size=4)}
    s1, s2 = entries["s1"], entries["s2"]
    lease = NOW + timedelta(seconds=60)
    claimed, _ = store.try_claim(s1, NOW, lease, "me")
    assert claimed is not None
    steps.append(("claim", claimed))
    step("claim a leased entry", lambda: store.try_claim(s1, NOW, lease, "other"))
    step("claim with a stale token", lambda: store.try_claim(replace(s2, token="0" * 32), NOW, lease, "me"))
    step("extend own lease", lambda: store.extend_lease(claimed, "me", NOW + timedelta(seconds=120)))
    step("extend another's lease", lambda: store.extend_lease(claimed, "other", NOW + HOUR))
    step("abandon", lambda: store.abandon(claimed, "me", "RuntimeError: boom"))
    step("defer", lambda: store.defer_entry(claimed, "me", NOW + timedelta(seconds=90)))
    step("entry", lambda: store.get_entry(s1.shard, s1.key))
    step("missing entry", lambda: store.get_entry(0, "nope"))

    # completions, a lost CAS, reschedule, cancel, deletes of present and gone entries
    task = store.get_task("s1")
    assert task is not None
    done = replace(
        task, status=TaskStatus.SUCCEEDED, due=None, runs=1, version=task.version + 1, updated_at=NOW
    )
    step("complete", lambda: store.swap_occurrence(task, done, None, leaving=claimed.ref))
    again = replace(done, status=TaskStatus.PENDING, due=NOW + 3 * HOUR)
    step(
        "complete on a stale version",
        lambda: store.swap_occurrence(
            task, again, Occurrence(NOW + 3 * HOUR, NOW + 3 * HOUR), leaving=claimed.ref
        ),
    )
    step("delete a gone entry", lambda: store.discard_entry(claimed.ref))
    t2 = store.get_task("s2")
    assert t2 is not None
    moved = replace(t2, due=NOW + 3 * HOUR, version=t2.version + 1, updated_at=NOW)
    step(
        "reschedule",
        lambda: store.swap_occurrence(
            t2, moved, Occurrence(NOW + 3 * HOUR, NOW + 3 * HOUR), leaving=store.entry_of(t2)
        ),
    )
    step("replace on a wrong version", lambda: store.replace_task(replace(moved, version=99), 42))
    t3 = store.get_task("s3")
    assert t3 is not None
    cancelled = replace(t3, status=TaskStatus.CANCELLED, due=None, version=t3.version + 1, updated_at=NOW)
    step("cancel", lambda: store.swap_occurrence(t3, cancelled, None, leaving=store.entry_of(t3)))
    step("drop a dropped entry", lambda: store.drop_entry_of(cancelled))
    step("tasks after", lambda: store.get_tasks(["s1", "s2", "s3"]))

    # the rule record
    step("rule state, none yet", store.read_rule_state)
    step("cas", lambda: store.cas_rule_state(0, NOW + HOUR))
    step("cas lost", lambda: store.cas_rule_state(0, None))
    step("confirm", lambda: store.confirm_published(1))
    step("repair a published version", lambda: store.claim_repair(1))
    step(
        "claim waiter", lambda: store.claim_waiter(NOW + HOUR, "me", NOW + 2 * HOUR, NOW, expected_version=1)
    )
    step("waiter taken", lambda: store.claim_waiter(NOW + 2 * HOUR, "other", NOW + 3 * HOUR, NOW))
    step("release waiter", lambda: store.release_waiter("me", NOW + HOUR))
    step("kick", lambda: store.try_mark_kicked(NOW, NOW - timedelta(minutes=1)))
    step("kick again", lambda: store.try_mark_kicked(NOW, NOW - timedelta(minutes=1)))
    step("rule state", store.read_rule_state)

    # When a worker drains the burst on a pool of 4
    env = make_env(runtime, traveller)
    report = env.run(owner="equivalence").to_dict()
    steps.append(("deliveries", sorted((task_id, len(calls)) for task_id, calls in RECORDER.calls.items())))
    step("head after", store.head)
    return steps, report


def _raw_errors(client: Any, table: str) -> list[tuple[str, Any]]:
    """What the store's calls do not show, straight through a boto3 client: error shapes
    (ConditionalCheckFailedException with and without ReturnValuesOnConditionCheckFailure,
    ResourceNotFoundException), a ProjectionExpression, Query pages both ways."""

    def error(call: Callable[[], Any]) -> Any:
        try:
            call()
        except ClientError as exc:
            return exc.response["Error"]["Code"], exc.response["Error"]["Message"], exc.response.get("Item")
        return "no error"

    key = {"pk": {"S": "T#s0"}, "sk": {"S": "T"}}
    for sk in "abcde":
        client.put_item(TableName=table, Item={"pk": {"S": "raw"}, "sk": {"S": sk}, "n": {"N": str(ord(sk))}})
    page_of = {
        "TableName": table,
        "KeyConditionExpression": "pk = :p AND sk >= :s",
        "ExpressionAttributeValues": {":p": {"S": "raw"}, ":s": {"S": "b"}},
    }
    first = client.query(**page_of, Limit=2, ConsistentRead=True)
    rest = client.query(
        **page_of, ExclusiveStartKey=first["LastEvaluatedKey"], Limit=1000, ScanIndexForward=True
    )
    backwards = client.query(**page_of, ScanIndexForward=False, Limit=2)
    backwards_rest = client.query(
        **page_of, ScanIndexForward=False, ExclusiveStartKey=backwards["LastEvaluatedKey"]
    )
    return [
        (
            "put on a taken key, ALL_OLD",
            error(
                lambda: client.put_item(
                    TableName=table,
                    Item=key,
                    ConditionExpression="attribute_not_exists(pk)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            ),
        ),
        (
            "update on a wrong version",
            error(
                lambda: client.update_item(
                    TableName=table,
                    Key=key,
                    UpdateExpression="SET version = :v",
                    ConditionExpression="version = :old",
                    ExpressionAttributeValues={":v": {"N": "9"}, ":old": {"N": "7"}},
                )
            ),
        ),
        (
            "delete a missing item on condition",
            error(
                lambda: client.delete_item(
                    TableName=table,
                    Key={"pk": {"S": "T#nope"}, "sk": {"S": "T"}},
                    ConditionExpression="attribute_exists(pk)",
                )
            ),
        ),
        ("get from a missing table", error(lambda: client.get_item(TableName="no-such-table", Key=key))[0]),
        (
            "projection",
            client.get_item(
                TableName=table,
                Key=key,
                ProjectionExpression="#s, task_id, version",
                ExpressionAttributeNames={"#s": "status"},
            )["Item"],
        ),
        (
            "query pages",
            [
                first["Items"],
                first["Count"],
                first["LastEvaluatedKey"],
                rest["Items"],
                "LastEvaluatedKey" in rest,
            ],
        ),
        ("query backwards", [backwards["Items"], backwards["LastEvaluatedKey"], backwards_rest["Items"]]),
    ]


def _scan(client: Any, table: str) -> list[dict[str, Any]]:
    pages = client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
    return [item for page in pages for item in page["Items"]]


def _by_key(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda item: (item["pk"]["S"], item["sk"]["S"]))


@pytest.fixture
def counted_tokens(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Restarts the entry tokens' counter (one run per backend)."""

    def restart() -> None:
        monkeypatch.setattr(queue_module, "uuid", _CountingUuid())

    return restart


def _on_moto(
    traveller: time_machine.Traveller, monkeypatch: pytest.MonkeyPatch, restart: Callable[[], None]
) -> Outcome:
    restart()
    make_moto_atomic(monkeypatch)
    with mock_aws(config={"lambda": {"use_docker": False}}):
        settings = NextTickSettings(**SETTINGS)
        create_resources(settings)
        runtime = Runtime.build(settings)
        steps, report = _drive(runtime, traveller)
        client = make_client("dynamodb", settings)
        return Outcome(
            steps,
            report,
            runtime.rule.current(),
            _by_key(_scan(client, settings.table_name)),
            _raw_errors(client, settings.table_name),
        )


def _on_standin(traveller: time_machine.Traveller, restart: Callable[[], None]) -> Outcome:
    restart()
    server = StandIn(latency={}).start()
    try:
        settings = NextTickSettings(endpoint_url=server.url, **SETTINGS)
        runtime = Runtime.build(settings)
        runtime.store.create_table()
        runtime.rule.put(None)
        steps, report = _drive(runtime, traveller)
        client = make_client("dynamodb", settings)
        table = _by_key(server.backend.dump(settings.table_name))
        return Outcome(steps, report, runtime.rule.current(), table, _raw_errors(client, settings.table_name))
    finally:
        server.stop()


def test_the_standin_answers_the_store_and_a_worker_run_as_moto_does(
    aws_credentials: None,
    frozen_now: time_machine.Traveller,
    monkeypatch: pytest.MonkeyPatch,
    counted_tokens: Callable[[], None],
) -> None:
    # Given the same recorded sequence and worker run, When driven against moto and the stand-in
    moto = _on_moto(frozen_now, monkeypatch, counted_tokens)
    standin = _on_standin(frozen_now, counted_tokens)

    # Then every step's result is the same (checked one by one, for a readable failure)
    assert [label for label, _ in standin.steps] == [label for label, _ in moto.steps]
    for (label, expected), (_, got) in zip(moto.steps, standin.steps, strict=True):
        assert got == expected, label
    # and the sequence did what it says (a test that cannot fail is a defect)
    results = dict(moto.steps)
    assert results["create an existing id"] == "raised TaskExistsError"
    assert results["get missing"] is None and results["missing entry"] is None
    assert results["claim a leased entry"][0] is None and results["claim with a stale token"][0] is None
    assert results["extend own lease"] is True and results["extend another's lease"] is False
    assert results["complete"] is True and results["complete on a stale version"] is False
    assert results["delete a gone entry"] is False and results["cas lost"] is None
    assert results["kick"] is True and results["kick again"] is False
    assert results["repair a published version"] is False and results["waiter taken"] is False
    assert results["claim waiter"] is True and results["release waiter"].waiter_owner is None
    assert results["confirm"].published
    assert results["reschedule"] is True and results["replace on a wrong version"] is False
    assert len(results["merged due now, pages of 3"]) == 60
    # and so are the worker's report, the rule it left, the raw error shapes and the final table
    assert moto.report["succeeded"] == 60
    assert standin.report == moto.report
    assert standin.rule == moto.rule
    assert standin.raw == moto.raw
    assert len(standin.table) == len(moto.table)
    for expected_item, item in zip(moto.table, standin.table, strict=True):
        assert item == expected_item, (expected_item["pk"], expected_item["sk"])


def test_each_request_sleeps_its_modelled_latency_and_invokes_are_recorded(aws_credentials: None) -> None:
    # Given a stand-in whose model makes GetItem cost 80 ms and everything else nothing
    server = StandIn(latency={"GetItem": 80.0}).start()
    try:
        settings = NextTickSettings(endpoint_url=server.url, **SETTINGS)
        runtime = Runtime.build(settings)
        runtime.store.create_table()
        # When the store reads a task (one GetItem)
        began = time.perf_counter()
        runtime.store.get_task("nope")
        modelled = time.perf_counter() - began
        # and the worker's trigger invokes the worker asynchronously
        runtime.trigger.wake("continue")
    finally:
        server.stop()
    # Then the read took at least its modelled 80 ms
    assert modelled >= 0.08
    # And the invoke was answered (202) and recorded with its event
    [(function, payload)] = server.backend.invocations
    assert function == settings.worker_function
    assert json.loads(payload)["reason"] == "continue"
    assert server.backend.requests["Invoke"] == 1


def test_a_wait_hand_over_is_sent_to_the_standin_and_kept(aws_credentials: None) -> None:
    # Given a stand-in as the fan-out bench starts its workers: the hand-over queue on it too
    server = StandIn(latency={}).start()
    try:
        queue_url = f"{server.url}/{ACCOUNT}/{HANDOVER_QUEUE}"
        settings = NextTickSettings(endpoint_url=server.url, handover_queue_url=queue_url, **SETTINGS)
        runtime = Runtime.build(settings)
        assert runtime.handover is not None
        wake_at = datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC)
        # When a waiting worker hands its wait over (botocore checks the answer's MD5 of the body)
        runtime.handover.send(42, wake_at)
        # and something asks the stand-in's SQS for more than it answers
        sqs = make_client("sqs", settings)
        with pytest.raises(ClientError) as refused:
            sqs.receive_message(QueueUrl=queue_url)
    finally:
        server.stop()
    # Then the send was answered and kept as sent, and counted
    [message] = server.backend.messages
    assert message["QueueUrl"] == queue_url and message["DelaySeconds"] == 42
    assert json.loads(message["MessageBody"])["at"] == wake_at.isoformat()
    assert server.backend.requests["SendMessage"] == 1
    # And the rest of SQS is refused, by name
    assert "ReceiveMessage" in str(refused.value)
