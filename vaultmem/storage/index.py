"""The derived index under `.vaultmem/index/`: a Whoosh full-text index and a SQLite catalog.

Both are caches of the notes. Whoosh answers "which notes match these words, how well"
(BM25F over title, content, tags, entities); the catalog holds each note's properties, its
file fingerprint (mtime, size) and parse errors, so freshness checks, decay scoring, gc and
promotion never re-read the files. `sync` brings both up to date from the files; a full
rebuild builds a fresh index beside the old one and swaps it in.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import itertools
import json
import math
import operator
import os
import re
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from vaultmem.base.errors import MalformedNote, QuerySyntaxError, VaultmemError
from vaultmem.base.timeutil import UTC, format_time
from vaultmem.base.walk import listing_digest, rows_digest
from vaultmem.storage import links as linkmod
from vaultmem.storage import note as notes
from vaultmem.storage.fulltext import engine
from vaultmem.storage.fulltext.engine import SEARCH_FIELDS
from vaultmem.storage.fulltext.search import TextSearch
from vaultmem.storage.record import COLUMNS, PRIVATE_SQL, Record, props_of
from vaultmem.storage.vault import Vault, is_conflict_copy

SCHEMA_VERSION = 12  # 3: links + aliases (graph); 4: props field, new analyzer (retrieval); 5: deleted status
# (forget.py); 6: kind "conflict" for sync-conflict copies (reliability); 8: markdown links, inline and
# parent tags in the tags field, YAML 1.2 (citizenship); 9: markdown links in Obsidian's shortest and
# absolute formats (`Note.md`, `Folder/Note.md`) kept as written and resolved like wikilinks;
# 10: the multilingual analyzer (NFKC, case and accent folding, CJK bigrams; storage/analysis.py);
# 11: the analyzer's filters merged into two (the schema Whoosh pickles names them); 12: the analyzer
# moved into the full-text seam (storage/fulltext/analysis.py: the pickled schema names its module)
ID_NAMESPACE = uuid.UUID("5b1e0c3a-9d4f-4e7a-8c2b-6f1d3e5a7b90")
# Labels vaultmem's classifier writes into a saved memory's properties (`store.save`'s
# enrichment): the same few words on thousands of memories say nothing about this one.
GENERATED_KEYS = frozenset({"urgency", "domain"})
_WORDY = re.compile(r"^(?=.*[^\W\d_])(?!\S*\d\S*$)")  # has a letter; not one token with digits (ids, dates)
NOTE_PREVIEW_CHARS = 4000
# SQLite's page cache in a long-lived process (Index.long_lived), KiB; its default is 2,000.
# Searches measured no slower with the smaller one (docs/performance.md).
LONG_LIVED_CACHE_KIB = 512
# Ranking rows (`Index.rank_records`) a long-lived process keeps until the catalog changes,
# the most recently read first to stay (~1.4 MB at most): the candidates of related searches
# recur (docs/performance.md).
RANK_CACHE_ROWS = 2048
# What ranking reads (Index.rank_records): every column but the text a result shows.
_RANK_SELECT = ("path, mtime_ns, size, kind, id, status, created, last_used, use_count, strength, memory_type,"
                " pinned, source, agent, props")


# The notes_episodes index, walked up to :span steps either way from a memory's created time.
# Memories saved at the same instant have no order between them and are not neighbours.
_SIDE = ("(SELECT json_group_array(json_array(path, created)) FROM (SELECT path, created FROM notes"
         " WHERE kind = 'memory' AND agent IS n.agent AND source IS n.source AND status IS NOT 'deleted'"
         " AND created {op} n.created ORDER BY created {order}, path {order} LIMIT :span))")
_NEIGHBOURS = (
    f"SELECT n.path, n.created, {_SIDE.format(op='<', order='DESC')}, {_SIDE.format(op='>', order='ASC')}"
    " FROM json_each(:paths) AS c CROSS JOIN notes n ON n.path = c.value"  # c first: a lookup per path
    " WHERE n.kind = 'memory' AND n.created IS NOT NULL"
)


@dataclasses.dataclass
class SyncReport:
    """What one sync changed."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    malformed: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    rebuilt: bool = False
    # memories whose `status` property disagrees with their folder (moved by hand)

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed

    def summary(self) -> dict[str, Any]:
        """indexed / removed / malformed; a malformed note is recorded (so it is not re-read
        until it changes) but not counted as indexed."""
        return {"indexed": self.added + self.updated - len(self.malformed), "removed": self.removed,
                "unchanged": self.unchanged, "malformed": [{"path": p, "reason": r} for p, r in self.malformed]}


def read_record(vault: Vault, rel: str, fingerprint: tuple[int, int]) -> Record:
    """Parse one file into a Record; a broken note becomes a `malformed` record."""
    if fingerprint[1] > vault.settings.max_note_bytes:
        return _too_big(vault, rel, fingerprint)
    try:
        with open(os.path.join(str(vault.root), rel), "rb") as fh:  # not a Path and read_bytes: fewer calls a note
            raw = fh.read()
    except OSError as exc:
        return _malformed(rel, fingerprint, f"cannot read file: {exc.strerror or exc}")
    return record_from_bytes(vault, rel, raw, fingerprint)


def read_opened(vault: Vault, rel: str, fd: int | OSError) -> Record:
    """`read_record` of a note a rebuild opened (`Vault.open_ahead`), which it closes: its
    fingerprint from the open descriptor and its bytes by plain reads. A buffered `open()` and
    `read()` by path cost five more system calls a note."""
    if isinstance(fd, OSError):
        return _malformed(rel, (0, 0), f"cannot read file: {fd.strerror or fd}")  # (0, 0): read again at a sync
    try:
        st = os.fstat(fd)
        fingerprint = (st.st_mtime_ns, st.st_size)
        if st.st_size > vault.settings.max_note_bytes:
            return _too_big(vault, rel, fingerprint)
        raw = os.read(fd, st.st_size)
        if len(raw) != st.st_size:  # changed since the fstat; its new mtime has it read again at a sync
            parts = [raw]
            while part := os.read(fd, 1 << 16):
                parts.append(part)
            raw = b"".join(parts)
    except OSError as exc:
        return _malformed(rel, (0, 0), f"cannot read file: {exc.strerror or exc}")
    finally:
        os.close(fd)
    return record_from_bytes(vault, rel, raw, fingerprint)


def _malformed(rel: str, fingerprint: tuple[int, int], error: str) -> Record:
    rec = Record(path=rel, mtime_ns=fingerprint[0], size=fingerprint[1], kind="malformed")
    rec.error = error
    return rec


def _too_big(vault: Vault, rel: str, fingerprint: tuple[int, int]) -> Record:
    limit = vault.settings.max_note_bytes
    return _malformed(rel, fingerprint, f"file is {fingerprint[1]:,} bytes, over max_note_bytes ({limit:,}); skipped")


def record_from_bytes(vault: Vault, rel: str, raw: bytes, fingerprint: tuple[int, int]) -> Record:
    """The Record of a note's bytes; a broken note becomes a `malformed` record."""
    if b"\x00" in raw[:8192]:
        return _malformed(rel, fingerprint, "file contains NUL bytes (binary?); not a markdown note")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _malformed(rel, fingerprint, f"not valid UTF-8 (byte {exc.start}); re-save the note as UTF-8")
    try:
        return record_from_text(vault, rel, text, fingerprint)
    except MalformedNote as exc:
        return _malformed(rel, fingerprint, exc.reason)
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError, KeyError, IndexError) as exc:
        # One bad note is one bad note: a value no rule above foresaw marks this note, never the command.
        return _malformed(rel, fingerprint, f"cannot read its properties: {type(exc).__name__}: {notes.first_line(exc)}")


def record_from_text(vault: Vault, rel: str, text: str, fingerprint: tuple[int, int]) -> Record:
    """Build the Record of a note's text. Raises MalformedNote."""
    split = notes.split_note(text)
    props = notes.load_yaml(split.frontmatter) if split.frontmatter is not None else {}
    stem = rel.rsplit("/", 1)[-1][:-3]
    folder_status = vault.status_of(rel)
    kind = _kind_of(vault, rel, props)
    rec = Record(path=rel, mtime_ns=fingerprint[0], size=fingerprint[1], kind=kind, title=stem)
    rec.note_links = linkmod.note_links(split.frontmatter, props, split.body, split.head.count("\n"), rel)
    rec.note_aliases = linkmod.aliases_of(props)
    if kind == "note":
        rec.content = split.body[:NOTE_PREVIEW_CHARS] if len(split.body) > NOTE_PREVIEW_CHARS else split.body
        rec.tags = [notes.normalise_tag(t) for t in notes.as_list(props.get("tags"))]
        rec.props = {k: v for k, v in props.items() if k != "tags"}
        rec.full_text = split.body
        return rec
    if "id" not in props or props.get("id") in (None, ""):
        # A note a person dropped into a memory folder: a stable id from its file name.
        props = dict(props, id=str(uuid.uuid5(ID_NAMESPACE, stem.lower())))
    default_time = dt.datetime.fromtimestamp(fingerprint[0] / 1e9, UTC).replace(microsecond=0)
    memory = notes.memory_from_properties(props, split.body, rel, default_time, vault.settings.naive_zone)
    rec.id = memory.id
    # A soft-deleted memory (`deleted: true`, see forget.py) keeps its file but leaves search.
    rec.status = "deleted" if props.get("deleted") is True else (folder_status or memory.status)
    rec.content = memory.content
    rec.created = memory.created.timestamp()
    rec.last_used = memory.last_used.timestamp()
    rec.use_count = memory.use_count
    rec.strength = memory.strength
    rec.memory_type = memory.memory_type
    rec.pinned = props.get("pinned") is True
    rec.tags = memory.tags
    rec.entities = memory.entities
    rec.source = memory.source
    rec.context = memory.context
    rec.agent = memory.agent
    rec.props = memory.meta
    return rec


def _kind_of(vault: Vault, rel: str, props: dict[str, Any]) -> str:
    s = vault.settings
    for kind, folder in (("block", s.blocks_dir), ("session", s.sessions_dir), ("review", s.reviews_dir)):
        if rel.startswith(folder.strip("/") + "/"):
            return kind
    if vault.status_of(rel) is not None or props.get(notes.MARKER_KEY) == notes.MARKER_VALUE:
        # A memory is a note in a lifecycle folder, or one vaultmem wrote (its `vaultmem: memory`
        # marker) that the person moved elsewhere. An `id:` alone is not enough: Zettelkasten
        # notes carry one too. A sync client's conflict copy holds the same id as its original:
        # indexing it as a second memory would duplicate it in search, gc and promotion.
        return "conflict" if is_conflict_copy(rel) else "memory"
    return "note"


# ---------------------------------------------------------------------------------------


def title_terms(rec: Record) -> str:
    """The file name as searchable words, unless vaultmem generated it from the content.

    A memory saved by vaultmem is named `<first words>-<short id>`: those words are already
    in the content, and indexing them again in a short, boosted field makes every note's
    opening words outrank the rest of its text (it lowered recall on LoCoMo). A name a
    person chose (a vault note, a renamed memory) is a real title and is indexed.
    """
    if rec.kind == "memory" and rec.id and rec.title.endswith("-" + rec.id[:8]):
        generated = rec.title[: -9]
        if generated == notes.slugify(rec.content) or not generated:
            return ""
    return rec.title.replace("-", " ")


def property_terms(rec: Record) -> str:
    """Wordy text values of the properties vaultmem does not own (`speaker: Caroline`, `aliases`).

    Identifiers, dates and numbers are left out: they are not what a person searches for
    in words, and `D1:3` or `2023-05-08` would only add noise terms. So are the classifier's
    labels (GENERATED_KEYS: "reference", "general" on thousands of memories would match
    every one) and wikilinks (`related: "[[other-note]]"` names another note, not this one).
    """
    words: list[str] = []
    for key, value in rec.props.items():
        if key in GENERATED_KEYS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and len(item) <= 200 and _WORDY.match(item) and not item.startswith("[["):
                words.append(item)
    return " ".join(words)


def _document(rec: Record) -> dict[str, Any]:
    """The note's full-text document. A text field with no words is left out: it would add no
    posting and a length of 0, which is what a field left out has (one field fewer for the
    writer, most memories have no title, entities or wordy properties)."""
    text = rec.content if rec.full_text is None else rec.full_text
    document = {
        "path": rec.path,
        "id": rec.id or "",
        "kind": rec.kind,
        "status": rec.status or "",
    }
    for field, value in (
        ("title", title_terms(rec)),
        ("content", text),
        # inline `#tags` of the whole text count too (a person's note's, not only its preview's),
        # and a nested tag's parents (`infra` finds `infra/db`)
        ("tags", ",".join(notes.with_parents([*rec.tags, *notes.inline_tags(text)]))),
        ("entities", " ".join(rec.entities)),
        ("props", property_terms(rec)),
    ):
        if value:
            document[field] = value
    return document


class Index:
    """Whoosh + SQLite under `.vaultmem/index/`, kept in step with the vault's files."""

    def __init__(self, vault: Vault, long_lived: bool = False) -> None:
        self.vault = vault
        self.dir = vault.index_dir
        self._catalog_file = str(self.dir / "catalog.sqlite")  # stat'ed at every read (_current_ino)
        self._db: sqlite3.Connection | None = None
        self._ix: Any = None
        self._opened_ino: int | None = None
        self._text: TextSearch | None = None  # searches over the full-text index, with their caches
        # (catalog version, its listing or the listing's digest): see diff
        self._fingerprints: tuple[Any, dict[str, tuple[int, int]] | tuple[int, int]] | None = None
        self._records_cache: tuple[Any, list[Record]] | None = None
        self._rank_rows: dict[str, Record] = {}  # rank_records of a long-lived process, oldest first
        self._rank_key: Any = None  # (catalog version, viewer) they were read at
        # A process that serves for hours (Policy.long_lived) keeps a smaller SQLite page cache
        # and never holds the catalog's listing whole.
        self.long_lived = long_lived
        self.viewer: str | None = None  # set_viewer: the agent whose view of the catalog reads get
        # False: commits leave merging segments to someone else (the watcher's merge child, segments.py)
        self.merge_on_commit = True
        self.parse_context: str | None = None  # the last rebuild's workers: None (parsed here), fork, spawn

    # -- opening ----------------------------------------------------------------------------
    def _current_ino(self) -> int | None:
        try:
            return os.stat(self._catalog_file).st_ino
        except FileNotFoundError:
            return None

    def _ready(self) -> bool:
        return (self.dir / "catalog.sqlite").exists() and (self.dir / "whoosh").is_dir()

    def ready(self) -> bool:
        """The index exists (whether current or not): what a fence can vouch for."""
        return self._ready() and self._zone_key_matches()

    def _zone_key_matches(self) -> bool:
        try:
            return not self._zone_changed()
        except sqlite3.DatabaseError:
            return False

    @property
    def db(self) -> sqlite3.Connection:
        ino = self._current_ino()
        if self._db is not None and ino != self._opened_ino:
            self.close()  # another process rebuilt the index: follow it
        if self._db is None:
            self._db = _connect(self.dir / "catalog.sqlite")
            if self.long_lived:  # pages come from the OS's file cache a syscall away
                self._db.execute(f"PRAGMA cache_size=-{LONG_LIVED_CACHE_KIB}")
            self._opened_ino = ino if ino is not None else self._current_ino()
            if self.viewer is not None:
                _create_views(self._db, self.viewer)
        return self._db

    def set_viewer(self, agent: str | None) -> None:
        """Read the catalog as `agent` sees it: another agent's private memory (`private: true`)
        is not there at all. `notes`, `links` and `aliases` become temporary views of this
        connection (SQLite looks in `temp` before `main`), so every query in every layer above,
        written against those names, gets the rule without repeating it; the index's own
        bookkeeping reads and writes `main.` tables. None (the person: a CLI or server started
        without an agent): every note."""
        if agent == self.viewer:
            return
        self.viewer = agent
        if self._db is not None:
            for name in ("links", "aliases", "notes"):
                self._db.execute(f"DROP VIEW IF EXISTS temp.{name}")
            if agent is not None:
                _create_views(self._db, agent)

    @property
    def ix(self) -> Any:
        if self._ix is None or self._current_ino() != self._opened_ino:

            self.db  # noqa: B018 - follow a rebuild before opening Whoosh
            try:
                self._ix = engine.open_index(self.dir / "whoosh")
            except Exception as exc:
                if not _is_index_corruption(exc):
                    raise
                self.repair()
                self.db  # noqa: B018
                self._ix = engine.open_index(self.dir / "whoosh")
        return self._ix

    def repair(self) -> None:
        """The index files are damaged (a sync client, a disk, a kill): rebuild from the notes."""
        self.close()
        with self.vault.lock():
            self._rebuild_locked(None)

    def close(self) -> None:
        if self._text is not None:
            self._text.reset()
        self._fingerprints = None
        self._records_cache = None
        self._rank_rows, self._rank_key = {}, None
        if self._db is not None:
            self._db.close()
        self._db = None
        self._ix = None
        self._opened_ino = None

    # -- sync -----------------------------------------------------------------------------
    def _listing(self) -> Iterator[tuple[str, int, int]]:
        """(path, mtime_ns, size) of every indexed note, streamed."""
        return self.db.execute("SELECT path, mtime_ns, size FROM main.notes")

    def fingerprints(self) -> dict[str, tuple[int, int]]:
        """path -> (mtime_ns, size) as indexed."""
        return {p: (m, s) for p, m, s in self._listing()}

    def diff(self, on_disk: dict[str, tuple[int, int]]) -> tuple[list[str], list[str], list[str]]:
        """(new paths, changed paths, removed paths) between the disk and the catalog.

        The catalog's listing is kept until any connection writes the catalog; once a scan
        found it unchanged twice (a long-lived process: the MCP server, the watcher), only
        its digest is kept: in a big vault the listing is large, held for a comparison that
        comes out equal nearly every time. A long-lived process compares digests from its
        first scan on (the catalog's streamed from SQLite) and reads the listing only when they
        differ."""
        version = self.version()
        held = self._fingerprints[1] if self._fingerprints is not None and self._fingerprints[0] == version else None
        if isinstance(held, tuple):  # a digest
            if held == listing_digest(on_disk):
                return [], [], []
            held = None
        if held is None and self.long_lived:
            digest = rows_digest(self._listing())
            if digest == listing_digest(on_disk):
                self._fingerprints = (version, digest)
                return [], [], []
        known = held if held is not None else self.fingerprints()
        if known == on_disk:  # compared in C
            self._fingerprints = (version, listing_digest(known) if held is not None else known)
            return [], [], []
        self._fingerprints = (version, known)
        new = [p for p in on_disk if p not in known]
        changed = [p for p, fp in on_disk.items() if p in known and known[p] != fp]
        removed = [p for p in known if p not in on_disk]
        return new, changed, removed

    def compact_listing(self) -> None:
        """Keep only the digest of the catalog listing `diff` holds: a process whose freshness
        comes from its own observer (Memories.change_feed) rarely diffs again."""
        if self._fingerprints is not None and isinstance(self._fingerprints[1], dict):
            self._fingerprints = (self._fingerprints[0], listing_digest(self._fingerprints[1]))

    def sync(self, progress: Callable[[Iterable[str], int], Iterator[str]] | None = None) -> SyncReport:
        """Bring the index up to date with the files (incremental; rebuilds when missing)."""
        if not self._ready():
            return self.rebuild(progress)
        try:
            if self._zone_changed():  # the catalog's times were read in another zone: read them again
                return self.rebuild(progress)
            on_disk = self.vault.scan()
            new, changed, removed = self.diff(on_disk)
            notes_found, same = len(on_disk), not (new or changed or removed)
        except sqlite3.ProgrammingError:  # a misuse (another thread's connection), not a damaged file
            raise
        except sqlite3.DatabaseError:
            return self.rebuild(progress)
        self.remove_leftovers()
        if same:
            return SyncReport(unchanged=notes_found)
        with self.vault.lock():
            on_disk = self.vault.scan()
            new, changed, removed = self.diff(on_disk)  # another process may have synced
            unchanged = len(on_disk) - len(new) - len(changed)
            if bulk_change(len(new) + len(changed), len(on_disk)):
                # Most of the vault changed at once (a branch switched, a sync client's fresh
                # download): a rebuild parses in parallel and streams, where an update holds
                # every changed note and deletes its old postings one by one.
                report = self._rebuild_locked(progress)
                report.added, report.updated, report.removed = len(new), len(changed), len(removed)
                report.unchanged = unchanged
                return report
            report = SyncReport(unchanged=unchanged)
            try:
                self._apply(on_disk, new + changed, removed, report, progress)
            except Exception as exc:  # a corrupt index: start again from the notes
                if not _is_index_corruption(exc):
                    raise
                self.close()
                return self._rebuild_locked(progress)
            report.added, report.updated, report.removed = len(new), len(changed), len(removed)
        return report

    def _zone_changed(self) -> bool:
        """True when the catalog read times without a zone in another zone than the settings'
        now (`timezone` changed, or the machine's zone while it is empty)."""
        db = self.db
        row = db.execute("SELECT value FROM meta WHERE key = 'naive_zone'").fetchone()
        current = zone_key(self.vault.settings)
        if row is None:  # an index built before the zone was recorded
            with db:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('naive_zone', ?)", (current,))
            return False
        return bool(row[0] != current)

    def remove_leftovers(self) -> list[str]:
        """Clean up after killed processes: stale temp files the last scan met, a half-built index."""
        removed = self.vault.remove_stale_temp_files() if self.vault.temp_files else []
        building = self.dir.with_name("index.building")
        old = self.dir.with_name("index.old")
        if building.exists() or old.exists():
            import shutil  # here: only a rebuild's leftovers need it (shutil pulls in bz2 and lzma)

            with self.vault.lock():  # a rebuild in progress holds the lock: these are left over
                for leftover in (building, old):
                    if leftover.exists():
                        shutil.rmtree(leftover, ignore_errors=True)
                        removed.append(self.vault.rel(leftover) + "/")
        temp = self.dir / "whoosh" / engine.TEMP_FOLDER
        if _has_entries(temp):  # a writer's files: its own while it writes (under the lock), else left over
            try:
                with self.vault.lock(timeout=0):  # held: a writer is at work and these are its files
                    for entry in list(os.scandir(temp)):
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
                            removed.append(self.vault.rel(Path(entry.path)))
            except VaultmemError:
                pass
        return removed

    def refresh(self, paths: Iterable[str], removed: Iterable[str] = ()) -> SyncReport:
        """Re-index specific files right after vaultmem wrote, moved or removed them."""
        if not self._ready():
            return self.sync()
        with self.vault.lock():
            fingerprints: dict[str, tuple[int, int]] = {}
            gone = list(removed)
            for rel in paths:
                try:
                    st = os.stat(self.vault.root / rel)
                    fingerprints[rel] = (st.st_mtime_ns, st.st_size)
                except FileNotFoundError:
                    gone.append(rel)
            report = SyncReport()
            try:
                self._apply(fingerprints, list(fingerprints), gone, report, None)
            except Exception as exc:  # damaged index files: the rebuild reads these notes too
                if not _is_index_corruption(exc):
                    raise
                self.close()
                return self._rebuild_locked(None)
            report.updated = len(fingerprints)
            report.removed = len(gone)
        return report

    def _apply(self, on_disk: dict[str, tuple[int, int]], paths: list[str], removed: list[str],
               report: SyncReport, progress: Any) -> None:
        records = []
        iterator = progress(paths, len(paths)) if progress and paths else paths
        for rel in iterator:
            rec = read_record(self.vault, rel, on_disk[rel])
            records.append(rec)
            if rec.error:
                report.malformed.append((rel, rec.error))
        engine.update(self.ix, removed, [_document(rec) for rec in records if rec.kind != "malformed"],
                      merge=self.merge_on_commit)
        db = self.db
        with db:
            db.executemany("DELETE FROM main.notes WHERE path = ?", [(p,) for p in removed])
            db.executemany(f"INSERT OR REPLACE INTO main.notes VALUES ({','.join('?' * len(COLUMNS))})",
                           [r.row() for r in records])
            linkmod.store_links(db, removed + [r.path for r in records], records)

    def rebuild(self, progress: Any = None) -> SyncReport:
        """Recreate the whole index from the notes alone."""
        with self.vault.lock():
            return self._rebuild_locked(progress)

    def _rebuild_locked(self, progress: Any) -> SyncReport:
        import shutil

        self.dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.dir.with_name("index.building")
        old = self.dir.with_name("index.old")
        for leftover in (tmp, old):
            shutil.rmtree(leftover, ignore_errors=True)
        tmp.mkdir(parents=True)
        items = sorted(self.vault.scan(stat=False))  # in path order; each note fstat'ed as it is read
        report = SyncReport(rebuilt=True)
        db = _connect(tmp / "catalog.sqlite", indexes=False)  # made once the rows are in
        helpers = self._rebuild_workers(items, tmp)
        # Streamed: each claim's parsed notes go to the full-text writer, the catalog and the
        # link table and are dropped; links are resolved once at the end, from the table.
        db.execute("PRAGMA synchronous=OFF")  # a building index: a crash just rebuilds it again
        db.execute("BEGIN")
        ticks = _Ticks(progress, len(items))
        writer = engine.Part(tmp / "whoosh", REBUILD_WRITER_MB)
        try:
            if helpers.workers:  # they parse, this process indexes
                for document in helpers.documents(self.vault, items, db, ticks):
                    writer.add(document)
                malformed = helpers.finish(db, ticks)
            else:
                malformed = []
                for _claim, documents, bad in _parse_claims(self.vault, items, helpers.shares, 0, db, ticks):
                    for document in documents:
                        writer.add(document)
                    malformed += bad
            writer.finish()
        except BaseException:
            helpers.stop(now=True)
            writer.cancel()
            db.close()
            raise
        finally:
            ticks.close()
        report.malformed = sorted(malformed)
        expected = len(items) - len(report.malformed)
        indexed = writer.doc_count()
        if indexed != expected:  # never a silent gap in the index
            db.close()
            raise RuntimeError(f"rebuild indexed {indexed} notes, expected "
                               f"{expected}; run `vaultmem index rebuild` again")
        create_indexes(db)  # before the links are resolved, which looks them up
        linkmod.store_links(db, [], [], full=True)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('naive_zone', ?)", (zone_key(self.vault.settings),))
        db.execute("COMMIT")
        helpers.detach(db)
        shutil.rmtree(tmp / "chunks", ignore_errors=True)  # the claims' files, each read and removed
        db.close()
        self.close()
        if self.dir.exists():
            os.rename(self.dir, old)
        try:
            os.rename(tmp, self.dir)
        except BaseException:  # interrupted between the two: the old index goes back
            if not self.dir.exists() and old.exists():
                os.rename(old, self.dir)
            raise
        shutil.rmtree(old, ignore_errors=True)
        report.added = len(items)
        return report

    def _rebuild_workers(self, items: list[str], tmp: Path) -> RebuildWorkers:
        """Worker processes that take a share of a big rebuild (`RebuildWorkers`); none for a
        small vault, or when forking is unsafe here and the vault is not big."""
        import threading

        from vaultmem.base import portable

        workers = min(4, (os.cpu_count() or 1) - 1)
        # fork is cheap and needs no importable __main__, but is only safe single-threaded on
        # Linux; elsewhere (macOS, Windows) workers are spawned: fresh interpreters that import
        # this module, worth their start-up only on a big vault.
        fork = portable.can_fork()
        parallel = (len(items) >= PARALLEL_PARSE_MIN and workers >= 1
                    and (threading.active_count() == 1 or not fork))
        helpers = RebuildWorkers(self.vault, items, tmp, workers if parallel else 0)
        self.parse_context = helpers.start_method
        return helpers

    # -- reading ----------------------------------------------------------------------------
    def get(self, path: str) -> Record | None:
        row = self.db.execute(f"SELECT {','.join(COLUMNS)} FROM notes WHERE path = ?", (path,)).fetchone()
        return Record.from_row(row) if row else None

    def records(self, where: str = "1", params: Sequence[Any] = ()) -> list[Record]:
        sql = f"SELECT {','.join(COLUMNS)} FROM notes WHERE {where}"
        return [Record.from_row(r) for r in self.db.execute(sql, params)]

    def version(self) -> tuple[int, int]:
        """Changes whenever any connection (this process or another) writes the catalog."""
        db = self.db
        return db.execute("PRAGMA data_version").fetchone()[0], db.total_changes

    def records_cached(self, where: str = "1", params: Sequence[Any] = ()) -> list[Record]:
        """`records`, kept until the catalog changes (a long-lived process's semantic search
        reads every memory per query, and building the records is costly). Treat as read-only."""
        key = (self.version(), self.viewer, where, tuple(params))
        if self._records_cache is None or self._records_cache[0] != key:
            self._records_cache = (key, self.records(where, params))
        return self._records_cache[1]

    def by_paths(self, paths: Sequence[str]) -> dict[str, Record]:
        found: dict[str, Record] = {}
        for marks, chunk in linkmod.in_chunks(paths):
            found.update((r.path, r) for r in self.records(f"path IN ({marks})", chunk))
        return found

    def rank_records(self, paths: Sequence[str]) -> dict[str, Record]:
        """`by_paths` without what only a shown result needs: title, content, tags, entities and
        context are left empty (a search ranks up to 100 candidates to show 10; reading their
        text was a large share of it); source is kept, with agent it names a memory's episode. Read
        the shown ones with `by_paths`."""
        if not self.long_lived:
            return self._read_rank_records(paths)
        # A long-lived process keeps them until the catalog changes (any write, by any
        # process): reading a search's rows from SQLite is a real share of a search, and the
        # memories a vault's searches find recur. The records are shared: treat as read-only.
        key = (self.version(), self.viewer)
        kept = self._rank_rows
        if self._rank_key != key:
            kept.clear()
            self._rank_key = key
        found: dict[str, Record] = {}
        missing = []
        for path in paths:
            rec = kept.pop(path, None)
            if rec is None:
                missing.append(path)
            else:
                found[path] = kept[path] = rec  # read again: now the newest
        if missing:
            read = self._read_rank_records(missing)
            found.update(read)
            kept.update(read)
            if len(kept) > RANK_CACHE_ROWS:  # the oldest quarter goes
                for path in list(itertools.islice(kept, len(kept) - RANK_CACHE_ROWS * 3 // 4)):
                    del kept[path]
        return found

    def _read_rank_records(self, paths: Sequence[str]) -> dict[str, Record]:
        found: dict[str, Record] = {}
        # Held by a long-lived process (rank_records): the few kinds, statuses, types and origins
        # once each (interned), each path as the caller's own string (the searcher's, which
        # bm25.doc_paths keeps too)
        intern = sys.intern
        for marks, chunk in linkmod.in_chunks(paths):
            own = {path: path for path in chunk}
            for (path, mtime_ns, size, kind, id_, status, created, last_used, use_count, strength, memory_type,
                 pinned, source, agent, props) in self.db.execute(
                    f"SELECT {_RANK_SELECT} FROM notes WHERE path IN ({marks})", chunk):
                path = own.get(path, path)
                found[path] = Record(path, mtime_ns, size, kind and intern(kind), id_, status and intern(status),
                                     "", "", created, last_used, use_count, strength,
                                     memory_type and intern(memory_type), bool(pinned), [], [],
                                     source and intern(source), None, agent and intern(agent), props_of(props), None)
        return found

    def neighbours(self, paths: Sequence[str], span: int = 1) -> list[
            tuple[str, float, list[tuple[str, float]], list[tuple[str, float]]]]:
        """(path, created, before, after) for each memory in `paths` that has a created time:
        up to `span` memories of the same origin (`agent` and `source`) created before it and
        after it (not at the same instant: those have no order), as (path, created), nearest
        first (ties by path); soft-deleted memories are gone from their episode. One statement."""
        out = []
        loads, by_time = json.loads, operator.itemgetter(1, 0)
        for path, created, before, after in self.db.execute(
                _NEIGHBOURS, {"paths": json.dumps(list(paths)), "span": span}):
            # each side comes out of an ORDER BY; sorted again, since an aggregate's order is not promised
            earlier = [tuple(x) for x in loads(before)]
            later = [tuple(x) for x in loads(after)]
            if len(earlier) > 1:
                earlier.sort(key=by_time, reverse=True)
            if len(later) > 1:
                later.sort(key=by_time)
            out.append((path, created, earlier, later))
        return out

    def has_conflict_copies(self) -> bool:
        """Whether a sync tool's conflict copy of a memory note is in the vault (as last indexed)."""
        if self._db is None and not (self.dir / "catalog.sqlite").exists():
            return False  # nothing indexed yet (a fresh clone): the next write after indexing merges
        return self.db.execute("SELECT 1 FROM main.notes WHERE kind = 'conflict' LIMIT 1").fetchone() is not None

    def count(self, where: str = "1", params: Sequence[Any] = ()) -> int:
        return self.db.execute(f"SELECT count(*) FROM notes WHERE {where}", params).fetchone()[0]

    def search(self, text: str, *, kinds: Sequence[str], statuses: Sequence[str] | None,
               tags: Sequence[str] = (), limit: int = 100,
               fields: Sequence[str] = SEARCH_FIELDS) -> tuple[list[tuple[str, float]], bool]:
        """BM25F matches as (path, relevance), best first, and whether that is every match.

        `fields` narrows where the words are looked for (the duplicate check: content only)."""
        for _attempt in range(5):
            try:
                return self._search_once(text, kinds=kinds, statuses=statuses, tags=tags, limit=limit,
                                         fields=fields)
            except FileNotFoundError:
                # A writer (the watcher, another CLI call) committed a new generation and
                # removed the one this reader was opening: open the new one.
                if self._text is not None:
                    with contextlib.suppress(Exception):
                        self._text.close()
            except Exception as exc:
                if not _is_index_corruption(exc):
                    raise
                break
        # Still failing: the files are damaged (a segment a sync client deleted, a garbage TOC).
        self.repair()
        return self._search_once(text, kinds=kinds, statuses=statuses, tags=tags, limit=limit, fields=fields)

    def _search_once(self, text: str, *, kinds: Sequence[str], statuses: Sequence[str] | None,
                     tags: Sequence[str], limit: int,
                     fields: Sequence[str] = SEARCH_FIELDS) -> tuple[list[tuple[str, float]], bool]:
        _check_syntax(text)
        return self.text_search().search(self.ix, natural_query(text), kinds=kinds, statuses=statuses,
                                         tags=tags, limit=limit, fields=fields)

    def text_search(self) -> TextSearch:
        """The full-text searches over this index, with the caches they keep between searches."""
        if self._text is None:
            self._text = TextSearch(long_lived=self.long_lived)
        self._text.long_lived = self.long_lived
        return self._text

    def segments(self) -> list[Any]:
        """The full-text index's segments (`doc_count_all()`, `deleted_count()`: what a merge
        plan reads)."""
        return engine.segments(self.ix)

    def size_bytes(self) -> int:
        total = 0
        for folder, _dirs, files in os.walk(self.dir):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.path.getsize(os.path.join(folder, name))
        return total


PARALLEL_PARSE_MIN = 3000


class Shares:
    """A rebuild's notes, in path order, divided among its processes as contiguous ranges kept
    in memory they all see (`RawArray`, under one lock). A process claims the next few notes
    of its range at a time. When its range runs out, it takes over the far half of what is
    left of the range with most left among the processes still parsing, so that the
    processes finish together however unevenly the machine runs them. Each claim is a
    contiguous run of the notes, so the process that writes the index can add their
    documents in path order (search breaks exact ties by document number)."""

    def __init__(self, total: int, processes: int, context: Any = None) -> None:
        self.processes = processes
        # per process: the next note to claim, its range's end, notes done, parsing (1) or not
        cells = 4 * processes
        self._cells: Any = context.RawArray("q", cells) if context else [0] * cells
        self._lock: Any = context.Lock() if context else contextlib.nullcontext()
        for p in range(processes):
            self._cells[4 * p] = total * p // processes
            self._cells[4 * p + 1] = total * (p + 1) // processes
            self._cells[4 * p + 3] = 1

    def position(self, p: int) -> int:
        """Where process `p` goes on: the start of its range, before it claims any of it."""
        return int(self._cells[4 * p])

    def claim(self, p: int, size: int) -> range:
        """The next (up to) `size` notes of process `p`'s range, now its own; empty at the end."""
        with self._lock:
            start = self._cells[4 * p]
            stop = max(start, min(start + size, self._cells[4 * p + 1]))
            self._cells[4 * p] = stop
            self._cells[4 * p + 3] = 1
        return range(start, stop)

    def take_over(self, p: int, least: int) -> bool:
        """Give process `p`, its range done, the far half of the unclaimed rest of the range
        with most left among the processes still parsing, if that is at least `least` notes
        (and at least 2: each side keeps one). Until `p` claims again it does not count as
        parsing, so the range it was given waits for it rather than being taken over in turn."""
        with self._lock:
            self._cells[4 * p + 3] = 0
            left, q = max((self._cells[4 * q + 1] - self._cells[4 * q], q)
                          for q in range(self.processes) if self._cells[4 * q + 3] or q == p)
            if left < max(least, 2):
                return False
            cut = self._cells[4 * q] + left // 2
            self._cells[4 * p], self._cells[4 * p + 1] = cut, self._cells[4 * q + 1]
            self._cells[4 * q + 1] = cut
            return True

    def count(self, p: int) -> None:
        self._cells[4 * p + 2] += 1  # only process p writes it

    def done(self) -> int:
        return int(sum(self._cells[4 * p + 2] for p in range(self.processes)))


CLAIM = 64  # notes a rebuild process claims at a time (Shares.claim), and reads ahead (Vault.open_ahead)
TAKE_OVER_MIN = 500  # a process takes over part of another's range only if this many are left


class _Ticks:
    """A progress bar over all of a rebuild's notes, whichever process parses them: `progress`
    (the store's (items, length) wrapper) is moved on to `Shares.done`."""

    def __init__(self, progress: Any, total: int) -> None:
        self._bar = iter(progress(itertools.repeat(None, total), total)) if progress and total else None
        self._shown = 0
        self._total = total

    def __call__(self, shares: Shares) -> None:
        if self._bar is not None:
            done = shares.done()
            for _ in range(done - self._shown):
                next(self._bar, None)
            self._shown = max(done, self._shown)

    def close(self) -> None:
        if self._bar is not None:
            if self._shown >= self._total:
                for _ in self._bar:  # to its end: the bar shows 100 %
                    pass
            self._bar.close()
            self._bar = None


def _parse_claims(vault: Vault, items: list[str], shares: Shares, p: int, db: Any,
                  ticks: Callable[[Shares], None] | None = None,
                  document: Callable[[Record], dict[str, Any]] | None = None,
                  ) -> Iterator[tuple[range, list[dict[str, Any]], list[tuple[str, str]]]]:
    """Process `p`'s part of a rebuild: the notes of its range (`Shares`), `CLAIM` at a time,
    parsed and written to `db` (in its transaction); then, while other ranges have enough
    left, the ranges it takes over. Yields each claim (a range of `items`) with the
    full-text documents of its notes (`document`, by default `_document`) and the malformed
    notes among them."""
    document = document or _document
    insert = f"INSERT OR REPLACE INTO main.notes VALUES ({','.join('?' * len(COLUMNS))})"
    while True:
        while claim := shares.claim(p, CLAIM):
            with contextlib.closing(vault.open_ahead(items[claim.start:claim.stop], window=CLAIM)) as ahead:
                batch = [read_opened(vault, rel, fd) for rel, fd in ahead]
            documents, malformed = [], []
            for rec in batch:
                if rec.error:
                    malformed.append((rec.path, rec.error))
                else:
                    documents.append(document(rec))
                shares.count(p)
                if ticks:
                    ticks(shares)
            db.executemany(insert, [r.row() for r in batch])
            linkmod.insert_link_rows(db, batch)
            yield claim, documents, malformed
        if not shares.take_over(p, TAKE_OVER_MIN):
            return


class RebuildWorkers:
    """Worker processes that parse a big rebuild's notes while this process indexes them.

    The notes, in path order, are cut into one contiguous range per worker and a last one for
    this process (`Shares`), which it parses while it waits for the workers. Each worker
    parses its notes `CLAIM` at a time, writes their catalog, link and alias rows into
    a SQLite file of its own, and hands each claim's full-text documents over in a file of
    its own (a message on its pipe names it). This process adds the documents to the one
    full-text writer in path order (`documents`), so document numbers follow paths as in a
    rebuild done by one process, and field lengths are counted as Whoosh counts them
    there. `finish` copies the workers' rows into the main catalog. A worker that fails
    raises here rather than leave notes out."""

    def __init__(self, vault: Vault, items: list[str], tmp: Path, workers: int) -> None:
        self.workers = workers
        self.start_method: str | None = None
        self.shares = Shares(len(items), 1)
        self.total = len(items)
        self.malformed: list[tuple[str, str]] = []
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        self._dbs: list[Path] = []
        self._done: set[int] = set()
        self.chunks = tmp / "chunks"
        self._attached: list[str] = []
        if not workers:
            return
        from vaultmem.base import portable

        context = portable.pool_context()
        self.start_method = context.get_start_method()
        # a range per worker, and the last one this process's, which it parses while it waits
        self.shares = Shares(len(items), workers + 1, context)
        chunks = self.chunks = tmp / "chunks"
        chunks.mkdir(exist_ok=True)
        for k in range(workers):
            db_path = tmp / f"worker-{k}.sqlite"
            here, there = context.Pipe(duplex=False)
            proc = context.Process(target=_rebuild_worker, daemon=True, args=(
                there, vault.root, vault.settings, items, self.shares, k, str(chunks), str(db_path)))
            proc.start()
            there.close()
            self._conns.append(here)
            self._procs.append(proc)
            self._dbs.append(db_path)

    def _receive(self, pending: dict[int, tuple[int, str]], ticks: Callable[[Shares], None],
                 timeout: float = 0.1) -> None:
        """Wait (up to `timeout`) for the workers' messages: claims parsed go to `pending`."""
        from multiprocessing.connection import wait

        waiting = [c for k, c in enumerate(self._conns) if k not in self._done]
        ready: list[Any] = wait(waiting, timeout=timeout)
        for conn in ready:
            try:
                kind, *value = conn.recv()
            except EOFError:
                raise RuntimeError("a rebuild worker process ended unexpectedly; "
                                   "run `vaultmem index rebuild` again") from None
            if kind == "error":
                raise RuntimeError(f"a rebuild worker failed: {value[0]}")
            if kind == "claim":
                start, stop, path = value
                pending[start] = (stop, path)
            else:  # "done": its catalog is committed
                self._done.add(self._conns.index(conn))
                self.malformed += value[0]
        ticks(self.shares)

    def documents(self, vault: Vault, items: list[str], db: Any,
                  ticks: Callable[[Shares], None]) -> Iterator[dict[str, Any]]:
        """Every note's full-text document in path order, as the workers parse them. While the
        next ones are not there yet, this process parses claims of its own range (the last;
        its catalog rows go into `db`), handed over in files as the workers' are."""
        import pickle

        pending: dict[int, tuple[int, str]] = {}
        expected = 0
        schema = engine.schema()
        own = _parse_claims(vault, items, self.shares, self.workers, db, ticks,
                            document=lambda rec: engine.analyzed(schema, _document(rec)))
        parsing = True
        while expected < self.total:
            if expected not in pending:
                self._receive(pending, ticks, timeout=0 if parsing else 0.1)
                if expected in pending or not parsing:
                    continue
                claim = next(own, None)
                if claim is None:
                    parsing = False
                    continue
                (start, stop), documents, bad = (claim[0].start, claim[0].stop), claim[1], claim[2]
                self.malformed += bad
                path = str(self.chunks / f"{start:010d}")
                with open(path, "wb") as file:
                    pickle.dump(documents, file, protocol=pickle.HIGHEST_PROTOCOL)
                pending[start] = (stop, path)
                continue
            stop, path = pending.pop(expected)
            with open(path, "rb") as file:
                documents = pickle.load(file)
            os.unlink(path)
            yield from documents
            expected = stop

    def finish(self, db: Any, ticks: Callable[[Shares], None]) -> list[tuple[str, str]]:
        """Wait for the workers (moving `ticks` on meanwhile); their catalog rows go into `db`
        (in the caller's transaction). Returns the malformed notes they met."""
        try:
            while len(self._done) < self.workers:
                self._receive({}, ticks)
            for db_path in self._dbs:
                name = f"worker{len(self._attached)}"  # detached after the caller's COMMIT (`detach`)
                db.execute(f"ATTACH DATABASE ? AS {name}", (str(db_path),))
                self._attached.append(name)
                db.execute(f"INSERT OR REPLACE INTO main.notes SELECT * FROM {name}.notes")
                db.execute(f"INSERT INTO main.links ({_LINK_COLUMNS}) SELECT {_LINK_COLUMNS} FROM {name}.links")
                db.execute(f"INSERT OR IGNORE INTO main.aliases SELECT * FROM {name}.aliases")
            ticks(self.shares)
        except BaseException:
            self.stop(now=True)
            raise
        self.stop()
        return self.malformed

    def detach(self, db: Any) -> None:
        """Detach the workers' catalogs (after the COMMIT) and remove them."""
        for name in self._attached:
            db.execute(f"DETACH DATABASE {name}")
        self._attached = []
        for db_path in self._dbs:
            with contextlib.suppress(OSError):
                db_path.unlink()

    def stop(self, now: bool = False) -> None:
        """Wait for the workers to exit; `now` (the rebuild failed or was interrupted: Ctrl-C
        must stop it within a second): end them first."""
        for conn in self._conns:
            conn.close()
        if now:
            for proc in self._procs:
                with contextlib.suppress(Exception):
                    proc.kill()
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join()
        self._conns, self._procs = [], []


_LINK_COLUMNS = "src, pos, target, target_key, subpath, alias, embed, type, strength, meta, line"


def _rebuild_worker(conn: Any, root: Path, settings: Any, items: list[str], shares: Shares,
                    p: int, chunks: str, db_path: str) -> None:
    """One `RebuildWorkers` worker, process `p` of `shares`: its ranges of the notes parsed
    and written to a catalog of its own, each claim's documents into a file of `chunks`
    (sent as ("claim", start, stop, file)); then ("done", malformed)."""
    import pickle
    import signal

    # Ctrl-C reaches every process of the terminal's group: the parent stops the rebuild and
    # ends its workers (`RebuildWorkers.stop`), so a worker does not report it too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        vault = Vault(root, settings)
        db = _connect(Path(db_path), indexes=False)  # its rows are copied out, never looked up
        db.execute("PRAGMA synchronous=OFF")
        db.execute("BEGIN")
        malformed: list[tuple[str, str]] = []
        schema = engine.schema()
        for claim, documents, bad in _parse_claims(vault, items, shares, p, db,
                                                   document=lambda rec: engine.analyzed(schema, _document(rec))):
            path = os.path.join(chunks, f"{claim.start:010d}")
            with open(path, "wb") as file:
                pickle.dump(documents, file, protocol=pickle.HIGHEST_PROTOCOL)
            conn.send(("claim", claim.start, claim.stop, path))
            malformed += bad
        db.execute("COMMIT")
        db.close()
        conn.send(("done", malformed))
    except Exception as exc:  # reported to the parent, which stops the rebuild
        import traceback

        conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"))
    finally:
        conn.close()


def zone_key(settings: Any) -> str:
    """Which zone times without one are read in: the `timezone` setting, or this machine's."""
    if settings.timezone:
        return str(settings.timezone)
    return f"local {time.tzname[0]}/{time.tzname[1]} {time.timezone} {time.altzone}"


REBUILD_BATCH = 2000  # notes parsed, written and dropped together in a rebuild
REBUILD_WRITER_MB = 128  # Whoosh's in-memory posting pool before it spills a run to disk
# A sync that finds at least this many new or changed notes, and this share of the vault,
# rebuilds instead of updating: a rebuild is then faster, and an update also holds every
# changed note (docs/performance.md).
BULK_MIN = 2000
BULK_SHARE = 0.4


def bulk_change(touched: int, total: int) -> bool:
    """Whether `touched` new or changed notes of `total` are cheaper to rebuild than to update."""
    return touched >= BULK_MIN and touched >= BULK_SHARE * total


def _has_entries(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def visible_sql(viewer: str) -> str:
    """core.model.visible_to as SQL over a notes row, for `viewer` (an agent id): a private
    memory is visible to its own agent only. `tests/test_privacy.py` checks the two agree."""
    return f"(agent = {_quote(viewer)} OR NOT {PRIVATE_SQL})"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _create_views(db: sqlite3.Connection, viewer: str) -> None:
    """Index.set_viewer's views: the catalog without the notes `viewer` may not see, and
    without links or aliases that start or end at one of them."""
    db.execute(f"CREATE TEMP VIEW IF NOT EXISTS notes AS SELECT * FROM main.notes WHERE {visible_sql(viewer)}")
    db.execute("CREATE TEMP VIEW IF NOT EXISTS links AS SELECT * FROM main.links l"
               " WHERE EXISTS (SELECT 1 FROM temp.notes v WHERE v.path = l.src)"
               " AND (l.dst IS NULL OR EXISTS (SELECT 1 FROM temp.notes v WHERE v.path = l.dst))")
    db.execute("CREATE TEMP VIEW IF NOT EXISTS aliases AS SELECT * FROM main.aliases a"
               " WHERE EXISTS (SELECT 1 FROM temp.notes v WHERE v.path = a.path)")


# The catalog's secondary indexes. A rebuild fills its new catalog without them and makes them
# once the rows are in (`create_indexes`): sorting each once is cheaper than keeping four
# B-trees in order through inserts in random order (the ids), in each process and again in
# the merge of the workers' rows.
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS notes_id ON notes(id)",
    "CREATE INDEX IF NOT EXISTS notes_kind_status ON notes(kind, status)",
    # A memory's neighbours in its episode (episodes.py): same agent and source, next in created order.
    "CREATE INDEX IF NOT EXISTS notes_episodes ON notes(kind, agent, source, created, path, status)",
    "CREATE INDEX IF NOT EXISTS links_target ON links(target_key)",
    "CREATE INDEX IF NOT EXISTS links_dst ON links(dst)",
    "CREATE INDEX IF NOT EXISTS aliases_alias ON aliases(alias)",
)


def create_indexes(db: sqlite3.Connection) -> None:
    for statement in _INDEXES:
        db.execute(statement)


@functools.lru_cache(maxsize=1)
def math_functions() -> bool:
    """This Python's SQLite has the math functions (pow, exp: SQLITE_ENABLE_MATH_FUNCTIONS,
    on in most builds since 3.35); where it lacks them, callers score in Python."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.execute("SELECT pow(2.0, 0.5), exp(0.0)").fetchone()
    except sqlite3.OperationalError:
        return False
    return True


def _connect(path: Path, indexes: bool = True) -> sqlite3.Connection:
    """The catalog, created if new (without its secondary indexes when not `indexes`: a
    rebuild's, see _INDEXES); not bound to the thread that opens it: a server's store
    moves between its worker and its event loop's thread, one at a time (mcp/server.Bridge)."""
    db = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE IF NOT EXISTS notes (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER,"
        " kind TEXT, id TEXT, status TEXT, title TEXT, content TEXT, created REAL, last_used REAL,"
        " use_count INTEGER, strength REAL, memory_type TEXT, pinned INTEGER, tags TEXT,"
        " entities TEXT, source TEXT, context TEXT, agent TEXT, props TEXT, error TEXT)"
    )
    for old in ("notes_episode", "notes_by_origin"):  # notes_episodes' shapes during its first day in development
        db.execute(f"DROP INDEX IF EXISTS {old}")
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
    # Each note's outgoing wikilinks as written, and the path each resolves to now (`dst`, NULL
    # when unresolved); links.store_links re-resolves affected links on every sync.
    db.execute(
        "CREATE TABLE IF NOT EXISTS links (src TEXT, pos INTEGER, target TEXT, target_key TEXT,"
        " subpath TEXT, alias TEXT, embed INTEGER, type TEXT, strength REAL, meta TEXT, line INTEGER,"
        " dst TEXT, PRIMARY KEY (src, pos))"
    )
    db.execute("CREATE TABLE IF NOT EXISTS aliases (path TEXT, alias TEXT, PRIMARY KEY (path, alias))")
    if indexes:
        create_indexes(db)
    version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if version is None:
        with db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    elif version[0] != str(SCHEMA_VERSION):
        db.close()
        raise sqlite3.DatabaseError(f"index schema {version[0]} != {SCHEMA_VERSION}")
    return db


def _is_index_corruption(exc: BaseException) -> bool:
    return engine.is_corruption(exc)


def natural_query(text: str) -> str:
    """Read a question as words: a `?` ending a word is punctuation, not a wildcard."""
    return re.sub(r"(?<=\w)\?+(?=[\s\W]|$)|(?<!\w)\?+(?!\w)", " ", text).strip()


def literal_query(text: str) -> tuple[str, str | None]:
    """`text` as a query that cannot fail: with an unbalanced quote or parenthesis, the words
    without quotes and parentheses, and why. What a person typed, passed on by an assistant
    (`When did Joanna first watch "Eternal Sunshine?`), is searched rather than refused."""
    try:
        _check_syntax(text)
    except QuerySyntaxError as exc:
        words = " ".join(re.sub(r'["()]', " ", text).split())
        return words, f"{str(exc).split(';')[0]}; searched the words literally"
    return text, None


def _check_syntax(text: str) -> None:
    """Reject what Whoosh would silently misread, with a message saying how to fix it."""
    if text.count('"') % 2:
        raise QuerySyntaxError('unbalanced " in query; close the quote or remove it')
    depth = 0
    in_quote = False
    for ch in text:
        if ch == '"':
            in_quote = not in_quote
        elif not in_quote and ch == "(":
            depth += 1
        elif not in_quote and ch == ")":
            depth -= 1
            if depth < 0:
                raise QuerySyntaxError("unbalanced ) in query; remove it or add the matching (")
    if depth:
        raise QuerySyntaxError("unbalanced ( in query; close it with ) or remove it")


def iso(ts: float | None) -> str | None:
    """`format_time` of a timestamp: second `datetime.fromtimestamp` gives (its microseconds
    rounded half-even, so .9999996 is the next second), through `time.gmtime` (faster, and a
    search formats every result's times) for years 1970-9999."""
    if ts is None:
        return None
    if 0 <= ts < _YEAR_10000 - 1:  # - 1: its last second may round up into year 10000
        second = math.floor(ts)
        if round((ts - second) * 1e6) >= 1_000_000:
            second += 1
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
    return format_time(dt.datetime.fromtimestamp(ts, UTC))


_YEAR_10000 = 253402300800  # 10000-01-01T00:00:00Z, where datetime (and a 4-digit year) ends
