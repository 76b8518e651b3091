"""The moto environment of tests: fake credentials and one region, and a recording worker trigger."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from local.options import EMULATOR_CREDENTIALS
from nexttick.config import NextTickSettings
from nexttick.runtime import Runtime

# The environment of every test that talks to moto: its credentials and one region.
FAKE_AWS_ENV = {**EMULATOR_CREDENTIALS, "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}


class RecordingTrigger:
    """Wraps the real worker trigger (a real Lambda invoke against moto) and records the wakes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reasons: list[str] = []
        self.helpers: list[list[int]] = []

    def wake(self, reason: str) -> None:
        self.inner.wake(reason)
        self.reasons.append(reason)

    def help(self, shards: Collection[int], leader: str) -> None:
        self.inner.help(shards, leader)
        self.helpers.append(sorted(shards))


class RecordedRuntime(Runtime):
    """The runtime of a test: its worker trigger (shared with rule sync) records every wake."""

    trigger: RecordingTrigger

    @classmethod
    def recording(cls, settings: NextTickSettings) -> RecordedRuntime:
        built = Runtime.build(settings)
        trigger = RecordingTrigger(built.trigger)
        built.rule_sync.trigger = trigger
        return cls(built.settings, built.store, built.rule, trigger, built.rule_sync, built.clock)
