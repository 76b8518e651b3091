"""EventBridge time: which rule minute a due time is armed for in each precision, what is too
close to arm, and the rule's schedule expression (docs/architecture.md, "Time and precision")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from nexttick.config import Precision
from nexttick.constants import EPOCH_EXPRESSION
from nexttick.timeutil import floor_minute


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

    def backstop_minute(self, wake: datetime, now: datetime) -> datetime:
        """The earliest minute that starts at or after `wake` and is armable at `now`. Armed while a
        worker sleeps until `wake`, it fires only after that wake, so if the sleeper died a worker
        still starts within about a minute of it."""
        one = timedelta(minutes=1)
        start = floor_minute(wake)
        if start < wake:
            start += one
        minute = max(start, floor_minute(now) + one)
        while not self.armable(minute, now):  # at most once more: settle_seconds < 60
            minute += one
        return minute


def rule_expression(minute: datetime | None) -> str:
    """EventBridge cron for one UTC minute (six fields with a year); the epoch when nothing is due."""
    if minute is None:
        return EPOCH_EXPRESSION
    m = minute.astimezone(UTC)
    return f"cron({m.minute} {m.hour} {m.day} {m.month} ? {m.year})"
