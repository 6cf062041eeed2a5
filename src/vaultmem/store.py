"""The service layer: every adapter (CLI, watcher, MCP) calls `MemoryStore` and nothing else.

Results are plain dicts with the seeds' keys (`success`, `memory_id`, `message`, ...), so
the CLI prints them and the MCP bridge returns them unchanged.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from vaultmem import decay, secrets
from vaultmem import note as notes
from vaultmem.config import Settings, load_settings
from vaultmem.errors import Ambiguous, InvalidInput, MalformedNote, NotFound, VaultmemError
from vaultmem.index import Index, Record, SyncReport, iso
from vaultmem.timeutil import Clock, days_between, system_clock
from vaultmem.vault import Vault

MAX_CONTENT = 50_000
MAX_TAGS = 50
MAX_TAG_CHARS = 100
STATUS_FILTERS = ("active", "promoted", "archived", "all")
DEFAULT_STATUSES = ("active", "promoted")
LIVE_STATUSES = ("active", "promoted", "archived")  # "all" still leaves soft-deleted memories out
FRESHNESS_MIDPOINT = 0.3
TEMPLATE_DIR = Path(__file__).parent / "templates"
MEMORY_TYPES = ("episodic", "semantic", "preference", "relationship", "procedural", "profile", "core")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_SHORT_ID = re.compile(r"^[0-9a-fA-F]{8}$")

SEARCH_MODES = ("lexical", "semantic", "hybrid")
INLINE_EMBED_LIMIT = 256
Progress = Callable[[Iterable[str], int], Iterable[str]]


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
    (LoCoMo dev, MiniLM alone, decay on: recall@5 32.2 -> 42.7; hybrid 57.8 -> 59.2).
    """
    import statistics  # 16 ms to import: only when a semantic ranking is asked for

    if not semantic:
        return {}
    median = statistics.median(semantic.values())
    span = max(semantic.values()) - median
    if span <= 0:
        return {p: 1.0 for p in semantic}
    return {p: max(0.0, (s - median) / span) for p, s in semantic.items()}


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
    top_sem = sorted(semantic.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]
    if mode == "semantic" or method == "score":
        sem_rel = semantic_relevance(semantic)
    if mode == "semantic":
        return {p: sem_rel[p] for p, _ in top_sem}
    top_lex = sorted(lexical.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]
    fused: dict[str, float] = {}
    if method == "score":
        for p in {p for p, _ in top_lex} | {p for p, _ in top_sem}:
            fused[p] = 0.5 * lexical.get(p, 0.0) + 0.5 * sem_rel.get(p, 0.0)
    else:
        for ranking in (top_lex, top_sem):
            for n, (p, _score) in enumerate(ranking, 1):
                fused[p] = fused.get(p, 0.0) + 1.0 / (rrf_k + n)
    best = max(fused.values(), default=0.0) or 1.0
    return {p: v / best for p, v in fused.items()}


class MemoryStore:
    """Memories in one vault: save, search, open, touch, stats, index upkeep."""

    def __init__(self, root: Path | str, settings: Settings | None = None, clock: Clock | None = None) -> None:
        root = Path(root).expanduser().absolute()
        self.settings = settings or load_settings(root)
        self.vault = Vault(root, self.settings)
        self.index = Index(self.vault)
        self.clock = clock or system_clock
        self.last_sync: SyncReport | None = None
        # Long-lived processes (MCP server) may skip re-scanning the vault for this many
        # seconds after a scan; vaultmem's own writes are indexed at once either way.
        self.freshness_ttl = 0.0
        # Set by the CLI on a terminal: shown when a read has to (re)index many notes first.
        self.progress: Progress | None = None
        self._last_scan = float("-inf")
        self._vectors: Any = None
        # True in long-lived processes (MCP server, watcher): with embeddings `auto` they load
        # the model, embed on save and search hybrid by default; a one-shot CLI call does not.
        self.long_lived = False
        self.agent: str | None = None  # default agent id for Mnemosyne calls (`--agent`, VAULTMEM_AGENT)

    @property
    def vectors(self) -> Any:
        """The derived vector store (`.vaultmem/embeddings.sqlite`); opened on first use."""
        if self._vectors is None:
            from vaultmem.embeddings import VectorStore

            self._vectors = VectorStore(self.vault.state_dir)
        return self._vectors

    def embeddings_enabled(self) -> bool:
        """Installed and allowed to load here: `on`, or `auto` in a long-lived process."""
        from vaultmem import embeddings

        setting = self.settings.embeddings
        return embeddings.enabled(setting) and (setting == "on" or self.long_lived)

    # -- setup and freshness --------------------------------------------------------------
    def init(self) -> dict[str, Any]:
        created = self.vault.init()
        report = self.index.sync()
        return {
            "success": True,
            "vault": str(self.vault.root),
            "created": created,
            "indexed": report.added + report.unchanged,
            "message": (f"Initialised vault at {self.vault.root}" if created
                        else f"Vault at {self.vault.root} was already initialised"),
        }

    def sync(self, progress: Progress | None = None) -> SyncReport:
        """Pick up edits made outside vaultmem (Obsidian, sync clients) before a read."""
        import time

        self.vault.require()
        if self.freshness_ttl and time.monotonic() - self._last_scan < self.freshness_ttl:
            return SyncReport()
        self.last_sync = self.index.sync(progress or self.progress)
        self._last_scan = time.monotonic()
        if self.last_sync.status_mismatch:
            from vaultmem import lifecycle

            lifecycle.reconcile_statuses(self, self.last_sync.status_mismatch)
        return self.last_sync

    def close(self) -> None:
        self.index.close()
        if self._vectors is not None:
            self._vectors.close()

    def now(self) -> dt.datetime:
        return self.clock()

    # -- scoring --------------------------------------------------------------------------
    def score_of(self, rec: Record, now: dt.datetime | None = None) -> float:
        from vaultmem import lifecycle

        return lifecycle.record_score(rec, now or self.now(), self.settings)

    # -- save -----------------------------------------------------------------------------
    def save(
        self,
        content: str,
        *,
        tags: Sequence[str] = (),
        entities: Sequence[str] | None = None,
        source: str | None = None,
        context: str | None = None,
        meta: Mapping[str, Any] | None = None,
        strength: float | None = None,
        memory_type: str | None = None,
        agent: str | None = None,
        dedupe: bool = True,
    ) -> dict[str, Any]:
        """Write a new memory note into the short-term folder and index it.

        Order: validate, refuse credentials (`SecretBlocked`, nothing written), reinforce a
        near-identical memory instead of copying it (`status: duplicate`), fill in what was
        not given (entities, strength, memory_type, urgency, domain), write, index.
        """
        self.vault.require()
        content = validate_content(content)
        tags = validate_tags(tags)
        entities = None if entities is None else [e.strip() for e in entities if e and e.strip()]
        if strength is not None and not (1.0 <= strength <= 2.0):
            raise InvalidInput(f"strength must be between 1.0 and 2.0, got {strength}")
        if memory_type is not None and memory_type not in MEMORY_TYPES:
            raise InvalidInput(f"memory_type must be one of {', '.join(MEMORY_TYPES)}, got {memory_type!r}")
        meta = dict(meta or {})
        clash = sorted(set(meta) & set(notes.OWNED_KEYS))
        if clash:
            raise InvalidInput(f"meta key {clash[0]!r} is a vaultmem property; pass it with its own option")
        for key, value in meta.items():
            if not key or not isinstance(key, str) or "\n" in key or ":" in key:
                raise InvalidInput(f"meta key {key!r} is not a valid property name")
            if isinstance(value, Mapping):
                raise InvalidInput(f"meta value for {key!r} must be flat (text, number, list), not a map")
        secrets.check("\n".join([content, source or "", context or "", agent or "", *tags, *(entities or []),
                                  *(f"{k}={v}" for k, v in meta.items())]))
        if dedupe and self.settings.dedupe_on_save:
            duplicate = self.find_duplicate(content)
            if duplicate is not None:
                rec, similarity = duplicate
                touched = self.touch(rec.id)
                return {
                    "success": True,
                    "status": "duplicate",
                    "memory_id": rec.id,
                    "path": rec.path,
                    "similarity": round(similarity, 4),
                    "use_count": touched["use_count"],
                    "message": f"Near-duplicate of {rec.id} (similarity {similarity:.2f}); reinforced it instead",
                    "has_embedding": False,
                    "enrichment_applied": False,
                }
        enrichment = None
        entities_given = entities is not None
        if self.settings.enable_preprocessing:
            enrichment = self.enricher().enrich(content, entities=entities, strength=strength,
                                                memory_type=memory_type)
            meta.setdefault("urgency", enrichment.urgency)
            meta.setdefault("domain", enrichment.domain)
            entities, strength, memory_type = enrichment.entities, enrichment.strength, enrichment.memory_type
        auto_entities = 0 if enrichment is None or entities_given else len(enrichment.entities)
        now = self.now()
        memory = notes.Memory(
            id=str(uuid.uuid4()), content=content, created=now, last_used=now, use_count=0,
            strength=1.0 if strength is None else round(float(strength), 3), status="active",
            tags=tags, entities=list(entities or []), source=source or None, context=context or None,
            memory_type=memory_type, agent=agent, meta=meta,
        )
        text = notes.render_note(self.template("memory"), memory)
        folder = self.settings.stm_dir.strip("/")
        name = f"{notes.slugify(content)}-{memory.short_id}.md"
        rel = f"{folder}/{name}"
        self.vault.create_exclusive(self.vault.abs(rel), text)
        self.index.refresh([rel])
        has_embedding = self.embed_paths([rel])
        result: dict[str, Any] = {
            "success": True,
            "status": "created",
            "memory_id": memory.id,
            "path": rel,
            "message": f"Memory saved with ID: {memory.id}",
            "has_embedding": has_embedding,
            "enrichment_applied": enrichment is not None,
        }
        if enrichment is not None:
            result.update({
                "auto_entities": auto_entities,
                "calculated_strength": memory.strength,
                "entities": memory.entities,
                "memory_type": memory.memory_type,
                "urgency": meta.get("urgency"),
                "domain": meta.get("domain"),
                "priority": enrichment.priority,
            })
        return result

    def enricher(self) -> Any:
        """The process-wide enricher for this vault's templates (spaCy loads on first use)."""
        from vaultmem.enrich import get_enricher

        return get_enricher(self.vault.state_dir / "templates", self.settings.spacy_model)

    # -- natural-language activation (activation.py) ---------------------------------------
    def analyze_message(self, message: str) -> dict[str, Any]:
        """Should this message be saved? (`should_save`, `confidence`, suggestions, reasoning)"""
        from vaultmem.activation import analyze_message

        return analyze_message(message, self.vault.state_dir / "templates", self.settings.spacy_model)

    def analyze_for_recall(self, message: str) -> dict[str, Any]:
        """Should memory be searched for this message? (`should_search`, `suggested_query`, ...)"""
        from vaultmem.activation import analyze_for_recall

        return analyze_for_recall(message, self.vault.state_dir / "templates", self.settings.spacy_model)

    def auto_recall_process_message(self, message: str) -> dict[str, Any]:
        """Reinforce memories related to a message, silently, with a cross-process cooldown."""
        from vaultmem.activation import auto_recall_process_message

        return auto_recall_process_message(self, message)

    def find_duplicate(self, content: str) -> tuple[Record, float] | None:
        """A near-identical active memory (see `enrich.similarity`), found through the index."""
        from vaultmem.enrich import duplicate_query, similarity

        query = duplicate_query(content)
        if not query:
            return None
        hits, _total = self.index.search(query, kinds=("memory",), statuses=DEFAULT_STATUSES, limit=5,
                                         fields=("content",))
        records = self.index.by_paths([p for p, _ in hits])
        best: tuple[Record, float] | None = None
        for path, _score in hits:
            rec = records.get(path)
            if rec is None:
                continue
            sim = similarity(content, rec.content)
            if sim >= self.settings.duplicate_threshold and (best is None or sim > best[1]):
                best = (rec, sim)
        return best

    def embed_paths(self, paths: Sequence[str]) -> bool:
        """Refresh the vectors of notes vaultmem just wrote, when embeddings are enabled."""
        if not self.embeddings_enabled():
            return False
        from vaultmem import embeddings

        records = [r for r in self.index.by_paths(list(paths)).values() if r.kind == "memory"]
        embeddings.embed_records(embeddings.stale(records, self.vectors), self.vectors)
        return bool(records)

    def backfill_embeddings(self, *, limit: int | None = None, force: bool = False, dry_run: bool = False,
                            model: str | None = None, progress: Progress | None = None) -> dict[str, Any]:
        """Vectors for memories that lack a current one (the seed's `backfill_embeddings`)."""
        from vaultmem import embeddings

        return embeddings.backfill(self, limit=limit, force=force, dry_run=dry_run,
                                   model=model or embeddings.MODEL_NAME, progress=progress)

    def template(self, name: str) -> str:
        """The vault's own template if it has one (`.vaultmem/templates/`), else ours."""
        for folder in (self.vault.state_dir / "templates", TEMPLATE_DIR):
            path = folder / f"{name}.md"
            if path.is_file():
                return path.read_text(encoding="utf-8")
        raise VaultmemError(f"template {name}.md is missing from {TEMPLATE_DIR}; reinstall vaultmem")

    # -- lookup -----------------------------------------------------------------------------
    def resolve(self, ref: str, kinds: Sequence[str] = ("memory",)) -> Record:
        """A memory by full id, 8-char short id, file name (with or without .md) or path."""
        ref = (ref or "").strip()
        if not ref:
            raise InvalidInput("memory id is empty; pass an id, an 8-char short id or a file name")
        if "\x00" in ref or len(ref) > 512:
            raise InvalidInput("memory id is not valid; pass an id, an 8-char short id or a file name")
        kind_sql = f"kind IN ({','.join('?' * len(kinds))})"
        if _UUID.match(ref):
            found = self.index.records(f"{kind_sql} AND id = ?", [*kinds, ref.lower()])
        elif _SHORT_ID.match(ref):
            found = self.index.records(f"{kind_sql} AND id LIKE ?", [*kinds, ref.lower() + "%"])
        else:
            name = ref[:-3] if ref.lower().endswith(".md") else ref
            if "/" in name:
                found = self.index.records(f"{kind_sql} AND path = ?", [*kinds, name + ".md"])
            else:
                found = self.index.records(f"{kind_sql} AND lower(title) = ?", [*kinds, name.lower()])
        if not found:
            raise NotFound(f"no memory matches {ref!r}; check the id with `vaultmem search`")
        if len(found) > 1:
            paths = ", ".join(sorted(r.path for r in found)[:5])
            raise Ambiguous(f"{ref!r} matches {len(found)} notes ({paths}); use the full id or path")
        return found[0]

    def memory_dict(self, rec: Record, now: dt.datetime | None = None) -> dict[str, Any]:
        now = now or self.now()
        created = rec.created_dt or now
        result = {
            "id": rec.id,
            "content": rec.content,
            "tags": rec.tags,
            "entities": rec.entities,
            "source": rec.source,
            "context": rec.context,
            "memory_type": rec.memory_type,
            "created_at": iso(rec.created),
            "last_used": iso(rec.last_used),
            "use_count": rec.use_count,
            "strength": rec.strength,
            "status": rec.status,
            "score": round(self.score_of(rec, now), 4),
            "age_days": round(days_between(created, now), 2),
            "path": rec.path,
        }
        if rec.props:
            result["meta"] = rec.props
        return result

    def open(self, refs: Sequence[str], *, include_relations: bool = False, include_scores: bool = True,
             page: int | None = None, page_size: int | None = None) -> dict[str, Any]:
        """Memories by id / short id / file name; unknown ones land in `not_found`.

        With `include_relations` (or paging) this is the seed's open_memories: outgoing and
        incoming relations per memory and a `pagination` block (`graph.open_memories`).
        """
        if include_relations or not include_scores or page is not None or page_size is not None:
            from vaultmem import graph

            return graph.open_memories(self, refs, include_relations=include_relations,
                                       include_scores=include_scores, page=page, page_size=page_size)
        self.sync()
        memories, not_found = [], []
        now = self.now()
        for ref in refs:
            try:
                rec = self.resolve(ref)
            except NotFound:
                not_found.append(ref)
                continue
            if self.visible(rec):
                memories.append(self.memory_dict(rec, now))
            else:  # another agent's private memory: as if it did not exist
                not_found.append(ref)
        return {"success": bool(memories) or not refs, "count": len(memories),
                "memories": memories, "not_found": not_found}

    # -- graph (graph.py) ---------------------------------------------------------------------
    def relate(self, from_ref: str, to_ref: str, relation_type: str, strength: float = 1.0,
               metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The seed's create_relation: a typed line in FROM's `## Relations` section."""
        from vaultmem import graph

        return graph.relate(self, from_ref, to_ref, relation_type, strength, metadata)

    def read_graph(self, status: str = "active", *, include_scores: bool = True, limit: int | None = None,
                   page: int | None = None, page_size: int | None = None,
                   all_relations: bool = False) -> dict[str, Any]:
        """The seed's read_graph: memories, relations between them, stats, pagination."""
        from vaultmem import graph

        return graph.read_graph(self, status, include_scores=include_scores, limit=limit, page=page,
                                page_size=page_size, all_relations=all_relations)

    def backlinks(self, ref: str) -> dict[str, Any]:
        """Memories and the person's notes that link to a memory."""
        from vaultmem import graph

        return graph.backlinks(self, ref)

    def export_canvas(self, out: str | Path, *, status: str = "all", around: str | None = None,
                      depth: int = 2) -> dict[str, Any]:
        """Write the graph (or a memory's neighbourhood) as an Obsidian canvas."""
        from vaultmem import graph

        return graph.export_canvas(self, out, status=status, around=around, depth=depth)

    def doctor(self) -> dict[str, Any]:
        """Broken links, duplicate ids and names, malformed notes, sync-conflict copies."""
        from vaultmem import doctor

        return doctor.run(self)

    def note_text(self, ref: str) -> dict[str, Any]:
        """One memory note's markdown exactly as it is on disk (for MCP resource readers)."""
        self.sync()
        rec = self.resolve(ref)
        text = self.vault.abs(rec.path).read_text(encoding="utf-8")
        return {"success": True, "memory_id": rec.id, "path": rec.path, "text": text}

    # -- search -------------------------------------------------------------------------------
    def search(
        self,
        query: str | None = None,
        *,
        tags: Sequence[str] = (),
        top_k: int = 10,
        window_days: float | None = None,
        min_score: float | None = None,
        status: str | None = None,
        include_review_candidates: bool = True,
        mode: str | None = None,
    ) -> dict[str, Any]:
        """Every memory that matches, ranked by relevance blended with decay (`rank_score`).

        With include_review_candidates, matches in the review danger zone ranked below
        top_k are blended in (`review_candidate: true`), see lifecycle.blend_review_candidates.
        """
        if not 1 <= top_k <= 100:
            raise InvalidInput(f"top_k must be between 1 and 100, got {top_k}")
        validate_window_and_score(window_days, min_score)
        if status is not None and status not in STATUS_FILTERS:
            raise InvalidInput(f"status must be one of {', '.join(STATUS_FILTERS)}, got {status!r}")
        tags = validate_tags(tags)
        self.sync()
        now = self.now()
        statuses = LIVE_STATUSES if status == "all" else ((status,) if status else DEFAULT_STATUSES)
        since = now - dt.timedelta(days=window_days) if window_days else None
        text = (query or "").strip()
        if len(text) > 2000:
            raise InvalidInput(f"query is {len(text)} characters; keep it under 2000")
        mode = self.search_mode(mode, bool(text))
        sims: dict[str, float] = {}
        if mode == "lexical":
            ranked = self._rank(text, statuses, tags, since, min_score, top_k, now)
        else:
            ranked, sims = self._rank_semantic(text, mode, statuses, tags, since, min_score, top_k, now)
        if text and self.settings.contiguity_weight > 0:
            ranked = self._spread(ranked, top_k)
        # one order for every mode: rank, then cosine (memories below the median cosine all
        # have semantic relevance 0: they keep their cosine order), then path
        ranked.sort(key=lambda r: (-r[3], -sims.get(r[0].path, 0.0), r[0].path))
        from vaultmem import lifecycle

        if include_review_candidates:
            window = lifecycle.blend_review_candidates(ranked, top_k, self.settings)
        else:
            window = [(*r, False) for r in ranked[:top_k]]
        results = []
        for rec, decay_score, relevance, _rank, is_review in window:
            item = self.memory_dict(rec, now)
            item["score"] = round(decay_score, 4)
            item["relevance"] = None if relevance is None else round(relevance, 4)
            similarity = sims.get(rec.path)
            item["similarity"] = None if similarity is None else round(similarity, 4)
            item["review_candidate"] = is_review
            results.append(item)
        return {"success": True, "count": len(results), "mode": mode, "results": results}

    def search_mode(self, mode: str | None, has_text: bool = True) -> str:
        """lexical | semantic | hybrid. Default: hybrid when embeddings are enabled (installed,
        and `on` or a long-lived process) and the vault has vectors; a one-shot `vaultmem
        search` with `auto` stays lexical unless --hybrid/--semantic asks for the model."""
        if mode not in (None, *SEARCH_MODES):
            raise InvalidInput(f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        if not has_text:
            return "lexical"
        if mode is None:
            return "hybrid" if self.embeddings_enabled() and self.vectors.exists() else "lexical"
        if mode != "lexical":
            from vaultmem import embeddings

            embeddings.require()
            if self.settings.embeddings == "off":
                raise InvalidInput(f"{mode} search is switched off (embeddings: off); set embeddings to auto or on")
        return mode

    def _filtered(self, statuses: Sequence[str] | None, tags: Sequence[str],
                  since: dt.datetime | None) -> list[Record]:
        """Memories passing the status, tag and window filters (from the catalog)."""
        where, params = "kind = 'memory'", []
        if statuses:
            where += f" AND status IN ({','.join('?' * len(statuses))})"
            params += list(statuses)
        if since is not None:
            where += " AND last_used >= ?"
            params.append(since.timestamp())
        wanted = {t.lower() for t in tags}
        return [rec for rec in self.index.records(where, params)
                if (not wanted or wanted & {t.lower() for t in rec.tags}) and self.visible(rec)]

    def _spread(self, ranked: list[tuple[Record, float, float | None, float]],
                top_k: int) -> list[tuple[Record, float, float | None, float]]:
        """Temporal contiguity (episodes.py): each memory found moves up toward the relevance
        of its best episode neighbour, then is ranked again with decay."""
        from vaultmem import episodes

        decay_weight = self.settings.decay_weight
        return episodes.spread(
            self.index, ranked, weight=self.settings.contiguity_weight,
            window_minutes=self.settings.contiguity_window_minutes,
            depth=max(self.settings.search_candidates, top_k * 5), top_k=top_k,
            span=self.settings.contiguity_span,
            rank=lambda relevance, s: rank_score(relevance, s, decay_weight))

    def _rank(self, text: str, statuses: Sequence[str] | None, tags: Sequence[str],
              since: dt.datetime | None, min_score: float | None, top_k: int,
              now: dt.datetime) -> list[tuple[Record, float, float | None, float]]:
        weight = self.settings.decay_weight
        if not text:
            ranked = []
            for rec in self._filtered(statuses, tags, since):
                s = self.score_of(rec, now)
                if min_score is None or s >= min_score:
                    ranked.append((rec, s, None, s))
            return ranked  # unsorted: search orders every mode's ranking once
        limit = max(self.settings.search_candidates, top_k * 5)
        while True:
            hits, complete = self.index.search(text, kinds=("memory",), statuses=statuses, tags=tags,
                                               limit=limit)
            if not hits:
                return []
            best = hits[0][1] or 1.0
            records = self.index.by_paths([p for p, _ in hits])
            ranked = []
            for path, bm25 in hits:
                rec = records.get(path)
                if rec is None or not self.visible(rec):
                    continue
                if since is not None and (rec.last_used or 0) < since.timestamp():
                    continue  # a post-filter: a numeric Whoosh field cost a third of indexing time
                s = self.score_of(rec, now)
                if min_score is not None and s < min_score:
                    continue
                relevance = bm25 / best
                ranked.append((rec, s, relevance, rank_score(relevance, s, weight)))
            if len(ranked) >= top_k or complete:
                break
            limit *= 4  # the score or window filter dropped too many: widen the candidate set
        return ranked  # unsorted: search orders every mode's ranking once

    def _rank_semantic(self, text: str, mode: str, statuses: Sequence[str] | None, tags: Sequence[str],
                       since: dt.datetime | None, min_score: float | None, top_k: int,
                       now: dt.datetime) -> tuple[list[tuple[Record, float, float | None, float]], dict[str, float]]:
        """Semantic: cosine similarity. Hybrid: BM25F and cosine rankings fused (`fuse`).
        Returns the ranking and each candidate's cosine similarity by path."""
        from vaultmem import embeddings

        candidates = self._filtered(statuses, tags, since)
        stale = embeddings.stale(candidates, self.vectors)
        if stale:  # notes edited outside vaultmem: embed a few now, the rest on backfill
            embeddings.embed_records(stale[:INLINE_EMBED_LIMIT], self.vectors)
        sims = embeddings.similarities(text, candidates, self.vectors)
        by_path = {r.path: r for r in candidates}
        lexical: dict[str, float] = {}
        if mode == "hybrid":
            for rec, _s, relevance, _r in self._rank(text, statuses, tags, since, None, top_k, now):
                lexical[rec.path] = relevance or 0.0
        fused = fuse(lexical, sims, mode, self.settings.hybrid_fusion, self.settings.rrf_k,
                     depth=max(self.settings.search_candidates, top_k * 5))
        weight = self.settings.decay_weight
        ranked = []
        for path, relevance in fused.items():
            rec = by_path.get(path)
            if rec is None:
                continue
            s = self.score_of(rec, now)
            if min_score is not None and s < min_score:
                continue
            ranked.append((rec, s, relevance, rank_score(relevance, s, weight)))
        return ranked, sims  # unsorted: search orders every mode's ranking once

    # -- reinforcement ----------------------------------------------------------------------
    def touch(self, ref: str, boost_strength: bool = False) -> dict[str, Any]:
        """use_count + 1, last_used = now, and optionally strength + 0.1 (max 2.0)."""
        self.sync()
        rec = self.resolve(ref)
        now = self.now()
        old_score = self.score_of(rec, now)

        from vaultmem import lifecycle

        def change(current: Record) -> dict[str, Any]:
            changes: dict[str, Any] = {"use_count": current.use_count + 1, "last_used": now}
            changes.update(lifecycle.access_changes(current, now, self.settings))
            if boost_strength:
                changes["strength"] = round(min(2.0, current.strength + 0.1), 3)
            return changes

        updated = self.modify(rec, change)
        new_score = self.score_of(updated, now)
        return {
            "success": True,
            "memory_id": updated.id,
            "old_score": round(old_score, 4),
            "new_score": round(new_score, 4),
            "use_count": updated.use_count,
            "strength": updated.strength,
            "message": f"Memory reinforced. Score: {old_score:.2f} -> {new_score:.2f}",
        }

    def modify(self, rec: Record, change: Callable[[Record], Mapping[str, Any]]) -> Record:
        """Read-modify-write one note under the lock, applying `change` to what is on disk now.

        `change` receives the note as it is at this moment (a person may have edited it
        since it was indexed) and returns the properties to set; nothing else is touched.
        """
        return self.modify_many([rec], change)[0]

    def modify_many(self, recs: Sequence[Record], change: Callable[[Record], Mapping[str, Any]]) -> list[Record]:
        """`modify` for several notes under one lock hold and one index commit (recall's access)."""
        with self.vault.lock():
            paths = [self._rewrite(rec, change) for rec in recs]
            if paths:
                self.index.refresh(paths)
        updated = [self.index.get(p) for p in paths]
        assert all(u is not None for u in updated)
        before = {rec.path: rec.content for rec in recs}
        edited = [u.path for u in updated if u is not None and u.content != before.get(u.path, u.content)]
        if edited and self.embeddings_enabled():
            self.embed_paths(edited)
        return updated  # type: ignore[return-value]

    def read_note(self, rec: Record) -> tuple[Record, Path, str, tuple[int, int]]:
        """A note's text as on disk now, following it if it moved since it was indexed."""
        path = self.vault.abs(rec.path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self.index.sync()
            rec = self.resolve(rec.id or rec.path)
            path = self.vault.abs(rec.path)
            text = path.read_text(encoding="utf-8")
        st = path.stat()
        return rec, path, text, (st.st_mtime_ns, st.st_size)

    def _rewrite(self, rec: Record, change: Callable[[Record], Mapping[str, Any]]) -> str:
        """The file part of `modify` (caller holds the lock); returns the note's path."""
        rec, path, text, fingerprint = self.read_note(rec)
        from vaultmem.index import record_from_text

        try:
            current = record_from_text(self.vault, rec.path, text, fingerprint)
        except MalformedNote as exc:
            raise MalformedNote(rec.path, f"{exc.reason}; fix it in Obsidian, vaultmem will not rewrite it") from None
        changes = dict(change(current))
        split = notes.split_note(text)
        props = notes.load_yaml(split.frontmatter) if split.frontmatter is not None else {}
        if "id" not in props and current.id:
            changes = {"id": current.id, **changes}
        new_text = notes.update_frontmatter(text, changes)
        if new_text != text:
            self.vault.write_text(path, new_text)
        return rec.path

    # -- Mnemosyne: recall, forget, blocks, feedback (logic in recall/forget/blocks/feedback.py) --
    def visible(self, rec: Record) -> bool:
        """A private memory (`private: true`) is shown to its own agent only (self.agent)."""
        return rec.props.get("private") is not True or (bool(self.agent) and rec.agent == self.agent)

    def _agent(self, agent: str | None) -> str | None:
        return agent if agent else self.agent

    def recall(self, query: str, *, limit: int = 5, min_score: float = 0.3,
               agent: str | None = None) -> dict[str, Any]:
        """Multi-signal, intent-aware recall; counts as access; remembered for feedback."""
        from vaultmem import recall

        return recall.recall(self, query, limit=limit, min_score=min_score, agent=self._agent(agent))

    def forget(self, memory_id: str | None = None, query: str | None = None,
               agent: str | None = None) -> dict[str, Any]:
        """Soft-delete by id (or 8-char short id) or by query (auto only for one match > 0.9)."""
        from vaultmem import forget

        return forget.forget(self, memory_id, query, agent=self._agent(agent))

    def restore(self, memory_id: str) -> dict[str, Any]:
        from vaultmem import forget

        return forget.restore(self, memory_id)

    def feedback(self, signal: str, memory_id: str | None = None, agent: str | None = None) -> dict[str, Any]:
        """Positive/negative feedback on one memory or on the last recall's results."""
        from vaultmem import feedback

        return feedback.apply(self, signal, memory_id, agent=self._agent(agent))

    def block_get(self, name: str) -> dict[str, Any] | None:
        from vaultmem import blocks

        return blocks.get(self, name)

    def block_set(self, name: str, content: str, *, agent: str | None = None,
                  expected_version: int | None = None) -> dict[str, Any]:
        """Write a named block; a racing writer retries, or fails if expected_version is stale."""
        from vaultmem import blocks

        return blocks.set_(self, name, content, agent=self._agent(agent), expected_version=expected_version)

    def block_list(self) -> list[dict[str, Any]]:
        from vaultmem import blocks

        return blocks.list_(self)

    def store_memory(self, text: str, *, importance: float | None = None, category: str | None = None,
                     event_time: str | None = None, agent: str | None = None, private: bool = False,
                     source: str | None = None) -> dict[str, Any]:
        """Mnemosyne's memory_store: dedup, classify, score confidence, save, auto-link (StoreResult)."""
        from vaultmem import ingest

        return ingest.store_memory(self, text, importance=importance, category=category, event_time=event_time,
                                   agent=self._agent(agent), private=private, source=source)

    # -- lifecycle hooks (logic in hooks.py) -------------------------------------------------
    def context(self, prompt: str | None = None, agent: str | None = None) -> dict[str, Any]:
        """before_agent_start: last session + recalled + proactive memories as an evidence block."""
        from vaultmem import hooks

        return hooks.context(self, prompt, self._agent(agent))

    def capture(self, transcript: str, agent: str | None = None, follow_path: bool = False) -> dict[str, Any]:
        """agent_end: session snapshot, <= 3 auto-captured memories, implicit feedback.

        `follow_path` (the CLI's hook mode only) reads a hook JSON's transcript_path when it is
        inside the vault or `transcript_dirs`; MCP passes transcript text and never a path.
        """
        from vaultmem import hooks

        return hooks.capture(self, transcript, self._agent(agent), follow_path)

    # -- agent awareness (logic in awareness.py) ------------------------------------------------
    def toma(self, agent_id: str, topic: str, limit: int = 5) -> dict[str, Any]:
        """What one agent knows about a topic, with its knowledge profile."""
        from vaultmem import awareness

        return awareness.toma(self, agent_id, topic, limit, viewer=self.agent)

    def bot_profile(self, agent_id: str) -> dict[str, Any]:
        from vaultmem import awareness

        return awareness.profile(self, agent_id, viewer=self.agent)

    def knowledge_gap(self, agent_a: str, agent_b: str, topic: str) -> dict[str, Any]:
        from vaultmem import awareness

        return awareness.knowledge_gap(self, agent_a, agent_b, topic, viewer=self.agent)

    def synthesize(self, topic: str) -> dict[str, Any]:
        """Facts held independently by >= 3 agents become Mesh Facts."""
        from vaultmem import awareness

        return awareness.synthesize(self, topic)

    def count(self) -> dict[str, Any]:
        from vaultmem import awareness

        return awareness.count(self)

    def skills(self, query: str | None = None, limit: int = 20) -> dict[str, Any]:
        from vaultmem import awareness

        return awareness.skills(self, query, limit, viewer=self.agent)

    # -- clustering and consolidation (logic in consolidate.py) -----------------------------
    def cluster(self, threshold: float = 0.83, max_cluster_size: int = 12, find_duplicates: bool = False,
                duplicate_threshold: float = 0.88) -> dict[str, Any]:
        """Clusters of similar memories (stable ids), or likely duplicate pairs."""
        from vaultmem import consolidate

        return consolidate.cluster(self, threshold, max_cluster_size, find_duplicates, duplicate_threshold)

    def consolidate(self, cluster_id: str | None = None, mode: str = "preview", auto_detect: bool = False,
                    cohesion_threshold: float = 0.75, threshold: float = 0.83,
                    max_cluster_size: int = 12) -> dict[str, Any]:
        """Preview, merge (apply) or link a cluster, or every cluster above cohesion_threshold."""
        from vaultmem import consolidate

        return consolidate.consolidate(self, cluster_id, mode, auto_detect, cohesion_threshold,
                                       threshold, max_cluster_size)

    def deep_consolidate(self, batch: int = 100) -> dict[str, Any]:
        """Mnemosyne's memory_consolidate: contradictions, near-duplicates, promotion, demotion."""
        from vaultmem import consolidate

        return consolidate.deep_consolidate(self, batch)

    def pipeline_run(self, agent: str | None = None, dry_run: bool = False, scheduled: bool = False,
                     interval_hours: float = 1.0) -> dict[str, Any]:
        """The five-stage consolidation pipeline; proposals go to a review note."""
        from vaultmem import pipeline

        return pipeline.run(self, agent, dry_run, scheduled, interval_hours)

    def apply_review(self, file: str | None = None) -> dict[str, Any]:
        """Carry out the ticked proposals of review notes once and mark them done."""
        from vaultmem import pipeline

        return pipeline.apply_review(self, file)

    # -- lifecycle (logic in lifecycle.py) ---------------------------------------------------
    def observe(self, refs: Sequence[str], context_tags: Sequence[str] = ()) -> dict[str, Any]:
        """The seed's observe_memory_usage: reinforce memories used in a response."""
        from vaultmem import lifecycle

        return lifecycle.observe(self, refs, context_tags)

    def gc(self, apply: bool = False, delete: bool = False, limit: int | None = None) -> dict[str, Any]:
        """Archive (or trash) short-term memories under the forget threshold; preview by default."""
        from vaultmem import lifecycle

        return lifecycle.gc(self, apply=apply, delete=delete, limit=limit)

    def promote(self, ref: str | None = None, auto: bool = False, apply: bool = True,
                force: bool = False) -> dict[str, Any]:
        """Move memories that meet the criteria from memory/stm/ to memory/ltm/."""
        from vaultmem import lifecycle

        return lifecycle.promote(self, ref, auto=auto, apply=apply, force=force)

    def maintenance(self) -> dict[str, Any]:
        """gc + promotion as `auto_gc` / `auto_promote` allow (the watcher calls this)."""
        from vaultmem import lifecycle

        return lifecycle.maintenance(self)

    def search_unified(self, query: str | None = None, *, tags: Sequence[str] = (), limit: int = 10,
                       stm_weight: float = 1.0, ltm_weight: float = 0.7, window_days: float | None = None,
                       min_score: float | None = None, page: int = 1, page_size: int = 10,
                       preview_length: int = 300, verbose: bool = False) -> dict[str, Any]:
        """STM, LTM and the person's own notes in one ranking, deduplicated and paginated."""
        from vaultmem import lifecycle

        return lifecycle.search_unified(
            self, query, tags=tags, limit=limit, stm_weight=stm_weight, ltm_weight=ltm_weight,
            window_days=window_days, min_score=min_score, page=page, page_size=page_size,
            preview_length=preview_length, verbose=verbose)

    def decay_curve(self, days: Sequence[float] | None = None, use_count: int = 0,
                    strength: float = 1.0) -> dict[str, Any]:
        """One memory's score over time under every decay model (these settings)."""
        from vaultmem import lifecycle

        return lifecycle.decay_curve(self.settings, days or lifecycle.CURVE_DAYS, use_count, strength)

    # -- stats and index upkeep ---------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        self.sync()
        now = self.now()
        by_status = {s: 0 for s in ("active", "promoted", "archived")}
        scores, uses = [], []
        for rec in self.index.records("kind = 'memory'"):
            by_status[rec.status or "active"] = by_status.get(rec.status or "active", 0) + 1
            scores.append(self.score_of(rec, now))
            uses.append(rec.use_count)
        kinds = dict(self.index.db.execute("SELECT kind, count(*) FROM notes GROUP BY kind").fetchall())
        return {
            "success": True,
            "vault": str(self.vault.root),
            "total_memories": len(scores),
            "by_status": by_status,
            "vault_notes": kinds.get("note", 0),
            "malformed_notes": kinds.get("malformed", 0),
            "avg_score": round(sum(scores) / len(scores), 4) if scores else 0.0,
            "avg_use_count": round(sum(uses) / len(uses), 2) if uses else 0.0,
            "below_forget_threshold": sum(1 for s in scores if s < self.settings.forget_threshold),
            "decay_model": self.settings.decay_model,
            "index_bytes": self.index.size_bytes(),
        }

    def rebuild_index(self, progress: Progress | None = None) -> dict[str, Any]:
        self.vault.require()
        report = self.index.rebuild(progress)
        if report.status_mismatch:
            from vaultmem import lifecycle

            lifecycle.reconcile_statuses(self, report.status_mismatch)
        indexed = report.added - len(report.malformed)
        return {
            "success": True,
            "indexed": indexed,
            "malformed": [{"path": p, "reason": r} for p, r in report.malformed],
            "message": f"Rebuilt the index from {report.added} notes ({len(report.malformed)} malformed)",
        }

    def index_status(self) -> dict[str, Any]:
        """Notes on disk vs indexed, without syncing first: what a sync would change."""
        self.vault.require()
        on_disk = self.vault.scan()
        self.index.remove_leftovers()
        if not (self.vault.index_dir / "catalog.sqlite").exists():
            return {"success": True, "notes_on_disk": len(on_disk), "indexed": 0, "stale": [],
                    "missing_from_index": sorted(on_disk), "deleted_from_disk": [], "malformed": [],
                    "clean": not on_disk, "message": "No index yet; any command builds it"}
        new, changed, removed = self.index.diff(on_disk)
        malformed = [{"path": r.path, "reason": r.error} for r in self.index.records("kind = 'malformed'")]
        indexed = self.index.count("kind != 'malformed'")
        clean = not (new or changed or removed)
        return {
            "success": True,
            "notes_on_disk": len(on_disk),
            "indexed": indexed,
            "stale": sorted(changed),
            "missing_from_index": sorted(new),
            "deleted_from_disk": sorted(removed),
            "malformed": malformed,
            "clean": clean,
            "message": "Index is up to date" if clean else
                       f"{len(new) + len(changed) + len(removed)} notes differ from the index; any command syncs them",
        }


# -- validation shared by every adapter ---------------------------------------------------------


def validate_content(content: str) -> str:
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content is empty; pass the text to remember")
    if len(content) > MAX_CONTENT:
        raise InvalidInput(f"content is {len(content):,} characters; the limit is {MAX_CONTENT:,}")
    if "\x00" in content:
        raise InvalidInput("content contains a NUL byte; pass plain text")
    if content.lstrip().startswith("---"):
        raise InvalidInput("content starts with ---, which would read as frontmatter; rephrase the first line")
    return content.strip()


def validate_window_and_score(window_days: float | None, min_score: float | None) -> None:
    """The `window_days` and `min_score` filters every search takes."""
    if window_days is not None and window_days <= 0:
        raise InvalidInput(f"window_days must be a positive number of days, got {window_days}")
    if min_score is not None and min_score < 0:
        raise InvalidInput(f"min_score must be 0 or more, got {min_score}")


def validate_tags(tags: Sequence[str] | None) -> list[str]:
    result: list[str] = []
    for raw in tags or ():
        if not isinstance(raw, str):
            raise InvalidInput(f"tag {raw!r} is not text")
        tag = notes.normalise_tag(raw)
        if not tag:
            raise InvalidInput("a tag is empty; drop it or give it a name")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInput(f"tag {tag[:20]!r}... is {len(tag)} characters; the limit is {MAX_TAG_CHARS}")
        if re.search(r"[,\[\]{}\x00-\x1f]", tag):
            raise InvalidInput(f"tag {tag!r} contains a comma, bracket or control character; remove it")
        if tag not in result:
            result.append(tag)
    if len(result) > MAX_TAGS:
        raise InvalidInput(f"{len(result)} tags given; the limit is {MAX_TAGS}")
    return result


def parse_meta(pairs: Iterable[str]) -> dict[str, Any]:
    """`k=v` pairs from the command line; values are kept as text."""
    meta: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"--meta {pair!r} is not key=value; write it like --meta project=apollo")
        meta[key.strip()] = value.strip()
    return meta


def as_dict(obj: Any) -> Any:
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj
