"""Time helpers: ISO 8601 UTC in notes, injected clocks everywhere else."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable

UTC = dt.timezone.utc
Clock = Callable[[], dt.datetime]

# ISO 8601's extended date-time as Python 3.11+'s fromisoformat reads it and 3.10's does not
# (a Z, fractional seconds of any length, by dot or comma, +HHMM and +HH offsets): read here, so every
# supported Python gives a note's time the same value.
_EXTENDED = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"(?:([Zz])|([+-])(\d{2})(?::?(\d{2})(?::?(\d{2}))?)?)?)?", re.ASCII)


def system_clock() -> dt.datetime:
    """The real time, timezone-aware UTC, to the second."""
    return dt.datetime.now(UTC).replace(microsecond=0)


def env_clock() -> Clock:
    """`VAULTMEM_NOW` (ISO 8601) freezes time for tests and reproducible demos."""
    frozen = os.environ.get("VAULTMEM_NOW")
    if frozen:
        value = parse_time(frozen)
        if value is None:
            from vaultmem.base.errors import ConfigError

            raise ConfigError(f"VAULTMEM_NOW={frozen!r} is not an ISO 8601 time; use e.g. 2026-11-22T10:15:00Z")
        return lambda: value
    return system_clock


def parse_time(value: object, naive_zone: dt.tzinfo | None = UTC) -> dt.datetime | None:
    """Read a time from frontmatter: datetime, date, ISO string or epoch seconds, as UTC.
    A time or date without a zone is in `naive_zone` (None: this machine's local zone)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return _parse_time(value, naive_zone)
    except (OverflowError, ValueError, OSError):  # 0001-01-01T00:00:00+23:59 is before year 1 in UTC
        return None


def _localise(naive: dt.datetime, zone: dt.tzinfo | None) -> dt.datetime:
    # astimezone() on a naive time asks the C library for the local zone, DST included
    return naive.astimezone(UTC) if zone is None else naive.replace(tzinfo=zone).astimezone(UTC)


def _parse_time(value: object, zone: dt.tzinfo | None = UTC) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return _localise(value, zone) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, dt.date):
        return _localise(dt.datetime(value.year, value.month, value.day), zone)
    if isinstance(value, (int, float)):
        try:
            return dt.datetime.fromtimestamp(float(value), UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            parsed = from_iso(value.strip())
        except ValueError:
            return None
        return _localise(parsed, zone) if parsed.tzinfo is None else parsed.astimezone(UTC)
    return None


def from_iso(text: str) -> dt.datetime:
    """An ISO 8601 date or date-time, as Python 3.11+'s `datetime.fromisoformat` reads it, on
    every version: the extended form parsed here (fractional seconds beyond microseconds are
    cut, as 3.11+ cuts them), any other form left to this Python's fromisoformat. ValueError
    when it is not a time."""
    match = _EXTENDED.fullmatch(text)
    if match is None:
        return dt.datetime.fromisoformat(text)
    year, month, day, hour, minute, second, fraction, z, sign, off_h, off_m, off_s = match.groups()
    zone: dt.tzinfo | None = None
    if z:
        zone = UTC
    elif sign:
        offset = dt.timedelta(hours=int(off_h), minutes=int(off_m or 0), seconds=int(off_s or 0))
        zone = dt.timezone(-offset if sign == "-" else offset)  # ValueError from 24 hours on
    micro = int((fraction or "")[:6].ljust(6, "0"))
    return dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                       micro, tzinfo=zone)


def format_time(value: dt.datetime) -> str:
    """ISO 8601 UTC with a Z, to the second: `2026-11-22T10:15:00Z`."""
    return value.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def days_between(earlier: dt.datetime, later: dt.datetime) -> float:
    """Age in days, never negative (clock skew between machines is clamped)."""
    return max(0.0, (later - earlier).total_seconds() / 86400.0)
