"""The moto environment of tests: fake credentials and one region, and a recording worker trigger."""

from __future__ import annotations

from typing import Any

from local.options import EMULATOR_CREDENTIALS

# The environment of every test that talks to moto: its credentials and one region.
FAKE_AWS_ENV = {**EMULATOR_CREDENTIALS, "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}


class RecordingTrigger:
    """Wraps the real worker trigger (a real Lambda invoke against moto) and records the wakes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reasons: list[str] = []

    def wake(self, reason: str) -> None:
        self.inner.wake(reason)
        self.reasons.append(reason)
