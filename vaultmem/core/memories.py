"""`Memories`: the core object every feature takes. One vault's memories: save, resolve,
read-modify-write, search, reinforce, stats and index upkeep.

Features (lifecycle, graph, Mnemosyne, ...) receive a `Memories` and call only what it
offers; the front door (`vaultmem.store.MemoryStore`) extends it with one delegating method
per feature operation. Results are plain dicts with the seeds' keys (`success`,
`memory_id`, `message`, ...), so the CLI prints them and the MCP bridge returns them unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import math
import os
import re
import stat
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from vaultmem.base import portable
from vaultmem.base.config import PARSED_DIR, TEMPLATE_DIR, Settings, load_settings
from vaultmem.base.errors import (
    Ambiguous,
    ConflictError,
    InvalidInput,
    MalformedNote,
    NotFound,
    NotOwned,
    VaultmemError,
)
from vaultmem.base.timeutil import Clock, days_between, system_clock
from vaultmem.core import scoring
from vaultmem.core.model import (
    DEFAULT_STATUSES,
    LIVE_STATUSES,
    MEMORY_TYPES,
    SEARCH_MODES,
    STATUS_FILTERS,
    validate_content,
    validate_meta,
    validate_tags,
    validate_window_and_score,
    visible_to,
)
from vaultmem.core.scoring import Ranked
from vaultmem.storage import note as notes
from vaultmem.storage import segments
from vaultmem.storage.index import Index, SyncReport, iso, math_functions
from vaultmem.storage.record import Record
from vaultmem.storage.vault import Vault, is_note_path

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_SHORT_ID = re.compile(r"^[0-9a-fA-F]{8}$")
INLINE_EMBED_LIMIT = 256
Progress = Callable[[Iterable[str], int], Iterator[str]]


class ChangeFeed(Protocol):
    """A long-lived process's own view of edits (observer.ChangeFeed)."""

    def changes(self) -> tuple[set[str], bool] | None:
        """(notes touched since the last call, whether a full scan is needed), or None: scan."""

    def close(self) -> None:
        """Stop observing."""


@dataclasses.dataclass(frozen=True)
class Policy:
    """How the process that builds a store uses it; given when the store is built, never set later.

    `freshness_ttl`: seconds after a scan a long-lived process may skip the next (its own writes
    are indexed at once either way). `trust_watcher`: a cold command asks a running watcher to
    vouch for the index (storage/fence.py) instead of stat'ing every note. `long_lived`: MCP
    server, watcher: embeddings (`auto`) load and follow edits, the index keeps less in memory.
    `progress`: shown when a read has to (re)index many notes first. `change_feed`: started for
    the vault when the store is built (None: it cannot watch), closed with the store; it tells
    the notes touched since its last call, or None when it cannot vouch (the store scans).
    """

    freshness_ttl: float = 0.0
    trust_watcher: bool = False
    long_lived: bool = False
    progress: Progress | None = None
    change_feed: Callable[[Vault], ChangeFeed | None] | None = None



def _unwrap_reference(ref: str) -> tuple[str, bool]:
    """A memory named the way a person pastes it: `[[name]]`, `[[name|shown]]`,
    `[[folder/name#Heading]]`, or in quotes, as the bare name; and whether it was a link."""
    ref = ref.strip()
    if len(ref) > 1 and ref[0] == ref[-1] and ref[0] in "\"'":
        ref = ref[1:-1].strip()
    match = re.fullmatch(r"!?\[\[([^\[\]]+)\]\]", ref)
    if match:
        from vaultmem.storage.links import split_inner

        target = split_inner(match.group(1))[0]
        if target:
            return target, True
    return ref, False


CAS_ATTEMPTS = 5  # re-reads when a person saves the note while vaultmem writes it

class Memories:
    """Memories in one vault: save, search, open, touch, stats, index upkeep."""

    def __init__(self, root: Path | str, settings: Settings | None = None, clock: Clock | None = None,
                 policy: Policy | None = None, before_write: Callable[[Memories], None] | None = None) -> None:
        root = Path(root).expanduser().absolute()
        self.settings = settings or load_settings(root)
        self.vault = Vault(root, self.settings)
        self.policy = policy or Policy()
        self.index = Index(self.vault, long_lived=self.policy.long_lived)
        self.clock = clock or system_clock
        self.last_sync: SyncReport | None = None
        self._last_scan = float("-inf")
        self._vectors: Any = None
        self._stale_checked: tuple[Any, ...] | None = None  # _rank_semantic's last stale check
        self._filtered_cache: tuple[Any, list[Record], dict[str, Record]] | None = None
        self.change_feed: ChangeFeed | None = None  # started by the first freshness check (_feed)
        self._feed_started = False
        # Run before each write (save, modify, move): the front door merges the conflict copies a
        # file-sync tool left (features/sync.py), so reads never write; not again inside itself.
        self._before_write_hook = before_write
        self._in_before_write = False

    @property
    def long_lived(self) -> bool:
        return self.policy.long_lived

    @property
    def freshness_ttl(self) -> float:
        return self.policy.freshness_ttl

    @property
    def trust_watcher(self) -> bool:
        return self.policy.trust_watcher

    @property
    def progress(self) -> Progress | None:
        return self.policy.progress

    def _feed(self) -> ChangeFeed | None:
        """The policy's change feed, started on the first freshness check: on the thread that
        serves (a server warms its index there while the SDK imports), watching before that
        check's scan, which it cannot vouch for."""
        if not self._feed_started:
            self._feed_started = True
            if self.policy.change_feed is not None:
                self.change_feed = self.policy.change_feed(self.vault)
        return self.change_feed

    def _before_write(self) -> None:
        if self._before_write_hook is None or self._in_before_write:
            return
        self._in_before_write = True  # the hook's own writes do not run it again
        try:
            self._before_write_hook(self)
        finally:
            self._in_before_write = False

    @property
    def vectors(self) -> Any:
        """The derived vector store (`.vaultmem/embeddings.sqlite`); opened on first use."""
        if self._vectors is None:
            from vaultmem.storage.embeddings import VectorStore

            self._vectors = VectorStore(self.vault.derived_dir)
        return self._vectors

    @property
    def embeddings_installed(self) -> bool:
        """The extra is installed and the `embeddings` setting is not `off`."""
        from vaultmem.storage import embeddings

        return embeddings.enabled(self.settings.embeddings)

    def embeddings_enabled(self) -> bool:
        """Installed and allowed to load here: `on`, or `auto` in a long-lived process."""
        setting = self.settings.embeddings
        if setting == "off" or (setting == "auto" and not self.long_lived):
            return False  # without importing the engine's module, slow to import once a model is installed
        from vaultmem.storage import embeddings

        return embeddings.enabled(setting)

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
        if self.trust_watcher and self.index.ready():
            from vaultmem.storage import fence

            if fence.through_watcher(self.vault.state_dir):
                self.last_sync = SyncReport()
                self._last_scan = time.monotonic()
                return self.last_sync
        feed = self._feed()
        if feed is not None and self.index.ready():
            changed = feed.changes()
            if changed is not None and not changed[1]:
                self.index.compact_listing()  # the first scan's listing: no longer needed whole
                report = SyncReport()
                if changed[0]:
                    done = self.refresh_paths(changed[0])
                    report = SyncReport(updated=done["indexed"], removed=done["removed"], unchanged=done["skipped"],
                                        malformed=[(m["path"], m["reason"]) for m in done["malformed"]])
                self.last_sync = report
                self._last_scan = time.monotonic()
                return report
        self.last_sync = self.index.sync(progress or self.progress)
        self._last_scan = time.monotonic()
        return self.last_sync

    def warm(self) -> None:
        """Open, before anyone asks, what a long-lived process's first search needs: the
        freshness check (and with it the catalog), the full-text searcher and its filter of
        live memories, and the rest of a search's path (its modules, rows and caches), so
        a server's first search is as quick as the next. Lexical: the embedding model is
        loaded only when a search asks for it. Reads only; run it on the thread that will
        serve (SQLite connections belong to their thread)."""
        self.search("vaultmem", mode="lexical")  # its freshness check first, as every search's

    def close(self) -> None:
        self.index.close()
        if self._vectors is not None:
            self._vectors.close()
        if self.change_feed is not None:
            self.change_feed.close()

    def now(self) -> dt.datetime:
        return self.clock()

    def score_of(self, rec: Record, now: dt.datetime | None = None) -> float:
        return scoring.record_score(rec, now or self.now(), self.settings)

    def scorer(self, now: dt.datetime) -> Callable[[Record], float]:
        """`score_of` at `now` for many records: outside actr (which reads each note's access
        history) the model's constants are worked out once (scoring.column_scorer)."""
        settings = self.settings
        if settings.decay_model == "actr":
            return lambda rec: scoring.record_score(rec, now, settings)
        score = scoring.column_scorer(now.timestamp(), settings)
        return lambda rec: score(rec.use_count, rec.last_used, rec.strength, rec.memory_type, rec.pinned)

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
        defer_entities: bool = False,
    ) -> dict[str, Any]:
        """Write a new memory note into the short-term folder and index it.

        Order: validate, refuse credentials (`SecretBlocked`, nothing written), reinforce a
        near-identical memory instead of copying it (`status: duplicate`), fill in what was
        not given (entities, strength, memory_type, urgency, domain), write, index.

        `defer_entities` (a cold CLI process, where spaCy's import is most of the time): type,
        urgency, domain and strength come from the rules at once, the note is written with
        `entities: []`, and a job in `.vaultmem/state/enrich/` asks `enrich_pending` (a warm
        process) to fill in the entities and the strength they add; the result says
        `enrichment: pending`. The note is complete and indexed either way.
        """
        self.vault.require()
        content = validate_content(content)
        tags = validate_tags(tags)
        entities = None if entities is None else [e.strip() for e in entities if e and e.strip()]
        if strength is not None and not (1.0 <= strength <= 2.0):
            raise InvalidInput(f"strength must be between 1.0 and 2.0, got {strength}")
        if memory_type is not None and memory_type not in MEMORY_TYPES:
            raise InvalidInput(f"memory_type must be one of {', '.join(MEMORY_TYPES)}, got {memory_type!r}")
        meta = validate_meta(meta, notes.OWNED_KEYS)
        from vaultmem.base import secrets  # its patterns compile on first use: reads never pay

        secrets.check("\n".join([content, source or "", context or "", agent or "", *tags, *(entities or []),
                                  *(f"{k}={v}" for k, v in meta.items())]))
        self._before_write()  # after every check: a refused save changes nothing
        if dedupe and self.settings.dedupe_on_save:
            duplicate = self.find_duplicate(content)
            if duplicate is not None:
                rec, similarity = duplicate
                # found in the index as it stands, as a new note's name is: no scan of the vault
                # either way (a stat of every note)
                touched = self._touch(rec)
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
        strength_given = strength is not None
        deferred = defer_entities and self.settings.enable_preprocessing and not entities_given
        if self.settings.enable_preprocessing:
            # deferred: no entities yet (enrich_pending adds them), so no spaCy in this process
            enrichment = self.enricher().enrich(content, entities=[] if deferred else entities, strength=strength,
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
            memory_type=memory_type, agent=self._agent(agent), meta=meta,  # the session's agent by default
        )
        text = notes.render_note(self.template("memory"), memory)
        folder = self.settings.stm_dir.strip("/")
        name = f"{notes.slugify(content)}-{memory.short_id}.md"
        rel, _renamed = self._free_name(f"{folder}/{name}", memory.id)
        self.vault.create_exclusive(self.vault.abs(rel), text)
        self.index.refresh([rel])
        if deferred:
            self._queue_enrichment(memory.id, rel, None if strength_given else memory.strength)
        has_embedding = self.embed_paths([rel])
        result: dict[str, Any] = {
            "success": True,
            "status": "created",
            "memory_id": memory.id,
            "path": rel,
            "message": f"Memory saved with ID: {memory.id}",
            "has_embedding": has_embedding,
            "enrichment_applied": enrichment is not None,
            "enrichment": "pending" if deferred else ("done" if enrichment is not None else "off"),
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

    # -- deferred enrichment ---------------------------------------------------------------------
    @property
    def enrich_dir(self) -> Path:
        return self.vault.state_dir / "enrich"

    def _queue_enrichment(self, mid: str, rel: str, provisional_strength: float | None) -> None:
        """A job for enrich_pending: the memory, and the strength the rules gave it without
        entities (None: the caller chose the strength, so entities do not change it)."""
        import json

        self.enrich_dir.mkdir(parents=True, exist_ok=True)
        job = {"id": mid, "path": rel, "strength": provisional_strength}
        self.vault.write_text(self.enrich_dir / f"{mid}.json", json.dumps(job))

    def pending_enrichments(self) -> list[Path]:
        try:
            return sorted(self.enrich_dir.glob("*.json"))
        except FileNotFoundError:
            return []

    def enrich_pending(self, limit: int | None = None) -> dict[str, Any]:
        """Fill in the entities (and the strength they add) of memories saved with
        `defer_entities`, with a compare-and-swap edit of those two lines only. A memory whose
        entities or strength a person set meanwhile keeps them; one deleted meanwhile drops its
        job. One process at a time (a lock beside the jobs); safe to run again."""
        totals = {"enriched": 0, "kept": 0, "gone": 0}
        busy = False
        # Whoever holds the lock drains the queue, jobs queued meanwhile included; a process that
        # finds it held leaves its job to the holder, and the holder looks again after letting
        # go, so no job waits for the next save.
        while self.pending_enrichments() and (limit is None or sum(totals.values()) < limit):
            lock = portable.FileLock(self.enrich_dir / ".lock")
            if not lock.acquire(timeout=0):
                busy = True
                break
            try:
                self._drain(totals, limit)
            finally:
                lock.release()
        result: dict[str, Any] = {"success": True, **totals, "pending": len(self.pending_enrichments())}
        if busy:
            result["busy"] = True
        return result

    def _drain(self, totals: dict[str, int], limit: int | None) -> None:
        """enrich_pending's work under its lock: every job there, until none is left."""
        import json

        enricher = self.enricher()
        while True:
            jobs = self.pending_enrichments()
            if not jobs or (limit is not None and sum(totals.values()) >= limit):
                return
            self.sync()  # once per round of jobs: a note moved since it was saved is found by id
            for job_path in jobs:
                if limit is not None and sum(totals.values()) >= limit:
                    return
                try:
                    job = json.loads(job_path.read_text(encoding="utf-8"))
                except FileNotFoundError:
                    continue
                except (OSError, ValueError):
                    job_path.unlink(missing_ok=True)
                    continue
                totals[self._enrich_one(enricher, job)] += 1
                job_path.unlink(missing_ok=True)

    def _enrich_one(self, enricher: Any, job: Mapping[str, Any]) -> str:
        """One job: `enriched`, `kept` (a person set the values, or took the note) or `gone`."""
        try:
            rec = self.resolve(str(job["id"]))
        except (VaultmemError, KeyError):
            return "gone"
        if not self.vault.owns(rec.path):
            return "kept"  # the person moved it out of vaultmem's folders: theirs now
        entities = enricher.entities(rec.content)
        provisional = job.get("strength")
        changed: list[bool] = []

        def change(cur: Record) -> dict[str, Any]:
            out: dict[str, Any] = {}
            if not cur.entities:  # still as saved: nobody filled them in meanwhile
                out["entities"] = entities
                if provisional is not None and abs(cur.strength - float(provisional)) < 1e-9:
                    out["strength"] = enricher.classifier.strength_markers(cur.content, len(entities))[0]
            changed.append(bool(out))
            return out

        try:
            self.modify(rec, change)
        except VaultmemError:  # broken by hand, or edited without pause: the person's note wins
            return "kept"
        return "enriched" if changed and changed[-1] else "kept"

    def enricher(self) -> Any:
        """The process-wide enricher for this vault's templates (spaCy loads on first use)."""
        from vaultmem.core.enrich import get_enricher

        return get_enricher(self.vault.state_dir / "templates", self.settings.spacy_model,
                            self.vault.derived_dir / PARSED_DIR)

    def find_duplicate(self, content: str, accept: Callable[[Record], bool] | None = None,
                       pool: int = 5) -> tuple[Record, float] | None:
        """A near-identical active memory (see `enrich.similarity`), found through the index:
        vaultmem's one near-duplicate detector (save and Mnemosyne's memory_store both use it).

        `accept` narrows the memories that count (memory_store: the same agent's own), and
        `pool` is how many of the best content matches are compared.
        """
        from vaultmem.core.enrich import duplicate_query, similarity

        query = duplicate_query(content)
        if not query:
            return None
        hits, _total = self.index.search(query, kinds=("memory",), statuses=DEFAULT_STATUSES, limit=pool,
                                         fields=("content",))
        records = self.index.by_paths([p for p, _ in hits])
        best: tuple[Record, float] | None = None
        for path, _score in hits:
            rec = records.get(path)
            if rec is not None:
                rec = self._as_on_disk(rec)
            if rec is None or (accept is not None and not accept(rec)):
                continue
            sim = similarity(content, rec.content)
            if sim >= self.settings.duplicate_threshold and (best is None or sim > best[1]):
                best = (rec, sim)
        return best

    def _as_on_disk(self, rec: Record) -> Record | None:
        """`rec` as its file is now: the index's record when the file's (mtime, size) are the
        indexed ones, else read again (None: gone, malformed, or no longer an active or promoted memory). A save
        checks the index as it stands without a scan, so a memory the person rewrote since
        must not be taken for the text it held before (the new memory would be dropped as its
        duplicate)."""
        from vaultmem.storage.index import record_from_text

        with contextlib.suppress(OSError):
            st = os.stat(self.vault.abs(rec.path))
            if (st.st_mtime_ns, st.st_size) == (rec.mtime_ns, rec.size):
                return rec
        try:  # changed, moved or deleted since indexed: read_note follows it as modify does
            rec, _path, text, fingerprint = self.read_note(rec)
            current = record_from_text(self.vault, rec.path, text, fingerprint)
        except (OSError, UnicodeDecodeError, VaultmemError):  # gone, ambiguous, malformed
            return None
        return current if current.kind == "memory" and current.status in DEFAULT_STATUSES else None

    def embed_paths(self, paths: Sequence[str]) -> bool:
        """Refresh the vectors of notes vaultmem just wrote, when embeddings are enabled."""
        if not self.embeddings_enabled():
            return False
        from vaultmem.storage import embeddings

        records = [r for r in self.index.by_paths(list(paths)).values() if r.kind == "memory"]
        embeddings.embed_records(embeddings.stale(records, self.vectors), self.vectors)
        return bool(records)

    def backfill_embeddings(self, *, limit: int | None = None, force: bool = False, dry_run: bool = False,
                            model: str | None = None, progress: Progress | None = None) -> dict[str, Any]:
        """Vectors for memories that lack a current one (the seed's `backfill_embeddings`)."""
        from vaultmem.storage import embeddings

        def load_records() -> list[Record]:
            self.sync()
            return self.index.records("kind = 'memory'")

        return embeddings.backfill(load_records, self.vectors, limit=limit, force=force, dry_run=dry_run,
                                   model=model or embeddings.MODEL_NAME, progress=progress)

    def template(self, name: str) -> str:
        """The vault's own template if it has one (`.vaultmem/templates/`), else ours."""
        for folder in (self.vault.state_dir / "templates", TEMPLATE_DIR):
            path = folder / f"{name}.md"
            if path.is_file():
                return path.read_text(encoding="utf-8")
        raise VaultmemError(f"template {name}.md is missing from {TEMPLATE_DIR}; reinstall vaultmem")

    def resolve(self, ref: str, kinds: Sequence[str] = ("memory",)) -> Record:
        """A memory named the way a person names it: full id, 8-char short id, or a name as
        Obsidian resolves a link to it (`links.Resolver`'s rule: a path, a path's tail, a file
        name, an alias; `.md`, case and Unicode normalisation aside), typed bare, quoted or
        pasted as `[[name|shown]]` / `[[folder/name#Heading]]`; failing that, the title a
        memory's file name shows without its `-<id8>` suffix (`pool settings` ->
        `pool-settings-4d5e6f70.md`). Several matches at the first rule that matches: Ambiguous."""
        ref = (ref or "").strip()
        if not ref:
            raise InvalidInput("memory id is empty; pass an id, an 8-char short id or a file name")
        if "\x00" in ref or len(ref) > 512:
            raise InvalidInput("memory id is not valid; pass an id, an 8-char short id or a file name")
        kind_sql = f"kind IN ({','.join('?' * len(kinds))})"
        ref, pasted = _unwrap_reference(ref)
        found: list[Record] = []
        if _UUID.match(ref):
            found = self.index.records(f"{kind_sql} AND id = ?", [*kinds, ref.lower()])
        elif _SHORT_ID.match(ref):
            found = self.index.records(f"{kind_sql} AND id LIKE ?", [*kinds, ref.lower() + "%"])
        if not found:  # a name (a note may also be named like an id)
            found = self._by_name(ref, kinds, pasted)
        if not found:
            raise NotFound(f"no memory matches {ref!r}; check the id with `vaultmem search`")
        if len(found) > 1:
            paths = ", ".join(sorted(r.path for r in found)[:5])
            raise Ambiguous(f"{ref!r} matches {len(found)} notes ({paths}); use the full id or path")
        return found[0]

    def _by_name(self, name: str, kinds: Sequence[str], pasted: bool) -> list[Record]:
        """The notes of `kinds` a link to `name` reaches, by the rule backlinks and the graph
        resolve links with; then the title rule. A typed name passes over a person's note of that
        name to a memory with it as alias; a pasted `[[link]]` means what it means in Obsidian,
        so one that reaches a note of another kind (a person's note) is NotFound."""
        from vaultmem.storage import links as linkmod

        key = linkmod.target_key(name)
        last = key.rsplit("/", 1)[-1]
        if not last:
            return []
        db = self.index.db
        if last.isascii():  # SQLite's LIKE ignores ASCII case only, which is all an ASCII name needs
            like = last.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ".md"
            rows = db.execute("SELECT path FROM notes WHERE path LIKE ? ESCAPE '\\' OR path LIKE ? ESCAPE '\\'",
                              (like, "%/" + like))
        else:
            rows = db.execute("SELECT path FROM notes")
        named = [p for (p,) in rows if linkmod.target_key(p.rsplit("/", 1)[-1]) == last]
        resolver = linkmod.Resolver(named, db.execute("SELECT path, alias FROM aliases WHERE alias = ?", (key,)))
        # Resolver.resolve's tiers in its order, keeping every candidate of a tier (it picks the
        # one nearest to the linking note; a name typed on its own has no such note)
        if "/" in key:
            hit = resolver.by_path.get(key)
            tiers = [[hit] if hit else [p for p in resolver.by_name.get(last, ())
                                        if linkmod.target_key(p).endswith("/" + key)]]
        else:
            tiers = [resolver.by_name.get(key, []), resolver.by_alias.get(key, [])]
        for tier in tiers:
            if not tier:
                continue
            found = [r for r in self.index.by_paths(tier).values() if r.kind in kinds]
            if found:
                return sorted(found, key=lambda r: r.path)
            if pasted:  # the link leads where Obsidian would go, and that is no memory
                raise NotFound(f"[[{name}]] links to {sorted(tier)[0]}, which is not a memory; "
                               "check the name with `vaultmem search`")
        return self._by_title(name, kinds)

    def _by_title(self, name: str, kinds: Sequence[str]) -> list[Record]:
        """Memories whose file name is `name` as a slug plus the `-<id8>` suffix vaultmem adds
        (`pool settings`, `Pool Settings` -> `pool-settings-4d5e6f70.md`)."""
        slug = notes.slugify(name, max_words=50, max_chars=200)
        rows = self.index.records(f"kind IN ({','.join('?' * len(kinds))}) AND lower(title) LIKE ? ESCAPE '\\'",
                                  [*kinds, slug.replace("_", "\\_").replace("%", "\\%") + "-%"])
        return [r for r in rows if re.fullmatch(re.escape(slug) + r"-[0-9a-f]{8}", r.title.lower())]

    def memory_dict(self, rec: Record, now: dt.datetime | None = None, score: float | None = None) -> dict[str, Any]:
        """The seed's memory keys (`score`: the decay score, when the caller has it already)."""
        now = now or self.now()
        created = rec.created_dt or now
        result: dict[str, Any] = {
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
            "score": round(self.score_of(rec, now) if score is None else score, 4),
            "age_days": round(days_between(created, now), 2),
            "path": rec.path,
        }
        if rec.props:
            result["meta"] = rec.props
        return result

    def open(self, refs: Sequence[str]) -> dict[str, Any]:
        """Memories by id / short id / file name; unknown ones land in `not_found`."""
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

    def note_text(self, ref: str) -> dict[str, Any]:
        """One memory note's markdown exactly as it is on disk (for MCP resource readers)."""
        self.sync()
        rec = self.resolve(ref)
        text = self.vault.abs(rec.path).read_text(encoding="utf-8")
        return {"success": True, "memory_id": rec.id, "path": rec.path, "text": text}

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
        literal_fallback: bool = False,
    ) -> dict[str, Any]:
        """Every memory that matches, ranked by relevance blended with decay (`rank_score`).

        With include_review_candidates, matches in the review danger zone ranked below
        top_k are blended in (`review_candidate: true`), see scoring.blend_review_candidates.
        With literal_fallback, a query with an unbalanced quote or parenthesis searches its
        words (the result's `message` says so) instead of raising QuerySyntaxError.
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
        note = None
        if literal_fallback:
            from vaultmem.storage.index import literal_query

            text, note = literal_query(text)
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
        if include_review_candidates:
            window = scoring.blend_review_candidates(ranked, top_k, self.settings)
        else:
            window = [(*r, False) for r in ranked[:top_k]]
        if mode == "lexical" and text:  # ranked from rank_records: read the shown memories whole
            shown = self.index.by_paths([w[0].path for w in window])
            window = [(shown[w[0].path], *w[1:]) for w in window if w[0].path in shown]
        results = []
        for rec, decay_score, relevance, _rank, is_review in window:
            item = self.memory_dict(rec, now, decay_score)
            item["relevance"] = None if relevance is None else round(relevance, 4)
            similarity = sims.get(rec.path)
            item["similarity"] = None if similarity is None else round(similarity, 4)
            item["review_candidate"] = is_review
            results.append(item)
        out = {"success": True, "count": len(results), "mode": mode, "results": results}
        if note:
            out["message"] = note[0].upper() + note[1:]
        return out

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
            from vaultmem.storage import embeddings

            embeddings.require()
            if self.settings.embeddings == "off":
                raise InvalidInput(f"{mode} search is switched off (embeddings: off); set embeddings to auto or on")
        return mode

    def _filtered(self, statuses: Sequence[str] | None, tags: Sequence[str],
                  since: dt.datetime | None) -> list[Record]:
        """Memories passing the status, tag and window filters (from the catalog; the records
        are kept until the catalog changes, see Index.records_cached)."""
        where, params = "kind = 'memory'", list[Any]()
        if statuses:
            where += f" AND status IN ({','.join('?' * len(statuses))})"
            params += list(statuses)
        records = self.index.records_cached(where, params)
        key = (self.index.version(), self.index.viewer, where, tuple(params), tuple(tags), since, self.agent)
        if self._filtered_cache is not None and self._filtered_cache[0] == key:
            return self._filtered_cache[1]
        if since is not None:
            cutoff = since.timestamp()
            records = [rec for rec in records if rec.last_used is not None and rec.last_used >= cutoff]
        kept = [rec for rec in records
                if (not tags or notes.tag_matches(tags, [*rec.tags, *notes.inline_tags(rec.content)]))
                and self.visible(rec)]
        self._filtered_cache = (key, kept, {rec.path: rec for rec in kept})
        return kept

    def _spread(self, ranked: list[tuple[Record, float, float | None, float]],
                top_k: int) -> list[tuple[Record, float, float | None, float]]:
        """Temporal contiguity (episodes.py): each memory found moves up toward the relevance
        of its best episode neighbour, then is ranked again with decay."""
        from vaultmem.core import episodes

        decay_weight = self.settings.decay_weight
        return episodes.spread(
            self.index, ranked, weight=self.settings.contiguity_weight,
            window_minutes=self.settings.contiguity_window_minutes,
            depth=max(self.settings.search_candidates, top_k * 5), top_k=top_k,
            span=self.settings.contiguity_span,
            rank=lambda relevance, s: scoring.rank_score(relevance, s, decay_weight))

    def _rank(self, text: str, statuses: Sequence[str] | None, tags: Sequence[str],
              since: dt.datetime | None, min_score: float | None, top_k: int,
              now: dt.datetime) -> list[tuple[Record, float, float | None, float]]:
        weight = self.settings.decay_weight
        ranked: list[Ranked] = []
        score_of = self.scorer(now)
        if not text:
            for rec in self._filtered(statuses, tags, since):
                s = score_of(rec)
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
            records = self.index.rank_records([p for p, _ in hits])  # text read for the shown ones only
            ranked = []
            for path, bm25 in hits:
                found = records.get(path)
                if found is None or not self.visible(found):
                    continue
                rec = found
                if since is not None and (rec.last_used or 0) < since.timestamp():
                    continue  # a post-filter: a numeric Whoosh field slowed indexing
                s = score_of(rec)
                if min_score is not None and s < min_score:
                    continue
                relevance = bm25 / best
                ranked.append((rec, s, relevance, scoring.rank_score(relevance, s, weight)))
            if len(ranked) >= top_k or complete:
                break
            limit *= 4  # the score or window filter dropped too many: widen the candidate set
        return ranked  # unsorted: search orders every mode's ranking once

    def _rank_semantic(self, text: str, mode: str, statuses: Sequence[str] | None, tags: Sequence[str],
                       since: dt.datetime | None, min_score: float | None, top_k: int,
                       now: dt.datetime) -> tuple[list[tuple[Record, float, float | None, float]], dict[str, float]]:
        """Semantic: cosine similarity. Hybrid: BM25F and cosine rankings fused (`fuse`).
        Returns the ranking and each candidate's cosine similarity by path."""
        from vaultmem.storage import embeddings

        candidates = self._filtered(statuses, tags, since)
        # Notes edited outside vaultmem: embed a few now, the rest on backfill. Checked again
        # only when the catalog or the vectors changed (hashing every text is costly).
        filters = (tuple(statuses or ()), tuple(tags), since)
        checked = (self.index.version(), self.index.viewer, self.vectors.stamp(), filters)
        if checked != self._stale_checked:
            stale = embeddings.stale(candidates, self.vectors)
            if stale:
                embeddings.embed_records(stale[:INLINE_EMBED_LIMIT], self.vectors)
            self._stale_checked = (self.index.version(), self.index.viewer, self.vectors.stamp(), filters)
        sims = embeddings.similarities(text, candidates, self.vectors)
        assert self._filtered_cache is not None
        by_path = self._filtered_cache[2]  # the candidates by path, built with them
        lexical: dict[str, float] = {}
        if mode == "hybrid":
            for rec, _s, relevance, _r in self._rank(text, statuses, tags, since, None, top_k, now):
                lexical[rec.path] = relevance or 0.0
        fused = scoring.fuse(lexical, sims, mode, self.settings.hybrid_fusion, self.settings.rrf_k,
                     depth=max(self.settings.search_candidates, top_k * 5))
        weight = self.settings.decay_weight
        ranked: list[Ranked] = []
        score_of = self.scorer(now)
        for path, relevance in fused.items():
            found = by_path.get(path)
            if found is None:
                continue
            rec = found
            s = score_of(rec)
            if min_score is not None and s < min_score:
                continue
            ranked.append((rec, s, relevance, scoring.rank_score(relevance, s, weight)))
        return ranked, sims  # unsorted: search orders every mode's ranking once

    def touch(self, ref: str, boost_strength: bool = False) -> dict[str, Any]:
        """use_count + 1, last_used = now, and optionally strength + 0.1 (max 2.0)."""
        self.sync()
        return self._touch(self.resolve(ref), boost_strength)

    def _touch(self, rec: Record, boost_strength: bool = False) -> dict[str, Any]:
        """`touch` of a memory already resolved: no freshness scan (the edit goes through
        `modify`, which reads the note as it is on disk now and follows it if it moved)."""
        now = self.now()
        old_score = self.score_of(rec, now)

        def change(current: Record) -> dict[str, Any]:
            changes: dict[str, Any] = {"use_count": current.use_count + 1, "last_used": now}
            changes.update(scoring.access_changes(current, now, self.settings))
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

    def modify_many(self, recs: Sequence[Record], change: Callable[[Record], Mapping[str, Any]],
                    skip_foreign: bool = False) -> list[Record]:
        """`modify` for several notes under one lock hold and one index commit (recall's access).
        `skip_foreign` leaves memories the person moved out of vaultmem's folders as they are
        (a side effect such as recall's reinforcement) instead of raising NotOwned."""
        if skip_foreign:
            recs = [rec for rec in recs if self.vault.owns(rec.path)]
        self._before_write()
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
        """A note's text as on disk now (CRLF and BOM kept), following it if it moved since it
        was indexed."""
        path = self.vault.abs(rec.path)
        try:
            text = self.vault.read_text(path)
        except FileNotFoundError:
            self.index.sync()
            rec = self.resolve(rec.id or rec.path)
            path = self.vault.abs(rec.path)
            text = self.vault.read_text(path)
        st = path.stat()
        return rec, path, text, (st.st_mtime_ns, st.st_size)

    def _rewrite(self, rec: Record, change: Callable[[Record], Mapping[str, Any]]) -> str:
        """The file part of `modify` (caller holds the lock); returns the note's path.

        Compare-and-swap: Obsidian does not take vaultmem's lock, so the new text replaces the
        file only if it still holds the bytes the change was computed from; otherwise the
        change is applied again to what the person saved (never over it)."""
        for _attempt in range(CAS_ATTEMPTS):
            rec, done = self._rewrite_once(rec, change)
            if done:
                return rec.path
        raise ConflictError(f"{rec.path} kept changing while vaultmem wrote it ({CAS_ATTEMPTS} tries); "
                            "nothing was overwritten, try again when the editing stops")

    def _rewrite_once(self, rec: Record, change: Callable[[Record], Mapping[str, Any]]) -> tuple[Record, bool]:
        rec, path, _text, _fingerprint = self.read_note(rec)
        try:
            text, stamp = self.vault.read_stamped(path)
        except FileNotFoundError:
            return rec, False  # moved or deleted since: read_note follows it on the next try
        fingerprint = (stamp[1], stamp[2])
        if not self.vault.owns(rec.path):
            raise NotOwned(f"{rec.path} is outside vaultmem's folders, so it is yours: vaultmem reads it but "
                           f"never writes it; move it back under {self.settings.stm_dir.split('/')[0]}/ "
                           "to let vaultmem update it")
        from vaultmem.storage.index import record_from_text

        try:
            current = record_from_text(self.vault, rec.path, text, fingerprint)
        except MalformedNote as exc:
            raise MalformedNote(rec.path, f"{exc.reason}; fix it in Obsidian, vaultmem will not rewrite it") from None
        changes = dict(change(current))
        split = notes.split_note(text)
        props = notes.load_yaml(split.frontmatter) if split.frontmatter is not None else {}
        if "id" not in props and current.id:
            changes = {"id": current.id, **changes}
        folder_status = self.vault.status_of(rec.path)
        if folder_status and "status" not in changes and props.get("status") in notes.STATUSES:
            changes["status"] = folder_status  # the folder is the truth; align while writing anyway
        # A value the person wrote that vaultmem does not understand stays; so does the line of a
        # value that already reads as the new one (its spacing and quoting are the person's).
        changes = {k: v for k, v in changes.items()
                   if k not in props or (notes.understood(k, props[k]) and not notes.same_value(props[k], v))}
        new_text = notes.update_frontmatter(text, changes)
        if new_text == text:
            return rec, True
        return rec, self.vault.replace_if_unchanged(path, text, stamp, new_text)

    # -- moves ----------------------------------------------------------------------------------
    def move_memory(self, rel: str, status: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Move a memory into the folder of `status`, keeping its subfolder (`stm/work/x.md` ->
        `ltm/work/x.md`), set `changes` on it (byte-exact; values the person wrote that vaultmem
        does not understand stay), and rewrite the path links to it in other notes, as Obsidian
        does. A name taken in the destination gives the note a free name (`<stem>-<id8>.md`);
        then the links by its old name that resolved to it follow it too.

        Returns {"path", "from", "renamed_to" (None or the new file name), "links_rewritten":
        [{"path", "line", "old", "new"}]}.
        """
        self._before_write()
        with self.vault.lock():
            if not self.vault.owns(rel):
                raise NotOwned(f"{rel} is outside vaultmem's folders, so it is yours: vaultmem never moves it")
            folders = self.vault.memory_dirs
            here = self.vault.status_of(rel)
            sub = rel[len(folders[here]) + 1:] if here else rel.rsplit("/", 1)[-1]
            dst = f"{folders[status]}/{sub}"
            rec = self.index.get(rel)
            if rec is not None and rec.id:
                # an id derived from the file name (a note the person wrote without one) is
                # written now, so a free name on a clash does not change the memory's id
                changes = {"id": rec.id, **changes}
            sources: dict[str, set[str]] = {}
            if dst == rel:
                moved, renamed = rel, None
            else:
                dst, renamed = self._free_name(dst, (rec.id or "") if rec else "")
                sources = self.link_sources(rel)
                self.vault.move_to(rel, dst)
                moved = dst
                self.index.refresh([moved], removed=[rel])
            edits = self._relink(rel, moved, sources)
            current = self.index.get(moved)
            if current is not None and changes:
                self.modify(current, lambda _cur: changes)
        return {"path": moved, "from": rel, "renamed_to": renamed, "links_rewritten": edits}

    def _free_name(self, dst: str, mid: str) -> tuple[str, str | None]:
        """`dst`, or a name beside it nobody holds: `<stem>-<id8>.md`, then numbered. A name
        differing only in case from a file there counts as held (macOS and Windows), and so does
        a folder: `dst` takes the spelling of an existing folder that differs only in case."""
        dst = self.vault.match_case(dst)
        if not portable.taken(self.vault.abs(dst)):
            return dst, None
        folder, name = dst.rsplit("/", 1)
        stem = name[:-3]
        tail = f"-{mid[:8]}" if mid and not stem.endswith(mid[:8]) else ""
        for n in range(0, 1000):
            candidate = f"{folder}/{stem}{tail}{'' if n == 0 else f'-{n}'}.md"
            if not portable.taken(self.vault.abs(candidate)):
                return candidate, candidate.rsplit("/", 1)[1]
        raise VaultmemError(f"cannot find a free name for {name} in {folder}/; rename the notes there")

    def link_sources(self, rel: str) -> dict[str, set[str]]:
        """The notes whose links resolve to `rel`, each with the keys (as written) that do."""
        sources: dict[str, set[str]] = {}
        for src, key in self.index.db.execute(
                "SELECT src, target_key FROM main.links WHERE dst = ? AND src != ?", (rel, rel)):
            sources.setdefault(src, set()).add(key)
        return sources

    def relink(self, old: str, new: str, sources: Mapping[str, Collection[str]]) -> list[dict[str, Any]]:
        """Point the links in `sources` (`link_sources(old)`, read before `old` went) at `new`,
        a note that took `old`'s place without moving (two copies of one memory merged)."""
        with self.vault.lock():
            return self._relink(old, new, sources, refolder=False)

    def _relink(self, old: str, new: str, sources: Mapping[str, Collection[str]],
                refolder: bool = True) -> list[dict[str, Any]]:
        """Point the links that resolved to `old` at `new` (the caller holds the lock): those
        written as paths, and those by name when the name changed (`links.retarget`).
        `sources` maps each note to the target keys of its links that resolved to `old`; in
        each, only the link target's characters change. The moved note's own relative markdown
        links are recomputed for its new folder (`links.refolder`)."""
        from vaultmem.storage import links as linkmod

        edits: list[dict[str, Any]] = []
        touched: list[str] = []
        jobs = [(src, old, new) for src in sorted(sources) if src != new]
        if refolder and old.rsplit("/", 1)[0] != new.rsplit("/", 1)[0]:
            jobs.append((new, "", ""))  # the moved note's relative links

        def relinked(src: str, target_old: str, target_new: str, text: str) -> tuple[str, list[dict[str, Any]]]:
            try:
                split = notes.split_note(text)
                props = notes.load_yaml(split.frontmatter) if split.frontmatter is not None else {}
            except MalformedNote:
                return text, []  # a broken note is never rewritten; doctor lists its links
            offset = split.head.count("\n")
            found = linkmod.note_links(split.frontmatter, props, split.body, offset, src)
            if target_old:
                return linkmod.retarget(text, found, src, target_old, target_new, sources[src])
            return linkmod.refolder(text, found, old, new, self.file_exists)

        for src, target_old, target_new in jobs:
            made = self._edit_file(src, functools.partial(relinked, src, target_old, target_new),
                                   (FileNotFoundError, UnicodeDecodeError))
            if made:
                edits.extend(made)
                touched.append(src)
        if touched:
            self.index.refresh(touched)
        if old != new:  # the canvases' file cards (storage/canvas.py: a broken canvas stays)
            from vaultmem.storage import canvas

            for rel in self.vault.canvas_files():
                edits.extend(self._edit_file(rel, lambda text: canvas.retarget(text, old, new),
                                             (VaultmemError, OSError, UnicodeDecodeError)))
        return edits

    def _edit_file(self, rel: str, change: Callable[[str], tuple[str, list[dict[str, Any]]]],
                   unreadable: tuple[type[Exception], ...]) -> list[dict[str, Any]]:
        """`change` (text -> (new text, its edits)) applied to the file at `rel`, byte-exactly,
        and written only if the file is still what it was computed from (else read again and
        retried: CAS). The edits, each with the file's path; [] when nothing changed or the
        file was `unreadable`."""
        for _attempt in range(CAS_ATTEMPTS):
            try:
                path = self.vault.abs(rel)
                text, stamp = self.vault.read_stamped(path)
            except unreadable:
                return []
            new_text, changed = change(text)
            if not changed:
                return []
            if self.vault.replace_if_unchanged(path, text, stamp, new_text):
                return [{"path": rel, **c} for c in changed]
        return []

    def file_exists(self, rel: str) -> bool:
        """True when a file (a note or an attachment) is at this vault-relative path."""
        try:
            return self.vault.abs(rel).is_file()
        except (VaultmemError, OSError):  # a path the vault refuses (a symlink out of it) is none of it
            return False

    # -- live indexing (the watcher) -----------------------------------------------------------
    root = property(lambda self: self.vault.root, doc="The vault folder.")
    state_dir = property(lambda self: self.vault.state_dir, doc="The vault's `.vaultmem/` folder.")
    read_only = property(lambda self: self.vault.read_only,
                         doc="Why the vault cannot be written (then searches use an index in the cache), or None.")
    derived_dir = property(lambda self: self.vault.derived_dir, doc="Where the index, lock and state files live.")
    is_note_path = staticmethod(is_note_path)

    def require_vault(self) -> None:
        """Raise NotFound (with the fix) unless the vault exists."""
        self.vault.require()

    def refresh_all(self) -> dict[str, Any]:
        """The index brought in line with every note on disk: indexed / removed / malformed."""
        return self.index.sync().summary()

    def refresh_paths(self, paths: Iterable[str]) -> dict[str, Any]:
        """The index brought in line with the disk for these vault-relative paths (a watcher's
        batch): indexed / removed / skipped / malformed, and `paths` it changed."""
        root = self.vault.root
        upsert: list[str] = []
        gone: list[str] = []
        skipped = 0
        wanted = sorted(set(paths))
        # Decide under the vault lock: a CLI or MCP write holds it from the file write to the
        # index refresh, so its notes are seen here already indexed and skipped.
        with self.vault.lock():
            known = self.index.by_paths(wanted)
            for rel in wanted:
                try:
                    st = os.lstat(root / rel)
                except FileNotFoundError:
                    st = None
                except OSError as exc:
                    import logging  # here: its import would slow every cold command's start

                    logging.getLogger("vaultmem.index").warning("cannot read %s: %s; skipped", rel,
                                                                exc.strerror or exc)
                    continue
                if st is None or not stat.S_ISREG(st.st_mode):  # gone, or a symlink/pipe/folder
                    if rel in known:
                        gone.append(rel)
                    else:
                        skipped += 1
                    continue
                rec = known.get(rel)
                if rec is not None and (rec.mtime_ns, rec.size) == (st.st_mtime_ns, st.st_size):
                    skipped += 1
                    continue
                upsert.append(rel)
            if not (upsert or gone):
                return {"indexed": 0, "removed": 0, "skipped": skipped, "malformed": []}
            report = self.index.refresh(upsert, removed=gone)
        return {**report.summary(), "skipped": skipped, "paths": upsert + gone}

    @staticmethod
    def is_conflict_copy(rel: str) -> bool:
        """A sync tool's or file manager's copy of a note (storage/vault.py), for the watcher."""
        from vaultmem.storage.vault import is_conflict_copy

        return is_conflict_copy(rel)

    @staticmethod
    def feed_marker(name: str) -> str:
        """The vault path of an in-process observer's marker (storage/fence.py, observer.ChangeFeed)."""
        from vaultmem.storage import fence

        return fence.feed_marker(name)

    @staticmethod
    def is_fence(rel: str) -> bool:
        """Whether a vault path is a command's fence or an in-process observer's marker
        (storage/fence.py), for the watcher's observer."""
        from vaultmem.storage import fence

        return fence.is_marker(rel)

    def answer_fences(self, rels: Iterable[str]) -> None:
        """Tell the commands waiting on these fences that the index is current."""
        from vaultmem.storage import fence

        for rel in rels:
            nonce = fence.fence_nonce(rel)
            if nonce is not None:
                fence.confirm(self.vault.state_dir, nonce)

    def defer_index_merges(self) -> bool:
        """Commits stop merging index segments; `start_index_merge` merges them in a child
        process instead (storage/segments.py: forked, or spawned where fork is missing)."""
        self.index.merge_on_commit = False
        return True

    def resume_index_merges(self) -> None:
        """Commits merge index segments again (the watcher stopping)."""
        self.index.merge_on_commit = True

    def index_merge_due(self) -> bool:
        """Merges are deferred and the commits since left segments that need one."""
        return not self.index.merge_on_commit and bool(segments.plan(self.index.segments()))

    def start_index_merge(self, close_fds: Sequence[int] = ()) -> int:
        """Start the child that merges the index segments (forked or spawned); its pid."""
        return segments.start_merge(self.vault, close_fds=list(close_fds))

    def index_merge_result(self, pid: int, wait: bool = False) -> str | None:
        """None while the merge child runs, else `merged`, `nothing` or `failed (exit N)`."""
        code = segments.finished(pid, wait=wait)
        if code is None:
            return None
        return {segments.MERGED: "merged", segments.NOTHING_TO_DO: "nothing"}.get(code, f"failed (exit {code})")

    @property
    def agent(self) -> str | None:
        """The agent this store acts for (`--agent`, VAULTMEM_AGENT); None: the person, who sees
        every memory. Another agent's private memory is not in its catalog at all
        (`Index.set_viewer`), so no command, tool or resource can show or change it."""
        return self.index.viewer

    @agent.setter
    def agent(self, agent: str | None) -> None:
        self.index.set_viewer(agent or None)

    def visible(self, rec: Record) -> bool:
        """A private memory (`private: true`) is shown to its own agent only (self.agent)."""
        return visible_to(rec, self.agent)

    def _agent(self, agent: str | None) -> str | None:
        return agent if agent else self.agent

    def scored_memories(self, statuses: Sequence[str] | None = None,
                        now: dt.datetime | None = None) -> list[tuple[str, str, float, int]]:
        """(path, status, score, use_count) of every memory with one of `statuses` (None: any),
        from the catalog's light columns: `decay.score` from the age in seconds, without
        building records or datetimes (several times faster; under the actr model, which
        reads each note's access history, from full records). Equal to score_of, tested."""
        now = now or self.now()
        where, params = "kind = 'memory'", list(statuses or ())
        if statuses:
            where += f" AND status IN ({','.join('?' * len(statuses))})"
        settings = self.settings
        if settings.decay_model == "actr":
            return [(r.path, r.status or "active", self.score_of(r, now), r.use_count)
                    for r in self.index.records(where, params)]
        rows = self.index.db.execute(
            "SELECT path, status, use_count, last_used, strength, memory_type, pinned"
            f" FROM notes WHERE {self._scan_where(where)}", params)
        score = scoring.column_scorer(now.timestamp(), settings)
        return [(path, status or "active", score(use_count, last_used, strength, memory_type, pinned), use_count or 0)
                for path, status, use_count, last_used, strength, memory_type, pinned in rows]

    def _scan_where(self, where: str) -> str:
        """`where` for a pass over every memory. SQLite reaches the memories through the kind
        index, one table lookup per row: when most notes are memories, one pass over the table
        is faster; a vault of a person's notes with a few memories keeps the index. The count
        reads the small kind index.
        Rows come in either order."""
        total, memories = self.index.db.execute(
            "SELECT count(*), coalesce(sum(kind = 'memory'), 0) FROM notes").fetchone()
        return "+" + where if memories * 2 >= total else where  # unary plus: the kind test uses no index

    def _score_summary(self, now: dt.datetime) -> tuple[dict[str, int], list[float], int]:
        """(memories by status, every memory's score, their uses summed): SQLite scores them
        where it can (scoring.sql_score), else `scored_memories`; the caller sums the scores."""
        by_status = {s: 0 for s in ("active", "promoted", "archived")}
        in_sql = scoring.sql_score(now.timestamp(), self.settings) if math_functions() else None
        if in_sql is None:
            scores, uses = [], 0
            for _path, status, score, use_count in self.scored_memories(None, now):
                by_status[status] = by_status.get(status, 0) + 1
                scores.append(score)
                uses += use_count
            return by_status, scores, uses
        expr, params = in_sql
        where = self._scan_where("kind = 'memory'")
        db = self.index.db
        uses = 0
        for status, count, used in db.execute(
                f"SELECT status, count(*), sum(coalesce(use_count, 0)) FROM notes WHERE {where} GROUP BY status"):
            by_status[status or "active"] = by_status.get(status or "active", 0) + count
            uses += used
        return by_status, [s for (s,) in db.execute(f"SELECT {expr} FROM notes WHERE {where}", params)], uses

    def stats(self) -> dict[str, Any]:
        self.sync()
        now = self.now()
        by_status, scores, uses = self._score_summary(now)
        kinds = dict(self.index.db.execute("SELECT kind, count(*) FROM notes GROUP BY kind").fetchall())
        return {
            "success": True,
            "vault": str(self.vault.root),
            "total_memories": len(scores),
            "by_status": by_status,
            "vault_notes": kinds.get("note", 0),
            "malformed_notes": kinds.get("malformed", 0),
            # fsum: the same average whatever order the catalog gives the rows in
            "avg_score": round(math.fsum(scores) / len(scores), 4) if scores else 0.0,
            "avg_use_count": round(uses / len(scores), 2) if scores else 0.0,
            "below_forget_threshold": sum(1 for s in scores if s < self.settings.forget_threshold),
            "decay_model": self.settings.decay_model,
            "index_bytes": self.index.size_bytes(),
        }

    def rebuild_index(self, progress: Progress | None = None) -> dict[str, Any]:
        self.vault.require()
        report = self.index.rebuild(progress)
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


if TYPE_CHECKING:
    from vaultmem.core.port import MemoryCore

    def _is_a_memory_core(memories: Memories) -> MemoryCore:
        """Every feature is typed against MemoryCore: mypy checks here that Memories is one."""
        return memories
