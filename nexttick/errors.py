"""Typed domain errors. Each names the offending field and carries its stable error code, which the
HTTP API (with its HTTP status) and the CLI's `--json` errors both report."""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar


class ErrorCode(StrEnum):
    MALFORMED = "malformed_request"
    VALIDATION = "validation_error"
    UNKNOWN_ACTION = "unknown_action"
    TOO_LARGE = "payload_too_large"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    CONFLICT = "conflict"
    VERSION_MISMATCH = "version_mismatch"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    INTERNAL = "internal_error"
    UNAVAILABLE = "service_unavailable"


class NextTickError(Exception):
    """Base class of every error the editor library raises on purpose."""

    code: ClassVar[ErrorCode] = ErrorCode.VALIDATION

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class ValidationError(NextTickError):
    """A field is malformed or out of range (HTTP 422)."""


class PayloadTooLargeError(ValidationError):
    """The payload exceeds 256 KiB serialised (HTTP 413)."""

    code = ErrorCode.TOO_LARGE


class UnknownActionError(ValidationError):
    """The task names an action that is not configured (HTTP 422)."""

    code = ErrorCode.UNKNOWN_ACTION


class TaskNotFoundError(NextTickError):
    """No task with this id (HTTP 404)."""

    code = ErrorCode.NOT_FOUND


class ConflictError(NextTickError):
    """The id exists with a different body, or the task is not in a state that allows the change (409)."""

    code = ErrorCode.CONFLICT


class TaskBusyError(ConflictError):
    """A compare-and-set change lost to other writers MAX_CAS_ATTEMPTS times in a row (409)."""

    def __init__(self) -> None:
        super().__init__("id: task is changing too often; retry", field="id")


class VersionMismatchError(NextTickError):
    """`If-Match` / expected version does not match the stored version (HTTP 412)."""

    code = ErrorCode.VERSION_MISMATCH
