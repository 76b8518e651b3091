"""The wait hand-over: a long wait for a head goes to a delayed message instead of a sleeping
invocation (docs/architecture.md, "The wait hand-over")."""

from __future__ import annotations

from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from nexttick import constants
from nexttick.aws import HANDOVER_SEND_SECONDS
from nexttick.observability import logger
from nexttick.runtime import Runtime


def hand_over(runtime: Runtime, head: datetime, wait_seconds: float) -> int | None:
    """Send the message whose delivery starts the invocation that sleeps the last
    `handover_lead_seconds` and runs the head; returns its delay (None: sleep through the wait).
    The sender's claim stays (its backstop too), so editors rely on it as on a sleeper. A wait
    shorter than the send's worst case plus the lead is slept through, as is one whose send failed,
    or took so long that its message may arrive after the wake (its invocation then finds the head
    run)."""
    lead = runtime.settings.handover_lead_seconds
    if runtime.handover is None or wait_seconds < lead + HANDOVER_SEND_SECONDS:
        return None
    delay = min(int(wait_seconds - lead + 0.5), constants.MAX_HANDOVER_DELAY_SECONDS)  # rounded
    sending = runtime.clock.now()
    try:
        runtime.handover.send(delay, head)
    except (BotoCoreError, ClientError):
        logger.warning("could not hand the wait over: sleeping through it", exc_info=True)
        return None
    took = (runtime.clock.now() - sending).total_seconds()
    if took > lead / 2:
        logger.warning("the hand-over's send was slow: sleeping through the wait", extra={"send_s": took})
        return None
    return delay
