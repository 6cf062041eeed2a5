"""A vault written in German, French, Spanish, Chinese or Japanese is searched in its language.

fixtures/multilingual.yaml holds a few memories per language and questions whose words meet
their memory only inflected, without accents, or inside an unspaced sentence. The memories
are saved and searched through the CLI and through the MCP server, as a person and an
assistant would; the analyzer's steps are checked on their own first.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import invoke
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vaultmem.storage.fulltext.analysis import analyzer, fold

FIXTURE = yaml.safe_load((Path(__file__).resolve().parent.parent / "fixtures" / "multilingual.yaml")
                         .read_text(encoding="utf-8"))
CASES = [(lang, query, data["memories"][n]) for lang, data in FIXTURE.items() for query, n in data["queries"]]


def terms(text: str) -> list[str]:
    return [t.text for t in analyzer()(text)]


def test_chinese_and_japanese_become_bigrams_and_characters():
    assert terms("我喜欢咖啡") == ["我喜", "我", "喜欢", "喜", "欢咖", "欢", "咖啡", "咖", "啡"]
    assert terms("東京の天気") == ["東京", "東", "京の", "京", "の天", "の", "天気", "天", "気"]
    assert terms("iPhone手机") == ["iphon", "手机", "手", "机"]  # letters keep the English analysis


def test_latin_scripts_fold_case_and_accents_and_drop_french_elisions():
    assert terms("Straße Café Ñandú") == ["strass", "cafe", "nandu"]
    assert terms("J'ai réservé pour l'équipe d'Anne") == ["ai", "reserv", "pour", "equip", "ann"]
    assert terms("Ｔｏｋｙｏ") == ["tokyo"]  # full-width letters (NFKC)
    assert terms("cafe\u0301") == ["cafe"]  # a decomposed accent, as macOS writes names
    # English stays as it was: possessives, stop words, the Porter stemmer
    assert terms("What did Caroline's friends research about adoption?") == ["carolin", "friend", "research", "adopt"]
    assert terms("O'Brien at 5 o'clock") == ["o'brien", "5", "o'clock"]


def test_kana_keep_their_voicing_marks():
    assert fold("が") == "が" and fold("ガ") == "ガ"
    assert terms("かが") == ["かが", "か", "が"]


@given(st.text(st.sampled_from(list("咖啡店東京の天気がかカタナー手机壳我喜欢éüñßçœÆ ")), max_size=40))
@example("éÆéé")  # folds to a Latin word Porter stems twice over: eææe... -> eæe -> eæ
def test_every_term_analyses_back_to_itself(text):
    """The index maps a matched term to its content form by analysing it again (fulltext.search.stemmer):
    so must every bigram and character. A folded Latin word goes through the Porter stemmer,
    which is not idempotent (it makes `ase` into `as`, and `eæe` into `eæ`), so for those only
    one term comes back, never none or two."""
    for term in set(terms(text)):
        again = terms(term)
        if re.search(r"[a-zæœøð]", term):  # a Latin word: stemmed, not always a fixed point
            assert len(again) == 1, (term, again)
        else:
            assert again and again[0] == term


def _top(results: list[dict]) -> str | None:
    return results[0]["content"] if results else None


def test_each_language_is_found_by_a_question_in_it_through_the_cli(runner):
    for data in FIXTURE.values():
        for text in data["memories"]:
            invoke(runner, "save", text)
    for lang, query, expected in CASES:
        found = json.loads(invoke(runner, "search", query, "--json").output)["results"]
        assert _top(found) == expected, (lang, query)


@pytest.mark.parametrize("lang", list(FIXTURE))
def test_each_language_through_the_mcp_server(store, lang):
    from test_mcp_server import call, ok

    from vaultmem.mcp.server import build_server

    server = build_server(store)
    try:
        for text in FIXTURE[lang]["memories"]:
            ok(call(server, "save_memory", {"content": text}))
        for query, n in FIXTURE[lang]["queries"]:
            found = ok(call(server, "search_memory", {"query": query, "preview_length": 0}))["results"]
            assert _top(found) == FIXTURE[lang]["memories"][n], query
    finally:
        server.bridge.close()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12))
def test_the_fast_cjk_check_agrees_with_the_character_ranges(text):
    from vaultmem.storage.fulltext.analysis import has_cjk, is_cjk

    assert has_cjk(text) == any(is_cjk(ch) for ch in text)
