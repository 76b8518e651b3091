"""The wait hand-over: a long wait for a head goes to a delayed message instead of a sleeping
invocation (docs/architecture.md, "The wait hand-over")."""

from __future__ import annotations

from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from nexttick import constants
from nexttick.aws import HANDOVER_SEND_SECONDS
from nexttick.observability import logger
from nexttick.rulewait import WaitClaim
from nexttick.runtime import Runtime
from nexttick.store import RuleState, rule_state_message


def wait_plan(runtime: Runtime, sleep_until: datetime, by_rule: bool, failed: bool) -> tuple[bool, bool]:
    """Whether a wait until `sleep_until` goes to a delayed message, and whether it is claimed. A
    wait long enough for a message (the send's worst case plus the lead that invocation sleeps),
    unless its send already `failed`, is handed over; the rest are slept through. A wait slept here
    is claimed, so that editors of tasks it covers rely on it rather than each invoke a worker, and
    so is a handed-over wait of an invocation an editor started (more such creates are likely to
    follow). The wait of the invocation the rule's firing started (`by_rule`) is handed over
    unclaimed: the rule as it stands backs it up (`Timing.latest_backstop`), and a lone task's
    early wake then writes nothing."""
    wait_seconds = (sleep_until - runtime.clock.now()).total_seconds()
    shortest = runtime.settings.handover_lead_seconds + HANDOVER_SEND_SECONDS
    handing_over = runtime.handover is not None and wait_seconds >= shortest and not failed
    return handing_over, not (handing_over and by_rule)


def message_record(claim: WaitClaim, record: RuleState | None, owner: str) -> RuleState | None:
    """The record a hand-over's message carries, for its invocation to start from: the one the wait
    was decided on, unless it lacks the claim this invocation took in a write of its own (then
    none: that invocation releases the claim and starts from the release's answer)."""
    if claim is WaitClaim.CLAIMED and (record is None or record.waiter_owner != owner):
        return None
    return record


def hand_over(runtime: Runtime, head: datetime, wait_seconds: float, record: RuleState | None) -> int | None:
    """Send the message whose delivery starts the invocation that sleeps the last
    `handover_lead_seconds` and runs the head, carrying `record` (`message_record`); returns its
    delay (at least a second; None: sleep through the wait). A claim the sender took stays, as does
    the backstop, so editors rely on it as on a sleeper. The caller checked that the wait is long
    enough (`wait_plan`); a send that failed is slept through, as is one that took so long that its
    message may arrive after the wake (its invocation then finds the head run)."""
    lead = runtime.settings.handover_lead_seconds
    if runtime.handover is None:
        return None
    delay = min(int(wait_seconds - lead + 0.5), constants.MAX_HANDOVER_DELAY_SECONDS)  # rounded
    sending = runtime.clock.now()
    try:
        runtime.handover.send(delay, head, None if record is None else rule_state_message(record))
    except (BotoCoreError, ClientError):
        logger.warning("could not hand the wait over: sleeping through it", exc_info=True)
        return None
    took = (runtime.clock.now() - sending).total_seconds()
    if took > lead / 2:
        logger.warning("the hand-over's send was slow: sleeping through it", extra={"send_s": took})
        return None
    return delay
