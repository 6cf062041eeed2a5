"""Temporal contiguity: memories formed together are recalled together.

An episode is a run of memories of the same origin (the same `agent` and `source`: the
conversation id, tool or "manual" a client saves with; none is an origin too) created no
more than `contiguity_window_minutes` apart. A memory's neighbours are the
`contiguity_span` (2) memories just before and just after it in its episode (created
order; memories saved at the same instant have no order between them and are not
neighbours). Search moves the relevance of every memory it found
`contiguity_weight` of the way up to its best-matching neighbour's, never down:

    relevance' = relevance + contiguity_weight * max(0, best neighbour's relevance - relevance)

So the reply that matched one word of the question ("Love that purple color! For walking
or running?") climbs beside the turn that matched it well ("I bought new running shoes"),
the way recalling one moment of a conversation brings back the moments beside it (the
contiguity effect of human free recall; EM-LLM's contiguity buffer does the same for
agents). It reorders, never adds: a memory that matched nothing stays out. No memory rises
above its best neighbour, so the best match stays first, and equally good matches side by
side lend each other nothing. Measured on LoCoMo in docs/retrieval.md.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vaultmem.storage.index import Index
    from vaultmem.storage.record import Record

# (record, decay score, relevance, rank) as store.search ranks them
Ranked = tuple["Record", float, "float | None", float]
# (path, created, before, after): Index.neighbours, each side [(path, created)] nearest first
Neighbours = tuple[str, float, list[tuple[str, float]], list[tuple[str, float]]]


def pulls(relevance: dict[str, float], rows: Sequence[Neighbours], window_s: float) -> dict[str, float]:
    """Each memory's best neighbour relevance, from the memories in `relevance` (the rows
    give their neighbours). The episode ends at the first gap longer than window_s."""
    pull: dict[str, float] = {}
    for path, created, before, after in rows:
        own = relevance.get(path, 0.0)
        if own <= 0:
            continue
        for side in (before, after):
            last = created
            for other, at in side:
                if abs(at - last) > window_s:
                    break
                pull[other] = max(pull.get(other, 0.0), own)
                last = at
    return pull


def reachable(sources: Sequence[Ranked], ranked: Sequence[Ranked], reach_s: float) -> list[Ranked]:
    """The sources that can lift a memory found: one of the same origin, less relevant, created
    at another instant at most `reach_s` (span steps of the window) from it. The others'
    neighbours are not read: they would lift nothing, and with many memories of one origin
    most of a search's sources drop out before `Index.neighbours` reads them."""
    by_origin: dict[tuple[str | None, str | None], list[tuple[float, float]]] = {}
    for rec, _s, rel, _r in ranked:
        if rel and rec.created is not None:
            by_origin.setdefault((rec.agent, rec.source), []).append((rec.created, rel))
    for found in by_origin.values():
        found.sort()
    kept = []
    for source in sources:
        rec, rel = source[0], source[2] or 0.0
        found = by_origin.get((rec.agent, rec.source), [])
        if rec.created is None or len(found) < 2:
            continue
        at = rec.created
        start = bisect.bisect_left(found, (at - reach_s, -math.inf))
        stop = bisect.bisect_right(found, (at + reach_s, math.inf))
        if any(when != at and other < rel for when, other in found[start:stop]):
            kept.append(source)
    return kept


def spread(index: Index, ranked: Sequence[Ranked], *, weight: float, window_minutes: float,
           depth: int, top_k: int, rank: Callable[[float, float], float], span: int = 1) -> list[Ranked]:
    """`ranked` with contiguity applied (unsorted): it reorders the memories a search found
    and adds none (a memory that matched nothing stays out). Exact for the top_k: ranks only
    rise here and a lifted memory rises to at most its neighbour's relevance, so a memory
    less relevant than today's top_k-th rank (`floor`) cannot lift one into the top_k and
    does not pull; the rest pull, the `depth` most relevant of them."""
    if weight <= 0:
        return list(ranked)
    floor = heapq.nlargest(top_k, (r[3] for r in ranked))[-1] if len(ranked) >= top_k else 0.0
    sources = heapq.nlargest(depth, (r for r in ranked if r[2] and r[2] >= floor), key=lambda r: r[2] or 0.0)
    sources = reachable(sources, ranked, span * window_minutes * 60)
    if not sources:
        return list(ranked)
    pull = pulls({r[0].path: r[2] or 0.0 for r in sources}, index.neighbours([r[0].path for r in sources], span),
                 window_minutes * 60)
    out: list[Ranked] = []
    for rec, score, rel, old_rank in ranked:
        best = pull.get(rec.path, 0.0)
        if rel and best > rel:
            lifted = min(best, rel + weight * (best - rel))  # min: float rounding never lifts past best
            out.append((rec, score, lifted, rank(lifted, score)))
        else:
            out.append((rec, score, rel, old_rank))
    return out
