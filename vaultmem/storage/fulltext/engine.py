"""The Whoosh index itself: its folder, schema, writers, rebuild parts and segment merges.

Everything here goes through what Whoosh 2.7 documents (`whoosh.index`, `fields`,
`filedb.filestore.FileStorage`, `writing`: `writer(limitmb=...)`, `add_document`,
`delete_document`, `add_reader`, `commit(merge=..., mergetype=...)`, `reading`), so any
Whoosh 2.7-compatible release serves. Whoosh is imported inside the functions: a cold read
command that finds nothing to write never pays for `whoosh.writing`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

SEARCH_FIELDS = ("title", "content", "tags", "entities", "props")
PROPS_BOOST = 1.0
TEMP_FOLDER = "MAIN.tmp"  # Whoosh's folder for a writer's temporary files, kept between writes


def schema() -> Any:
    """vaultmem's fields: `path` (unique) and `id` stored; `kind`, `status` as IDs; the text
    fields through the search analyzer (`analysis.Text`), tags as comma-separated keywords."""
    from whoosh.fields import KEYWORD, Schema

    from vaultmem.storage.fulltext.analysis import Key, Text, analyzer

    words = analyzer()
    return Schema(
        path=Key(stored=True, unique=True),
        id=Key(stored=True),
        kind=Key,
        status=Key,
        title=Text(analyzer=words, field_boost=1.5),
        content=Text(analyzer=words),
        tags=KEYWORD(lowercase=True, commas=True, scorable=True, field_boost=1.5),
        entities=Text(analyzer=words, field_boost=1.3),
        props=Text(analyzer=words, field_boost=PROPS_BOOST),
    )


def storage(path: Path) -> Any:
    """Where the Whoosh index lives, read without mmap (whoosh3 copies each mmapped sub-file of
    a segment into a BytesIO when it opens it: plain reads are faster to open and lighter),
    with its writers' temporary files in one folder that stays.

    Whoosh makes that folder for every write and removes it after. The watcher watches the
    whole vault, and watchdog's inotify reader dies when a folder vanishes while it is adding
    a watch for it: a folder that stays is never raced. Both through FileStorage's documented
    `temp_storage` and `destroy`."""
    from whoosh.filedb.filestore import FileStorage

    class KeptTemp(FileStorage):
        def destroy(self, *args: Any, **kwargs: Any) -> None:
            """Keep the folder: each writer removes its own files as it finishes;
            `Index.remove_leftovers` removes a killed one's."""

    class VaultStorage(FileStorage):
        def temp_storage(self, name: str | None = None) -> Any:
            return KeptTemp(os.path.join(self.folder, TEMP_FOLDER)).create()

    return VaultStorage(str(path), supports_mmap=False)


def create(path: Path) -> Any:
    """A new, empty index in `path` (made if missing)."""
    path.mkdir(parents=True, exist_ok=True)
    return storage(path).create().create_index(schema())


def open_index(path: Path) -> Any:
    """The index in `path`. A schema naming a class this version does not have (an index
    written by another vaultmem) is an index to rebuild, like a damaged one."""
    import pickle

    from whoosh.index import IndexError as WhooshIndexError

    try:
        return storage(path).open_index()
    except (AttributeError, ImportError, pickle.UnpicklingError) as exc:
        raise WhooshIndexError(f"cannot read the index's schema ({exc}); it will be rebuilt") from exc


def is_corruption(exc: BaseException) -> bool:
    """Whether `exc` says the index's files are damaged or gone (the caller rebuilds):
    Whoosh's `IndexError`, a file cut short or missing, a damaged catalog; and whoosh3's
    `CorruptIndexError` (a posting list's bytes not its own), which other releases lack."""
    import sqlite3

    from whoosh import reading
    from whoosh.index import IndexError as WhooshIndexError

    corrupt = getattr(reading, "CorruptIndexError", WhooshIndexError)
    return isinstance(exc, (sqlite3.DatabaseError, WhooshIndexError, corrupt, EOFError, FileNotFoundError))


def update(ix: Any, removed: Iterable[str], documents: Sequence[Mapping[str, Any]], merge: bool) -> None:
    """One commit: every document of each path in `removed` and of each document's path
    deleted, then the documents added. `merge=False` leaves merging segments to
    `merge_segments` (the watcher's child process)."""
    from whoosh.reading import TermNotFound

    writer = ix.writer(limitmb=128)
    try:
        # Whoosh's delete_by_term finds the documents through a Searcher (whoosh.searching is slow
        # to import for a cold save); the path's postings in the writer's reader are the same documents.
        reader = writer.reader()
        try:
            for path in [*removed, *(doc["path"] for doc in documents)]:
                try:
                    docnums = list(reader.postings("path", path).all_ids())
                except TermNotFound:
                    continue
                for docnum in docnums:
                    if not reader.is_deleted(docnum):
                        writer.delete_document(docnum)
        finally:
            reader.close()
        for doc in documents:
            writer.add_document(**doc)
    except BaseException:
        writer.cancel()
        raise
    writer.commit(merge=merge)


def analyzed(schema: Any, document: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with its text fields analysed already (a rebuild's worker: the process that
    writes the index then only adds the postings)."""
    from vaultmem.storage.fulltext.analysis import analyzed as analyse

    return analyse(schema, dict(document))


# -- a rebuild ------------------------------------------------------------------------------
class Part:
    """A new index in `folder`, written by one writer of at most `limitmb` MB of postings in
    memory (a rebuild's: documents added in path order, then one commit)."""

    def __init__(self, folder: Path, limitmb: int) -> None:
        self.folder = folder
        self.ix = create(folder)
        self.writer = self.ix.writer(limitmb=limitmb)
        self.count = 0

    def add(self, document: Mapping[str, Any]) -> None:
        self.writer.add_document(**document)
        self.count += 1

    def finish(self) -> None:
        """Write the segment."""
        self.writer.commit(merge=False)

    def doc_count(self) -> int:
        """The documents the index holds (after `finish`: what was written, read back)."""
        return int(self.ix.doc_count_all())

    def cancel(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.cancel()


# -- segment merges ---------------------------------------------------------------------------
def segments(ix: Any) -> list[Any]:
    """The index's current segments (`whoosh.codec.base.Segment`: `segment_id()`,
    `doc_count_all()`, `deleted_count()`), in the index's order."""
    with contextlib.closing(ix.reader()) as reader:
        found = [leaf.segment() for leaf, _offset in reader.leaf_readers()]
    return [s for s in found if s is not None]


def merge_segments(ix: Any, plan: Callable[[Sequence[Any]], Sequence[Any]]) -> bool:
    """Merge the segments `plan` picks into one; False when it picks none. The caller holds
    the vault lock."""
    chosen = {s.segment_id() for s in plan(segments(ix))}
    if not chosen:
        return False
    writer = ix.writer()

    def policy(writer: Any, current: list[Any]) -> list[Any]:
        """A `mergetype` (`IndexWriter.commit`): add the chosen segments' documents to the
        new segment, keep the others, as whoosh.writing.MERGE_SMALL does."""
        from whoosh.reading import SegmentReader

        keep = []
        for seg in current:
            if seg.segment_id() in chosen:
                reader = SegmentReader(writer.storage, writer.schema, seg)
                writer.add_reader(reader)
                reader.close()
            else:
                keep.append(seg)
        return keep

    try:
        writer.commit(mergetype=policy)
    except BaseException:
        with contextlib.suppress(Exception):
            writer.cancel()
        raise
    return True
