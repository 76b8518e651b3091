"""Instants and durations: parsing (RFC 3339 with offset only), UTC normalisation, sortable keys."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from nexttick.constants import MAX_YEAR, MIN_YEAR
from nexttick.errors import ValidationError

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")
_GO_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(d|h|ms|m|s))+$")
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(d|h|ms|m|s)")
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_ISO_DURATION = TypeAdapter(timedelta)


def ensure_utc(value: datetime, field: str) -> datetime:
    """An aware datetime converted to UTC; naive or out-of-range (1970-2199) values are rejected."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(
            f"{field}: timestamp must carry a UTC offset (e.g. 'Z' or '+01:00')", field=field
        )
    try:
        utc = value.astimezone(UTC)
    except OverflowError:  # e.g. 9999-12-31T23:59:59-01:00 is past datetime.max in UTC
        utc = None
    if utc is None or not MIN_YEAR <= utc.year <= MAX_YEAR:
        raise ValidationError(f"{field}: year must be between {MIN_YEAR} and {MAX_YEAR}", field=field)
    return utc


def parse_instant(value: str | datetime, field: str = "due") -> datetime:
    """Parse an RFC 3339 timestamp *with* offset (or an aware datetime) into UTC."""
    if isinstance(value, datetime):
        return ensure_utc(value, field)
    if not isinstance(value, str) or not _RFC3339.match(value.strip()):
        raise ValidationError(
            f"{field}: expected an RFC 3339 timestamp with offset, e.g. 2030-01-01T09:00:00+01:00",
            field=field,
        )
    text = value.strip().replace("z", "Z").replace("t", "T")
    fraction = re.search(r"\.(\d+)", text)
    if fraction and len(fraction.group(1)) > 6:  # Python keeps microseconds; drop finer digits.
        text = text.replace(fraction.group(0), "." + fraction.group(1)[:6], 1)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValidationError(f"{field}: {exc}", field=field) from exc
    return ensure_utc(parsed, field)


def parse_duration(value: str | int | float | timedelta, field: str = "every") -> timedelta:
    """Parse `90s`, `1h30m`, `2d`, `250ms`, ISO 8601 `PT1H30M` / `P1D`, or a number of seconds."""
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        result = _seconds(value, field)
    elif isinstance(value, str) and _GO_DURATION.match(value.strip()):
        result = _seconds(sum(float(n) * _UNIT_SECONDS[u] for n, u in _GO_PART.findall(value.strip())), field)
    elif isinstance(value, str) and value.strip().upper().startswith("P"):
        try:
            result = _ISO_DURATION.validate_python(value.strip().upper())
        except PydanticValidationError as exc:
            raise ValidationError(f"{field}: invalid ISO 8601 duration {value!r}", field=field) from exc
    else:
        raise ValidationError(
            f"{field}: expected a duration such as '90s', '1h30m', 'PT1H' or a number of seconds",
            field=field,
        )
    if result <= timedelta(0):
        raise ValidationError(f"{field}: duration must be positive", field=field)
    return result


def _seconds(value: float, field: str) -> timedelta:
    """timedelta(seconds=value); NaN, infinity and values beyond timedelta's range name the field."""
    try:
        return timedelta(seconds=value)
    except (OverflowError, ValueError) as exc:
        raise ValidationError(f"{field}: duration out of range", field=field) from exc


def rfc3339(value: datetime) -> str:
    """RFC 3339 in UTC with a `Z` (microseconds only when present): 2030-01-01T09:00:00Z."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def format_instant(value: datetime) -> str:
    """Fixed-width, lexicographically sortable UTC form: 2030-01-01T09:00:00.000000Z."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_stored_instant(value: str) -> datetime:
    """Inverse of `format_instant` (trusted, stored data). `fromisoformat` reads that form as UTC
    about 70 times as fast as `strptime` does, and a fire reads two of them."""
    return datetime.fromisoformat(value)


def floor_minute(value: datetime) -> datetime:
    return value.replace(second=0, microsecond=0)


def ceil_minute(value: datetime) -> datetime:
    """The first minute that starts at or after `value`."""
    start = floor_minute(value)
    return start if start == value else start + timedelta(minutes=1)


def to_epoch(value: datetime) -> float:
    return value.timestamp()


def from_epoch(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)
