"""How the local stack's moto answers an SQS long poll: as soon as a delayed or in-flight message
becomes visible, not at moto's next re-scan of the queue, up to a second later (moto re-scans when
a message is sent, or once a second). The local stack long-polls the worker's hand-over queue for
messages delayed to about a second and a half before a task's instant: a second late, the task is too.

Written for moto 5.2.5 (`MOTO_VERSION`); `FINGERPRINTS` records the moto functions the patch
replaces or relies on, checked by tests/unit/test_motopatches.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from moto.core.utils import unix_time_millis
from moto.sqs.models import Message, Queue, SQSBackend

MOTO_VERSION = "5.2.5"

_moto_wait_for_messages = Queue.wait_for_messages

# sha256 of each function's source as moto 5.2.5 ships it: `Queue.wait_for_messages` is replaced;
# `SQSBackend.receive_message` calls it between its scans of the queue; a message is receivable when
# `Queue.messages` lists it, by `Message.visible` and `Message.delayed`, whose instants the
# replacement waits for.
FINGERPRINTS: dict[str, tuple[Callable[..., Any], str]] = {
    "moto.sqs.models.Queue.wait_for_messages": (
        _moto_wait_for_messages,
        "58432562ccf2e13ed8841c825dd2614b6e57b71733d1ce9ba6926d38530ba1f1",
    ),
    "moto.sqs.models.SQSBackend.receive_message": (
        SQSBackend.receive_message,
        "065f3e5e7d2144089ce3b5d16d9306243ccd2f3ee11b44beb851292fadb7652f",
    ),
    "moto.sqs.models.Queue.messages": (
        Queue.messages.fget,  # type: ignore[attr-defined]
        "03a531dbcbcf9aee2e61c7254c08946a499f5c57f2447a8f2e534aa85b067dea",
    ),
    "moto.sqs.models.Message.visible": (
        Message.visible.fget,  # type: ignore[attr-defined]
        "5129b573308de62a700c40541df76673710ff2303258839ac66990eb56f27f27",
    ),
    "moto.sqs.models.Message.delayed": (
        Message.delayed.fget,  # type: ignore[attr-defined]
        "e2fd48abf582683aa4630cbd95daef06deb9f6de33e002a89f8c3d8a3f334838",
    ),
}


def seconds_until_visible(queue: Queue) -> float:
    """Seconds until the first message that is not receivable now becomes so: its delay ends
    (`delayed` until `delayed_until`) and its visibility timeout too (`visible` after `visible_at`,
    hence the millisecond). Infinite when no message is waiting for either."""
    now = unix_time_millis()
    later = [
        at
        for message in list(queue._messages)
        if (at := max(message.delayed_until, message.visible_at + 1)) > now
    ]
    return max(min(later) - now, 1.0) / 1000 if later else math.inf


def wake_long_polls_when_visible() -> None:
    """A long poll's wait between two scans of the queue ends when the next message becomes
    visible, as well as on a send (moto's notification) or after moto's one second. Idempotent."""
    if Queue.wait_for_messages is not _moto_wait_for_messages:
        return

    def wait_for_messages(self: Queue, timeout: int) -> None:
        with self._messages_lock:
            self._messages_lock.wait_for(
                lambda: self.messages, timeout=min(timeout, seconds_until_visible(self))
            )

    Queue.wait_for_messages = wait_for_messages  # type: ignore[method-assign]
