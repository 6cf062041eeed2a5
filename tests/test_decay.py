"""Decay models reproduce the reference values; scores are monotonic and bounded."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vaultmem.base.config import Settings
from vaultmem.core import decay

NOW = dt.datetime(2026, 11, 22, tzinfo=dt.timezone.utc)

REFERENCE = {
    "power_law": (0.754018, 0.500000, 0.293447, 0.081413),
    "two_component": (0.446923, 0.233826, 0.149959, 0.015345),
    "exponential": (0.793781, 0.500153, 0.198567, 0.000980),
}


@pytest.mark.parametrize("model", sorted(REFERENCE))
def test_reference_values(model):
    settings = Settings(decay_model=model)
    got = tuple(
        round(decay.score(use_count=0, last_used=NOW - dt.timedelta(days=days), strength=1.0, now=NOW, settings=settings), 6)
        for days in (1, 3, 7, 30)
    )
    assert got == pytest.approx(REFERENCE[model], abs=2e-6)


def test_use_count_and_strength_scale_the_score():
    s = Settings()
    base = decay.score(use_count=0, last_used=NOW, strength=1.0, now=NOW, settings=s)
    assert base == 1.0
    assert decay.score(use_count=4, last_used=NOW, strength=1.5, now=NOW, settings=s) == pytest.approx(5 ** 0.6 * 1.5)


@pytest.mark.parametrize("memory_type, pinned", [("procedural", False), ("core", False), (None, True)])
def test_immune_memories_do_not_decay(memory_type, pinned):
    score = decay.score(use_count=0, last_used=NOW - dt.timedelta(days=365), strength=1.0, now=NOW,
                        settings=Settings(), memory_type=memory_type, pinned=pinned)
    assert score == 1.0


@given(st.sampled_from(sorted(REFERENCE)), st.floats(0, 3650), st.floats(0, 3650))
def test_decay_is_monotonic_in_age_and_bounded(model, a, b):
    s = Settings(decay_model=model)
    young, old = sorted((a, b))
    f_young = decay.decay_factor(young * 86400, s)
    f_old = decay.decay_factor(old * 86400, s)
    assert 0.0 <= f_old <= f_young <= 1.0


@settings(max_examples=300, deadline=None)
@given(model=st.sampled_from(["power_law", "exponential", "two_component"]), uses=st.integers(0, 10_000),
       age_days=st.floats(0, 3650), strength=st.floats(1.0, 2.0),
       memory_type=st.sampled_from([None, "semantic", "procedural", "core"]), pinned=st.booleans())
def test_record_score_from_timestamps_equals_decay_score(model, uses, age_days, strength, memory_type, pinned):
    """scoring.record_score's path without datetimes is decay.score (the searches' scorer)."""
    import dataclasses

    from vaultmem.core import scoring
    from vaultmem.storage.index import Record

    s = dataclasses.replace(Settings(), decay_model=model)
    now = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc)
    last = now - dt.timedelta(days=age_days)
    rec = Record("m.md", 0, 0, "memory", "x", "active", "m", "", last.timestamp(), last.timestamp(), uses,
                 strength, memory_type, pinned, [], [], None, None, None, {}, None)
    want = decay.score(use_count=uses, last_used=last, strength=strength, now=now, settings=s,
                       memory_type=memory_type, pinned=pinned)
    assert abs(scoring.record_score(rec, now, s) - want) <= 1e-9 * max(1.0, want)


@settings(max_examples=400, deadline=None)
@given(model=st.sampled_from(["power_law", "exponential", "two_component"]),
       uses=st.one_of(st.none(), st.integers(-3, 10_000)),
       age_s=st.one_of(st.none(), st.floats(-86_400, 3650 * 86_400)),
       strength=st.one_of(st.none(), st.floats(0.0, 2.0)),
       memory_type=st.sampled_from([None, "", "semantic", "procedural", "Core", "PROCEDURAL"]),
       pinned=st.sampled_from([None, 0, 1, False, True]), alpha=st.floats(0.3, 3.0), halflife=st.floats(0.5, 90))
@example(model="power_law", uses=1, age_s=-3600.0, strength=1.0, memory_type=None, pinned=False, alpha=1.0,
         halflife=7.0)  # last used after now (a clock behind another device's): no decay yet
@example(model="exponential", uses=None, age_s=-3600.0, strength=None, memory_type=None, pinned=None, alpha=1.0,
         halflife=7.0)
def test_a_scorer_for_many_memories_gives_column_score_s_floats(model, uses, age_s, strength, memory_type, pinned,
                                                                alpha, halflife):
    """scoring.column_scorer (stats, a search's candidates) is column_score to the last bit, for
    every model and the columns' empty values (a note without use_count, last_used, strength)."""
    import dataclasses

    from vaultmem.core import scoring

    s = dataclasses.replace(Settings(), decay_model=model, pl_alpha=alpha, pl_halflife_days=halflife)
    now_ts = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc).timestamp()
    last = None if age_s is None else now_ts - age_s
    assert (scoring.column_scorer(now_ts, s)(uses, last, strength, memory_type, pinned)
            == scoring.column_score(uses, last, strength, memory_type, pinned, now_ts, s))


@settings(max_examples=400, deadline=None)
@given(model=st.sampled_from(["power_law", "exponential", "two_component"]),
       uses=st.one_of(st.none(), st.integers(-3, 10_000)),
       age_s=st.one_of(st.none(), st.floats(-86_400, 3650 * 86_400)),
       strength=st.one_of(st.none(), st.floats(0.0, 2.0)),
       memory_type=st.sampled_from([None, "", "semantic", "procedural", "Core", "PROCEDURAL", "coré", "KORE"]),
       pinned=st.sampled_from([None, 0, 1]), alpha=st.floats(0.3, 3.0), halflife=st.floats(0.5, 90),
       beta=st.floats(0.0, 1.0), fast_weight=st.floats(0.0, 1.0))
@example(model="power_law", uses=1, age_s=-3600.0, strength=1.0, memory_type=None, pinned=0, alpha=1.0,
         halflife=7.0, beta=0.6, fast_weight=0.7)
def test_sqlite_scores_a_memory_to_column_score_s_bit(model, uses, age_s, strength, memory_type, pinned, alpha,
                                                      halflife, beta, fast_weight):
    """scoring.sql_score (stats scores a whole vault in SQLite) gives column_score's float to the
    last bit, for every model but actr and the columns' empty values."""
    import dataclasses
    import sqlite3

    from vaultmem.core import scoring
    from vaultmem.storage.index import math_functions

    if not math_functions():
        pytest.skip("this Python's SQLite has no math functions: stats scores in Python")
    s = dataclasses.replace(Settings(), decay_model=model, pl_alpha=alpha, pl_halflife_days=halflife,
                            decay_beta=beta, tc_fast_weight=fast_weight)
    now_ts = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc).timestamp()
    last = None if age_s is None else now_ts - age_s
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE notes (use_count INTEGER, last_used REAL, strength REAL, memory_type TEXT,"
               " pinned INTEGER)")
    db.execute("INSERT INTO notes VALUES (?, ?, ?, ?, ?)", (uses, last, strength, memory_type, pinned))
    expr, params = scoring.sql_score(now_ts, s)
    (got,), = db.execute(f"SELECT {expr} FROM notes", params).fetchall()
    assert got == scoring.column_score(uses, last, strength, memory_type, pinned, now_ts, s)


def test_sqlite_leaves_actr_to_python():
    import dataclasses

    from vaultmem.core import scoring

    assert scoring.sql_score(0.0, dataclasses.replace(Settings(), decay_model="actr")) is None
