"""Temporal decay: pure scoring functions. Every one takes `now`; none reads a clock.

score = (use_count + 1) ** beta * decay(now - last_used) * strength

The `+ 1` keeps a never-reused memory's score equal to its decay times strength (the
seed's `use_count ** beta` would score every new memory 0).

The `actr` model (Mnemosyne's base-level activation) scores differently: its activation
A = ln(sum_j t_j ** -d) + baseline already counts every use, so score = strength * e**A.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable
from typing import Any

from vaultmem.base.config import URGENCIES, Settings
from vaultmem.base.timeutil import parse_time

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


def decay_of_age(settings: Settings) -> Callable[[float], float]:
    """`decay_factor` for these settings as a function of the age alone, its constants worked
    out once (scoring a vault calls it once per memory). The same floats."""
    model = settings.decay_model
    if model == "exponential":
        lam = settings.decay_lambda
        return lambda age_s: exponential(age_s, lam)
    if model == "two_component":
        fast, slow, weight = settings.tc_lambda_fast, settings.tc_lambda_slow, settings.tc_fast_weight
        return lambda age_s: two_component(age_s, fast, slow, weight)
    # power_law with its t0 worked out once, written out: calling power_law per memory is a
    # large share of a pass over a big vault (tests/test_decay.py checks the two agree to the bit)
    alpha, halflife = settings.pl_alpha, settings.pl_halflife_days
    t0 = halflife * DAY / (2 ** (1 / alpha) - 1)
    return lambda age_s: (1 + max(0.0, age_s) / t0) ** -alpha


def actr_params(urgency: str | None, settings: Settings) -> tuple[float, float]:
    """(decay rate d, baseline) for an urgency; unknown urgencies use the default one."""
    level = (urgency or "").strip().lower()
    if level not in URGENCIES:
        level = settings.actr_default_urgency
    return getattr(settings, f"actr_rate_{level}"), getattr(settings, f"actr_baseline_{level}")


def _mean_power(lo: float, hi: float, d: float) -> float:
    """The mean of t ** -d over [lo, hi] (Petrov's approximation for unrecorded uses)."""
    if hi - lo < 1e-9:
        return lo ** -d
    if abs(1 - d) < 1e-9:
        return (math.log(hi) - math.log(lo)) / (hi - lo)
    return (hi ** (1 - d) - lo ** (1 - d)) / ((1 - d) * (hi - lo))


def actr_activation(
    *,
    created: dt.datetime,
    last_used: dt.datetime,
    use_count: int,
    access_times: Iterable[Any],
    now: dt.datetime,
    rate: float,
    baseline: float,
    unit_s: float = 3600.0,
) -> float:
    """ACT-R base-level activation: ln(sum_j t_j ** -d) + baseline.

    The presentations are the note's creation plus each of its `use_count` uses. The
    most recent uses are read from `access_times` (capped at access_history_size); older,
    unrecorded uses are spread evenly between creation and the oldest recorded use.
    Ages count in `unit_s` units (hours) and are at least one unit, so a memory created
    this hour has activation = baseline.
    """

    def age(t: dt.datetime) -> float:
        return max(1.0, (now - t).total_seconds() / unit_s)

    uses = max(0, int(use_count))
    recorded = sorted(t for t in (parse_time(v) for v in access_times) if t is not None and t <= now)
    if uses and (not recorded or last_used > recorded[-1] + dt.timedelta(seconds=1)):
        recorded.append(last_used)  # a use made without recording its time
    recorded = recorded[-uses:] if uses else []
    total = age(created) ** -rate + sum(age(t) ** -rate for t in recorded)
    missing = uses - len(recorded)
    if missing > 0:
        oldest = age(recorded[0]) if recorded else age(created)
        total += missing * _mean_power(min(oldest, age(created)), max(oldest, age(created)), rate)
    return math.log(total) + baseline


def activation_status(activation: float, settings: Settings) -> str:
    """Mnemosyne's decay status: active (>= -2), fading (-2 .. -4), archived (< -4)."""
    if activation >= settings.actr_active_threshold:
        return "active"
    if activation >= settings.actr_archive_threshold:
        return "fading"
    return "archived"


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
    created: dt.datetime | None = None,
    access_times: Iterable[Any] = (),
    urgency: str | None = None,
) -> float:
    """The decay score of one memory at `now` under the configured model."""
    immune = is_immune(memory_type, pinned)
    if settings.decay_model == "actr" and not immune:
        rate, baseline = actr_params(urgency, settings)
        activation = actr_activation(
            created=created or last_used, last_used=last_used, use_count=use_count,
            access_times=access_times, now=now, rate=rate, baseline=baseline,
            unit_s=settings.actr_time_unit_s,
        )
        return strength * math.exp(min(activation, 50.0))
    age_s = (now - last_used).total_seconds()
    factor = 1.0 if immune else decay_factor(age_s, settings)
    return (max(0, use_count) + 1) ** settings.decay_beta * factor * strength
