"""Natural-language activation: analyze_message, analyze_for_recall, auto-recall.

Both analyses are the CortexGraph seed's weighted sigmoid over phrase signals:
confidence = 1 / (1 + exp(-(bias + sum(weight_i * signal_i)))), with phrase lists, weights,
bias and decision threshold in `templates/activation.yaml` (a vault may override it in
`.vaultmem/templates/`). Phrases match on word boundaries, so "key" never fires on
"keyboard". Entities come from `enrich.py` (spaCy, loaded on first use).

`auto_recall_process_message` searches memories related to a message and reinforces them
silently; a memory is reinforced at most once per `recall_cooldown_minutes`, and that
cooldown is kept in `.vaultmem/state/auto_recall.json` so it holds across calls and across
processes (the CLI, several MCP servers).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from pathlib import Path
from typing import Any

from vaultmem.base.errors import InvalidInput, VaultmemError
from vaultmem.core.enrich import (
    get_enricher,
    load_yaml_template,
    phrase_regex,
    template_path,
)

MAX_MESSAGE = 50_000
STATE_FILE = "auto_recall.json"
_QUESTION = re.compile(r"\?\s*$|^\s*(?:what|which|who|whom|whose|when|where|why|how|do|does|did|is|are|was|were|"
                       r"can|could|should|would|will|have|has)\b", re.I)
_STOP = frozenset("""
a an the and or but if of to in on at by for with about from into over as is are was were be been being
am do does did done have has had i me my mine we us our ours you your yours he him his she her they them
their it its this that these those what which who whom whose when where why how there here can could
should would will shall may might must say said tell told remember recall mention mentioned again
please just really also any some all anything something know think thought last time earlier
previously before yesterday week ago usual usually decide decided agree agreed discuss discussed talk
talked let lets look up check memory memories
""".split())


class _Model:
    """One side (save or recall) of activation.yaml, compiled."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.bias = float(spec.get("bias", 0.0))
        self.threshold = float(spec.get("threshold", 0.5))
        self.signals: list[tuple[str, float, Any, int]] = []
        for name, sig in (spec.get("signals") or {}).items():
            phrases = sig.get("phrases")
            self.signals.append((name, float(sig.get("weight", 0.0)),
                                 phrase_regex(phrases) if phrases else None, int(sig.get("max", 1))))

    def score(self, text: str, entity_count: int) -> tuple[float, dict[str, Any]]:
        z, found = self.bias, dict[str, Any]()
        for name, weight, rx, cap in self.signals:
            if rx is not None:
                hits = sorted({m.group(0).lower() for m in rx.finditer(text)})
                if hits:
                    found[name] = hits
                    z += weight
            elif name == "question":
                if _QUESTION.search(text):
                    found[name] = True
                    z += weight
            elif name == "entities":
                n = min(entity_count, cap)
                if n:
                    found[name] = entity_count
                    z += weight * n
        return 1.0 / (1.0 + math.exp(-z)), found


_MODELS: dict[tuple[str, int], tuple[_Model, _Model]] = {}


def _models(vault_templates: Path | None) -> tuple[_Model, _Model]:
    path = template_path("activation.yaml", vault_templates)
    key = (str(path), path.stat().st_mtime_ns)
    if key not in _MODELS:
        spec = load_yaml_template(path)
        _MODELS[key] = (_Model(spec.get("save") or {}), _Model(spec.get("recall") or {}))
    return _MODELS[key]


def _check(message: str) -> str:
    if not isinstance(message, str) or not message.strip():
        raise InvalidInput("message is empty; pass the text to analyze")
    if len(message) > MAX_MESSAGE:
        raise InvalidInput(f"message is {len(message):,} characters; the limit is {MAX_MESSAGE:,}")
    return message.strip()


def _describe(found: dict[str, Any]) -> str:
    phrases = [p for v in found.values() if isinstance(v, list) for p in v]
    flags = [f"{k}: {v}" for k, v in found.items() if not isinstance(v, list)]
    return f"Detected: {phrases} " + " ".join(flags)


def analyze_message(message: str, vault_templates: Path | None = None, spacy_model: str = "") -> dict[str, Any]:
    """Should this message be saved? The seed's `analyze_message` result."""
    text = _check(message)
    save_model, _ = _models(vault_templates)
    enricher = get_enricher(vault_templates, spacy_model)
    entities = enricher.entities(text)
    confidence, found = save_model.score(text, len(entities))
    strength, markers = enricher.classifier.strength_markers(text, len(entities))
    memory_type = enricher.classifier.memory_type(text)
    domain = enricher.classifier.domain_of(text)
    tags = [t for t in (memory_type if memory_type not in ("semantic",) else None,
                        domain if domain != "general" else None) if t]
    should = confidence >= save_model.threshold
    reasoning = (f"{_describe(found)} entities_found: {len(entities)} "
                 f"confidence {confidence:.2f} {'>=' if should else '<'} threshold {save_model.threshold:g}")
    return {
        "should_save": should,
        "confidence": round(confidence, 4),
        "suggested_entities": entities,
        "suggested_tags": tags,
        "suggested_strength": strength,
        "reasoning": reasoning.replace("  ", " ").strip(),
        "phrase_signals": found,
    }


def suggested_query(text: str, recall_rx: Any = None) -> str:
    """The message without its recall phrases, stop words and punctuation."""
    if recall_rx is not None:
        text = recall_rx.sub(" ", text)
    words = re.findall(r"[\w][\w.+#'-]*", text)
    kept = [w.strip(".'") for w in words if w.lower().strip(".'") not in _STOP and len(w.strip(".'")) > 1]
    return " ".join(kept)


def analyze_for_recall(message: str, vault_templates: Path | None = None, spacy_model: str = "") -> dict[str, Any]:
    """Should memory be searched for this message? The seed's `analyze_for_recall` result."""
    text = _check(message)
    _, recall_model = _models(vault_templates)
    entities = get_enricher(vault_templates, spacy_model).entities(text)
    confidence, found = recall_model.score(text, len(entities))
    explicit = next((rx for name, _w, rx, _c in recall_model.signals if name == "explicit_recall"), None)
    query = suggested_query(text, explicit)
    should = confidence >= recall_model.threshold and bool(query)
    reasoning = (f"{_describe(found)} entities_found: {len(entities)} "
                 f"confidence {confidence:.2f} {'>=' if confidence >= recall_model.threshold else '<'} "
                 f"threshold {recall_model.threshold:g}" + ("" if query else "; nothing left to search for"))
    return {
        "should_search": should,
        "confidence": round(confidence, 4),
        "suggested_query": query,
        "suggested_tags": [],
        "suggested_entities": entities,
        "reasoning": reasoning.replace("  ", " ").strip(),
    }


# -- auto-recall ------------------------------------------------------------------------------


def _topics(text: str, entities: list[str], limit: int = 6) -> list[str]:
    topics = list(entities)
    if len(topics) < limit:
        seen = {t.lower() for t in topics}
        for w in re.findall(r"[A-Za-z][\w+#.-]{3,}", text):
            w = w.strip(".")
            if w.lower() not in _STOP and w.lower() not in seen:
                seen.add(w.lower())
                topics.append(w)
            if len(topics) >= limit:
                break
    return topics[:limit]


def _mentions(item: dict[str, Any], topics: list[str]) -> bool:
    haystack = " ".join([item.get("content") or "", *(item.get("entities") or []), *(item.get("tags") or [])])
    return any(re.search(r"(?<!\w)" + re.escape(t) + r"(?!\w)", haystack, re.I) for t in topics)


MIN_RELEVANCE = 0.5  # of the best match's relevance: what auto-recall counts as related


def auto_recall_process_message(store: Any, message: str, *, max_reinforce: int = 5) -> dict[str, Any]:
    """Find memories related to `message` and reinforce them silently (Phase 1: nothing surfaced).

    Each memory is reinforced at most once per `recall_cooldown_minutes`; the times live in
    `.vaultmem/state/auto_recall.json`, written under the vault lock, so the cooldown holds
    across calls and across processes.
    """
    text = _check(message)
    settings = store.settings
    base = {"success": True, "enabled": settings.enable_preprocessing, "mode": "silent"}
    if not settings.enable_preprocessing:
        return {**base, "topics_found": [], "memories_found": 0, "memories_reinforced": [],
                "skipped_cooldown": [], "message": "Auto-recall is disabled (enable_preprocessing: false)"}
    entities = store.enricher().entities(text)
    topics = _topics(text, entities)
    if not topics:
        return {**base, "topics_found": [], "memories_found": 0, "memories_reinforced": [],
                "skipped_cooldown": [], "message": "No topics found in the message"}
    query = " ".join(re.sub(r"[^\w\s.+#-]", " ", t) for t in topics)
    # strongly related only: a memory that shares a word with the message but ranks under half
    # the best match's relevance ("Kubernetes cluster" for a Redis message) is not reinforced
    found = [item for item in store.search(query, top_k=max(10, max_reinforce * 2))["results"]
             if _mentions(item, topics) and (item.get("relevance") or 0.0) >= MIN_RELEVANCE]
    if not settings.auto_reinforce:
        return {**base, "topics_found": topics, "memories_found": len(found), "memories_reinforced": [],
                "skipped_cooldown": [], "message": "Found related memories; auto_reinforce is off, none reinforced"}
    now = store.now()
    cooldown = dt.timedelta(minutes=settings.recall_cooldown_minutes)
    to_touch: list[Any] = []
    skipped: list[Any] = []
    with store.vault.lock():
        state = _read_state(store)
        last = state.get("last_reinforced", {})
        for item in found:
            when = _parse(last.get(item["id"]))
            if when is not None and now - when < cooldown:
                skipped.append(item["id"])
            elif len(to_touch) < max_reinforce:
                to_touch.append(item["id"])
                last[item["id"]] = now.isoformat()
        horizon = now - cooldown
        state["last_reinforced"] = {k: v for k, v in last.items() if (_parse(v) or now) > horizon or k in to_touch}
        _write_state(store, state)
    reinforced = []
    for mid in to_touch:
        try:
            store.touch(mid)
            reinforced.append(mid)
        except VaultmemError:  # deleted, broken or moved out of vaultmem's folders since the search
            continue
    return {
        **base,
        "topics_found": topics,
        "memories_found": len(found),
        "memories_reinforced": reinforced,
        "skipped_cooldown": skipped,
        "message": (f"Found {len(found)} related memories, reinforced {len(reinforced)}"
                    + (f", {len(skipped)} still in cooldown" if skipped else "")),
    }


def _parse(value: Any) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def _state_path(store: Any) -> Path:
    return store.vault.derived_dir / "state" / STATE_FILE


def _read_state(store: Any) -> dict[str, Any]:
    try:
        data = json.loads(_state_path(store).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}  # missing or damaged: a cache, start afresh


def _write_state(store: Any, state: dict[str, Any]) -> None:
    path = _state_path(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    store.vault.write_text(path, json.dumps(state, indent=1, sort_keys=True) + "\n")
