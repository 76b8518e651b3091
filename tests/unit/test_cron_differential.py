"""nexttick's cron occurrences against an independent implementation of cronie's semantics.

The oracle is cronsim (healthchecks.io's evaluator, written to match Debian's cron, which shares
cronie's rules). It is given each expression with one rewrite: cronsim reads a one-value range with
a step (`5-5/10`) as `5/10` (5, 15, ...), where cronie's parser loops `for (i = 5; i <= 5; i += 10)`
and sets 5 alone; the rewrite gives it the plain `5`.

Random expressions (seeded, so a failure repeats) cover ranges, equal-end ranges, steps on stars,
ranges and single values, lists, month and weekday names in any case, weekday 7, star-prefixed day
fields, `L`, `dL` and `d#k`. Two layers are compared:

* wall times: `nexttick.cron` against cronsim, 20 matches from a start anywhere in two years;
* instants in seven zones with DST (half the starts just before a transition): the `upcoming`
  preview and the worker's completion (`plan_completion`, which moves a recurring task to its next
  due time) against cronsim's wall times placed in the zone by the `skip` policy and the task's
  `dst_repeated` policy (first, last or both passes of a repeated wall time).

Left out here and tested elsewhere: the `shift` policy (tests/unit/test_dst_policy.py, against a
minute-by-minute oracle) and `nW`, which cronsim does not implement (tests/unit/test_cron.py).
"""

from __future__ import annotations

import functools
import itertools
import random
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim, CronSimError

from nexttick.constants import MAX_YEAR
from nexttick.cron import CronError, parse_cron
from nexttick.schedules import DstRepeated, Recurrence, ScheduleKind
from nexttick.store.records import TaskRecord, TaskStatus
from nexttick.worker import Attempt, RunOutcome, plan_completion

ZONES = (
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Pacific/Chatham",
    "Asia/Kolkata",
    "UTC",
)
CHUNKS = 8
PER_CHUNK = 1_250  # 10,000 expressions in all
WALLS = 12
RUNS = 3
WORKER_RUNS = 3
FROM = datetime(2026, 1, 1)
# Wall order and instant order differ only near an offset change, by at most its size: an hour at
# most in these zones (Lord Howe's is 30 minutes).
REACH = timedelta(hours=2)
SPAN = timedelta(days=2 * 365)
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_STEPPED_RANGE = re.compile(r"(?P<first>\w+)-(?P<last>\w+)/\d+")


def _value(rng: random.Random, low: int, high: int, names: list[str], base: int) -> str:
    value = rng.randint(low, high)
    if names and low <= base and value - base < len(names) and rng.random() < 0.3:
        name = names[value - base]
        return name.upper() if rng.random() < 0.5 else name
    return str(value)


def _item(rng: random.Random, low: int, high: int, names: list[str], base: int, kind: str) -> str:
    roll = rng.random()
    if roll < 0.3:
        first = rng.randint(low, high)
        last = rng.randint(first, high) if rng.random() < 0.6 else first  # equal ends, often
        ends = [_value(rng, v, v, names, base) for v in (first, last)]
        text = "-".join(ends)
        return text + (f"/{rng.randint(1, 12)}" if rng.random() < 0.35 else "")
    if roll < 0.5:
        return _value(rng, low, high, names, base)
    if roll < 0.6:
        return f"{rng.randint(low, high)}/{rng.randint(1, 15)}"
    if kind == "dom" and roll < 0.68:
        return "L"
    if kind == "dow" and roll < 0.66:
        return f"{rng.randint(0, 7)}L"
    if kind == "dow" and roll < 0.74:
        return f"{rng.randint(0, 7)}#{rng.randint(1, 5)}"
    return _value(rng, low, high, names, base)


def _field(
    rng: random.Random, low: int, high: int, star: float, names: list[str] | None = None, kind: str = ""
) -> str:
    roll = rng.random()
    if roll < star:
        return "*"
    if roll < star + 0.15:
        return f"*/{rng.randint(1, 20)}"
    count = 1 if rng.random() < 0.65 else rng.randint(2, 3)
    base = 1 if names is _MONTHS else 0
    return ",".join(_item(rng, low, high, names or [], base, kind) for _ in range(count))


def expression(rng: random.Random) -> str:
    return " ".join(
        (
            _field(rng, 0, 59, 0.2),
            _field(rng, 0, 23, 0.3),
            _field(rng, 1, 31, 0.4, kind="dom"),
            _field(rng, 1, 12, 0.5, _MONTHS),
            _field(rng, 0, 7, 0.4, _DAYS, kind="dow"),
        )
    )


def _number(token: str, names: list[str], base: int) -> int:
    return names.index(token.lower()) + base if token.lower() in names else int(token)


def for_cronsim(text: str) -> str:
    """`text` with each one-value stepped range (`5-5/10`, `jan-1/7`) as its one value."""
    fields = text.split(" ")
    for index, names, base in ((3, _MONTHS, 1), (4, _DAYS, 0), (0, [], 0), (1, [], 0), (2, [], 0)):
        items = fields[index].split(",")
        for position, item in enumerate(items):
            match = _STEPPED_RANGE.fullmatch(item)
            if match and _number(match["first"], names, base) == _number(match["last"], names, base):
                items[position] = match["first"]
        fields[index] = ",".join(items)
    return " ".join(fields)


def cronie_walls(text: str, start: datetime) -> Iterator[datetime]:
    """The oracle's matching wall times strictly after `start`; none for a date that never exists
    (cronsim refuses those at parse time)."""
    try:
        walls = CronSim(for_cronsim(text), start)
    except CronSimError as error:
        assert str(error) == "Bad day-of-month", (text, error)
        return
    for wall in walls:
        if wall.year > MAX_YEAR:
            return
        yield wall


@functools.cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """The UTC instants in 2026-2027 at which the zone's offset changes (to the hour)."""
    zone, found = ZoneInfo(zone_name), []
    at = datetime(2026, 1, 1, tzinfo=UTC)
    while at.year < 2028:
        if at.astimezone(zone).utcoffset() != (at + timedelta(hours=1)).astimezone(zone).utcoffset():
            found.append(at + timedelta(hours=1))
        at += timedelta(hours=1)
    return tuple(found)


def cronie_instants(text: str, zone: ZoneInfo, after: datetime, count: int, repeated: DstRepeated) -> list:
    """The oracle's first `count` instants after `after`: each matching wall time at each pass of it
    the zone has (none in a gap), the passes of a repeated one chosen by `repeated`."""
    found: list[datetime] = []
    start = (after - REACH).astimezone(zone).replace(tzinfo=None)
    for wall in cronie_walls(text, start):
        passes = []
        for fold in (0, 1):
            at = wall.replace(tzinfo=zone, fold=fold).astimezone(UTC)
            if at.astimezone(zone).replace(tzinfo=None) == wall and at not in passes:
                passes.append(at)
        if len(passes) == 2:
            passes = {DstRepeated.FIRST: passes[:1], DstRepeated.LAST: passes[1:]}.get(repeated, passes)
        found.extend(at for at in passes if at > after)
        if len(found) >= count:
            found.sort()
            if wall > found[count - 1].astimezone(zone).replace(tzinfo=None) + REACH:
                break
    return sorted(found)[:count]


def _cases(chunk: int) -> Iterator[tuple[str, datetime, random.Random]]:
    rng = random.Random(f"cron-differential-{chunk}")
    for _ in range(PER_CHUNK):
        yield expression(rng), FROM + timedelta(minutes=rng.randrange(int(SPAN.total_seconds() // 60))), rng


def _ours_or_refusal(text: str, start: datetime) -> list[datetime] | str:
    try:
        return list(itertools.islice(parse_cron(text).walls_after(start), WALLS))
    except CronError as error:
        return f"refused: {error}"


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_wall_times_equal_cronies_for_random_expressions(chunk: int) -> None:
    differences = []
    for text, start, _ in _cases(chunk):
        ours = _ours_or_refusal(text, start)
        theirs = list(itertools.islice(cronie_walls(text, start), WALLS))
        if isinstance(ours, list):
            ours = [wall for wall in ours if wall.year <= MAX_YEAR]
        if ours != theirs:
            differences.append((text, start.isoformat(), ours, theirs))
    assert differences == [], f"{len(differences)} of {PER_CHUNK} differ; first: {differences[:3]}"


def _record(text: str, zone: str, repeated: DstRepeated, due: datetime) -> TaskRecord:
    return TaskRecord(
        id="diff",
        action="log",
        payload={},
        status=TaskStatus.PENDING,
        schedule_kind=ScheduleKind.CRON,
        cron=text,
        timezone=zone,
        dst_repeated=repeated,
        due=due,
        created_at=FROM.replace(tzinfo=UTC),
        updated_at=FROM.replace(tzinfo=UTC),
        version=1,
        queue_key="k",
        queue_token="tok",
    )


def worker_runs(text: str, zone: str, repeated: DstRepeated, first: datetime, count: int) -> list[datetime]:
    """The due times the worker moves a task to, run after run, each run on time and successful."""
    dues = [first]
    while len(dues) < count:
        task = _record(text, zone, repeated, dues[-1])
        ran = Attempt(dues[-1], 1, dues[-1], dues[-1], RunOutcome.SUCCEEDED, None)
        plan = plan_completion(task, ran, dues[-1], retention=timedelta(days=1), rng=random.Random(0))
        if plan.record.due is None or plan.next_run is None:
            break
        dues.append(plan.record.due)
    return dues


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_preview_and_worker_runs_equal_cronies_in_zones_with_dst(chunk: int) -> None:
    differences = []
    for text, start, rng in _cases(chunk):
        zone_name = rng.choice(ZONES)
        repeated = rng.choice(list(DstRepeated))
        changes = transitions(zone_name)
        after = start.replace(tzinfo=UTC)
        if changes and rng.random() < 0.5:  # just before a DST change
            after = rng.choice(changes) - timedelta(minutes=rng.randrange(36 * 60))
        try:
            parse_cron(text)
        except CronError:
            continue  # refusals are the wall-time test's business
        expected = cronie_instants(text, ZoneInfo(zone_name), after, RUNS, repeated)
        recurrence = Recurrence(ScheduleKind.CRON, cron=text, timezone=zone_name, dst_repeated=repeated)
        preview = [run.at for run in recurrence.upcoming(after, RUNS)]
        worker = worker_runs(text, zone_name, repeated, preview[0], WORKER_RUNS) if preview else []
        if preview != expected or worker != expected[:WORKER_RUNS]:
            differences.append(
                (text, zone_name, repeated.value, after.isoformat(), preview, worker, expected)
            )
    assert differences == [], f"{len(differences)} differ; first: {differences[:2]}"
