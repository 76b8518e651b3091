"""Request and response models of the HTTP API (they also generate the OpenAPI document).

Requests are strict (no type coercion, unknown fields rejected): the editor library does the
deep checks (RFC 3339 with offset, cron syntax, IANA zones, exactly one time field) and names
the offending field in its errors.
"""

from __future__ import annotations

from enum import StrEnum
from itertools import combinations
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from editor import LISTABLE_STATUSES, TIME_FIELDS
from editor.changes import MAX_CATCH_UP, MAX_SKIP, Missed
from nexttick.constants import (
    MAX_ACTION_LENGTH,
    MAX_ATTEMPTS,
    MAX_CRON_LENGTH,
    MAX_DURATION_LENGTH,
    MAX_INSTANT_LENGTH,
    MAX_MISFIRE_GRACE_SECONDS,
    MAX_PAYLOAD_BYTES,
    MAX_PAYLOAD_DEPTH,
    MAX_RETRY_BACKOFF_SECONDS,
    MAX_SPAN_SECONDS,
    MAX_TIMEZONE_LENGTH,
    MIN_ATTEMPTS,
)
from nexttick.constants import TASK_ID_PATTERN as TASK_ID_REGEX
from nexttick.errors import ErrorCode, NextTickError
from nexttick.schedules import MAX_JITTER_SECONDS, DstRepeated, DstSkipped
from nexttick.timeutil import parse_duration

# Patterns document (and pre-check) the shapes the editor parses; it still checks the values.
INSTANT_REGEX = (
    r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(\.[0-9]{1,9})?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)
DURATION_REGEX = r"^(([0-9]{1,9}(\.[0-9]{1,6})?(d|h|ms|m|s))+|[Pp][0-9DTHMSWdthmsw.]{1,40})$"
IF_MATCH_REGEX = r'^ *(\*|(W/)?"[0-9]{1,18}"|[0-9]{1,18}) *$'
CURSOR_REGEX = r"^[A-Za-z0-9_-]+$"
# What each pattern means, for error messages: a client should not have to read a regex.
PATTERN_MESSAGES = {
    INSTANT_REGEX: "must be an RFC 3339 time with a UTC offset, e.g. 2030-12-01T09:00:00+01:00 "
    "or 2030-12-01T08:00:00Z",
    DURATION_REGEX: "must be an interval such as 90s, 1h30m, 2d, 250ms or PT1H, or a number of seconds",
    TASK_ID_REGEX: "must be 1 to 128 letters, digits or the characters . _ : -",
    IF_MATCH_REGEX: 'must be a task version such as 3 or "3", or * for any version',
    CURSOR_REGEX: "must be the next_cursor of a previous page",
}

# Seconds are kept to the microsecond (a 5e-324 would not even fit a DynamoDB number).
_MICROSECONDS = AfterValidator(lambda v: round(v, 6))
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False), _MICROSECONDS]


def _bounded_duration(text: str) -> str:
    """A duration string no longer than the numeric bound (200 years); the editor parses it again."""
    try:
        seconds = parse_duration(text).total_seconds()
    except (NextTickError, OverflowError):
        return text  # the editor names the field with a precise message
    if seconds > MAX_SPAN_SECONDS:
        raise ValueError("must be at most 200 years")
    return text


Duration = Annotated[
    Annotated[
        str, Field(max_length=MAX_DURATION_LENGTH, pattern=DURATION_REGEX), AfterValidator(_bounded_duration)
    ]
    | Annotated[
        float, Field(gt=0, le=MAX_SPAN_SECONDS, allow_inf_nan=False), AfterValidator(lambda v: round(v, 6))
    ],
    Field(
        description="An interval: `90s`, `1h30m`, `2d`, `250ms`, ISO 8601 `PT1H`, or a number of seconds "
        "(at least 1 s).",
        examples=["90s", "1h30m", "PT1H"],
    ),
]
Instant = Annotated[
    str,
    Field(
        description="RFC 3339 timestamp with a UTC offset (`Z` or `+01:00`); years 1970-2199.",
        examples=["2030-12-01T09:00:00+01:00"],
        max_length=MAX_INSTANT_LENGTH,
        pattern=INSTANT_REGEX,
    ),
]
Payload = Annotated[
    dict[str, Any],
    Field(
        description=f"A JSON object, at most {MAX_PAYLOAD_BYTES} bytes serialised (else 413) and at most "
        f"{MAX_PAYLOAD_DEPTH} levels of objects/arrays deep, the payload object being the first (else 422)."
    ),
]


# The domain's own enumerations (their words, given as strings in JSON).
DstSkippedName = Annotated[DstSkipped, Field(strict=False)]
DstRepeatedName = Annotated[DstRepeated, Field(strict=False)]
Jitter = Annotated[Seconds, Field(le=MAX_JITTER_SECONDS)]
JITTER_DESCRIPTION = (
    "Start each occurrence up to this many seconds after its time, by a hash of its idempotency key: "
    "spreads a herd of tasks on the same schedule; the same occurrence always gets the same offset, "
    "never an earlier one."
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    NULLABLE: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="before")
    @classmethod
    def _no_null(cls, value: Any, info: ValidationInfo) -> Any:
        """Optional means "may be left out"; an explicit null is refused unless the field allows it."""
        if value is None and info.field_name not in cls.NULLABLE:
            raise ValueError("must not be null (leave the field out instead)")
        return value


class _TimeFields(_Strict):
    # Optional fields default to None but do not accept an explicit null (422), unless documented.
    due: Instant | SkipJsonSchema[None] = Field(default=None, description="Run once at this instant.")
    delay_seconds: Annotated[Seconds, Field(le=MAX_SPAN_SECONDS)] | SkipJsonSchema[None] = Field(
        default=None, description="Run once this many seconds from now."
    )
    cron: Annotated[str, Field(max_length=MAX_CRON_LENGTH)] | SkipJsonSchema[None] = Field(
        default=None,
        description=(
            "5-field cron expression with crontab(5) meaning (cronie's day rule), evaluated in "
            "`timezone`; extensions `L`, `nW`, `dL`, `d#k`, `?` and `@daily`-style macros."
        ),
        examples=["0 9 * * 5"],
    )
    timezone: Annotated[str, Field(max_length=MAX_TIMEZONE_LENGTH)] | SkipJsonSchema[None] = Field(
        default=None, description="IANA time zone of `cron` (default UTC).", examples=["Europe/Berlin"]
    )
    every: Duration | SkipJsonSchema[None] = Field(
        default=None, description="Run every interval, the first one interval from now."
    )
    dst_skipped: DstSkippedName | SkipJsonSchema[None] = Field(
        default=None,
        description="`cron` only: a wall time a DST change skips does not run (`skip`, default) or runs "
        "at the wall time read with the offset before the change, i.e. moved later by the gap (`shift`).",
    )
    dst_repeated: DstRepeatedName | SkipJsonSchema[None] = Field(
        default=None,
        description="`cron` only: a wall time a DST change repeats runs at its `first` pass (default), "
        "its `last`, or `both`.",
    )
    max_attempts: Annotated[int, Field(ge=MIN_ATTEMPTS, le=MAX_ATTEMPTS)] | SkipJsonSchema[None] = Field(
        default=None, description="Attempts per occurrence before it ends `failed` (default 3)."
    )
    retry_backoff_seconds: Annotated[Seconds, Field(le=MAX_RETRY_BACKOFF_SECONDS)] | SkipJsonSchema[None] = (
        Field(default=None, description="Base of the exponential retry backoff, with jitter (default 30).")
    )


class CreateTaskRequest(_TimeFields):
    """A task to schedule: exactly one of `due`, `delay_seconds`, `cron`, `every`."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": [name]} for name in TIME_FIELDS],
            "dependentRequired": {name: ["cron"] for name in ("timezone", "dst_skipped", "dst_repeated")},
            "dependentSchemas": {"end": {"anyOf": [{"required": ["cron"]}, {"required": ["every"]}]}},
        }
    )

    action: Annotated[str, Field(min_length=1, max_length=MAX_ACTION_LENGTH)] = Field(
        description="Name of a configured action.", examples=["log"]
    )
    payload: Payload | SkipJsonSchema[None] = Field(default=None)
    end: Instant | SkipJsonSchema[None] = Field(
        default=None, description="Recurring tasks only: no occurrence after this."
    )
    misfire_grace_seconds: Annotated[Seconds, Field(le=MAX_MISFIRE_GRACE_SECONDS)] | SkipJsonSchema[None] = (
        Field(default=None, description="Skip an occurrence that would start later than due + grace.")
    )
    jitter_seconds: Jitter | SkipJsonSchema[None] = Field(default=None, description=JITTER_DESCRIPTION)
    id: Annotated[str, Field(pattern=TASK_ID_REGEX)] | SkipJsonSchema[None] = Field(
        default=None,
        description="Client-chosen id. Repeating an identical create returns the task (200); "
        "a different body under the same id is a 409.",
    )


class UpdateTaskRequest(_TimeFields):
    """Changes to a pending task: a new time (one time field), payload and/or policy.

    `null` clears `end`, `misfire_grace_seconds` and `jitter_seconds`."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"end", "misfire_grace_seconds", "jitter_seconds"})
    model_config = ConfigDict(
        json_schema_extra={
            "minProperties": 1,
            "not": {"anyOf": [{"required": list(pair)} for pair in combinations(TIME_FIELDS, 2)]},
        }
    )

    payload: Payload | SkipJsonSchema[None] = Field(default=None)
    end: Instant | None = Field(default=None, description="Recurring tasks only: no occurrence after this.")
    misfire_grace_seconds: Annotated[Seconds, Field(le=MAX_MISFIRE_GRACE_SECONDS)] | None = Field(
        default=None, description="Skip an occurrence that would start later than due + grace."
    )
    jitter_seconds: Jitter | None = Field(default=None, description=JITTER_DESCRIPTION)


# Named request examples (Swagger UI prefills the first): the schema's per-field examples would
# combine all four time fields, a body the API refuses, so each example sets exactly one.
CREATE_EXAMPLES: dict[str, dict[str, Any]] = {
    "due": {
        "summary": "Once, at an instant",
        "value": {"action": "log", "due": "2030-12-01T09:00:00+01:00", "payload": {"to": "ada@example.com"}},
    },
    "delay_seconds": {
        "summary": "Once, after a delay",
        "value": {"action": "log", "delay_seconds": 3600, "payload": {"video": 7}},
    },
    "cron": {
        "summary": "On a cron schedule, in a time zone",
        "value": {"action": "log", "cron": "0 9 * * 5", "timezone": "Europe/Berlin", "payload": {"sku": 42}},
    },
    "every": {
        "summary": "At a fixed interval",
        "value": {"action": "log", "every": "1h30m", "payload": {"ping": True}},
    },
}
UPDATE_EXAMPLES: dict[str, dict[str, Any]] = {
    "due": {"summary": "Move to another instant", "value": {"due": "2030-12-02T09:00:00Z"}},
    "delay_seconds": {"summary": "Run in ten minutes instead", "value": {"delay_seconds": 600}},
    "payload": {"summary": "Replace the payload", "value": {"payload": {"to": "grace@example.com"}}},
    "policy": {
        "summary": "Change the retry policy",
        "value": {"max_attempts": 5, "retry_backoff_seconds": 60},
    },
}


# The statuses `GET /tasks` filters on: the editor's list (mypy cannot read members built from it).
ListableStatus = StrEnum(  # type: ignore[misc]
    "ListableStatus", {status.name: status.value for status in LISTABLE_STATUSES}
)


class ResumeRequest(_Strict):
    """What happens to the occurrences that fell due while the task was paused."""

    missed: Annotated[Missed, Field(strict=False)] | SkipJsonSchema[None] = Field(
        default=None,
        description="`skip`: none runs, on to the first one after now; `once` (default): the newest "
        "runs now; `each`: the newest `max_catch_up` run one after the other from now, oldest first. "
        "The misfire grace still applies to each.",
    )
    max_catch_up: Annotated[int, Field(ge=1, le=MAX_CATCH_UP)] | SkipJsonSchema[None] = Field(
        default=None, description="With `each`: how many of the newest missed occurrences run (default 10)."
    )


class SkipRequest(_Strict):
    count: Annotated[int, Field(ge=1, le=MAX_SKIP)] | SkipJsonSchema[None] = Field(
        default=None, description="How many of the next occurrences to skip (default 1)."
    )


class ErrorOut(BaseModel):
    """Every error: a stable code, a message that starts with the offending field, and that field."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorCode
    message: str
    field: str | None = Field(description="The offending field (body field, query/path parameter or header).")


class Health(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["ok"]
