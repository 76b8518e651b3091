"""An emulated EventBridge for the single scheduled rule.

It reads the rule through the events API (DescribeRule on the moto server), and fires the way AWS
does: at every minute its cron names (`rule_firings`: in `second` precision the armed minute and its
backstop, plus whatever other combinations of the listed fields are real dates), each at a random
second inside the minute, then after a delivery delay (0-5 s by default) it invokes the target
asynchronously. It never fires for a minute whose firing instant had already passed when the rule
came to name it (a year-pinned cron in the past never fires) or that a re-put no longer names, and
fires at most once per minute. Such a past minute is reported missed only if it is the armed minute
or a later one: the combinations before it are past by design. Between firings it sleeps until the
next one or until the rule changes (`notify`, called by the moto server's rule-change middleware) —
no spinning loop.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID

from nexttick.aws import parse_rule_minute, rule_firings
from nexttick.clock import SYSTEM_CLOCK, Clock
from nexttick.timeutil import floor_minute

logger = logging.getLogger("local-stack")

Deliver = Callable[[dict[str, Any], float], None]  # (event, delay seconds)
# A safety re-read of the rule while idle; changes normally arrive through `notify` at once.
RESYNC_SECONDS = 60.0
_FORGET_AFTER = timedelta(hours=1)


@dataclass(frozen=True)
class FiringPolicy:
    """Where inside its minute the rule fires and how long delivery to the target takes."""

    jitter: bool = True  # False: exactly at second 0, no delivery delay (deterministic)
    max_delivery_delay: float = 5.0

    def draw(self, rng: random.Random) -> tuple[float, float]:
        """(seconds into the minute, delivery delay in seconds)."""
        if not self.jitter:
            return 0.0, 0.0
        return rng.uniform(0.0, 60.0), rng.uniform(0.0, self.max_delivery_delay)


@dataclass
class _Plan:
    trigger_at: datetime  # the instant inside the minute EventBridge evaluates the rule
    delay: float  # then the target receives the event this much later
    seen_at: datetime  # when we first saw the rule name this minute


class EventBridgeEmulator:
    """Fires one scheduled rule (a year-pinned cron naming a minute or two, or the epoch) like EventBridge."""

    def __init__(
        self,
        events_client: Any,
        rule_name: str,
        deliver: Deliver,
        *,
        policy: FiringPolicy = FiringPolicy(),
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
        resync_seconds: float = RESYNC_SECONDS,
    ) -> None:
        self.client = events_client
        self.rule_name = rule_name
        self.deliver = deliver
        self.policy = policy
        self.clock = clock
        self.rng = rng or random.Random()
        self.resync_seconds = resync_seconds
        self.fired: list[datetime] = []  # firing minutes delivered, in order
        self.missed: list[datetime] = []  # firing minutes that were already past when set
        self._plans: dict[datetime, _Plan] = {}
        self._done: set[datetime] = set()
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eventbridge-emulator", daemon=True)
        self._arn: str | None = None

    # ------------------------------------------------------------------ control
    def notify(self) -> None:
        """The rule may have changed: re-read it now."""
        self._changed.set()

    def start(self) -> EventBridgeEmulator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._changed.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._changed.clear()
            try:
                wait = self.step()
            except Exception:
                logger.exception("eventbridge emulator: reading the rule failed; retrying")
                wait = 1.0
            self._changed.wait(wait)

    # ------------------------------------------------------------------ one decision
    def step(self) -> float:
        """Read the rule, fire each of its minutes whose instant has come; return how long to sleep
        at most."""
        now = self.clock.now()
        described = self.client.describe_rule(Name=self.rule_name)
        self._arn = described.get("Arn")
        enabled = described.get("State") == "ENABLED"
        expression = described.get("ScheduleExpression", "") if enabled else ""
        armed = parse_rule_minute(expression)
        horizon = self._forget(now)
        # A minute older than what is remembered is long past: it never fires, and is not seen anew.
        firings = [minute for minute in rule_firings(expression) if minute >= horizon]
        # A minute the rule no longer names is dropped: if named again, it is seen anew.
        self._plans = {m: p for m, p in self._plans.items() if m in firings}
        waits = [
            self._consider(minute, now, armed=isinstance(armed, datetime) and minute >= armed)
            for minute in firings
            if minute not in self._done
        ]
        return min([self.resync_seconds, *(w for w in waits if w is not None)])

    def _consider(self, minute: datetime, now: datetime, *, armed: bool) -> float | None:
        """Fire `minute` if its instant has come: None once it is done (fired or missed), else the
        seconds until its instant. `armed`: the armed minute or a later one, not a combination of
        the cron's lists that lies before it."""
        plan = self._plans.get(minute)
        if plan is None:
            offset, delay = self.policy.draw(self.rng)
            plan = self._plans[minute] = _Plan(minute + timedelta(seconds=offset), delay, now)
        if plan.trigger_at < plan.seen_at:
            # Named after its firing instant (or restored after the minute): EventBridge never fires
            # it; a later minute of the same rule still fires. A combination before the armed minute
            # (12:01 of the rule for 12:58 and its backstop 13:01) is past by design: not a miss.
            self._done.add(minute)
            if armed:
                self.missed.append(minute)
                logger.info(
                    "eventbridge emulator: rule for %s set too late; it does not fire", minute.isoformat()
                )
            return None
        if now < plan.trigger_at:
            return (plan.trigger_at - now).total_seconds()
        self._done.add(minute)
        self.fired.append(minute)
        logger.info(
            "eventbridge emulator: rule fired for %s (delivery in %.1fs)", minute.isoformat(), plan.delay
        )
        self.deliver(self._event(minute), plan.delay)
        return None

    def _event(self, minute: datetime) -> dict[str, Any]:
        """What the rule sends to its target: the target's constant `Input` if it has one, else the
        scheduled event."""
        targets = self.client.list_targets_by_rule(Rule=self.rule_name).get("Targets", [])
        if targets and targets[0].get("Input"):
            constant: dict[str, Any] = json.loads(targets[0]["Input"])
            return constant
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": DEFAULT_ACCOUNT_ID,
            "time": minute.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": self.client.meta.region_name,
            "resources": [self._arn] if self._arn else [],
            "detail": {},
        }

    def _forget(self, now: datetime) -> datetime:
        """Drop what is older than an hour; return that horizon."""
        horizon = floor_minute(now) - _FORGET_AFTER
        self._plans = {m: p for m, p in self._plans.items() if m >= horizon}
        self._done = {m for m in self._done if m >= horizon}
        del self.fired[:-100], self.missed[:-100]
        return horizon
