"""Cron expressions with crontab(5) meaning (cronie's), evaluated with croniter.

Five fields, `minute hour day-of-month month day-of-week`, each a comma list of `*`, a number or a
name (`jan`..`dec`, `sun`..`sat`, any case), a range `a-b` (a <= b), each optionally `/step`.
Day-of-week 0 and 7 are Sunday. As in cronie, when both day fields are restricted (neither starts
with `*`) a day matches if *either* matches; otherwise both must (`*/2` starts with `*`, so
`0 12 */2 * 1-5` means odd days of the month that are weekdays).

Documented extensions, each with one meaning:

* `a/step` is `a-<field max>/step` (`5/10` in the minutes: 5, 15, ..., 55);
* `?` in a day field is `*`;
* day-of-month `L`: the last day of the month; `nW`: the weekday (Mon-Fri) nearest day n, within
  the month (`1W` on a Saturday is Monday the 3rd; `31W` on a Sunday is Friday the 29th), in a month
  shorter than n days the weekday nearest its last day (`30W` in February 2026 is Friday the 27th);
* day-of-week `dL` (or `Ld`): the last weekday d of the month (`5L`: last Friday); `d#k`: the k-th
  weekday d of the month, k 1-5 (`1#1`: first Monday; a month without a fifth one has no match);
* macros `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`, `@hourly`: crontab(5)'s.

Everything else is refused naming `cron` and why (`@reboot`, wrap-around ranges `23-1`, `LW`,
`L-n`, `H`, random `~`, a sixth field), never run with another meaning.

croniter 7.0.0 (and 6.0.0) is right on plain fields but gets some readings wrong, so it never
sees the user's text: each field reaches it as an explicit list of values, and the day rule is
applied here. The defects this works around (reproductions in docs/cron.md):

1. A range whose ends are equal is read as `*` or as a step: `0 9-9 * * *` fires hourly,
   `0 0 * 5-5 *` fires in January, `5-5/10 * * * *` starts at :10.
2. Day fields are "restricted" unless they are exactly `*`: `*/2` counts as restricted, so
   `0 12 */2 * 1-5` fires on every weekday and on every odd day.
3. With both day fields restricted, `L` / `Ld` / `d#k` items are not OR-ed with the other field
   (`0 0 L * 5L` misses the last day of January 2026), and day-of-week lists cannot mix `d#k` or
   `Ld` with plain days. So the day rule is built here from expressions that each restrict one
   day field, or AND a star-prefixed one: their occurrences are merged.
"""

from __future__ import annotations

import contextlib
import copy
import heapq
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from croniter import CroniterBadDateError, CroniterError, croniter

from nexttick.errors import ValidationError

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_STEP = r"(?:/(?P<step>\d+))?"
_RANGE_ITEM = re.compile(r"(?P<start>\*|\?|[a-z0-9]+)(?:-(?P<end>[a-z0-9]+))?" + _STEP)
_LAST_DAY_OF_WEEK = re.compile(r"(?P<day>[a-z0-9]+)l|l(?P<day2>[a-z0-9]+)")
_NTH_DAY_OF_WEEK = re.compile(r"(?P<day>[a-z0-9]+)#(?P<nth>\d+)")
_NEAREST_WEEKDAY = re.compile(r"(?P<day>\d+)w")
_TEMPLATE_START = datetime(2000, 1, 1)


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    name_base: int = 0  # the value of names[0]


_MINUTE = _FieldSpec("minute", 0, 59)
_HOUR = _FieldSpec("hour", 0, 23)
_DAY_OF_MONTH = _FieldSpec("day-of-month", 1, 31)
_MONTH = _FieldSpec("month", 1, 12, _MONTHS, 1)
_DAY_OF_WEEK = _FieldSpec("day-of-week", 0, 7, _DAYS, 0)


class CronError(ValidationError):
    """An expression nexttick cannot run with its crontab(5) meaning (HTTP 422 naming the field)."""


@dataclass(frozen=True)
class _Field:
    """One parsed field: plain values, the extension items croniter must see one at a time, and
    whether it starts with `*` (which decides the day rule)."""

    values: frozenset[int]
    specials: tuple[str, ...] = ()
    star: bool = False

    def croniter_parts(self, full: range) -> list[str]:
        """What croniter is given for this field: `*` when it allows everything, else one explicit
        list for the plain values and each special on its own (their union is the field)."""
        if self.star and self.values >= set(full):
            return ["*"]
        parts = [",".join(str(v) for v in sorted(self.values))] if self.values else []
        return parts + list(self.specials)


class CronExpression:
    """A parsed expression: the user's text and the croniter expressions whose union it means.

    croniter spends most of its time expanding an expression, so each piece is expanded once and a
    walk starts from a copy of it (with its own field lists: croniter may edit them in place)."""

    def __init__(self, text: str, pieces: tuple[str, ...]) -> None:
        self.text = text
        self.pieces = pieces
        self._templates = [croniter(piece, _TEMPLATE_START, day_or=False) for piece in pieces]

    def walls_after(self, start: datetime) -> Iterator[datetime]:
        """Matching naive wall times strictly after `start` (naive), in order, each once; ends when
        no piece matches again (an expression that never matches, such as `0 0 30 2 *`, yields
        nothing)."""
        iterators = []
        for template in self._templates:
            iterator = copy.copy(template)
            iterator.expanded = [list(values) for values in template.expanded]
            iterator.set_current(start, force=True)
            iterators.append(iterator)
        heap: list[tuple[datetime, int]] = []

        def push(index: int) -> None:
            with contextlib.suppress(CroniterBadDateError):  # this piece never matches again
                heapq.heappush(heap, (iterators[index].get_next(datetime), index))

        for index in range(len(iterators)):
            push(index)
        last: datetime | None = None
        while heap:
            wall, index = heapq.heappop(heap)
            push(index)
            if wall != last:
                last = wall
                yield wall


def _refuse(field: str, item: str, why: str, name: str) -> CronError:
    return CronError(f"{name}: {field} {item!r}: {why}", field=name)


def _number(spec: _FieldSpec, token: str, item: str, name: str) -> int:
    if token.isdigit():
        value = int(token)
    elif token in spec.names:
        value = spec.names.index(token) + spec.name_base
    else:
        allowed = f" or a name ({spec.names[0]}..{spec.names[-1]})" if spec.names else ""
        raise _refuse(spec.name, item, f"expected a number from {spec.low} to {spec.high}{allowed}", name)
    if not spec.low <= value <= spec.high:
        raise _refuse(spec.name, item, f"{value} is outside {spec.low}-{spec.high}", name)
    return value


def _range_values(spec: _FieldSpec, item: str, name: str) -> set[int]:
    match = _RANGE_ITEM.fullmatch(item)
    if match is None:
        raise _refuse(spec.name, item, "not a number, name, range or step", name)
    start, end, step_text = match["start"], match["end"], match["step"]
    star = start in ("*", "?")
    if start == "?" and spec not in (_DAY_OF_MONTH, _DAY_OF_WEEK):
        raise _refuse(spec.name, item, "`?` is only allowed in the day fields", name)
    if star and end is not None:
        raise _refuse(spec.name, item, "`*` cannot start a range", name)
    step = int(step_text) if step_text is not None else 1
    if step < 1:
        raise _refuse(spec.name, item, "a step must be at least 1", name)
    if star:
        low, high = spec.low, spec.high
    else:
        low = _number(spec, start, item, name)
        high = _number(spec, end, item, name) if end is not None else (spec.high if step_text else low)
        if high < low:
            raise _refuse(
                spec.name,
                item,
                f"the range runs backwards (crontab ranges go low-high: {low} > {high})",
                name,
            )
    return set(range(low, high + 1, step))


def _parse_field(spec: _FieldSpec, text: str, name: str) -> _Field:
    values: set[int] = set()
    specials: list[str] = []
    star = text.startswith(("*", "?"))
    for item in text.split(","):
        special = _special(spec, item, name)
        if special is not None:
            specials.append(special)
        else:
            values |= _range_values(spec, item, name)
    if spec is _DAY_OF_WEEK and 7 in values:  # 7 is Sunday, as 0
        values = (values - {7}) | {0}
    return _Field(frozenset(values), tuple(dict.fromkeys(specials)), star)


def _special(spec: _FieldSpec, item: str, name: str) -> str | None:
    """A day field's extension item as croniter spells it, None for a plain item; refuses the
    extensions nexttick does not run."""
    if spec is _DAY_OF_MONTH:
        if item == "l":
            return "L"
        if item == "lw":
            raise _refuse(spec.name, item, "LW (last weekday of the month) is not supported", name)
        if item.startswith("l-"):
            raise _refuse(spec.name, item, "L-n (days before the last) is not supported", name)
        match = _NEAREST_WEEKDAY.fullmatch(item)
        return None if match is None else f"{_number(spec, match['day'], item, name)}W"
    if spec is not _DAY_OF_WEEK:
        return None
    if item == "l":
        raise _refuse(
            spec.name, item, "L alone is not a day of the week (dL: the last weekday d of the month)", name
        )
    match = _LAST_DAY_OF_WEEK.fullmatch(item)
    if match is not None:
        return f"L{_number(spec, match['day'] or match['day2'], item, name) % 7}"
    match = _NTH_DAY_OF_WEEK.fullmatch(item)
    if match is None:
        return None
    day, nth = _number(spec, match["day"], item, name) % 7, int(match["nth"])
    if not 1 <= nth <= 5:
        raise _refuse(spec.name, item, "the week number after # must be 1 to 5", name)
    return f"{day}#{nth}"


def _pieces(minute: _Field, hour: _Field, dom: _Field, month: _Field, dow: _Field) -> tuple[str, ...]:
    """croniter expressions (each read with day_or=False) whose union is the expression."""
    head = " ".join(
        field.croniter_parts(full)[0] for field, full in ((minute, range(0, 60)), (hour, range(0, 24)))
    )
    months = month.croniter_parts(range(1, 13))[0]
    dom_parts = dom.croniter_parts(range(1, 32))
    dow_parts = dow.croniter_parts(range(0, 7))
    if dom.star or dow.star:  # both must match
        day_pairs = [(d, w) for d in dom_parts for w in dow_parts]
    else:  # both restricted: either matches
        day_pairs = [(d, "*") for d in dom_parts] + [("*", w) for w in dow_parts]
    return tuple(f"{head} {d} {months} {w}" for d, w in dict.fromkeys(day_pairs))


def parse_cron(expression: object, name: str = "cron") -> CronExpression:
    """The expression's meaning, or CronError naming `name` and saying what is wrong."""
    text = " ".join(expression.split()) if isinstance(expression, str) else ""
    if not text:
        raise CronError(
            f"{name}: a cron expression is required (5 fields: minute hour day month weekday)", field=name
        )
    return _parse(text, name)


@lru_cache(maxsize=1024)
def _parse(text: str, name: str) -> CronExpression:
    lowered = text.lower()
    if lowered.startswith("@"):
        if lowered not in MACROS:
            known = ", ".join(MACROS)
            raise CronError(f"{name}: {text!r} is not a schedule macro nexttick runs ({known})", field=name)
        lowered = MACROS[lowered]
    fields = lowered.split(" ")
    if len(fields) != 5:
        raise CronError(
            f"{name}: {text!r} has {len(fields)} fields; cron takes 5 (minute hour day month weekday)",
            field=name,
        )
    specs = (_MINUTE, _HOUR, _DAY_OF_MONTH, _MONTH, _DAY_OF_WEEK)
    parsed = [_parse_field(spec, field, name) for spec, field in zip(specs, fields, strict=True)]
    return CronExpression(text, _pieces(*parsed))


def legacy_walls(expression: str, start: datetime) -> Iterator[datetime]:
    """The wall times nexttick ran an expression at before it applied crontab(5)'s meaning: croniter
    reading the text as is (its default day rule included); none where croniter refuses it too."""
    try:
        iterator = croniter(expression, start)
    except CroniterError:
        return
    while True:
        try:
            yield iterator.get_next(datetime)
        except CroniterBadDateError:
            return


@dataclass(frozen=True)
class MeaningChange:
    """How a stored expression's runs differ between the older reading and crontab(5)'s, from the
    first wall time where they part: the next few under each (none when it is now refused)."""

    was: tuple[datetime, ...]
    now: tuple[datetime, ...]
    refused: str | None = None


_SAMPLE_MONTHS = 13
_SAMPLE_WALLS = 40
_SHOWN = 3


@lru_cache(maxsize=256)
def meaning_change(expression: str, start: datetime) -> MeaningChange | None:
    """None when the expression runs at the same wall times as before from `start` (naive) on: 40
    matches from `start` and from the first of each of the next 12 months agree (a difference in
    hours, days or months shows within them); otherwise where they part."""
    try:
        parsed = parse_cron(expression)
    except CronError as error:
        return MeaningChange(
            tuple(itertools.islice(legacy_walls(expression, start), _SHOWN)), (), error.message
        )
    starts = [start] + [
        datetime(start.year + (start.month + k - 1) // 12, (start.month + k - 1) % 12 + 1, 1)
        for k in range(1, _SAMPLE_MONTHS)
    ]
    for sample in starts:
        was = list(itertools.islice(legacy_walls(expression, sample), _SAMPLE_WALLS))
        now = list(itertools.islice(parsed.walls_after(sample), _SAMPLE_WALLS))
        if was != now:
            part = next(
                (i for i, (a, b) in enumerate(zip(was, now, strict=False)) if a != b), min(len(was), len(now))
            )
            return MeaningChange(tuple(was[part : part + _SHOWN]), tuple(now[part : part + _SHOWN]))
    return None
