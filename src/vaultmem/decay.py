"""Temporal decay: pure scoring functions. Every one takes `now`; none reads a clock.

score = (use_count + 1) ** beta * decay(now - last_used) * strength

The `+ 1` keeps a never-reused memory's score equal to its decay times strength (the
seed's `use_count ** beta` would score every new memory 0).
"""

from __future__ import annotations

import datetime as dt
import math

from vaultmem.config import Settings

DAY = 86400.0
IMMUNE_TYPES = frozenset({"procedural", "core"})


def power_law(age_s: float, alpha: float, halflife_days: float) -> float:
    """(1 + t/t0) ** -alpha, with t0 chosen so the value halves at `halflife_days`."""
    t0 = halflife_days * DAY / (2 ** (1 / alpha) - 1)
    return (1 + max(0.0, age_s) / t0) ** -alpha


def exponential(age_s: float, lam: float) -> float:
    """exp(-lambda * t); lambda 2.673e-6/s is a 3-day half-life."""
    return math.exp(-lam * max(0.0, age_s))


def two_component(age_s: float, lam_fast: float, lam_slow: float, fast_weight: float) -> float:
    """A fast forgetting curve blended with a slow one (0.7 * 12 h + 0.3 * 7 days)."""
    t = max(0.0, age_s)
    return fast_weight * math.exp(-lam_fast * t) + (1 - fast_weight) * math.exp(-lam_slow * t)


def decay_factor(age_s: float, settings: Settings) -> float:
    """The configured model's decay for an age in seconds, in (0, 1]."""
    model = settings.decay_model
    if model == "exponential":
        return exponential(age_s, settings.decay_lambda)
    if model == "two_component":
        return two_component(age_s, settings.tc_lambda_fast, settings.tc_lambda_slow, settings.tc_fast_weight)
    return power_law(age_s, settings.pl_alpha, settings.pl_halflife_days)


def is_immune(memory_type: str | None, pinned: bool) -> bool:
    """Procedural and core memories, and notes a person pinned, do not decay."""
    return pinned or (memory_type or "").lower() in IMMUNE_TYPES


def score(
    *,
    use_count: int,
    last_used: dt.datetime,
    strength: float,
    now: dt.datetime,
    settings: Settings,
    memory_type: str | None = None,
    pinned: bool = False,
) -> float:
    """The decay score of one memory at `now`."""
    age_s = (now - last_used).total_seconds()
    factor = 1.0 if is_immune(memory_type, pinned) else decay_factor(age_s, settings)
    return (max(0, use_count) + 1) ** settings.decay_beta * factor * strength
