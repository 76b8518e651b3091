"""The table of action kinds (log, webhook, lambda, sqs, sns, eventbridge, python) and the two
in-process ones, log and python.

Each kind validates its definition when the registry is built (fail fast, naming the action) and
delivers the envelope of one attempt: webhook in `webhook`, the AWS targets in `aws_targets`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, ClassVar

from nexttick.actions.aws_targets import EventBridgeAction, LambdaAction, SnsAction, SqsAction
from nexttick.actions.base import ActionConfigError, Delivery
from nexttick.actions.definition import BuildContext, Definition
from nexttick.actions.webhook import WebhookAction
from nexttick.observability import logger

DEFAULT_PYTHON_TIMEOUT_SECONDS = 10.0


# ---------------------------------------------------------------------------------------- log
class LogAction:
    """Logs each delivery's whole envelope, payload included, at its level: showing deliveries is
    what the action is for (other kinds never log payloads)."""

    kind = "log"
    keys: ClassVar[tuple[str, ...]] = ("level",)

    def __init__(self, name: str, level: str) -> None:
        self.name = name
        self.level = level
        self.timeout_seconds = 1.0

    @classmethod
    def build(cls, d: Definition, _: BuildContext) -> LogAction:
        return cls(d.name, d.choice("level", "INFO", ("DEBUG", "INFO", "WARNING")))

    def deliver(self, delivery: Delivery) -> None:
        emit = {"DEBUG": logger.debug, "INFO": logger.info, "WARNING": logger.warning}[self.level]
        emit("task delivered", extra={"delivery": delivery.envelope()})


# ---------------------------------------------------------------------------------------- python
class PythonAction:
    kind = "python"
    keys: ClassVar[tuple[str, ...]] = ("target", "timeout_seconds")

    def __init__(
        self, name: str, target: str, function: Callable[[dict[str, Any]], Any], timeout: float
    ) -> None:
        self.name = name
        self.target = target
        self.function = function
        # Advisory: a Python call cannot be interrupted. It sizes the worker's time reserve; the
        # lease is renewed while the call runs, however long it takes.
        self.timeout_seconds = timeout

    @classmethod
    def build(cls, d: Definition, _: BuildContext) -> PythonAction:
        target = d.text("target", required=True)
        module_name, _sep, attribute = target.partition(":")
        if not module_name or not attribute:
            raise ActionConfigError(
                d.name, f"target {target!r} must look like 'package.module:function'", "target"
            )
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ActionConfigError(d.name, f"cannot import {module_name!r}: {exc}", "target") from exc
        function = getattr(module, attribute, None)
        if not callable(function):
            raise ActionConfigError(d.name, f"{target!r} is not a callable in the worker bundle", "target")
        return cls(d.name, target, function, d.seconds("timeout_seconds", DEFAULT_PYTHON_TIMEOUT_SECONDS))

    def deliver(self, delivery: Delivery) -> None:
        self.function(delivery.envelope())


KINDS: dict[str, Any] = {
    kind.kind: kind
    for kind in (
        LogAction,
        WebhookAction,
        LambdaAction,
        SqsAction,
        SnsAction,
        EventBridgeAction,
        PythonAction,
    )
}
