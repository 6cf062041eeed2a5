"""Times in notes read the same on every Python vaultmem supports (3.10's fromisoformat reads
fewer ISO 8601 forms than 3.11's): a Z, 1-9 fractional digits, offsets of every spelling."""

from __future__ import annotations

import datetime as dt

import pytest

from vaultmem.base.timeutil import UTC, from_iso, parse_time

BASE = dt.datetime(2026, 11, 22, 10, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "micro"), [
    ("2026-11-22T10:15:00.5Z", 500000),
    ("2026-11-22T10:15:00.12Z", 120000),
    ("2026-11-22T10:15:00.123Z", 123000),
    ("2026-11-22T10:15:00.1234Z", 123400),
    ("2026-11-22T10:15:00.12345Z", 123450),
    ("2026-11-22T10:15:00.123456Z", 123456),
    ("2026-11-22T10:15:00.1234567Z", 123456),  # beyond microseconds: cut, as 3.11+ cuts
    ("2026-11-22T10:15:00.12345678Z", 123456),
    ("2026-11-22T10:15:00.999999999Z", 999999),
    ("2026-11-22T10:15:00.1234567890123Z", 123456),
    ("2026-11-22T10:15:00,5Z", 500000),  # ISO 8601's comma
    ("2026-11-22t10:15:00.5z", 500000),
    ("2026-11-22 10:15:00.5+00:00", 500000),
])
def test_fractional_seconds_of_one_to_nine_digits(text, micro):
    assert parse_time(text) == BASE.replace(microsecond=micro)


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-11-22T10:15:00Z", BASE),
    ("2026-11-22T11:15:00+01:00", BASE),
    ("2026-11-22T11:15:00+0100", BASE),
    ("2026-11-22T11:15:00+01", BASE),
    ("2026-11-22T04:45:00-05:30", BASE),
    ("2026-11-22T04:45:00-0530", BASE),
    ("2026-11-22T11:15:30+01:00:30", BASE),
    ("2026-11-22T11:15+01:00", BASE),
    ("2026-11-22T10Z", BASE.replace(minute=0)),
    ("2026-11-22T10:15:00-00:00", BASE),
    ("2026-11-22T10:15:00", BASE),  # no zone: the naive zone, UTC by default
    ("2026-11-22", BASE.replace(hour=0, minute=0)),
    ("  2026-11-22T10:15:00Z\n", BASE),
])
def test_offsets_and_zones(text, expected):
    assert parse_time(text) == expected


def test_the_zone_of_a_time_written_with_one_is_kept_and_the_value_is_utc():
    parsed = from_iso("2026-11-22T11:15:00.25+01:00")
    assert parsed.utcoffset() == dt.timedelta(hours=1)
    assert parsed.microsecond == 250000
    assert parse_time("2026-11-22T11:15:00.25+01:00").tzinfo is UTC


def test_a_time_without_a_zone_is_in_the_zone_given():
    zone = dt.timezone(dt.timedelta(hours=2))
    assert parse_time("2026-11-22T12:15:00.5", naive_zone=zone) == BASE.replace(microsecond=500000)


@pytest.mark.parametrize("text", [
    "2026-11-22T24:00:00Z",
    "2026-13-01T10:15:00Z",
    "2026-11-22T10:15:00+24:00",
    "2026-11-22T10:15:00+1",
    "2026-11-22T10:15:00ZZ",
    "2026-11-22T10:15:00.5\u0665Z",  # an Arabic-Indic digit
    "yesterday",
    "",
])
def test_what_is_not_a_time(text):
    assert parse_time(text) is None
