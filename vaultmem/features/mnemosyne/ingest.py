"""Mnemosyne's `memory_store` pipeline on the vault, on top of `MemoryStore.save`.

1. validate (importance 0-1, category one of the 7 types, eventTime ISO 8601, private needs an agent)
2. duplicate check: a live memory of the same agent with word-set cosine >= 0.92 ->
   status `duplicate` (nothing written); the same fact from another agent is stored (it
   corroborates: agreement, Mesh Facts). `save` refuses secrets -> `blocked_secret`
3. auto-link candidates: memories with cosine > 0.70 (up to 5), linked both ways through the
   `related` property (`"[[file-name]]"` wikilinks Obsidian shows in its graph)
4. confidence: 0.5 x quality (0.9 stored, 0.6 auto-captured) + 0.3 x agreement
   (agents holding a similar memory / 3) + 0.2 x source trust
5. write through `save` (entities, type, urgency, domain from enrichment), then the links.

Bi-temporal: `event_time` is when it happened (default: now), `ingested_at` when it was stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vaultmem.base.errors import InvalidInput, SecretBlocked
from vaultmem.base.timeutil import format_time, parse_time
from vaultmem.core.model import MEMORY_TYPES, visible_to
from vaultmem.core.port import MemoryCore
from vaultmem.features.mnemosyne import recall as R

if TYPE_CHECKING:
    from vaultmem.storage.record import Record

MAX_AUTO_LINKS = 5
CANDIDATE_POOL = 50
LINK_PROPERTY = "related"


def _similar(store: MemoryCore, text: str, agent: str | None) -> list[tuple[float, Record]]:
    """Live memories visible to the agent, by word-set cosine to `text`, best first."""
    plain = R._plain(text)
    if not plain:
        return []
    hits, _ = store.index.search(plain, kinds=("memory",), statuses=("active", "promoted"), limit=CANDIDATE_POOL)
    records = store.index.by_paths([p for p, _ in hits])
    scored = []
    for path, _bm25 in hits:
        rec = records.get(path)
        if rec is not None and visible_to(rec, agent):
            scored.append((R.term_cosine(text, rec.content), rec))
    scored.sort(key=lambda item: (-item[0], item[1].path))
    return scored


def _link(rec: Record) -> str:
    return f"[[{rec.path.rsplit('/', 1)[-1][:-3]}]]"


def store_memory(store: MemoryCore, text: str, *, importance: float | None = None, category: str | None = None,
                 event_time: str | None = None, agent: str | None = None, private: bool = False,
                 source: str | None = None, captured: bool = False) -> dict[str, Any]:
    """The seed's StoreResult (status, id, linkedCount, classification, memoryType, entities,
    priorityScore, confidenceTag) plus confidenceScore, eventTime, ingestedAt, linkedMemories, path."""
    store.vault.require()
    if importance is not None and not 0.0 <= importance <= 1.0:
        raise InvalidInput(f"importance must be between 0.0 and 1.0, got {importance}")
    if category is not None and category not in MEMORY_TYPES:
        raise InvalidInput(f"category must be one of {', '.join(MEMORY_TYPES)}, got {category!r}")
    when = None
    if event_time:
        when = parse_time(event_time)
        if when is None:
            raise InvalidInput(f"eventTime {event_time!r} is not ISO 8601; write it like 2024-01-15T10:00:00Z")
    if private and not agent:
        raise InvalidInput("a private memory needs an agent; pass --agent (or set VAULTMEM_AGENT)")
    from vaultmem.core.model import validate_content

    text = validate_content(text)
    store.sync()
    now = store.now()
    classification = "private" if private else "public"
    similar = _similar(store, text, agent)
    base = {"linkedCount": 0, "classification": classification, "memoryType": category or "semantic",
            "entities": [], "priorityScore": importance if importance is not None else R.DEFAULT_IMPORTANCE}
    # A near-identical memory of the same agent (save's detector, `duplicate_threshold`) is a
    # duplicate; the same fact from another agent is stored: independent holders make a Mesh Fact.
    own = store.find_duplicate(text, accept=lambda rec: (rec.agent or None) == agent and visible_to(rec, agent),
                               pool=CANDIDATE_POOL)
    if own is not None:
        dup, dup_similarity = own
        return {"status": "duplicate", **base, "memoryType": dup.memory_type or base["memoryType"],
                "entities": dup.entities, "confidenceTag": R.confidence_tag(R.confidence_of(dup.props)),
                "duplicateOf": dup.id, "similarity": round(dup_similarity, 4),
                "message": f"Near-duplicate of {(dup.id or '')[:8]}; nothing was stored"}
    # the seed's enableAutoLink and autoLinkThreshold
    threshold = store.settings.auto_link_threshold
    linked = [rec for score, rec in similar if score > threshold][:MAX_AUTO_LINKS] \
        if store.settings.enable_auto_link else []
    agents = {agent or ""} | {rec.agent or "" for score, rec in similar if score >= threshold}
    agents.discard("")
    source = source or ("auto-capture" if captured else "manual")
    confidence = R.confidence_score(R.CAPTURED_QUALITY if captured else R.DIRECT_QUALITY, max(1, len(agents)), source)
    meta: dict[str, Any] = {"event_time": when or now, "ingested_at": now, "confidence": confidence}
    if importance is not None:
        meta["importance"] = importance
        meta["priority_score"] = importance
    if private:
        meta["private"] = True
    if linked:
        meta[LINK_PROPERTY] = [_link(rec) for rec in linked]
    try:
        saved = store.save(text, source=source, meta=meta, memory_type=category, agent=agent, dedupe=False)
    except SecretBlocked as exc:
        return {"status": "blocked_secret", **base, "classification": "secret", "confidenceTag": "Uncertain",
                "message": str(exc)}
    if saved.get("status") == "duplicate":
        return {"status": "duplicate", **base, "confidenceTag": R.confidence_tag(confidence),
                "duplicateOf": saved["memory_id"], "message": saved.get("message", "")}
    rec = store.index.get(saved["path"])
    priority = importance if importance is not None else saved.get("priority")
    if priority is not None and importance is None and rec is not None:
        rec = store.modify(rec, lambda _cur: {"priority_score": priority})
    new_link = _link(rec) if rec is not None else None
    for target in linked:  # bidirectional: the older memory links back
        store.modify(target, lambda cur: {LINK_PROPERTY: _with_link(cur.props.get(LINK_PROPERTY), new_link)})
    return {
        "status": "created",
        "id": saved["memory_id"],
        "linkedCount": len(linked),
        "classification": classification,
        "memoryType": (rec.memory_type if rec is not None else None) or category or "semantic",
        "entities": rec.entities if rec is not None else [],
        "priorityScore": round(priority if priority is not None else R.DEFAULT_IMPORTANCE, 4),
        "confidenceTag": R.confidence_tag(confidence),
        "confidenceScore": confidence,
        "eventTime": format_time(when or now),
        "ingestedAt": format_time(now),
        "linkedMemories": [r.id for r in linked],
        "path": saved["path"],
    }


def _with_link(current: Any, link: str | None) -> list[str]:
    from vaultmem.storage.note import as_list

    links = as_list(current) if not isinstance(current, list) else [str(v) for v in current]
    if link and link not in links:
        links.append(link)
    return links
