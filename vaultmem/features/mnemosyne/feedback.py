"""Reinforcement from feedback (Mnemosyne's `memory_feedback`) and the last-recall state.

Each memory note counts `hit_count` (feedback events) and `useful_count` (positive ones).
usefulness = useful_count / hit_count. After the update:
- ratio > 0.7 with hit_count >= 3  -> memory_type becomes `core` (decay-immune), `promoted_at` set;
- ratio < 0.3 with hit_count >= 5  -> `needs_review: true` (a person decides; nothing is deleted).

Without an id, feedback goes to the memories the last recall returned. That list is kept in
`.vaultmem/state/last_recall-<agent>.json` so `vaultmem recall` and a later
`vaultmem feedback` (separate processes) work together; each agent has its own file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vaultmem.base.errors import InvalidInput, NotFound
from vaultmem.base.timeutil import format_time
from vaultmem.core.port import MemoryCore

if TYPE_CHECKING:
    from vaultmem.storage.record import Record

SIGNALS = ("positive", "negative")
PROMOTE_RATIO = 0.7
PROMOTE_MIN_HITS = 3
REVIEW_RATIO = 0.3
REVIEW_MIN_HITS = 5
STATE_DIR = "state"


def _state_path(store: MemoryCore, agent: str | None) -> Any:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", agent or "") or "_default"
    return store.vault.derived_dir / STATE_DIR / f"last_recall-{name}.json"


def remember_recall(store: MemoryCore, ids: Sequence[str], query: str, agent: str | None) -> None:
    """Persist the ids a recall returned, as the default target of the next feedback."""
    path = _state_path(store, agent)
    from vaultmem.base import secrets

    data = {"query": secrets.redact(query), "agent": agent, "at": format_time(store.now()), "ids": list(ids)}
    store.vault.write_text(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


def last_recall(store: MemoryCore, agent: str | None) -> dict[str, Any] | None:
    path = _state_path(store, agent)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("ids"), list) else None


def usefulness(hit_count: int, useful_count: int) -> float:
    return useful_count / hit_count if hit_count else 0.0


def should_promote(hit_count: int, useful_count: int) -> bool:
    return hit_count >= PROMOTE_MIN_HITS and usefulness(hit_count, useful_count) > PROMOTE_RATIO


def should_flag(hit_count: int, useful_count: int) -> bool:
    return hit_count >= REVIEW_MIN_HITS and usefulness(hit_count, useful_count) < REVIEW_RATIO


def _count(rec: Record, key: str) -> int:
    from vaultmem.storage.note import as_number

    return max(0, int(as_number(rec.props.get(key), 0)))


def apply(store: MemoryCore, signal: str, memory_id: str | None = None,
          agent: str | None = None) -> dict[str, Any]:
    """The seed's FeedbackResult (updated, promoted) plus flagged and the ids touched."""
    if signal not in SIGNALS:
        raise InvalidInput(f"signal must be positive or negative, got {signal!r}")
    store.sync()
    if memory_id:
        targets = [store.resolve(memory_id)]
        if targets[0].status == "deleted":
            raise NotFound(f"memory {memory_id!r} is forgotten; `vaultmem restore` it before giving feedback")
    else:
        state = last_recall(store, agent)
        if not state or not state["ids"]:
            raise NotFound("no recent recall to give feedback on; run `vaultmem recall` first or pass --id")
        targets = []
        for ref in state["ids"]:
            try:
                rec = store.resolve(str(ref))
            except NotFound:
                continue  # its note was deleted since the recall
            if rec.status != "deleted":  # forgotten since the recall
                targets.append(rec)
    now = store.now()
    promoted: list[str] = []
    flagged: list[str] = []
    updated: list[str] = []
    for rec in targets:
        outcome: dict[str, bool] = {}

        def change(current: Record, outcome: dict[str, bool] = outcome) -> dict[str, Any]:
            hits = _count(current, "hit_count") + 1
            useful = _count(current, "useful_count") + (1 if signal == "positive" else 0)
            changes: dict[str, Any] = {"hit_count": hits, "useful_count": useful}
            if should_promote(hits, useful) and (current.memory_type or "") != "core":
                changes.update(memory_type="core", promoted_at=now, promoted_via="feedback")
                outcome["promoted"] = True
            if should_flag(hits, useful) and current.props.get("needs_review") is not True:
                changes["needs_review"] = True
                outcome["flagged"] = True
            if not should_flag(hits, useful) and current.props.get("needs_review") is True:
                changes["needs_review"] = False
            return changes

        store.modify(rec, change)
        updated.append(rec.id or rec.path)
        if outcome.get("promoted"):
            promoted.append(rec.id or rec.path)
        if outcome.get("flagged"):
            flagged.append(rec.id or rec.path)
    return {"updated": len(updated), "promoted": len(promoted), "flagged": len(flagged),
            "ids": updated, "promoted_ids": promoted, "flagged_ids": flagged, "signal": signal}
