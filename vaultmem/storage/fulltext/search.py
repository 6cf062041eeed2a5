"""Searching the full-text index: text and filters in, (path, relevance) out, best first.

Plain words are scored by `bm25` straight off the postings; a query with syntax (phrases,
operators, fields, wildcards) goes to Whoosh's parser and searcher. Either way each note's
BM25F is scaled by the share of the query's words it contains (`coordinated`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from vaultmem.storage.fulltext.engine import SEARCH_FIELDS

# BM25 with the Anserini/Lucene-for-IR defaults (k1 0.9, b 0.4): memories are short and
# of very uneven length, and full length normalisation (b 0.75) punishes the long ones that
# carry the detail. Whoosh's SQR coordination bonus (OrGroup scale) counts field clauses,
# not words, and measured worse than none, so words are plainly OR-ed (see docs/retrieval.md).
COORDINATION = 0.0
FIELD_BOOSTS: dict[str, float] = {}
BM25_B = 0.4
BM25_K1 = 0.9
COORD_POWER = 2.0


def weighting() -> Any:
    from whoosh.scoring import BM25F

    return BM25F(B=BM25_B, K1=BM25_K1)


def coordinated(bm25: float, matched_words: int, query_words: int) -> float:
    """BM25F scaled by the share of the query's words a note contains: (m / n) ** 2.

    Plain OR lets a short note with two of three words outrank the note with all three;
    Whoosh's own coordination bonus is negligible when words are spread over four fields.
    """
    if query_words <= 1:
        return bm25
    return bm25 * (max(matched_words, 1) / query_words) ** COORD_POWER


@functools.lru_cache(maxsize=1)
def stemmer() -> Callable[[Any], str]:
    """Map a matched term (bytes or str, from any field) to its content-field form."""
    from vaultmem.storage.fulltext.analysis import analyzer

    words = analyzer()

    @functools.lru_cache(maxsize=20000)
    def stem(term: Any) -> str:
        text = term.decode("utf-8", "replace") if isinstance(term, bytes) else str(term)
        tokens = [t.text for t in words(text)]
        return tokens[0] if tokens else text.lower()

    return stem


class TextSearch:
    """Searches over one index, reopened at each new generation a writer (any process)
    commits, with what a long-lived process keeps between searches: the filter doc sets and
    the documents' paths per segment, decoded posting lists (`long_lived`), query analyses."""

    def __init__(self, long_lived: bool = False) -> None:
        self.long_lived = long_lived
        self.lexicon: Any = None
        self.ix: Any = None
        self.allowed_cache: dict[str, Any] = {}
        self.lengths_cache: dict[Any, Any] = {}
        self.segment_docs: dict[Any, frozenset[int]] = {}  # bm25.docs_with, across searchers
        self.doc_paths: dict[Any, dict[int, str]] = {}  # bm25.doc_paths, across searchers
        self.postings: Any = None  # bm25.PostingsCache of a long-lived process, across searchers
        self.query_tokens: dict[tuple[str, str], tuple[str, ...]] = {}  # bm25.query_terms, this schema

    def close(self) -> None:
        """Close the reader (the next search opens the current generation)."""
        if self.lexicon is not None:
            self.lexicon.close()
        self.lexicon = None
        self.ix = None

    def reset(self) -> None:
        """Forget every cache (another index: a rebuild)."""
        self.close()
        self.allowed_cache, self.lengths_cache, self.segment_docs = {}, {}, {}
        self.doc_paths = {}
        self.postings = None
        self.query_tokens = {}

    def current(self, ix: Any) -> Any:
        """One `bm25.Lexicon` per index generation, reopened when a writer committed."""
        from vaultmem.storage.fulltext import bm25

        if self.lexicon is not None and self.ix is ix and self.lexicon.up_to_date():
            return self.lexicon
        if self.lexicon is not None:
            # A fresh reader, not refresh(): whoosh3's refresh crashes when the old reader
            # was an EmptyReader (an index with no segments yet), and it keeps the old segment
            # readers beside the new ones, so an edited note is found by its old text too.
            self.lexicon.close()
        if self.ix is not ix:  # another index (a rebuild): its schema may analyse otherwise
            self.query_tokens.clear()
        self.lexicon, self.ix = bm25.Lexicon(ix, weighting), ix
        self.allowed_cache, self.lengths_cache = {}, {}
        bm25.prune(self.segment_docs, self.lexicon)  # forget segments merged away
        bm25.prune(self.doc_paths, self.lexicon)
        if self.postings is not None:
            self.postings.prune(self.lexicon)
        return self.lexicon

    def searcher(self, ix: Any) -> Any:
        """Whoosh's searcher over the current generation (queries with syntax)."""
        return self.current(ix).searcher()

    def search(self, ix: Any, text: str, *, kinds: Sequence[str], statuses: Sequence[str] | None,
               tags: Sequence[str], limit: int,
               fields: Sequence[str] = SEARCH_FIELDS) -> tuple[list[tuple[str, float]], bool]:
        """BM25F matches as (path, relevance), best first, and whether that is every match."""
        from vaultmem.storage.fulltext import bm25

        lexicon = self.current(ix)
        allowed = self.allowed(lexicon, kinds, statuses, tags)
        if not allowed:
            return [], True
        words = bm25.plain_words(text)
        plan = bm25.query_terms(lexicon.schema, fields,  # ix.schema re-reads the TOC file each time
                                words, stemmer(), self.query_tokens) if words is not None else None
        if plan is not None:  # plain words: BM25F straight off the postings (see bm25.py)
            terms, n_words = plan
            if self.postings is None and self.long_lived:
                self.postings = bm25.PostingsCache()
            scores, masks = bm25.score(lexicon, terms, allowed, BM25_B, BM25_K1, self.lengths_cache,
                                       self.postings)
            if n_words <= 1:  # coordinated() leaves a one-word score as it is
                top = bm25.smallest([(-s, doc) for doc, s in scores.items()], limit)
            else:
                share = [coordinated(1.0, m, n_words) for m in range(n_words + 1)]
                top = bm25.smallest([(-(s * share[masks[doc].bit_count()]), doc) for doc, s in scores.items()],
                                    limit)
            paths = bm25.doc_paths(lexicon, [doc for _neg, doc in top], self.doc_paths)
            found = [(path, -neg) for path, (neg, _doc) in zip(paths, top, strict=True)]
            return found, len(scores) <= limit
        return parsed_search(lexicon.searcher(), text, allowed, limit, fields)

    def allowed(self, searcher: Any, kinds: Sequence[str], statuses: Sequence[str] | None,
                tags: Sequence[str]) -> Any:
        """The doc numbers of the given kinds, statuses (None: any) and tags (any of; none:
        no tag filter), cached per searcher."""
        from vaultmem.storage.fulltext import bm25

        filters = [("kind", tuple(kinds))]
        if statuses:
            filters.append(("status", tuple(statuses)))
        if tags:
            filters.append(("tags", tuple(t.lower().strip("#/") for t in tags)))  # as notes.tag_matches
        key = repr(filters)
        allowed: Any = self.allowed_cache.get(key)
        if allowed is None:
            # A kind or status filter usually keeps most notes (memories, live ones): read the
            # postings of what it leaves out when those are fewer. Tags are read as given.
            explicit: set[int] | None = None
            excluded: set[int] = set()
            for field, values in filters:
                counts = bm25.field_values(searcher, field) if field != "tags" else {}
                inside = sum(n for term, n in counts.items() if term in values)
                outside = [term for term in counts if term not in values]
                if counts and sum(counts[t] for t in outside) < inside:
                    excluded |= bm25.docs_with(searcher, field, outside, self.segment_docs)
                else:
                    docs = bm25.docs_with(searcher, field, values, self.segment_docs)
                    explicit = docs if explicit is None else explicit & docs
            if explicit is None:
                allowed = bm25.AllBut(excluded | bm25.dead_docs(searcher), searcher.doc_count_all())
            else:
                allowed = explicit - excluded if excluded else explicit
            if len(self.allowed_cache) > 64:
                self.allowed_cache.clear()
            self.allowed_cache[key] = allowed
        return allowed


def parsed_search(searcher: Any, text: str, allowed: Any, limit: int,
                  fields: Sequence[str] = SEARCH_FIELDS) -> tuple[list[tuple[str, float]], bool]:
    """Queries with syntax (phrases, operators, fields, wildcards): Whoosh's parser and scorer."""
    from whoosh import query as Q
    from whoosh.qparser import MultifieldParser, OrGroup

    from vaultmem.storage.fulltext import bm25

    group = OrGroup.factory(COORDINATION) if COORDINATION else OrGroup
    parser = MultifieldParser(list(fields), searcher.schema, group=group, fieldboosts=FIELD_BOOSTS)
    parsed = parser.parse(text)
    if parsed is Q.NullQuery:
        return [], True
    hits = searcher.search(parsed, limit=limit, filter=allowed.as_set() if isinstance(allowed, bm25.AllBut)
                           else allowed, terms=True)
    stem = stemmer()
    wanted = {stem(t) for f, t in parsed.iter_all_terms() if f in fields}
    found = []
    for hit in hits:
        matched = {stem(t) for f, t in hit.matched_terms()} & wanted
        found.append((hit["path"], coordinated(float(hit.score), len(matched), len(wanted))))
    found.sort(key=lambda item: -item[1])
    return found, len(found) < limit
