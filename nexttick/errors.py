"""Typed domain errors. Each names the offending field; the API maps them to HTTP in one place."""

from __future__ import annotations


class NextTickError(Exception):
    """Base class of every error the editor library raises on purpose."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class ValidationError(NextTickError):
    """A field is malformed or out of range (HTTP 422)."""


class PayloadTooLargeError(ValidationError):
    """The payload exceeds 256 KiB serialised (HTTP 413)."""


class UnknownActionError(ValidationError):
    """The task names an action that is not configured (HTTP 422)."""


class TaskNotFoundError(NextTickError):
    """No task with this id (HTTP 404)."""


class ConflictError(NextTickError):
    """The id exists with a different body, or the task is not in a state that allows the change (409)."""


class VersionMismatchError(NextTickError):
    """`If-Match` / expected version does not match the stored version (HTTP 412)."""
