"""Multi-signal recall (Mnemosyne's `memory_recall`) over the vault's BM25F index.

    score = sum(weight[intent][signal] * signal)            each signal in [0, 1]
          * FADING_PENALTY when the memory is fading
    then diversity re-ranking (greedy, see `diversify`) and the min_score cut.

Every weight, threshold and table lives in this module's constants, documented in
docs/mnemosyne.md. Functions here are pure (they take `now`); `recall()` at the bottom is the
one that reads the index and records the access.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vaultmem.base.timeutil import days_between, format_time, parse_time
from vaultmem.core.model import visible_to
from vaultmem.core.port import MemoryCore
from vaultmem.storage import note as notes
from vaultmem.storage.links import JSON_VALUES

if TYPE_CHECKING:
    from vaultmem.storage.record import Record

# -- the one weight table ----------------------------------------------------------------------

SIGNALS = ("similarity", "recency", "importance", "frequency", "type_relevance")

# intent -> weight of each signal (same order as SIGNALS); every row sums to 1.0.
# "general" (no intent cue in the query) is the seed's base weighting.
WEIGHTS: dict[str, tuple[float, float, float, float, float]] = {
    #               similarity recency importance frequency type
    "general":     (0.40, 0.20, 0.20, 0.10, 0.10),  # seed base weights
    "factual":     (0.50, 0.15, 0.15, 0.10, 0.10),  # similarity raised to 50%
    "temporal":    (0.30, 0.35, 0.15, 0.10, 0.10),  # recency raised to 35%
    "procedural":  (0.30, 0.10, 0.15, 0.30, 0.15),  # frequency +20 points, procedural type counts more
    "preference":  (0.30, 0.15, 0.15, 0.10, 0.30),  # type relevance +20 points
    "exploratory": (0.20, 0.20, 0.20, 0.20, 0.20),  # balanced
    "diagnostic":  (0.40, 0.30, 0.15, 0.05, 0.10),  # what broke lately: similarity, then recency
    "comparative": (0.50, 0.10, 0.20, 0.05, 0.15),  # both sides must match: similarity first
    "relational":  (0.40, 0.10, 0.15, 0.10, 0.25),  # relationship/profile memories count more
}
INTENTS = tuple(WEIGHTS)

# intent -> memory_type -> type relevance; types not listed get DEFAULT_TYPE_RELEVANCE.
DEFAULT_TYPE_RELEVANCE = 0.5
TYPE_RELEVANCE: dict[str, dict[str, float]] = {
    "factual": {"semantic": 1.0, "core": 0.9, "profile": 0.7, "relationship": 0.6},
    "temporal": {"episodic": 1.0, "core": 0.5, "semantic": 0.4, "procedural": 0.3, "preference": 0.3},
    "procedural": {"procedural": 1.0, "core": 0.7, "semantic": 0.4, "episodic": 0.3, "preference": 0.3},
    "preference": {"preference": 1.0, "profile": 0.7, "core": 0.6, "episodic": 0.3, "procedural": 0.3},
    "diagnostic": {"episodic": 0.9, "procedural": 0.8, "semantic": 0.7, "core": 0.7, "preference": 0.3},
    "comparative": {"semantic": 0.9, "preference": 0.8, "core": 0.7},
    "relational": {"relationship": 1.0, "profile": 0.8, "semantic": 0.6},
    "exploratory": {},
    "general": {"core": 0.6},
}

# Intent cues, tried in this order; the first intent with a cue wins.
INTENT_PATTERNS: tuple[tuple[str, str], ...] = (
    ("procedural", r"\bhow (?:do|to|can|should|would)\b|\bsteps?\b|\bprocedures?\b|\brunbook\b|\binstructions?\b"
                   r"|\bguide\b|\bworkflow\b|\bprocess (?:for|to)\b"),
    ("diagnostic", r"\bwhy\b|\berrors?\b|\bfail(?:s|ed|ing|ure)?\b|\bbroken?\b|\bcrash(?:es|ed)?\b|\bdebug\w*"
                   r"|\bnot working\b|\bbugs?\b|\bissues?\b|\btimeouts?\b|\bexceptions?\b"),
    ("temporal", r"\bwhen\b|\blast (?:time|week|month|deploy\w*)\b|\brecent(?:ly)?\b|\byesterday\b|\btoday\b"
                 r"|\bago\b|\blatest\b|\bchanged?\b|\bsince\b|\bhistory\b|\btimeline\b"),
    ("comparative", r"\bvs\.?\b|\bversus\b|\bcompar\w*|\bdifferences?\b|\bbetter than\b|\bworse than\b"
                    r"|\bpros and cons\b|\binstead of\b"),
    ("relational", r"\bwho\b|\brelat(?:ed|ion|ionship)s?\b|\bworks? with\b|\breports? to\b|\bconnect(?:ed|s|ion)\b"
                   r"|\bdepends? on\b|\bdependenc\w*|\bbetween\b|\bteam\b"),
    ("preference", r"\bprefer\w*|\bfavou?rite\b|\blikes?\b|\bdislikes?\b|\bwants?\b|\bstyle\b|\busually\b"
                   r"|\bopinion\b|\bchoice\b"),
    ("exploratory", r"\btell me about\b|\banything\b|\beverything\b|\boverview\b|\bexplore\b|\bbrainstorm\b"
                    r"|\bideas?\b|\bwhat do (?:we|you|i) know\b"),
    ("factual", r"\bwhat(?:'s| is| are| was)\b|\bwhich\b|\bwhere\b|\bport\b|\bversion\b|\baddress\b"
                r"|\bdefin\w*|\bname of\b|\bhow many\b|\bhow much\b"),
)
_INTENT_RES = tuple((intent, re.compile(pattern, re.I)) for intent, pattern in INTENT_PATTERNS)

# -- signal constants ----------------------------------------------------------------------------

RECENCY_HALF_LIFE_DAYS = 7.0  # recency = 0.5 ** (days since last use / 7)
FREQUENCY_CAP = 20  # frequency = log(1 + uses) / log(1 + 20), capped at 1
DEFAULT_IMPORTANCE = 0.5  # when a note has neither `importance` nor `priority_score`
FADING_PENALTY = 0.7  # a fading memory keeps 70% of its score

# -- confidence (seed: retrieval quality 50%, cross-agent agreement 30%, source trust 20%) -----

CONFIDENCE_WEIGHTS = (0.5, 0.3, 0.2)
AGREEMENT_AGENTS = 3  # agreement = min(1, agents holding the fact / 3)
SOURCE_TRUST = {"manual": 0.9, "user": 0.9, "cli": 0.9, "mcp": 0.8, "chat": 0.8, "block": 1.0,
                "auto-capture": 0.5, "consolidation": 0.8, "synthesis": 0.9}
DEFAULT_SOURCE_TRUST = 0.7
DIRECT_QUALITY = 0.9  # an explicitly stored memory
CAPTURED_QUALITY = 0.6  # a memory auto-captured from a transcript
CONFIDENCE_TAGS = ((0.85, "Mesh Fact"), (0.65, "Grounded"), (0.40, "Inferred"), (0.0, "Uncertain"))
DEFAULT_CONFIDENCE = 0.73  # a note without `confidence`: a direct single-agent store (0.9, 1/3, 0.9)

# -- diversity re-ranking ----------------------------------------------------------------------------

CLUSTER_SIMILARITY = 0.9  # > 0.9 to an already selected result: same cluster
CLUSTER_PENALTY = 0.40  # ... -40%
OVERLAP_SIMILARITY = 0.8  # > 0.8 to an already selected result: overlap
OVERLAP_PENALTY = 0.15  # ... -15%
TYPE_QUOTA = 3  # after 3 results of one type,
TYPE_PENALTY = 0.05  # each further one of that type -5% (cumulative: 4th -5%, 5th -10%, ...)

CANDIDATES = 50  # BM25F candidates scored per recall (at least 10 x limit)
MAX_LIMIT = 100


# -- text similarity shared by recall, forget, dedup and awareness ---------------------------------


@functools.lru_cache(maxsize=4096)
def terms(text: str) -> frozenset[str]:
    """The stemmed, stop-worded words of a text (the index's own analyzer)."""
    from vaultmem.storage.fulltext.analysis import analyzer

    return frozenset(t.text for t in analyzer()(text or ""))


def term_cosine(a: str, b: str) -> float:
    """|A & B| / sqrt(|A| |B|) over the two texts' word sets: 1.0 = same words, 0.0 = none shared."""
    ta, tb = terms(a), terms(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / math.sqrt(len(ta) * len(tb))


def coverage(query: str, text: str) -> float:
    """Share of the query's words the text contains."""
    tq = terms(query)
    if not tq:
        return 0.0
    return len(tq & terms(text)) / len(tq)


# -- intent ------------------------------------------------------------------------------------


def detect_intent(query: str) -> str:
    """The query's intent: the first of INTENT_PATTERNS with a cue, else "general"."""
    for intent, pattern in _INTENT_RES:
        if pattern.search(query or ""):
            return intent
    return "general"


def weights_for(intent: str) -> dict[str, float]:
    return dict(zip(SIGNALS, WEIGHTS[intent], strict=True))


# -- signals -----------------------------------------------------------------------------------


def similarity(bm25: float, best_bm25: float, query_coverage: float) -> float:
    """BM25F relative to the best hit, times the share of query words matched: in [0, 1]."""
    if best_bm25 <= 0:
        return 0.0
    return max(0.0, min(1.0, bm25 / best_bm25)) * max(0.0, min(1.0, query_coverage))


def recency(last_used: dt.datetime, now: dt.datetime) -> float:
    return 0.5 ** (days_between(last_used, now) / RECENCY_HALF_LIFE_DAYS)


def frequency(use_count: int) -> float:
    return min(1.0, math.log1p(max(0, use_count)) / math.log1p(FREQUENCY_CAP))


def importance_of(props: Mapping[str, Any]) -> float:
    """`importance` (0-1), else `priority_score`, else 0.5."""
    for key in ("importance", "priority_score"):
        value = props.get(key)
        if value is not None and not isinstance(value, bool):
            return max(0.0, min(1.0, notes.as_number(value, DEFAULT_IMPORTANCE)))
    return DEFAULT_IMPORTANCE


def confidence_of(props: Mapping[str, Any]) -> float:
    value = props.get("confidence")
    if value is None or isinstance(value, bool):
        return DEFAULT_CONFIDENCE
    return max(0.0, min(1.0, notes.as_number(value, DEFAULT_CONFIDENCE)))


def type_relevance(intent: str, memory_type: str | None) -> float:
    return TYPE_RELEVANCE.get(intent, {}).get((memory_type or "").lower(), DEFAULT_TYPE_RELEVANCE)


def composite(signals: Mapping[str, float], intent: str, fading: bool = False) -> float:
    """The intent's weighted sum of the signals, times FADING_PENALTY when fading. Recency,
    importance, frequency and type count in proportion to the similarity: they order memories
    that answer the query, they cannot lift one that does not (a memory that shares one word
    with the query, however fresh and used, stays below an exact match, and below minScore)."""
    sim = signals["similarity"]
    total = sum(w * (signals[name] if name == "similarity" else sim * signals[name])
                for name, w in zip(SIGNALS, WEIGHTS[intent], strict=True))
    return total * (FADING_PENALTY if fading else 1.0)


def confidence_score(quality: float, agents: int, source: str | None) -> float:
    """0.5 retrieval quality + 0.3 cross-agent agreement + 0.2 source trust, in [0, 1]."""
    agreement = min(1.0, max(0, agents) / AGREEMENT_AGENTS)
    trust = SOURCE_TRUST.get((source or "").lower(), DEFAULT_SOURCE_TRUST)
    wq, wa, wt = CONFIDENCE_WEIGHTS
    return round(wq * quality + wa * agreement + wt * trust, 4)


def confidence_tag(score: float) -> str:
    for threshold, tag in CONFIDENCE_TAGS:
        if score >= threshold:
            return tag
    return "Uncertain"


def decay_status(rec: Record, now: dt.datetime, settings: Any) -> str:
    """The seed's decay status from ACT-R activation (lifecycle): active >= -2, fading, archived < -4.

    "archived" (excluded from recall) means in the archive folder, where gc puts memories
    that decayed. A memory whose activation fell below -4 but that gc has not moved is
    reported "fading" (penalised, still found): otherwise every memory unused for a month
    would vanish from recall before anyone decided to archive it. Procedural, core and
    pinned memories never decay, so they are always active.
    """
    from vaultmem.core import decay, scoring

    if rec.status == "archived":
        return "archived"
    if decay.is_immune(rec.memory_type, rec.pinned):
        return "active"
    status = decay.activation_status(scoring.record_activation(rec, now, settings), settings)
    return "fading" if status == "archived" else status


# -- diversity ---------------------------------------------------------------------------------


def diversify(items: Sequence[dict[str, Any]], similar: Any) -> list[dict[str, Any]]:
    """Greedy re-ranking: pick the best adjusted score, penalise the rest against the picks.

    items: dicts with "score", "text", "memoryType"; similar(a, b) -> [0, 1] on texts.
    Against everything already picked: max similarity > 0.9 -> -40% (cluster), > 0.8 -> -15%
    (overlap); and when 3 or more of the item's type were picked, -5% per extra one. Each item
    gets "score" replaced by its adjusted score and "penalties" listing what applied.
    """
    remaining = [dict(item, base_score=item["score"]) for item in items]
    picked: list[dict[str, Any]] = []
    while remaining:
        best_i, best_score, best_pen = 0, -1.0, []
        for i, item in enumerate(remaining):
            factor, penalties = 1.0, []
            top = max((similar(item["text"], p["text"]) for p in picked), default=0.0)
            if top > CLUSTER_SIMILARITY:
                factor *= 1 - CLUSTER_PENALTY
                penalties.append("cluster")
            elif top > OVERLAP_SIMILARITY:
                factor *= 1 - OVERLAP_PENALTY
                penalties.append("overlap")
            same = sum(1 for p in picked if p.get("memoryType") == item.get("memoryType"))
            if same >= TYPE_QUOTA:
                factor *= max(0.0, 1 - TYPE_PENALTY * (same - TYPE_QUOTA + 1))
                penalties.append("type")
            score = item["base_score"] * factor
            if score > best_score:
                best_i, best_score, best_pen = i, score, penalties
        chosen = remaining.pop(best_i)
        chosen["score"] = best_score
        chosen["penalties"] = best_pen
        picked.append(chosen)
    for item in picked:
        item.pop("base_score", None)
    return picked


# -- graph: linked memories, reasoning chains, graph context -----------------------------------

CHAIN_DEPTH = 2
GRAPH_CONTEXT_MAX = 10
CHAIN_TEXT_CHARS = 60
UNTYPED = "links_to"
ASSOCIATIVE = frozenset({"related", "related_to"})
# relation type -> how the chain reads it ("A -> because -> B"); the seed's own types read as written.
RELATION_PHRASES = {"causes": "leads to", "leads_to": "leads to", "supports": "supports", "because": "because",
                    "therefore": "therefore", "contradicts": "contradicts", "related": "related to",
                    "related_to": "related to", "has_decision": "decided", "consolidated_from": "consolidated from"}


def _edges_from(store: MemoryCore, paths: Sequence[str]) -> list[tuple[str, str, str]]:
    """(src, type, dst) of resolved links leaving or entering `paths`, between live memories."""
    if not paths:
        return []
    sql = ("SELECT l.src, l.type, l.dst FROM links l JOIN notes a ON a.path = l.src JOIN notes b ON b.path = l.dst"
           f" WHERE (l.src IN ({JSON_VALUES}) OR l.dst IN ({JSON_VALUES})) AND l.src != l.dst"
           " AND a.kind = 'memory' AND b.kind = 'memory' AND a.status != 'deleted' AND b.status != 'deleted'"
           " ORDER BY l.src, l.pos")
    try:
        return list(store.index.db.execute(sql, [json.dumps(list(paths))] * 2))
    except Exception as exc:  # an index without the graph's links table: no graph features
        import sqlite3

        if isinstance(exc, sqlite3.OperationalError):
            return []
        raise


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= CHAIN_TEXT_CHARS else flat[: CHAIN_TEXT_CHARS - 1] + "…"


def reasoning_chain(start: str, outgoing: Mapping[str, list[tuple[str, str]]], texts: Mapping[str, str],
                    depth: int = CHAIN_DEPTH) -> str | None:
    """The longest typed path from `start` (depth <= 2, no cycles), read as "A -> because -> B".

    A path made only of associative links (`related`, e.g. store's similarity auto-links)
    explains nothing, so it is not a chain: at least one step must be another relation.
    """
    best: list[tuple[str, str]] = []

    def walk(node: str, path: list[tuple[str, str]], seen: set[str]) -> None:
        nonlocal best
        if len(path) > len(best) and any(rel not in ASSOCIATIVE for rel, _ in path):
            best = list(path)
        if len(path) >= depth:
            return
        for rel, dst in outgoing.get(node, ()):
            if dst not in seen:
                walk(dst, [*path, (rel, dst)], seen | {dst})

    walk(start, [], {start})
    if not best:
        return None
    parts = [_short(texts.get(start, start))]
    for rel, dst in best:
        parts += [RELATION_PHRASES.get(rel, rel.replace("_", " ")), _short(texts.get(dst, dst))]
    return " -> ".join(parts)


def enrich_with_graph(store: MemoryCore, results: list[dict[str, Any]]) -> None:
    """Set linkedMemories, reasoningChain (typed links, depth 2) and graphContext in place."""
    paths = [r["path"] for r in results]
    first = _edges_from(store, paths)
    second_hop = sorted({dst for src, typ, dst in first if typ != UNTYPED and src in paths} - set(paths))
    edges = first + [e for e in _edges_from(store, second_hop) if e[0] in second_hop]
    involved = sorted({p for e in edges for p in (e[0], e[2])} | set(paths))
    recs = store.index.by_paths(involved)
    texts = {p: r.content for p, r in recs.items()}
    outgoing: dict[str, list[tuple[str, str]]] = {}
    for src, typ, dst in edges:
        if typ != UNTYPED and (typ, dst) not in outgoing.get(src, []):
            outgoing.setdefault(src, []).append((typ, dst))
    for r in results:
        neighbours = []
        for src, _typ, dst in first:
            other = dst if src == r["path"] else src if dst == r["path"] else None
            if other and other not in neighbours:
                neighbours.append(other)
        r["linkedMemories"] = [recs[p].id for p in neighbours if p in recs and recs[p].id]
        chain = reasoning_chain(r["path"], outgoing, texts)
        if chain:
            r["reasoningChain"] = chain
        own = {e.lower() for e in r["entities"]}
        context: list[str] = []
        for p in neighbours:
            for ent in recs[p].entities if p in recs else ():
                if ent.lower() not in own and ent not in context:
                    context.append(ent)
        if context:
            r["graphContext"] = context[:GRAPH_CONTEXT_MAX]


# -- recall ------------------------------------------------------------------------------------


def event_time_of(rec: Record, naive_zone: dt.tzinfo | None = dt.timezone.utc) -> str | None:
    """When it happened: `event_time` (a time typed without a zone is in `naive_zone`), else created."""
    parsed = parse_time(rec.props.get("event_time"), naive_zone)
    if parsed is not None:
        return format_time(parsed)
    return format_time(rec.created_dt) if rec.created_dt else None


def recall(store: MemoryCore, query: str, *, limit: int = 5, min_score: float = 0.3,
           agent: str | None = None, only_agent: str | None = None, record_access: bool = True,
           types: Iterable[str] | None = None, remember: bool = True) -> dict[str, Any]:
    """Mnemosyne's memory_recall: ranked memories with scores, confidence tags, decay status.

    only_agent restricts to one agent's memories (memory_toma); types to some memory types
    (skills). record_access=False for read-only lookups (toma, gap analysis); remember=False
    keeps the feedback target (the last recall) unchanged.
    """
    from vaultmem.base.errors import InvalidInput

    query = (query or "").strip()
    if not query:
        raise InvalidInput("query is empty; pass what to recall")
    if len(query) > 2000:
        raise InvalidInput(f"query is {len(query)} characters; keep it under 2000")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    if not 0.0 <= min_score <= 1.0:
        raise InvalidInput(f"min_score must be between 0.0 and 1.0, got {min_score}")
    store.sync()
    now = store.now()
    routed = agent_query(store, query) if only_agent is None else None
    search_text = query
    if routed is not None:  # the seed's agent-awareness auto-detection: scope to that agent
        only_agent, search_text = routed
    intent = detect_intent(search_text)
    wanted_types = {t.lower() for t in types} if types else None
    hits, _complete = store.index.search(_plain(search_text), kinds=("memory",), statuses=("active", "promoted"),
                                         limit=max(CANDIDATES, limit * 10))
    records = store.index.by_paths([p for p, _ in hits])
    best = hits[0][1] if hits else 0.0
    scored = []
    for path, bm25 in hits:
        rec = records.get(path)
        if rec is None or not visible_to(rec, agent):
            continue
        if only_agent is not None and rec.agent != only_agent:
            continue
        if wanted_types is not None and (rec.memory_type or "").lower() not in wanted_types:
            continue
        dstatus = decay_status(rec, now, store.settings)
        if dstatus == "archived":
            continue
        signals = {
            "similarity": similarity(bm25, best, coverage(search_text, f"{rec.content} {' '.join(rec.entities)} "
                                                                 f"{' '.join(rec.tags)}")),
            "recency": recency(rec.last_used_dt or now, now),
            "importance": importance_of(rec.props) * confidence_of(rec.props),
            "frequency": frequency(rec.use_count),
            "type_relevance": type_relevance(intent, rec.memory_type),
        }
        scored.append((rec, signals, dstatus, composite(signals, intent, dstatus == "fading")))
    scored.sort(key=lambda item: (-item[3], item[0].path))
    by_id = {}
    items = []
    for rec, signals, dstatus, score in scored[: max(limit * 4, 20)]:
        by_id[rec.id] = rec
        conf = confidence_of(rec.props)
        items.append({
            "id": rec.id,
            "text": rec.content,
            "score": score,
            "confidenceTag": confidence_tag(conf),
            "confidenceScore": round(conf, 4),
            "memoryType": rec.memory_type or "semantic",
            "entities": rec.entities,
            "linkedMemories": [],
            "decayStatus": dstatus,
            "eventTime": event_time_of(rec, store.settings.naive_zone),
            "botId": rec.agent,
            "shortId": (rec.id or "")[:8],
            "path": rec.path,
            "signals": {k: round(v, 4) for k, v in signals.items()},
        })
    ranked = diversify(items, term_cosine)
    results = [r for r in ranked if r["score"] >= min_score][:limit]
    for r in results:
        r["score"] = round(r["score"], 4)
    enrich_with_graph(store, results)
    if record_access and results:
        from vaultmem.core.scoring import access_changes

        store.modify_many([by_id[r["id"]] for r in results],
                          lambda cur: {"use_count": cur.use_count + 1, "last_used": now,
                                       **access_changes(cur, now, store.settings)},
                          skip_foreign=True)
    if remember:
        from vaultmem.features.mnemosyne import feedback

        feedback.remember_recall(store, [r["id"] for r in results], query, agent)
    out = {"query": query, "intent": intent, "weights": weights_for(intent), "count": len(results),
           "results": results}
    if routed is not None:
        out["agentAwareness"] = {"agentId": routed[0], "topic": routed[1]}
    return out


_AGENT_QUERY = re.compile(
    r"\bwhat (?:does|did|do) (?:the )?([\w.-]+)(?:[ -](agent|bot))? (?:know|remember|think)s? (?:about|of|on) (.+)",
    re.I)


def agent_query(store: MemoryCore, query: str) -> tuple[str, str] | None:
    """(agent, topic) when a query asks what a known agent knows ("what does the devops agent know about X")."""
    m = _AGENT_QUERY.search(query)
    if not m:
        return None
    name, suffix, topic = m.group(1), m.group(2), m.group(3).strip(" ?.!")
    candidates = [f"{name}-{suffix}", f"{name}_{suffix}", name] if suffix else [name]
    known = {a for (a,) in store.index.db.execute("SELECT DISTINCT agent FROM notes WHERE agent IS NOT NULL")}
    lowered = {a.lower(): a for a in known}
    for cand in candidates:
        if cand.lower() in lowered and _plain(topic):
            return lowered[cand.lower()], topic
    return None


def _plain(query: str) -> str:
    """The query as plain words: recall takes natural language, not Whoosh syntax."""
    return " ".join(re.findall(r"\w+(?:['’]\w+)*", query)).lower()
