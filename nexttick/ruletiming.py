"""EventBridge time: which rule minute a due time is armed for in each precision, what is too
close to arm, and the rule's schedule expression (docs/architecture.md, "Time and precision")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from nexttick.config import Precision
from nexttick.constants import EPOCH_EXPRESSION
from nexttick.timeutil import ceil_minute, floor_minute


@dataclass(frozen=True)
class Timing:
    """Maps due times to rule firing minutes and decides what is too close to arm
    (docs/architecture.md, "Time and precision")."""

    precision: Precision = Precision.SECOND
    delivery_margin_seconds: int = 10
    settle_seconds: int = 10
    # The stated bound on how far any host's clock may be from AWS's (and so from any other host's
    # by twice that). Armability relies on it (settle_seconds covers it plus PutRule propagation);
    # so does a worker taking over from a waiter whose wake time has come.
    clock_skew_seconds: int = 5

    @property
    def lead(self) -> timedelta:
        """How far ahead of the due time the rule's minute must start."""
        if self.precision is Precision.SECOND:
            return timedelta(seconds=60 + self.delivery_margin_seconds)
        return timedelta(0)

    def fire_minute(self, due: datetime) -> datetime:
        """The rule minute for a task due at `due`: in `second` mode the whole minute plus the delivery
        margin lies before `due`; in `minute` mode it is the minute that contains `due`."""
        return floor_minute(due - self.lead)

    def armable(self, minute: datetime, now: datetime) -> bool:
        """True when a PutRule now for `minute` is sure to fire: a future minute, far enough away."""
        return minute > floor_minute(now) and (minute - now).total_seconds() >= self.settle_seconds

    @property
    def clock_skew(self) -> timedelta:
        return timedelta(seconds=self.clock_skew_seconds)

    def backstop_of(self, minute: datetime) -> datetime | None:
        """In `second` mode, the rule armed for `minute` fires again at this later minute: the first
        that starts at or after every due time armed for `minute` (before `minute` + lead + 60 s).
        A worker that wakes at `minute` and waits for its head, in-process or through a hand-over,
        needs no write to keep a backstop: if the wait dies, this firing starts a worker after it.
        None in `minute` mode (no waits: the armed minute is the tasks' own)."""
        if self.precision is not Precision.SECOND:
            return None
        return ceil_minute(minute + self.lead + timedelta(minutes=1))

    def firings(self, minute: datetime) -> tuple[datetime, ...]:
        """The minutes at which the rule armed for `minute` fires: the minute and its backstop."""
        backstop = self.backstop_of(minute)
        return (minute,) if backstop is None else (minute, backstop)

    def next_firing(self, armed: datetime | None, now: datetime) -> datetime | None:
        """The first firing of the rule armed for `armed` that is still armable at `now` (a PutRule
        of it confirmed earlier makes it fire), None when none is."""
        if armed is None:
            return None
        return next((f for f in self.firings(armed) if self.armable(f, now)), None)

    def backstop_minute(self, wake: datetime, now: datetime) -> datetime:
        """The earliest minute that starts at or after `wake` and is armable at `now`. Armed while a
        worker sleeps until `wake`, it fires only after that wake, so if the sleeper died a worker
        still starts within about a minute of it."""
        one = timedelta(minutes=1)
        minute = max(ceil_minute(wake), floor_minute(now) + one)
        while not self.armable(minute, now):  # at most once more: settle_seconds < 60
            minute += one
        return minute

    def latest_backstop(self, wake: datetime, now: datetime) -> datetime:
        """The latest firing that still backs up a wait until `wake` without a write: the backstop of
        `wake`'s own fire minute (`backstop_of`), so that the rule armed for a head, once its minute
        has fired, covers the wait for it as it stands (a dead sleeper's tasks then start up to
        about a minute later than at `backstop_minute`); never earlier than `backstop_minute`."""
        earliest = self.backstop_minute(wake, now)
        own = self.backstop_of(self.fire_minute(wake))
        return earliest if own is None else max(earliest, own)

    def rule_expression(self, minute: datetime | None) -> str:
        """The rule's cron for the armed `minute`, naming its backstop too (`firings`)."""
        return rule_expression(minute, self.backstop_of(minute) if minute is not None else None)


def rule_expression(minute: datetime | None, backstop: datetime | None = None) -> str:
    """EventBridge cron for one UTC minute, or for it and a later `backstop` minute (six fields with
    a year; a field where the two differ lists both values, in ascending order as AWS's examples
    do: EventBridge fires at every combination of the fields, so a backstop in another hour, day,
    month or year adds firings that are past or later still — a spurious wake of whatever then
    reads the record). The epoch when nothing is due."""
    if minute is None:
        return EPOCH_EXPRESSION
    m = minute.astimezone(UTC)
    b = (backstop or minute).astimezone(UTC)
    fields = [
        str(x) if x == y else f"{min(x, y)},{max(x, y)}"
        for x, y in (
            (m.minute, b.minute),
            (m.hour, b.hour),
            (m.day, b.day),
            (m.month, b.month),
            (m.year, b.year),
        )
    ]
    return f"cron({' '.join(fields[:4])} ? {fields[4]})"
