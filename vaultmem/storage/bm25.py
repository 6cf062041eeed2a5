"""BM25F over Whoosh's postings without Whoosh's matcher tree: the fast path of plain queries.

Whoosh scores an OR query through a tree of union matchers, one Python method call per
posting per node, and needs `terms=True` bookkeeping for word coordination: ~40 µs per
matching note. Most queries are plain words (no quotes, operators, fields or wildcards), so
for those `Index.search` reads each (field, term) posting list block by block and adds up
the same per-field BM25 Whoosh would (`whoosh.scoring.BM25F`: idf and average field length
from the whole index, length from the note's field-length byte, boosts folded into the
indexed weights), with the coordination bitmask in the same pass. Any other query goes
through Whoosh's parser and searcher; `tests/test_bm25.py` checks that both paths agree.

Also here: the doc numbers of an ID field's values (`kind`, `status`, `tags` filters) read
the same way, which is what makes the filters cheap in a one-shot CLI process.
"""

from __future__ import annotations

import bisect
import heapq
import io
import itertools
import math
import os
import pickle
import re
import struct
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from vaultmem.storage.analysis import has_cjk

# Characters and words the Whoosh query parser gives a meaning to (phrases, groups, ranges,
# fields, wildcards, boosts, fuzzy terms, operators). A query free of them is "plain".
_SYNTAX = re.compile(r"""["()\[\]{}:*?^~\\]|(?:^|\s)['+-]""")
OPERATORS = frozenset({"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "TO"})


def plain_words(text: str) -> list[str] | None:
    """The query's words if it uses no query syntax, else None (Whoosh parses it)."""
    if _SYNTAX.search(text):
        return None
    words = text.split()
    if any(w in OPERATORS for w in words):
        return None
    return words


TOKENS_LIMIT = 4096  # (field, word) analyses a query_terms cache keeps


def query_terms(schema: Any, fields: Sequence[str], words: Sequence[str], stem: Callable[[Any], str],
                cache: dict[tuple[str, str], tuple[str, ...]] | None = None,
                ) -> tuple[list[tuple[str, str, int]], int] | None:
    """(field, term text, word bit) for every field each word is searched in, and the number
    of distinct words (for coordination); None if a word analyses to several tokens in a
    field (Whoosh builds a compound query for those: left to Whoosh's parser). `cache` keeps
    each (field, word)'s tokens for the same schema (a long-lived process: 6 µs each)."""
    terms: list[tuple[str, str, int]] = []
    seen: set[tuple[str, str]] = set()
    bits: dict[str, int] = {}
    for word in words:
        for field in fields:
            tokens = cache.get((field, word)) if cache is not None else None
            if tokens is None:
                tokens = tuple(schema[field].process_text(word, mode="query"))
                if cache is not None:
                    if len(cache) >= TOKENS_LIMIT:
                        cache.clear()
                    cache[(field, word)] = tokens
            if len(tokens) > 1 and not has_cjk(word):
                return None
            # A run of Chinese or Japanese is a sentence, not a word: each of its bigrams and
            # characters (analysis.WordFilter) counts as a word of its own, as Whoosh's OR would.
            for token in tokens:
                if (field, token) in seen:
                    continue
                seen.add((field, token))
                key = stem(token)
                bit = bits.setdefault(key, 1 << len(bits))
                terms.append((field, token, bit))
    return terms, len(bits)


def _blocks(matcher: Any) -> Iterator[tuple[Sequence[int], Sequence[float]]]:
    """A posting list as (doc ids, weights) blocks; whoosh3's leaf matcher block by block,
    any other matcher (another Whoosh release) one posting at a time."""
    if type(matcher).__name__ == "FilterMatcher":  # deletions: callers filter by doc set
        matcher = matcher.child
    if hasattr(matcher, "_read_ids") and hasattr(matcher, "_next_block"):
        while matcher.is_active():
            matcher._read_ids()
            matcher._read_weights()
            yield matcher._ids, matcher._weights
            matcher._next_block()
        return
    ids: list[int] = []
    weights: list[float] = []
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    yield ids, weights


def _postings(reader: Any, field: str, text: str) -> Any | None:
    """The term's posting matcher in this segment, or None: one lookup in the term table
    (asking `in` first was a second one)."""
    try:
        return reader.postings(field, text)
    except Exception as exc:  # TermNotFound
        if type(exc).__name__ == "TermNotFound":
            return None
        raise


# The term table's and postings' layouts are Whoosh's own structs (SegmentTerms.of reads them
# from whoosh.filedb.filetables and W3TermInfo); these two Whoosh writes as pack_long + pack_int
# and pack_int.
_EXTENT = struct.Struct("!qi")  # after a W3TermInfo: its posting list's position and byte length
_BLOCK = struct.Struct("!i")  # a block's byte length, negative for the list's last block
_PROBE = 16  # hash-table slots read at once: a table is at most half full, a probe is short


class SegmentTerms:
    """A whoosh3 segment's term table and posting lists read by position (`os.pread`).

    Whoosh finds a term through its hash table with ~8 small reads, each through three file
    layers (StructFile, the compound file's SubFile, a buffered reader: a seek and a read
    each), and unpickles every block header from the file a few bytes at a time (~1,000
    layered reads for a two-word query at 100,000 notes, whose lists were not read before).
    Here a term costs one read of its hash-table slots, one of its record and one of its whole
    posting list; the blocks are taken apart in memory, their doc-number deltas summed in C
    (`itertools.accumulate`). The same bytes give the same numbers: tests/test_bm25.py
    compares every term of every field of several segments with Whoosh's matcher.

    `of` gives None (the caller reads through Whoosh) for anything else: another Whoosh
    release or codec, a segment's files not read from a real file, no `os.pread` (Windows).
    Inlined postings (a codec setting vaultmem does not use) are read through Whoosh too."""

    __slots__ = ("reader", "_tables", "_hash", "_fieldmap", "_tbase", "_pbase", "_tfile", "_pfile",
                 "_slot", "_lengths", "_info")

    def __init__(self, reader: Any, terms: Any, tfile: Any, tbase: int, pfile: Any, pbase: int) -> None:
        from whoosh.codec.whoosh3 import W3TermInfo
        from whoosh.filedb import filetables

        self.reader = reader
        # a hash-table slot (the key's hash, its record's position), a record's key and value
        # lengths, a term's info (flags, weight, doc frequency, ...)
        self._slot, self._lengths, self._info = filetables._pointer, filetables._lengths, W3TermInfo._struct
        tindex = terms._tindex
        self._tables: list[tuple[int, int]] = list(tindex.tables)
        self._hash: Callable[[bytes], int] = tindex.hashfn
        self._fieldmap: dict[str, int] = dict(terms._fieldmap)
        self._tfile, self._tbase, self._pfile, self._pbase = tfile, tbase, pfile, pbase

    @classmethod
    def of(cls, reader: Any) -> SegmentTerms | None:
        from vaultmem.base import portable

        if not portable.has_pread():
            return None
        terms = getattr(reader, "_terms", None)
        tindex = getattr(terms, "_tindex", None)
        if (type(terms).__name__ != "W3TermsReader" or type(tindex).__name__ != "OrderedHashReader"
                or getattr(tindex, "hashtype", None) != 0 or not hasattr(reader, "_text_to_bytes")):
            return None
        tfile, tbase = _real_file(getattr(tindex, "dbfile", None))
        pfile, pbase = _real_file(getattr(terms, "_postfile", None))
        if tfile is None or pfile is None:
            return None
        return cls(reader, terms, tfile, tbase, pfile, pbase)

    def _read(self, file: Any, position: int, length: int) -> bytes:
        if file.closed:
            raise ValueError("read of a closed index segment")
        return os.pread(file.fileno(), length, position)

    def _record(self, field: str, text: str) -> bytes | None:
        """The term's record (its W3TermInfo bytes) from the hash table, or None: as
        `OrderedHashReader.ranges_for_key` probes it."""
        fnum = self._fieldmap.get(field)
        if fnum is None:
            return None
        key = fnum.to_bytes(2, "big") + self.reader._text_to_bytes(field, text)
        h = self._hash(key)
        start, slots = self._tables[h & 255]
        if not slots:
            return None
        size, lens = self._slot.size, self._lengths.size
        slot = (h >> 8) % slots
        probed = 0
        while probed < slots:
            n = min(_PROBE, slots - slot, slots - probed)
            chunk = self._read(self._tfile, self._tbase + start + slot * size, n * size)
            for at in range(0, n * size, size):
                slothash, pos = self._slot.unpack_from(chunk, at)
                if not pos:
                    return None
                if slothash == h:
                    head = self._read(self._tfile, self._tbase + pos, lens + len(key) + 64)
                    keylen, datalen = self._lengths.unpack_from(head)
                    if keylen == len(key):
                        end = lens + keylen + datalen
                        if len(head) < end:
                            head = self._read(self._tfile, self._tbase + pos, end)
                        if head[lens:lens + keylen] == key:
                            record = head[lens + keylen:end]
                            if len(record) < self._info.size + (0 if record[:1] == b"\x01" else _EXTENT.size):
                                raise _damaged(f"Short term record for {field}:{text!r}")
                            return record
            probed += n
            slot = (slot + n) % slots
        return None

    def doc_frequency(self, field: str, text: str) -> int:
        record = self._record(field, text)
        return self._info.unpack_from(record)[2] if record else 0

    def postings(self, field: str, text: str) -> tuple[Sequence[int], Sequence[float]] | tuple[()] | None:
        """(doc numbers in the segment, weights) of the term, () when the segment lacks it,
        None for inlined postings (read them through Whoosh)."""
        record = self._record(field, text)
        if record is None:
            return _ABSENT
        if record[0]:
            return None
        offset, length = _EXTENT.unpack_from(record, self._info.size)
        data = self._read(self._pfile, self._pbase + offset, length)
        return _parse_blocks(data, f"{field}:{text}")


def _real_file(structfile: Any) -> tuple[Any, int] | tuple[None, int]:
    """The OS file under a Whoosh StructFile and where the StructFile's byte 0 is in it: a
    compound segment's SubFile over its file, or a file of its own; None for anything else
    (a BytesIO: an mmapped or in-memory segment)."""
    inner = getattr(structfile, "file", None)
    if type(inner).__name__ == "SubFile":
        outer, base = getattr(inner, "_file", None), getattr(inner, "_offset", None)
    else:
        outer, base = inner, 0
    if not isinstance(base, int) or not isinstance(outer, io.BufferedReader):
        return None, 0
    return outer, base


def _damaged(message: str) -> Exception:
    """Whoosh's error for an index whose bytes are not its own (`Index.search` rebuilds on it)."""
    from whoosh.reading import CorruptIndexError

    return CorruptIndexError(f"{message}; run `vaultmem index rebuild`")


def _parse_blocks(data: bytes, term: str) -> tuple[array[int], array[float]]:
    """A whoosh3 posting list's bytes (W3PostingsWriter: the header tag, then blocks of a
    length, a pickled header and the pickled, maybe compressed, ids/weights/values) as
    W3LeafMatcher reads them: ids from their deltas, weights None (all 1.0), one float or
    one each (float32 values, as Whoosh keeps them)."""
    from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC

    ids, weights = array("I"), array("d")
    if data[:4] != WHOOSH3_HEADER_MAGIC:
        raise _damaged(f"Bad postings tag for {term!r}")
    stream = io.BytesIO(data)
    pos, last = 4, False
    try:
        while not last:
            (length,) = _BLOCK.unpack_from(data, pos)
            last = length < 0
            end = pos + 4 + abs(length)
            stream.seek(pos + 4)
            count, _maxid, _maxweight, compressed, _minlength, _maxlength = pickle.load(stream)
            raw = data[stream.tell():end]
            pos = end
            deltas, mini, _values = pickle.loads(zlib.decompress(raw) if compressed else raw)
            ids.extend(itertools.accumulate(deltas))
            if mini is None:
                weights.extend(itertools.repeat(1.0, count))
            elif isinstance(mini, float):
                weights.extend(itertools.repeat(array("f", (mini,))[0], count))
            else:
                weights.extend(mini)
    except (pickle.UnpicklingError, struct.error, zlib.error, EOFError, ValueError, TypeError) as exc:
        raise _damaged(f"Damaged postings for {term!r} ({exc})") from None
    return ids, weights


def read_postings(reader: Any, field: str, text: str,
                  terms: SegmentTerms | None = None) -> tuple[Sequence[int], Sequence[float]] | tuple[()]:
    """(doc ids, weights) of the term in the segment `reader` reads, deleted notes included
    (callers filter by doc set), or () when it has none: by `terms` where it can, else
    through Whoosh's matcher."""
    if terms is not None:
        found = terms.postings(field, text)
        if found is not None:
            return found
    matcher = _postings(reader, field, text)
    if matcher is None:
        return _ABSENT
    ids, weights = array("I"), array("d")  # "d": a weight read back is the float Whoosh gave
    for block_ids, block_weights in _blocks(matcher):
        ids.extend(iter(block_ids))  # a block is an array of Whoosh's typecode, or a list
        weights.extend(iter(block_weights))
    return ids, weights


def _deleted(reader: Any) -> frozenset[int] | set[int]:
    if not reader.has_deletions():
        return frozenset()
    deleted = getattr(reader, "deleted_docs_set", None)
    if deleted is not None:
        return deleted
    return {d for d in range(reader.doc_count_all()) if reader.is_deleted(d)}


def _segment_id(reader: Any) -> str | None:
    segment = getattr(reader, "_segment", None)
    return segment.segment_id() if segment is not None and hasattr(segment, "segment_id") else None


def docs_with(searcher: Any, field: str, values: Iterable[str],
              cache: dict[Any, frozenset[int]] | None = None) -> set[int]:
    """Doc numbers (index-wide) of live notes whose `field` holds any of `values`.

    With a `cache` (kept across searchers), each segment's doc numbers are read once:
    segments never change, only their deletions do, and those are subtracted afresh. After
    a one-note commit at 100,000 notes only the new segment is read.
    """
    found: set[int] = set()
    dead: set[int] = set()
    segment_terms = getattr(searcher, "segment_terms", lambda reader: None)
    for reader, offset in searcher.reader().leaf_readers():
        segid = _segment_id(reader) if cache is not None else None
        for value in values:
            key = (segid, offset, field, value)
            ids = cache.get(key) if cache is not None and segid is not None else None
            if ids is None:
                listed = read_postings(reader, field, value, segment_terms(reader))
                ids = frozenset(d + offset for d in listed[0]) if listed else frozenset()
                if cache is not None and segid is not None:
                    cache[key] = ids
            found |= ids
        deleted = _deleted(reader)
        if deleted:
            dead.update(d + offset for d in deleted)
    return found - dead if dead else found


class AllBut:
    """Every doc number below `total` except `excluded`: a filter that is cheaper to hold as
    what it leaves out (every memory but the archived ones, every note but a few of the
    person's). Behaves as a set for `in` and truthiness; `as_set()` for Whoosh's own search."""

    __slots__ = ("excluded", "total")

    def __init__(self, excluded: set[int] | frozenset[int], total: int) -> None:
        self.excluded, self.total = excluded, total

    def __contains__(self, doc: object) -> bool:
        return isinstance(doc, int) and 0 <= doc < self.total and doc not in self.excluded

    def __bool__(self) -> bool:
        return self.total > len(self.excluded)

    def __len__(self) -> int:
        return self.total - len(self.excluded)

    def as_set(self) -> set[int]:
        return set(range(self.total)) - self.excluded


def dead_docs(searcher: Any) -> set[int]:
    """Index-wide doc numbers of deleted documents."""
    dead: set[int] = set()
    for reader, offset in searcher.reader().leaf_readers():
        deleted = _deleted(reader)
        if deleted:
            dead.update(d + offset for d in deleted)
    return dead


def field_values(searcher: Any, field: str) -> dict[str, int]:
    """Every term of a (small, keyword) field with its document frequency."""
    reader = searcher.reader()
    try:
        return {str(term): reader.doc_frequency(field, term) for term in reader.field_terms(field)}
    except KeyError:
        return {}


IDF_CACHE_LIMIT = 4096  # terms whose idf a Lexicon keeps
DOC_PATHS_LIMIT = 16_384  # paths doc_paths keeps (~2.5 MB); past it the cache starts again


def doc_paths(searcher: Any, docs: Sequence[int], cache: dict[Any, dict[int, str]]) -> list[str]:
    """The stored `path` of each doc number, remembered per segment across searchers (a
    segment's documents never change; a long-lived process stops re-reading them: 13 µs
    each). The cache maps (segment, offset) to {doc in segment: path} and holds at most
    DOC_PATHS_LIMIT paths, so a server's memory stays bounded at 100,000 notes."""
    leaves = [(offset, _segment_id(reader), reader) for reader, offset in searcher.reader().leaf_readers()]
    leaves.sort(key=lambda leaf: leaf[0])
    starts = [offset for offset, _s, _r in leaves]
    if sum(map(len, cache.values())) + len(docs) > DOC_PATHS_LIMIT:
        cache.clear()
    out = []
    for doc in docs:
        offset, segid, reader = leaves[bisect.bisect_right(starts, doc) - 1]
        local = doc - offset
        known = cache.setdefault((segid, offset), {}) if segid is not None else {}
        path = known.get(local)
        if path is None:
            path = known[local] = reader.stored_fields(local)["path"]
        out.append(path)
    return out


POSTINGS_LIMIT = 131_072  # postings a PostingsCache holds (12 bytes each: ~1.5 MB with its keys)
_ABSENT = ()  # a term a segment does not have (cached too: a segment never gains one)


class PostingsCache:
    """Each segment's posting lists of recently searched terms, decoded: (doc ids in the
    segment, weights) as compact arrays. A segment never changes (its deletions are filtered
    by the caller's doc set), so an entry stays true until the segment is merged away
    (`prune`). Whoosh reads a list through its term table and ~11 small reads of the
    compound file, ~25 µs a list; a plain query of two words reads ~20 (five fields, two
    segments). At most POSTINGS_LIMIT postings, oldest terms dropped first; a list longer
    than an eighth of that (a word in most notes of a big vault) is read every time."""

    __slots__ = ("entries", "size", "limit")

    def __init__(self, limit: int = POSTINGS_LIMIT) -> None:
        self.entries: dict[tuple[Any, ...], tuple[Any, Any] | tuple[()]] = {}
        self.size = 0
        self.limit = limit

    def read(self, reader: Any, segid: str | None, offset: int, field: str,
             text: str, terms: SegmentTerms | None = None) -> tuple[Sequence[int], Sequence[float]] | tuple[()]:
        """(doc ids, weights) of the term in this segment, or () when it has none; read by
        `terms` (the segment's SegmentTerms) where it can."""
        key = (segid, offset, field, text)
        found = self.entries.get(key) if segid is not None else None
        if found is not None:
            return found
        found = read_postings(reader, field, text, terms)
        cost = _cost(found)
        if segid is not None and cost <= self.limit // 8:
            self.size += cost
            self.entries[key] = found
            while self.size > self.limit:
                self.size -= _cost(self.entries.pop(next(iter(self.entries))))
        return found

    def prune(self, searcher: Any) -> None:
        """Drop the entries of segments the searcher no longer has (merged away)."""
        live = _live_segments(searcher)
        for key in [k for k in self.entries if (k[0], k[1]) not in live]:
            self.size -= _cost(self.entries.pop(key))


def _cost(value: tuple[Any, Any] | tuple[()]) -> int:
    return len(value[0]) + 1 if value else 1


def _live_segments(searcher: Any) -> set[tuple[str | None, int]]:
    """(segment id, offset) of each segment the searcher reads: what per-segment caches keep."""
    return {(_segment_id(r), offset) for r, offset in searcher.reader().leaf_readers()}


def prune(cache: dict[Any, Any], searcher: Any) -> None:
    """Drop cached entries of segments the searcher no longer has (merged away)."""
    live = _live_segments(searcher)
    for key in [k for k in cache if (k[0], k[1]) not in live]:
        del cache[key]


class Lexicon:
    """One index generation as BM25F over the postings reads it: the reader, each term's idf
    and each field's average length, computed as `whoosh.scoring.BM25F` and
    `whoosh.searching.Searcher` compute them. Plain queries need nothing more, so
    `whoosh.searching` (queries, highlighting, spelling: 12 ms to import, 1.4 MB) is imported
    only when a query with syntax asks for Whoosh's own searcher (`searcher`), built over
    the same reader."""

    def __init__(self, ix: Any, weighting: Callable[[], Any]) -> None:
        self.ix = ix
        self._reader = ix.reader()
        self.schema = self._reader.schema
        self._doccount = self._reader.doc_count_all()
        self._weighting = weighting
        self._idf: dict[tuple[str, str], float] = {}
        self._searcher: Any = None
        self._terms = {id(reader): SegmentTerms.of(reader) for reader, _offset in self._reader.leaf_readers()}

    def segment_terms(self, reader: Any) -> SegmentTerms | None:
        """The SegmentTerms of one of this generation's segment readers (None: read through Whoosh)."""
        found = self._terms.get(id(reader))
        return found if found is not None and found.reader is reader else None

    def reader(self) -> Any:
        return self._reader

    def doc_count_all(self) -> int:
        return self._doccount

    def idf(self, field: str, text: str) -> float:
        """whoosh.scoring.WeightingModel.idf over the whole index (cached, as Searcher.idf)."""
        key = (field, text)
        found = self._idf.get(key)
        if found is None:
            if len(self._idf) >= IDF_CACHE_LIMIT:  # a read-only server's generation can last for days
                self._idf.clear()
            n = 0
            for reader, _offset in self._reader.leaf_readers():  # as MultiReader.doc_frequency
                terms = self.segment_terms(reader)
                n += terms.doc_frequency(field, text) if terms is not None else reader.doc_frequency(field, text)
            found = self._idf[key] = math.log(self._doccount / (n + 1)) + 1
        return found

    def avg_field_length(self, field: str) -> float | None:
        if not self.schema[field].scorable:
            return None
        return self._reader.field_length(field) / (self._doccount or 1)

    def up_to_date(self) -> bool:
        return bool(self.ix.latest_generation() == self._reader.generation())

    def searcher(self) -> Any:
        """Whoosh's searcher over this generation's reader (closed with the lexicon)."""
        if self._searcher is None:
            from whoosh.searching import Searcher

            self._searcher = Searcher(self._reader, weighting=self._weighting(), closereader=False,
                                      fromindex=self.ix)
        return self._searcher

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
        self._reader.close()


def _lengths(reader: Any, field: str, cache: dict[Any, Any]) -> tuple[bytes, list[Any]] | Callable[[int], Any]:
    """The field's lengths as Whoosh scores them (`doc_field_length(d, field, 1)`).

    whoosh3 keeps a length as one byte per note in a column: its bytes and the 256-entry
    decoding table, read once per reader, so scoring needs no call per posting. Another
    Whoosh release: its per-document accessor.
    """
    key = (id(reader), field)
    if key in cache:
        return cache[key]
    perdoc = getattr(reader, "_perdoc", None)
    found: Any = None
    try:
        from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield
        from whoosh.util.numeric import byte_to_length

        column = perdoc._cached_reader(_lenfield(field), LENGTHS_COLUMN) if perdoc is not None else None
        if column is None:
            found = lambda docnum: 1  # noqa: E731  (no lengths stored: Whoosh's default)
        elif getattr(column, "_typecode", None) == "B" and getattr(column, "_fixedlen", None) == 1:
            raw = column._dbfile.get(column._basepos, column._count)
            raw += bytes(max(0, reader.doc_count_all() - len(raw)))
            # byte 0 decodes to None, as in whoosh3's doc_field_length (never a posting's note)
            found = (raw, [byte_to_length(b) if b else None for b in range(256)])
    except Exception:  # another Whoosh release: its public accessor
        found = None
    if found is None:
        fast = getattr(perdoc, "doc_field_length_reader", None)
        found = fast(field, 1) if fast is not None else (lambda docnum: reader.doc_field_length(docnum, field, 1))
    cache[key] = found
    return found


def smallest(items: list[Any], n: int) -> list[Any]:
    """`sorted(items)[:n]`, `items` reordered in place: one sort in C for up to 8n items (a
    two-word search at 10,000 memories scores ~500 for the best 100: half heapq.nsmallest's
    time), heapq.nsmallest beyond, where its Python loop over the rest costs less than sorting."""
    if len(items) > 8 * n:
        return heapq.nsmallest(n, items)
    items.sort()
    del items[n:]
    return items


def score(searcher: Any, terms: Sequence[tuple[str, str, int]], allowed: set[int] | frozenset[int],
          b: float, k1: float, cache: dict[Any, Any],
          postings: PostingsCache | None = None) -> tuple[dict[int, float], dict[int, int]]:
    """(doc number -> BM25F summed over the matched terms, doc number -> bitmask of matched
    words). `cache` holds per-reader field lengths; give one per searcher. `postings` keeps
    decoded posting lists across searchers (a long-lived process); None reads each afresh.

    Each posting adds whoosh.scoring.bm25's value, computed in the same order so both paths
    give the same floats: idf * ((tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * length / avgfl))),
    with the length term looked up in a table over the 256 length bytes.
    """
    acc: dict[int, float] = {}
    masks: dict[int, int] = {}
    k1p1 = k1 + 1
    # AllBut (most searches: every memory but a few) asked per posting without a method call
    excluded, total = (allowed.excluded, allowed.total) if isinstance(allowed, AllBut) else (None, 0)
    postings = postings if postings is not None else PostingsCache(0)
    segment_terms = getattr(searcher, "segment_terms", lambda reader: None)
    leaves = [(reader, offset, _segment_id(reader), segment_terms(reader))
              for reader, offset in searcher.reader().leaf_readers()]
    for field, text, bit in terms:
        # read once the term is found in a segment: a term found nowhere costs no more lookups
        idf: float | None = None
        avgfl: float = 1
        for reader, offset, segid, segment in leaves:
            found = postings.read(reader, segid, offset, field, text, segment)
            if not found:
                continue
            if idf is None:
                idf = searcher.idf(field, text)
                avgfl = searcher.avg_field_length(field) or 1
            lengths = _lengths(reader, field, cache)
            if isinstance(lengths, tuple):  # whoosh3: length bytes and their decoding table
                raw, decoded = lengths
                key = ("norms", id(reader), field, avgfl, b, k1)  # built once per reader and field
                table: list[Any] = cache.get(key) or []
                if not table:
                    # Any: entry 0 is None, a length byte no posting carries (see _lengths)
                    table = cache[key] = [None if n is None else k1 * ((1 - b) + b * n / avgfl) for n in decoded]
            else:  # another release: a per-document accessor
                raw, length = None, lengths
            ids, weights = found
            for d, tf in zip(ids, weights, strict=True):
                doc = d + offset
                if excluded is not None:
                    if doc in excluded or doc >= total:
                        continue
                elif doc not in allowed:
                    continue
                norm = table[raw[d]] if raw is not None else k1 * ((1 - b) + b * length(d) / avgfl)
                s = idf * ((tf * k1p1) / (tf + norm))
                prev = acc.get(doc)
                if prev is None:
                    acc[doc] = s
                    masks[doc] = bit
                else:
                    acc[doc] = prev + s
                    masks[doc] |= bit
    return acc, masks
