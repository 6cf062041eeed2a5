"""BM25F over Whoosh's postings without Whoosh's matcher tree: the fast path of plain queries.

Whoosh scores an OR query through a tree of union matchers, one Python method call per
posting per node, and needs `terms=True` bookkeeping for word coordination. Most queries are
plain words (no quotes, operators, fields or wildcards), so for those `Index.search` reads
each (field, term) posting list once through the reader's documented interface
(`IndexReader.postings`, the Matcher's `is_active`/`id`/`weight`/`next`) and adds up the
same per-field BM25 Whoosh would (`whoosh.scoring.BM25F`: idf and average field length from
the whole index, the note's length from `doc_field_length`, boosts folded into the indexed
weights), with the coordination bitmask in the same pass. Any other query goes through
Whoosh's parser and searcher; `tests/test_bm25.py` checks that both paths agree.

Also here: the doc numbers of an ID field's values (`kind`, `status`, `tags` filters) read
the same way, which is what makes the filters cheap in a one-shot CLI process.
"""

from __future__ import annotations

import bisect
import heapq
import math
import re
from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vaultmem.storage.fulltext.analysis import has_cjk

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
    each (field, word)'s tokens for the same schema, so a long-lived process analyses each once."""
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


def read_postings(reader: Any, field: str, text: str) -> tuple[Sequence[int], Sequence[float]] | tuple[()]:
    """(doc ids, weights) of the term in the segment `reader` reads, or () when it has none,
    read with the documented Matcher interface (`is_active`, `id`, `weight`, `next`). Doc
    numbers of deleted notes may be among them: callers filter by doc set."""
    from whoosh.reading import TermNotFound

    try:
        matcher = reader.postings(field, text)
    except TermNotFound:
        return _ABSENT
    ids, weights = array("I"), array("d")  # "d": a weight read back is the float Whoosh gave
    add_id, add_weight = ids.append, weights.append
    is_active, doc, weight, step = matcher.is_active, matcher.id, matcher.weight, matcher.next
    while is_active():
        add_id(doc())
        add_weight(weight())
        step()
    return ids, weights


def _deleted(reader: Any) -> frozenset[int]:
    """The deleted doc numbers of one segment's reader (`all_doc_ids` lists the others)."""
    if not reader.has_deletions():
        return frozenset()
    return frozenset(range(reader.doc_count_all())) - frozenset(reader.all_doc_ids())


def _segment_id(reader: Any) -> str | None:
    segment = reader.segment()
    return segment.segment_id() if segment is not None else None


def docs_with(searcher: Any, field: str, values: Iterable[str],
              cache: dict[Any, frozenset[int]] | None = None) -> set[int]:
    """Doc numbers (index-wide) of live notes whose `field` holds any of `values`.

    With a `cache` (kept across searchers), each segment's doc numbers are read once:
    segments never change, only their deletions do, and those are subtracted afresh. After
    a one-note commit only the new segment is read.
    """
    found: set[int] = set()
    dead: set[int] = set()
    for reader, offset in searcher.reader().leaf_readers():
        segid = _segment_id(reader) if cache is not None else None
        for value in values:
            key = (segid, offset, field, value)
            ids = cache.get(key) if cache is not None and segid is not None else None
            if ids is None:
                listed = read_postings(reader, field, value)
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
    segment's documents never change, so a long-lived process stops re-reading them). The
    cache maps (segment, offset) to {doc in segment: path} and holds at most
    DOC_PATHS_LIMIT paths, so a server's memory stays bounded however big the vault."""
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
    (`prune`). Whoosh reads a list through its term table and several small reads of the
    compound file, and a plain query reads one list per field, word and segment. At most
    POSTINGS_LIMIT postings, oldest terms dropped first; a list longer than an eighth of
    that (a word in most notes of a big vault) is read every time."""

    __slots__ = ("entries", "size", "limit")

    def __init__(self, limit: int = POSTINGS_LIMIT) -> None:
        self.entries: dict[tuple[Any, ...], tuple[Any, Any] | tuple[()]] = {}
        self.size = 0
        self.limit = limit

    def read(self, reader: Any, segid: str | None, offset: int, field: str,
             text: str) -> tuple[Sequence[int], Sequence[float]] | tuple[()]:
        """(doc ids, weights) of the term in this segment, or () when it has none."""
        key = (segid, offset, field, text)
        found = self.entries.get(key) if segid is not None else None
        if found is not None:
            return found
        found = read_postings(reader, field, text)
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
    `whoosh.searching` (queries, highlighting, spelling: slow to import) is imported only
    when a query with syntax asks for Whoosh's own searcher (`searcher`), built over the same
    reader."""

    def __init__(self, ix: Any, weighting: Callable[[], Any]) -> None:
        self.ix = ix
        self._reader = ix.reader()
        self.schema = self._reader.schema
        self._doccount = self._reader.doc_count_all()
        self._weighting = weighting
        self._idf: dict[tuple[str, str], float] = {}
        self._searcher: Any = None

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
            n = self._reader.doc_frequency(field, text)
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


def _norms(reader: Any, field: str, avgfl: float, b: float, k1: float,
           cache: dict[Any, Any]) -> dict[int, float]:
    """The BM25 length term `k1 * ((1 - b) + b * length / avgfl)` of the field's documents in
    this segment, by doc number, filled in as postings ask for them (the length as Whoosh's
    scorer reads it: `doc_field_length(d, field, 1)`). One dict per reader and field."""
    key = (id(reader), field, avgfl, b, k1)
    found: dict[int, float] | None = cache.get(key)
    if found is None:
        found = cache[key] = {}
    return found


def smallest(items: list[Any], n: int) -> list[Any]:
    """`sorted(items)[:n]`, `items` reordered in place: one sort in C for up to 8n items
    (quicker there than heapq.nsmallest), heapq.nsmallest beyond, where its Python loop over the rest costs less than sorting."""
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
    leaves = [(reader, offset, _segment_id(reader)) for reader, offset in searcher.reader().leaf_readers()]
    for field, text, bit in terms:
        # read once the term is found in a segment: a term found nowhere costs no more lookups
        idf: float | None = None
        avgfl: float = 1
        for reader, offset, segid in leaves:
            found = postings.read(reader, segid, offset, field, text)
            if not found:
                continue
            if idf is None:
                idf = searcher.idf(field, text)
                avgfl = searcher.avg_field_length(field) or 1
            norms = _norms(reader, field, avgfl, b, k1, cache)
            length = reader.doc_field_length
            ids, weights = found
            for d, tf in zip(ids, weights, strict=True):
                doc = d + offset
                if excluded is not None:
                    if doc in excluded or doc >= total:
                        continue
                elif doc not in allowed:
                    continue
                norm = norms.get(d)
                if norm is None:
                    norm = norms[d] = k1 * ((1 - b) + b * length(d, field, 1) / avgfl)
                s = idf * ((tf * k1p1) / (tf + norm))
                prev = acc.get(doc)
                if prev is None:
                    acc[doc] = s
                    masks[doc] = bit
                else:
                    acc[doc] = prev + s
                    masks[doc] |= bit
    return acc, masks
