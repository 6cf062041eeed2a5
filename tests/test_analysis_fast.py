"""`analysis.Text` indexes ASCII text in one pass: the postings (term bytes, frequency, weight,
encoded positions, in the same order) must be exactly those of Whoosh's TEXT field running
the search analyzer's chain, for any text; other text and other analyzers take the chain."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.analysis import StandardAnalyzer
from whoosh.fields import TEXT

from vaultmem.storage.fulltext import analysis
from vaultmem.storage.fulltext.analysis import Text

ANALYZER = analysis.analyzer()
WORDS = ["the", "The", "what", "deploys", "Caroline's", "James'", "l'equipe", "qu'il", "d'x", "it's",
         "don't", "s's", "x_y", "CAFE", "2026", "a1b2", "running", "ran", "'", "''", "-", "_", "co-op",
         "iPhone", "meeting", "budgets", "o'clock", "rock'n'roll"]


def both(value: str, boost: float = 1.0) -> tuple[list[object], list[object]]:
    fast = Text(analyzer=ANALYZER, field_boost=boost)
    chain = TEXT(analyzer=ANALYZER, field_boost=boost)
    return list(fast.index(value)), list(chain.index(value))


UNICODE_WORDS = ["Café", "CAFÉ", "café", "Straße", "naïve", "Ñandú", "l’équipe", "Zürich’s", "ｔｏｋｙｏ",
                 "ﬁnance", "Ⅻ", "Ａｌｉｃｅ", "İstanbul", "Ελλάδα", "Москва", "ﾃｽﾄ", "咖啡店", "한국어", "½",
                 "e\u0301cole", "ǅemal", "ß", "Å", "\u00a0", "\u2019s"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WORDS), st.text(string.printable, max_size=12)), max_size=60),
       st.sampled_from([" ", "\n", ", ", "\t", "  ", "'", "-"]),
       st.sampled_from([1.0, 1.3, 1.5, 0.5]))
def test_one_pass_gives_the_chains_postings_for_any_ascii_text(words, sep, boost):
    value = sep.join(words)
    fast, chain = both(value, boost)
    assert fast == chain


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WORDS + UNICODE_WORDS), st.text(max_size=10)), max_size=40),
       st.sampled_from([" ", "\n", "、", "\u3000", "’", "-"]))
def test_one_pass_gives_the_chains_postings_for_any_text(words, sep):
    value = sep.join(words)
    fast, chain = both(value, 1.3)
    assert fast == chain


def test_a_note_gives_the_chains_postings_term_for_term(monkeypatch):
    value = ("What did Caroline's team decide? The deploys go out on Tuesdays; the budget meeting "
             "moved to 3pm. L'equipe met again: deploys, DEPLOYS and deploy.")
    chain = list(TEXT(analyzer=ANALYZER, field_boost=1.5).index(value))
    monkeypatch.setattr(TEXT, "index", lambda *a, **k: pytest.fail("ASCII text went through the chain"))
    fast = list(Text(analyzer=ANALYZER, field_boost=1.5).index(value))
    assert fast == chain
    terms = [term for term, *_ in fast]
    assert terms[:4] == [b"carolin", b"team", b"decid", b"deploi"]  # stop words out, stems in
    assert [freq for term, freq, *_ in fast if term == b"deploi"] == [4]


def test_accented_text_takes_the_one_pass_too(monkeypatch):
    value = "Caroline’s équipe à Zürich: naïve ｔｏｋｙｏ cafés, l’été, Straße"
    chain = list(TEXT(analyzer=ANALYZER).index(value))
    monkeypatch.setattr(TEXT, "index", lambda *a, **k: pytest.fail("accented text went through the chain"))
    fast = list(Text(analyzer=ANALYZER).index(value))
    assert fast == chain
    assert [term for term, *_ in fast] == [b"carolin", b"equip", b"zurich", b"naiv", b"tokyo", b"cafe",
                                           b"et", b"strass"]


@pytest.mark.parametrize("value", ["咖啡店 meeting", "東京 in spring", "한국어 notes", "ﾃｽﾄ half-width kana"])
def test_text_with_cjk_goes_through_the_chain(value, monkeypatch):
    calls = []
    real = TEXT.index

    def spy(self, value, **kwargs):
        calls.append(value)
        return real(self, value, **kwargs)

    monkeypatch.setattr(TEXT, "index", spy)
    fast = list(Text(analyzer=ANALYZER).index(value))
    assert calls == [value]
    monkeypatch.setattr(TEXT, "index", real)
    assert fast == list(TEXT(analyzer=ANALYZER).index(value))


def test_another_analyzer_goes_through_the_chain():
    other = StandardAnalyzer()
    value = "The deploys go out on Tuesdays"
    assert list(Text(analyzer=other).index(value)) == list(TEXT(analyzer=other).index(value))
    assert analysis._search_chain_end(other) is None
    assert analysis._search_chain_end(ANALYZER) is ANALYZER.items[2]


def test_an_analyzer_is_forgotten_with_its_object():
    import gc

    before = len(analysis._CHAIN_ENDS)
    chain = analysis.analyzer()  # as every read of the index's TOC unpickles a new one
    end = chain.items[2]
    assert analysis._search_chain_end(chain) is end
    assert analysis._search_chain_end(chain) is end  # the second time from the cache
    assert len(analysis._CHAIN_ENDS) == before + 1
    del chain, end
    gc.collect()
    assert len(analysis._CHAIN_ENDS) == before


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=30), st.sampled_from(["", " ", "memory", "memory/stm/a b.md", "ünï"])),
       st.sampled_from([1.0, 1.5]))
def test_a_key_gives_whoosh_s_id_postings(value, boost):
    """`analysis.Key` (path, id, kind, status) skips the tokenizer, not a posting: the same
    term bytes, frequency, weight and value as Whoosh's ID field, for any string."""
    from whoosh.fields import ID

    assert list(analysis.Key(field_boost=boost).index(value)) == list(ID(field_boost=boost).index(value))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WORDS + UNICODE_WORDS), st.text(max_size=10)), max_size=40))
def test_text_analysed_in_a_worker_gives_the_same_postings(words):
    """A rebuild's worker analyses a note's text (`analyzed`), its documents pickled to the
    process that writes: `Text.index` hands back exactly what it would have made of the text."""
    import pickle

    from vaultmem.storage.fulltext import engine

    schema = engine.schema()
    value = " ".join(words)
    document = {"path": "memory/stm/x.md", "content": value, "entities": value}
    shipped = pickle.loads(pickle.dumps(engine.analyzed(schema, document), protocol=pickle.HIGHEST_PROTOCOL))
    assert shipped["path"] == "memory/stm/x.md"
    for field in ("content", "entities"):
        assert type(shipped[field]) is analysis.Analyzed
        assert list(schema[field].index(shipped[field])) == list(schema[field].index(value))
