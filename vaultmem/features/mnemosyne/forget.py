"""Soft delete (Mnemosyne's `memory_forget`) and restore.

Forgetting never touches the note's text: it sets `deleted: true` and `deleted_at`, which
the index reads as status "deleted", so every search, recall and lifecycle pass skips the
memory while the file stays where it is (Obsidian still shows it). `restore` sets
`deleted: false` and `restored_at`.

By query: candidates are scored with `term_cosine` (word overlap in both directions, so a
one-word query never scores high against a long note). Exactly one candidate above 0.9 is
forgotten at once; otherwise the ranked candidates come back for the caller to choose.
"""

from __future__ import annotations

from typing import Any

from vaultmem.base.errors import InvalidInput, NotFound
from vaultmem.core.model import visible_to
from vaultmem.core.port import MemoryCore
from vaultmem.features.mnemosyne.recall import _plain, term_cosine

AUTO_DELETE_SIMILARITY = 0.9
MAX_CANDIDATES = 5
CANDIDATE_POOL = 50
CANDIDATES_MESSAGE = "Multiple matches found. Specify memoryId to forget."


def forget(store: MemoryCore, memory_id: str | None = None, query: str | None = None,
           agent: str | None = None) -> dict[str, Any]:
    """ForgetConfirmation {status: deleted, id, text} or ForgetCandidates {status: candidates, ...}."""
    if not (memory_id or "").strip() and not (query or "").strip():
        raise InvalidInput("pass a memory id or --query; at least one of memoryId or query is required")
    store.sync()
    if memory_id and memory_id.strip():
        rec = store.resolve(memory_id)
        if rec.status == "deleted":
            short = (rec.id or "")[:8]
            raise NotFound(f"memory {short} is already forgotten; `vaultmem restore {short}` brings it back")
        return _delete(store, rec)
    text = (query or "").strip()
    if len(text) > 2000:
        raise InvalidInput(f"query is {len(text)} characters; keep it under 2000")
    hits, _ = store.index.search(_plain(text), kinds=("memory",), statuses=("active", "promoted", "archived"),
                                 limit=CANDIDATE_POOL)
    records = store.index.by_paths([p for p, _ in hits])
    scored = []
    for path, _bm25 in hits:
        found = records.get(path)
        if found is None or not visible_to(found, agent):
            continue
        rec = found
        scored.append((round(term_cosine(text, rec.content), 4), rec))
    scored.sort(key=lambda item: (-item[0], item[1].path))
    above = [item for item in scored if item[0] > AUTO_DELETE_SIMILARITY]
    if len(above) == 1:
        return _delete(store, above[0][1])
    matches = [{"id": rec.id, "text": rec.content, "score": score} for score, rec in scored[:MAX_CANDIDATES]]
    message = CANDIDATES_MESSAGE if matches else f"No memory matches {text!r}; nothing was forgotten."
    return {"status": "candidates", "matches": matches, "message": message}


def _delete(store: MemoryCore, rec: Any) -> dict[str, Any]:
    now = store.now()
    store.modify(rec, lambda _cur: {"deleted": True, "deleted_at": now})
    return {"status": "deleted", "id": rec.id, "text": rec.content, "path": rec.path}


def restore(store: MemoryCore, memory_id: str) -> dict[str, Any]:
    """Undo a forget: the memory is searchable again."""
    store.sync()
    rec = store.resolve(memory_id)
    if rec.status != "deleted":
        raise InvalidInput(f"memory {(rec.id or '')[:8]} is not forgotten; nothing to restore")
    now = store.now()
    updated = store.modify(rec, lambda _cur: {"deleted": False, "restored_at": now})
    return {"status": "restored", "id": updated.id, "text": updated.content, "path": updated.path,
            "memoryStatus": updated.status}
