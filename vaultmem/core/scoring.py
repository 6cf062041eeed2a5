"""Scoring: decay scores of records, the relevance x freshness blend, fusion of rankings,
review candidates. Pure functions of records, settings and `now`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from vaultmem.base.config import DECAY_MODELS, Settings
from vaultmem.base.timeutil import days_between, parse_time
from vaultmem.core import decay
from vaultmem.storage import note as notes
from vaultmem.storage.record import Record

FRESHNESS_MIDPOINT = 0.3
CURVE_DAYS = (0, 1, 2, 3, 5, 7, 10, 14, 21, 30)
Ranked = tuple[Record, float, "float | None", float]  # record, decay score, relevance, rank


def rank_score(relevance: float, decay_score: float, decay_weight: float) -> float:
    """Blend normalised BM25F relevance (0..1) with the decay score: relevance first.

    rank = relevance * ((1 - w) + w * freshness),  freshness = s / (s + 0.3)

    The decay score only scales relevance by a factor in [1 - w, 1] (w = decay_weight,
    0.3 by default), so a strong old match keeps at least 70% of its rank and a weak recent
    memory can never outrank a clearly better match. freshness is 0.5 at score 0.3,
    0.77 for a fresh memory (score 1.0), 0.14 at the forget threshold (0.05).
    """
    freshness = decay_score / (decay_score + FRESHNESS_MIDPOINT) if decay_score > 0 else 0.0
    return relevance * ((1.0 - decay_weight) + decay_weight * freshness)


def semantic_relevance(semantic: Mapping[str, float]) -> dict[str, float]:
    """Cosine similarity to 0..1: `(cos - median) / (best - median)`, floored at 0.

    The median is over every memory that passed the filters: what an unrelated memory
    scores. Cosine / best (the earlier scale) left even an unrelated memory at ~0.5, so the
    decay blend's factor of 0.7..1 reordered matches freely and the semantic half of a fused
    score was compressed. With the median as zero the scale spreads like BM25F / best
    (on LoCoMo it lifted recall, semantic alone and fused, docs/retrieval.md).
    """
    scale = semantic_scale(semantic)
    return {p: scale(s) for p, s in semantic.items()}


def semantic_scale(semantic: Mapping[str, float]) -> Callable[[float], float]:
    """`semantic_relevance` as a function of one cosine (median and best taken once), so a
    ranking rescales only the memories it keeps."""
    import statistics  # slow to import: only when a semantic ranking is asked for

    if not semantic:
        return lambda s: 1.0
    if len(semantic) > 1000:  # the same median, without sorting 10,000 floats in Python
        import numpy as np

        values = np.fromiter(semantic.values(), dtype=np.float64, count=len(semantic))
        median, best = float(np.median(values)), float(np.max(values))
    else:
        median, best = statistics.median(semantic.values()), max(semantic.values())
    span = best - median
    if span <= 0:
        return lambda s: 1.0
    return lambda s: max(0.0, (s - median) / span)


def top_by_value(scores: Mapping[str, float], depth: int) -> list[tuple[str, float]]:
    """The `depth` best (path, value) pairs, best first, ties by path: exactly
    `sorted(..., key=(-value, path))[:depth]`, but a large mapping (every memory's cosine) is
    cut at the depth-th value first, so only the few above it are sorted."""
    items: Iterable[tuple[str, float]] = scores.items()
    if len(scores) > 4 * depth:
        import numpy as np  # only semantic rankings have this many scores; numpy is there

        values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
        cut = float(np.partition(values, len(values) - depth)[len(values) - depth])
        items = [(p, v) for p, v in scores.items() if v >= cut]
    return sorted(items, key=lambda kv: (-kv[1], kv[0]))[:depth]


def fuse(lexical: Mapping[str, float], semantic: Mapping[str, float], mode: str, method: str = "score",
         rrf_k: int = 60, depth: int = 100) -> dict[str, float]:
    """One relevance in 0..1 per path from the lexical and the semantic rankings.

    lexical: BM25F / best BM25F (the top hit is 1.0); semantic: cosine similarities of every
    memory that passed the filters (all of them: the median needs them).

    semantic: `semantic_relevance` (cosine rescaled between the median and the best) for
      the top `depth` by cosine.
    hybrid, score (default): 0.5 * lexical + 0.5 * semantic_relevance, for paths in either
      top `depth` list, divided by the best sum so the top hit is 1.0.
    hybrid, rrf: sum over both lists of 1 / (rrf_k + rank), rank from 1, over the
      top `depth` of each list, divided by the best sum, so the top hit is 1.0.
    """
    top_sem = top_by_value(semantic, depth)
    if mode == "semantic" or method == "score":
        scale = semantic_scale(semantic)
    if mode == "semantic":
        return {p: scale(s) for p, s in top_sem}
    top_lex = top_by_value(lexical, depth)
    fused: dict[str, float] = {}
    if method == "score":
        for p in {p for p, _ in top_lex} | {p for p, _ in top_sem}:
            fused[p] = 0.5 * lexical.get(p, 0.0) + 0.5 * (scale(semantic[p]) if p in semantic else 0.0)
    else:
        for ranking in (top_lex, top_sem):
            for n, (p, _score) in enumerate(ranking, 1):
                fused[p] = fused.get(p, 0.0) + 1.0 / (rrf_k + n)
    best = max(fused.values(), default=0.0) or 1.0
    return {p: v / best for p, v in fused.items()}


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B| over lower-cased tags; 0 when both are empty."""
    sa, sb = {x.lower() for x in a}, {x.lower() for x in b}
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def is_cross_domain(memory_tags: Sequence[str], context_tags: Sequence[str], settings: Settings) -> bool:
    """Used outside its usual context: tag Jaccard below the threshold (both sides tagged)."""
    if not memory_tags or not context_tags:
        return False
    return jaccard(memory_tags, context_tags) < settings.cross_domain_threshold


def review_priority(score: float, settings: Settings) -> float:
    """0 outside the danger zone (0.15-0.35); inside, 1 at its centre falling linearly to 0 at its edges."""
    lo, hi = settings.review_danger_zone_min, settings.review_danger_zone_max
    if not lo <= score <= hi or hi <= lo:
        return 0.0
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    return max(0.0, 1.0 - abs(score - centre) / half)


def decay_urgency(score: float, settings: Settings) -> str:
    """The DecayAnalyzer's urgency: high below the zone, medium in its lower, low in its upper half."""
    lo, hi = settings.review_danger_zone_min, settings.review_danger_zone_max
    if score < lo:
        return "high"
    return "medium" if score < (lo + hi) / 2 + 1e-12 else "low"


def promotion_reason(score: float, use_count: int, created: dt.datetime, now: dt.datetime,
                     settings: Settings) -> str | None:
    """Why a memory qualifies for promotion, or None.

    score >= promote_threshold counts only once the memory was used again (use_count >= 1):
    a brand-new memory scores its strength (>= 1.0) and must not qualify just for being new.
    """
    if use_count >= 1 and score >= settings.promote_threshold:
        return f"High score ({score:.2f} >= {settings.promote_threshold:g})"
    window = settings.promote_time_window_days
    if use_count >= settings.promote_use_count and days_between(created, now) <= window:
        return f"Frequent use ({use_count} >= {settings.promote_use_count} uses within {window:g} days)"
    return None


def access_history(current: Record, now: dt.datetime, settings: Settings) -> list[dt.datetime]:
    """The note's `access_times` with `now` appended, the most recent `access_history_size` kept."""
    times = [parse_time(v) for v in _access_list(current.props)]
    kept = sorted(t for t in times if t is not None)
    kept.append(now)
    return kept[-settings.access_history_size:]


def access_changes(current: Record, now: dt.datetime, settings: Settings) -> dict[str, Any]:
    """`access_times` to write on a use: only under the actr model, the one that reads it.

    Other models need only use_count and last_used, so their notes stay free of the list;
    switching to actr later works from use_count, created and last_used (older uses are
    approximated, see decay.actr_activation) and the list fills from then on.
    """
    if settings.decay_model != "actr":
        return {}
    return {"access_times": access_history(current, now, settings)}


def column_score(use_count: int | None, last_used: float | None, strength: float | None,
                 memory_type: str | None, pinned: Any, now_ts: float, settings: Settings) -> float:
    """`decay.score` from catalog columns (a timestamp, no datetimes), for every model but
    actr, which reads a note's access history. Many memories at once: `column_scorer`."""
    age_s = now_ts - last_used if last_used is not None else 0.0
    factor = 1.0 if decay.is_immune(memory_type, bool(pinned)) else decay.decay_factor(age_s, settings)
    return (max(0, use_count or 0) + 1) ** settings.decay_beta * factor * (strength if strength is not None else 1.0)


def column_scorer(now_ts: float, settings: Settings) -> Callable[
        [int | None, float | None, float | None, str | None, Any], float]:
    """`column_score` at `now_ts` as one function of a memory's columns (use_count, last_used,
    strength, memory_type, pinned), the model's constants worked out once, for scoring many
    memories (`stats` scores every one, a search its 100 candidates). The same floats."""
    factor_at, beta, immune = decay.decay_of_age(settings), settings.decay_beta, decay.IMMUNE_TYPES

    def score(use_count: int | None, last_used: float | None, strength: float | None,
              memory_type: str | None, pinned: Any) -> float:
        if pinned or (memory_type and memory_type.lower() in immune):  # decay.is_immune
            factor = 1.0
        else:
            factor = factor_at(now_ts - last_used if last_used is not None else 0.0)
        return (max(0, use_count or 0) + 1) ** beta * factor * (strength if strength is not None else 1.0)

    return score


def sql_score(now_ts: float, settings: Settings) -> tuple[str, dict[str, float]] | None:
    """`column_score` at `now_ts` as an SQL expression over the catalog's columns and its
    parameters, for SQLite to score a whole vault (`stats`), faster than a row at a time
    in Python. The same floats: SQLite's pow and exp are the
    C library's, as Python's are, and each product is taken in the same order
    (tests/test_decay.py holds them to the bit). SQLite's lower() folds ASCII only; Python's
    lower() maps no other letter into the immune types' words. None under actr, which reads
    each note's access history."""
    model = settings.decay_model
    if model == "actr":
        return None
    params = {"beta": settings.decay_beta, "now": now_ts}
    age = "max(0.0, coalesce(:now - last_used, 0.0))"
    if model == "exponential":
        factor = f"exp(:neg_lam * {age})"
        params["neg_lam"] = -settings.decay_lambda
    elif model == "two_component":
        weight = settings.tc_fast_weight
        factor = f"(:fast_w * exp(:neg_fast * {age}) + :slow_w * exp(:neg_slow * {age}))"
        params.update(fast_w=weight, slow_w=1 - weight, neg_fast=-settings.tc_lambda_fast,
                      neg_slow=-settings.tc_lambda_slow)
    else:  # power_law, as decay.decay_of_age writes it
        alpha = settings.pl_alpha
        factor = f"pow(1 + {age} / :t0, :neg_alpha)"
        params.update(t0=settings.pl_halflife_days * decay.DAY / (2 ** (1 / alpha) - 1), neg_alpha=-alpha)
    immune = ", ".join(f"'{t}'" for t in sorted(decay.IMMUNE_TYPES))
    return (f"pow(max(coalesce(use_count, 0), 0) + 1, :beta)"
            f" * (CASE WHEN coalesce(pinned, 0) != 0 OR lower(memory_type) IN ({immune}) THEN 1.0 ELSE {factor} END)"
            f" * coalesce(strength, 1.0)"), params


def record_score(rec: Record, now: dt.datetime, settings: Settings) -> float:
    """A catalog record's decay score under the configured model (`decay.score`; outside
    actr straight from the catalog's timestamp, without building datetimes: a search scores
    up to 100 candidates)."""
    if settings.decay_model != "actr":
        return column_score(rec.use_count, rec.last_used, rec.strength, rec.memory_type, rec.pinned,
                            now.timestamp(), settings)
    return decay.score(
        use_count=rec.use_count, last_used=rec.last_used_dt or now, strength=rec.strength, now=now,
        settings=settings, memory_type=rec.memory_type, pinned=rec.pinned,
        created=rec.created_dt, access_times=_access_list(rec.props), urgency=_urgency(rec.props),
    )


def record_activation(rec: Record, now: dt.datetime, settings: Settings) -> float:
    """ACT-R activation of a record (whatever the configured model)."""
    rate, baseline = decay.actr_params(_urgency(rec.props), settings)
    last_used = rec.last_used_dt or now
    return decay.actr_activation(
        created=rec.created_dt or last_used, last_used=last_used, use_count=rec.use_count,
        access_times=_access_list(rec.props), now=now, rate=rate, baseline=baseline,
        unit_s=settings.actr_time_unit_s,
    )


def _access_list(props: dict[str, Any]) -> list[Any]:
    raw = props.get("access_times")
    return list(raw) if isinstance(raw, list) else notes.as_list(raw)


def _urgency(props: dict[str, Any]) -> str | None:
    value = props.get("urgency")
    return value if isinstance(value, str) else None


def decay_curve(settings: Settings, days: Sequence[float] = CURVE_DAYS, use_count: int = 0,
                strength: float = 1.0) -> dict[str, Any]:
    """One memory's score over time under every model (last used at day 0, never again)."""
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = []
    for d in days:
        now = start + dt.timedelta(days=d)
        row: dict[str, Any] = {"day": d}
        for model in DECAY_MODELS:
            s = dataclasses.replace(settings, decay_model=model)
            row[model] = round(decay.score(use_count=use_count, last_used=start, strength=strength,
                                           now=now, settings=s, created=start), 6)
        rows.append(row)
    return {"success": True, "models": list(DECAY_MODELS), "use_count": use_count,
            "strength": strength, "rows": rows}


# -- review candidates in search ---------------------------------------------------------------------


def blend_review_candidates(ranked: list[tuple[Record, float, float | None, float]], top_k: int,
                            settings: Settings) -> list[tuple[Record, float, float | None, float, bool]]:
    """The top_k results with due review candidates blended in, each flagged.

    Review candidates are matches ranked below top_k whose score is in the danger zone
    (0.15-0.35): they take every ~1/review_blend_ratio-th slot (3rd, 6th, 9th at 0.3),
    highest review priority first, so relevant memories about to be forgotten surface.
    A candidate only takes the place of a result that matches the query no better than it
    does (relevance), so the blend never hides a better match (a fading memory that matches
    as well as a fresh one still surfaces: its decay, not its match, ranked it lower).
    """
    primary = [(*r, False) for r in ranked[:top_k]]
    n_review = int(round(top_k * settings.review_blend_ratio))
    if n_review <= 0 or len(ranked) <= top_k:
        return primary
    due = [(review_priority(r[1], settings), i, r) for i, r in enumerate(ranked[top_k:])]
    due = [d for d in due if d[0] > 0]
    due.sort(key=lambda d: (-d[0], d[1]))
    relevance = lambda r: r[2] or 0.0  # noqa: E731
    # the results a candidate may replace: the lowest-ranked n_review, least relevant first
    tail = sorted(range(max(0, top_k - n_review), top_k), key=lambda i: (relevance(primary[i]), -i))
    review, dropped = [], set()
    for _priority, _i, cand in due[:n_review]:
        weakest = next((i for i in tail if i not in dropped), None)
        if weakest is not None and relevance(primary[weakest]) <= relevance(cand):
            dropped.add(weakest)
            review.append((*cand, True))
    if not review:
        return primary
    keep = [p for i, p in enumerate(primary) if i not in dropped]
    step = max(2, int(round(1 / settings.review_blend_ratio))) if settings.review_blend_ratio > 0 else top_k + 1
    out: list[tuple[Record, float, float | None, float, bool]] = []
    while keep or review:
        if review and (len(out) + 1) % step == 0 or not keep:
            out.append(review.pop(0))
        else:
            out.append(keep.pop(0))
    return out[:top_k]


