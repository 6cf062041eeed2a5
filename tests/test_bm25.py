"""The plain-query fast path (bm25.py) ranks exactly as Whoosh's parser and scorer would."""

from __future__ import annotations

import random

import pytest
from conftest import Clock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem.storage.fulltext import bm25
from vaultmem.storage.fulltext.engine import SEARCH_FIELDS
from vaultmem.storage.fulltext.search import BM25_B, BM25_K1, parsed_search
from vaultmem.storage.fulltext.search import stemmer as _stemmer
from vaultmem.store import MemoryStore, Policy

WORDS = ("kafka postgres migration deploy deploys deployed outage budget Caroline Caroline's adoption "
         "agency agencies research researched running runs dog dogs puppy shelter weekend release freeze "
         "hotfix Zürich café naïve über-cool e-mail v1.2 2026 ops auth jwt tokens token").split()
STOP = ("the what did she how a of to in is").split()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """~60 memories over several segments, with deletions (edits) and a person's note."""
    root = tmp_path_factory.mktemp("bm25") / "vault"
    store = MemoryStore(root, clock=Clock())
    store.init()
    rng = random.Random(3)
    ids = []
    for i in range(60):
        text = " ".join(rng.choice(WORDS + STOP) for _ in range(rng.randint(3, 25)))
        tags = rng.sample(["ops", "kafka", "dogs", "auth", "Release"], rng.randint(0, 2))
        ids.append(store.save(f"Note {i}: {text}", tags=tags, dedupe=False)["memory_id"])
    for mid in ids[::7]:  # edits delete the old document: postings with deleted doc numbers
        path = root / store.resolve(mid).path
        path.write_text(path.read_text() + "\nEdited: kafka migration deploy weekend\n")
        store.sync()
    (root / "Projects").mkdir()
    (root / "Projects/Kafka Outage.md").write_text("# Kafka outage\nThe deploy broke the kafka consumer.\n")
    store.sync()
    leaves = searcher_of(store.index).reader().leaf_readers()
    assert len(leaves) > 1 and any(r.has_deletions() for r, _ in leaves)  # what this test is about
    yield store
    store.close()


def both(store: MemoryStore, text: str, kinds=("memory",), statuses=("active", "promoted"), tags=()):
    index = store.index
    searcher = searcher_of(index)
    allowed = index.text_search().allowed(searcher, kinds, statuses, tags)
    fast, _ = index._search_once(text, kinds=kinds, statuses=statuses, tags=tags, limit=1000)
    slow, _ = parsed_search(searcher, text, allowed, 1000)
    return fast, slow


def searcher_of(index):
    """Whoosh's own searcher over the index's current generation."""
    return index.text_search().searcher(index.ix)


def lexicon_of(index):
    return index.text_search().current(index.ix)


def assert_same(fast, slow):
    assert {p for p, _ in fast} == {p for p, _ in slow}
    slow_scores = dict(slow)
    for path, score in fast:
        assert score == pytest.approx(slow_scores[path], rel=1e-9)
    # same order, up to ties (scores within float noise)
    assert [round(s, 9) for _, s in fast] == sorted((round(s, 9) for _, s in slow), reverse=True)


def test_plain_words_recognises_query_syntax():
    assert bm25.plain_words("kafka migration plan") == ["kafka", "migration", "plan"]
    assert bm25.plain_words("Caroline's über-cool e-mail, v1.2!") == ["Caroline's", "über-cool", "e-mail,", "v1.2!"]
    for syntax in ('"kafka migration"', "kafka AND migration", "kafka OR x", "NOT kafka", "tags:ops",
                   "kaf*", "kafk?", "kafka^2", "kafka~", "(kafka)", "[a TO b]", "'quoted words'", "a -b", "+kafka"):
        assert bm25.plain_words(syntax) is None, syntax


def test_words_that_analyse_to_several_tokens_go_to_whoosh(indexed):
    schema = indexed.index.ix.schema
    assert bm25.query_terms(schema, SEARCH_FIELDS, ["e-mail"], _stemmer()) is None
    terms, n_words = bm25.query_terms(schema, SEARCH_FIELDS, ["Kafka", "deploys", "the"], _stemmer())
    assert n_words == 3  # "the" only reaches the tags field (keywords keep stop words)
    assert ("content", "deploi", 2) in terms and ("tags", "deploys", 2) in terms and ("tags", "the", 4) in terms
    assert not any(f == "content" and t == "the" for f, t, _ in terms)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(queries=st.lists(st.lists(st.sampled_from(WORDS + STOP + ["e-mail", "Deploys", "東京タワー", "über", "v1.2!"]),
                                 min_size=1, max_size=4), min_size=1, max_size=6))
def test_query_terms_with_kept_tokens_equal_a_fresh_analysis(indexed, queries, monkeypatch):
    """The tokens a long-lived index keeps per (field, word) give the same plan as analysing
    afresh, including a word that goes to Whoosh and the cache starting over when full."""
    monkeypatch.setattr(bm25, "TOKENS_LIMIT", 7)
    schema, cache = indexed.index.ix.schema, {}
    for words in queries * 2:
        assert bm25.query_terms(schema, SEARCH_FIELDS, words, _stemmer(), cache) == \
            bm25.query_terms(schema, SEARCH_FIELDS, words, _stemmer())
        assert len(cache) <= 7


def test_fast_path_equals_whoosh_on_fixed_queries(indexed):
    for text in ("kafka", "kafka migration", "Caroline's adoption research", "deployed running dogs",
                 "what did she research", "Release freeze hotfix weekend", "zürich café", "ops"):
        fast, slow = both(indexed, text)
        assert fast, text
        assert_same(fast, slow)


def test_fast_path_equals_whoosh_with_filters(indexed):
    assert_same(*both(indexed, "kafka deploy", kinds=("memory", "note"), statuses=None))
    assert_same(*both(indexed, "kafka deploy", tags=("Kafka",)))
    fast, _ = both(indexed, "kafka deploy", kinds=("note",), statuses=None)
    assert [p for p, _ in fast] == ["Projects/Kafka Outage.md"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(WORDS + STOP + ["unknownword", "KAFKA", "Deploy."]), min_size=1, max_size=6))
def test_fast_path_equals_whoosh_on_any_plain_query(indexed, words):
    text = " ".join(words)
    if bm25.plain_words(text) is None:
        return
    assert_same(*both(indexed, text))


def test_the_lexicon_reads_idf_and_field_lengths_as_whoosh_s_searcher(indexed, monkeypatch):
    """bm25.Lexicon stands in for whoosh.searching.Searcher on the plain path: the same floats."""
    lexicon = lexicon_of(indexed.index)
    searcher = lexicon.searcher()
    assert lexicon.doc_count_all() == searcher.doc_count_all() > 60  # deleted documents count too
    for field in SEARCH_FIELDS:
        assert lexicon.avg_field_length(field) == searcher.avg_field_length(field)
        for word in ("kafka", "deploy", "caroline", "absent"):
            assert lexicon.idf(field, word) == searcher.idf(field, word)
    assert lexicon.avg_field_length("path") is None  # an ID field is not scorable
    # the idf cache is bounded (a read-only server's generation can last for days) and stays exact
    monkeypatch.setattr(bm25, "IDF_CACHE_LIMIT", 3)
    for word in ("outage", "budget", "dog", "absent2", "kafka"):  # none yet in the content field's cache
        assert lexicon.idf("content", word) == searcher.idf("content", word)
        assert 1 <= len(lexicon._idf) <= 3
    assert searcher_of(indexed.index) is searcher  # one Whoosh searcher per generation, built on demand


def test_document_paths_kept_across_searches_stay_bounded(indexed, monkeypatch):
    """A server's path cache (bm25.doc_paths) starts again past DOC_PATHS_LIMIT paths."""
    lexicon = lexicon_of(indexed.index)
    docs = sorted(set(range(lexicon.doc_count_all())) - bm25.dead_docs(lexicon))
    expected = [lexicon.searcher().stored_fields(d)["path"] for d in docs]
    monkeypatch.setattr(bm25, "DOC_PATHS_LIMIT", 40)
    cache: dict = {}
    assert bm25.doc_paths(lexicon, docs[:30], cache) == expected[:30]
    assert sum(map(len, cache.values())) == 30
    assert bm25.doc_paths(lexicon, docs[30:50], cache) == expected[30:50]  # 30 + 20 > 40: started again
    assert sum(map(len, cache.values())) == 20
    assert bm25.doc_paths(lexicon, docs[30:50], cache) == expected[30:50]  # served from the cache
    assert sum(map(len, cache.values())) == 20


def test_filter_postings_cached_per_segment_stay_true_across_commits_and_merges(tmp_path):
    store = MemoryStore(tmp_path / "v", clock=Clock())
    store.init()
    ids = [store.save(f"Kafka retention plan number {i} for the {w} cluster", dedupe=False)["memory_id"]
           for i, w in enumerate(("orders", "billing", "search", "audit"))]
    # a person's note: the kind filter keeps the memories by reading what it leaves out (fewer)
    (tmp_path / "v/Kafka plan.md").write_text("# Kafka retention plan (mine)\n")
    store.sync()

    def found(statuses=("active", "promoted")):
        hits, _ = store.index.search("kafka retention", kinds=("memory",), statuses=statuses, limit=10)
        return sorted(store.index.by_paths([p for p, _ in hits])[p].id for p, _ in hits)

    assert found() == sorted(ids)
    cache = store.index.text_search().segment_docs
    assert cache  # the filters' doc numbers were read and kept
    # Moving a note to the archive (as a person would) re-indexes it in a new segment and
    # deletes its old document: the old segment's cached doc numbers still list it, and the
    # deletion must win.
    path = tmp_path / "v" / store.resolve(ids[1]).path
    path.rename(tmp_path / "v/memory/archive" / path.name)
    store.sync()
    assert found() == sorted(ids[:1] + ids[2:])
    assert found(("archived",)) == [ids[1]]
    # A merge into one segment: entries of the merged-away segments are dropped.
    with store.index.ix.writer() as writer:
        writer.mergetype = __import__("whoosh.writing", fromlist=["OPTIMIZE"]).OPTIMIZE
    assert found() == sorted(ids[:1] + ids[2:])
    live = {r.segment().segment_id() for r, _ in searcher_of(store.index).reader().leaf_readers()}
    assert len(live) == 1 and {key[0] for key in cache} == live
    store.close()


def test_posting_lists_kept_by_a_long_lived_process_stay_true_across_edits_merges_and_eviction(tmp_path):
    """A server keeps decoded posting lists per segment (bm25.PostingsCache): after edits that
    take a word out of one memory and put it in another, a deletion, a merge into one segment
    and evictions, every search still equals a fresh read of the postings and Whoosh's own."""
    store = MemoryStore(tmp_path / "v", clock=Clock(), policy=Policy(long_lived=True))
    store.init()
    words = ["kafka", "retention", "billing", "audit", "orders", "search", "weekend", "deploy"]
    ids = [store.save(f"Plan {i}: {words[i % 8]} {words[(i * 3) % 8]} cluster", dedupe=False)["memory_id"]
           for i in range(24)]
    queries = ["kafka retention", "billing audit deploy", "orders weekend", "cluster", "zebra kafka"]

    def check():
        for text in queries:
            fast, slow = both(store, text)
            assert_same(fast, slow)
            text_search = store.index.text_search()
            text_search.postings, kept = None, text_search.postings  # the same search read afresh
            text_search.long_lived = False
            afresh, _ = store.index._search_once(text, kinds=("memory",), statuses=("active", "promoted"),
                                                 tags=(), limit=1000)
            text_search.postings = kept
            text_search.long_lived = True
            assert fast == afresh

    check()
    cache = store.index.text_search().postings
    assert cache is not None and cache.size > 0
    assert ("zebra" not in {key[3] for key in cache.entries if cache.entries[key]})  # absent: cached as ()
    # the person edits two memories: "kafka" leaves one and arrives in another (new segments,
    # old documents deleted while their segment's cached postings still list them)
    for mid, text in ((ids[0], "Plan 0: nothing to see"), (ids[5], "Plan 5: kafka kafka deploy")):
        path = tmp_path / "v" / store.resolve(mid).path
        path.write_text(path.read_text().replace(path.read_text().rsplit("\n", 2)[-2], text))
        store.sync()
        check()
    store.forget(ids[9])
    check()
    with store.index.ix.writer() as writer:  # one segment: the merged-away segments' entries go
        writer.mergetype = __import__("whoosh.writing", fromlist=["OPTIMIZE"]).OPTIMIZE
    check()
    live = {r.segment().segment_id() for r, _ in searcher_of(store.index).reader().leaf_readers()}
    assert {key[0] for key in cache.entries} == live
    # a small budget: the oldest lists go first and the size stays within it
    cache = store.index.text_search().postings = bm25.PostingsCache(16)
    check()
    assert cache.entries and cache.size == sum(len(v[0]) + 1 if v else 1 for v in cache.entries.values()) <= 16
    store.close()


def test_a_one_shot_process_keeps_no_posting_lists(tmp_path):
    store = MemoryStore(tmp_path / "v", clock=Clock())
    store.init()
    store.save("Kafka retention plan", dedupe=False)
    assert store.search("kafka")["count"] == 1
    assert store.index.text_search().postings is None
    store.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(["memory", "note"]), min_size=6, max_size=14),
       archived=st.lists(st.booleans(), min_size=14, max_size=14),
       statuses=st.sampled_from([("active",), ("active", "promoted"), ("archived",), None]))
def test_filters_held_as_what_they_leave_out_equal_the_plain_sets(tmp_path_factory, kinds, archived, statuses):
    """_allowed keeps a filter as 'all but' when that side is smaller: the same doc numbers."""
    root = tmp_path_factory.mktemp("v")
    store = MemoryStore(root, clock=Clock())
    store.init()
    for i, kind in enumerate(kinds):
        if kind == "memory":
            store.save(f"Kafka retention plan number {i}", dedupe=False)
            if archived[i]:
                rec = store.index.records("kind = 'memory' ORDER BY created DESC LIMIT 1")[0]
                store.move_memory(rec.path, "archived", {})
        else:
            (root / f"Note {i}.md").write_text(f"# Kafka note {i}\n")
    store.sync()
    searcher = searcher_of(store.index)
    allowed = store.index.text_search().allowed(searcher, ("memory",), statuses, ())
    plain = bm25.docs_with(searcher, "kind", ["memory"])
    if statuses:
        plain &= bm25.docs_with(searcher, "status", list(statuses))
    got = allowed.as_set() if isinstance(allowed, bm25.AllBut) else set(allowed)
    assert got == plain and bool(allowed) == bool(plain)
    assert all((d in allowed) == (d in plain) for d in range(searcher.doc_count_all() + 2))
    store.close()


@given(items=st.lists(st.tuples(st.floats(allow_nan=False, width=32), st.integers(0, 50)), max_size=400),
       n=st.integers(1, 60))
def test_the_best_n_are_sorted_s_first_n_on_either_side_of_the_switch(items, n):
    """`bm25.smallest` sorts up to 8n items and uses heapq.nsmallest beyond (items up to 400,
    n up to 60: both sides); either way it is sorted(items)[:n], ties and all."""
    assert bm25.smallest(list(items), n) == sorted(items)[:n]


@pytest.fixture(scope="module")
def long_lists(tmp_path_factory):
    """Two segments (one with deletions) whose common words have lists of several blocks
    (Whoosh's 128 postings each, compressed), words repeated within a note (weights other
    than 1.0) and words in one note only."""
    root = tmp_path_factory.mktemp("lists") / "vault"
    store = MemoryStore(root, clock=Clock())
    store.init()
    rng = random.Random(5)
    notes = [f"Plan {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))
             + f" deploy rare{i}" + " kafka" * (i % 4) for i in range(300)]
    with store.index.ix.writer() as writer:  # a first segment of 300 documents
        for i, text in enumerate(notes):
            writer.add_document(path=f"m/{i}.md", kind="memory", status="active", content=text,
                                title=f"Plan {i}", tags="ops,Release" if i % 3 else "")
    with store.index.ix.writer() as writer:  # a second one, which deletes a few of the first
        for i in range(0, 300, 25):
            writer.update_document(path=f"m/{i}.md", kind="memory", status="active", content=notes[i] + " edited",
                                   title=f"Plan {i}", tags="")
    yield store
    store.close()


def _live(listed, deleted):
    """(doc, weight) pairs of a list, without deleted notes' postings."""
    return [(d, w) for d, w in zip(*listed, strict=True) if d not in deleted] if listed else []


def test_postings_read_through_the_matcher_are_every_posting_of_the_segment(long_lists):
    """read_postings (the Matcher's id/weight/next) gives every term of every field of every
    segment the doc numbers and weights the segment's own posting iterator lists
    (`IndexReader.iter_postings`), deleted notes' postings left out on both sides (Whoosh's
    matcher may skip them: callers filter deleted notes either way); an absent term or field
    gives ()."""
    lexicon = lexicon_of(long_lists.index)
    leaves = lexicon.reader().leaf_readers()
    assert len(leaves) == 2 and any(r.has_deletions() for r, _ in leaves)
    longest, weights, checked = 0, set(), 0
    for reader, _offset in leaves:
        deleted = frozenset(range(reader.doc_count_all())) - frozenset(reader.all_doc_ids())
        expected: dict = {}
        for field, term, doc, weight, _value in reader.iter_postings():
            text = term.decode() if isinstance(term, bytes) else term
            expected.setdefault((field, text), []).append((doc, weight))
        for (field, text), postings in expected.items():
            found = bm25.read_postings(reader, field, text)
            assert _live(found, deleted) == [(d, w) for d, w in postings if d not in deleted], (field, text)
            longest = max(longest, len(postings))
            weights.update(w for _d, w in postings)
            checked += 1
        for field in SEARCH_FIELDS:
            assert bm25.read_postings(reader, field, "zzz-absent") == ()
    assert checked > 1000 and longest > 2 * 128  # lists of three blocks and more
    assert {2.0, 3.0} <= weights  # repeated words: weights stored per posting


def test_long_lists_rank_as_whoosh_s_parser_and_scorer(long_lists):
    for text in ("kafka", "deploy kafka", "rare7 plan", "release ops", "rare299"):
        fast, slow = both(long_lists, text)
        assert fast and len(fast) == len(slow)
        assert_same(fast, slow)


def _reference_scores(lexicon, terms, allowed, b, k1):
    """bm25.score as the formula reads, posting by posting: the floats its loop (a table of
    length terms, a filter held as what it leaves out) must give exactly."""
    acc, masks = {}, {}
    for field, text, bit in terms:
        for reader, offset in lexicon.reader().leaf_readers():
            listed = bm25.read_postings(reader, field, text)
            if not listed:
                continue
            idf, avgfl = lexicon.idf(field, text), lexicon.avg_field_length(field) or 1
            for d, tf in zip(*listed, strict=True):
                doc = d + offset
                if doc not in allowed:
                    continue
                length = reader.doc_field_length(d, field, 1)
                s = idf * ((tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * length / avgfl)))
                acc[doc] = acc[doc] + s if doc in acc else s
                masks[doc] = masks.get(doc, 0) | bit
    return acc, masks


@pytest.mark.parametrize("query", ["kafka", "deploy kafka", "rare7 plan", "release ops kafka", "zzzabsent"])
def test_scores_equal_the_formula_exactly(long_lists, query):
    """bm25.score's sums and word masks equal the BM25 formula's, posting by posting, to the
    last bit (tests above compare with Whoosh's scorer within 1e-9): with a filter held as
    what it leaves out (AllBut: some excluded, deleted notes' numbers among them), as a plain
    set, and empty."""
    index = long_lists.index
    lexicon = lexicon_of(index)
    plan = bm25.query_terms(lexicon.schema, SEARCH_FIELDS, bm25.plain_words(query), _stemmer())
    assert plan is not None
    terms, _n = plan
    total = lexicon.doc_count_all()
    dead = bm25.dead_docs(lexicon)
    assert dead
    for allowed in (bm25.AllBut(frozenset(dead) | set(range(0, total, 9)), total),
                    set(range(1, total, 2)) - dead, set()):
        got = bm25.score(lexicon, terms, allowed, BM25_B, BM25_K1, {}, None)
        assert got == _reference_scores(lexicon, terms, allowed, BM25_B, BM25_K1)
        if query != "zzzabsent" and allowed:
            assert got[0]
