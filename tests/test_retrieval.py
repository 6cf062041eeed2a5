"""Retrieval quality without the embeddings extra: analysis, ranking, fusion, the benchmark's parsing."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from conftest import invoke
from vaultmem import embeddings
from vaultmem.analysis import analyzer
from vaultmem.cli import cli
from vaultmem.config import load_settings
from vaultmem.errors import ConfigError, InvalidInput, MissingExtra
from vaultmem.index import natural_query, property_terms, title_terms
from vaultmem.store import MemoryStore, fuse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import retrieval as bench  # noqa: E402


def terms(text: str) -> list[str]:
    return [t.text for t in analyzer()(text)]


def test_analyzer_drops_possessives_stop_words_and_question_words():
    assert terms("What did Caroline's mom research?") == ["carolin", "mom", "research"]
    assert terms("James’ guitar") == ["jame", "guitar"]
    assert terms("How many 2023 races") == ["mani", "2023", "race"]


def test_a_question_mark_ending_a_word_is_punctuation_not_a_wildcard():
    assert natural_query("What did she research?") == "What did she research"
    assert natural_query("auth* te?t") == "auth* te?t"
    assert natural_query("is it ? really??") == "is it   really"


def test_questions_find_memories_by_their_last_word_and_possessives(store):
    mid = store.save("Caroline researched adoption agencies last week")["memory_id"]
    store.save("The weather was lovely at the beach")
    assert [r["id"] for r in store.search("What did Caroline's friend research?")["results"]] == [mid]
    assert [r["id"] for r in store.search("adopt*")["results"]] == [mid]


def test_custom_properties_are_searchable_but_ids_and_dates_are_not(store):
    mid = store.save("I finally finished the painting", meta={"speaker": "Melanie", "dia_id": "D3:7"})["memory_id"]
    rec = store.resolve(mid)
    assert "Melanie" in property_terms(rec).split() and "D3:7" not in property_terms(rec)
    assert [r["id"] for r in store.search("Melanie")["results"]] == [mid]
    assert store.search("D3")["count"] == 0


def test_generated_file_names_are_not_indexed_as_titles_but_chosen_names_are(store, vault_path):
    mid = store.save("Deploys happen on Tuesdays after the standup")["memory_id"]
    rec = store.resolve(mid)
    assert title_terms(rec) == ""
    old = vault_path / rec.path
    renamed = old.with_name(f"release-calendar-{mid[:8]}.md")
    old.rename(renamed)
    store.sync()
    assert title_terms(store.resolve(mid)) == f"release calendar {mid[:8]}"
    assert [r["id"] for r in store.search("calendar")["results"]] == [mid]


def test_a_strong_old_match_outranks_weak_recent_ones(store, clock):
    old = store.save("The staging database password rotates every quarter via vault")["memory_id"]
    clock.advance(days=120)
    for n in range(20):
        store.save(f"Quarter {n} notes about nothing in particular")
    assert store.search("staging database password rotation")["results"][0]["id"] == old


def test_fuse_rrf_normalises_to_the_best_sum():
    lexical = {"a": 1.0, "b": 0.5, "c": 0.2}
    semantic = {"b": 0.9, "d": 0.8, "a": 0.1}
    fused = fuse(lexical, semantic, "hybrid", "rrf", rrf_k=60)
    # b: 1/62 + 1/61 is the best sum; a: 1/61 + 1/63; d: 1/62; c: 1/63
    best = 1 / 62 + 1 / 61
    assert fused == pytest.approx({"b": 1.0, "a": (1 / 61 + 1 / 63) / best, "d": (1 / 62) / best,
                                   "c": (1 / 63) / best})


def test_fuse_score_and_semantic_scale_to_the_best_hit():
    lexical = {"a": 1.0, "b": 0.5}
    semantic = {"b": 0.8, "c": 0.4}
    # a: 0.5 * 1.0; b: 0.5 * 0.5 + 0.5 * 0.8 / 0.8 = 0.75 (best); c: 0.5 * 0.4 / 0.8
    assert fuse(lexical, semantic, "hybrid", "score") == pytest.approx(
        {"a": 0.5 / 0.75, "b": 1.0, "c": 0.25 / 0.75})
    assert fuse({}, semantic, "semantic") == pytest.approx({"b": 1.0, "c": 0.5})
    assert fuse({}, {"x": -0.2}, "semantic") == {"x": 0.0}


def test_search_reports_its_mode_and_defaults_to_lexical_without_vectors(store):
    store.save("Use JWT tokens for authentication")
    assert store.search("authentication")["mode"] == "lexical"
    assert store.search("")["mode"] == "lexical"
    with pytest.raises(InvalidInput, match="^mode must be one of lexical, semantic, hybrid, got 'fuzzy'$"):
        store.search("x", mode="fuzzy")


def test_semantic_search_without_the_extra_says_what_to_install(store, monkeypatch, runner, vault_path):
    monkeypatch.setattr(embeddings, "installed", lambda: False)
    message = 'semantic search needs the embeddings extra; install it with pip install "vaultmem[embeddings]"'
    for mode in ("semantic", "hybrid"):
        with pytest.raises(MissingExtra) as info:
            store.search("anything", mode=mode)
        assert str(info.value) == message
    for args in (["search", "anything", "--semantic"], ["backfill-embeddings", "--dry-run"]):
        out = runner.invoke(cli, args)
        assert (out.exit_code, out.output) == (1, f"Error: {message}\n")
    assert invoke(runner, "search", "anything").output == "No memories found.\n"


def test_embeddings_off_refuses_semantic_search_even_when_installed(store, monkeypatch):
    monkeypatch.setattr(embeddings, "installed", lambda: True)
    assert store.settings.embeddings == "off"
    with pytest.raises(InvalidInput, match=r"^semantic search is switched off \(embeddings: off\); "):
        store.search("anything", mode="semantic")
    assert store.save("no vectors when off")["has_embedding"] is False


def test_embedding_settings_are_validated(tmp_path):
    with pytest.raises(ConfigError, match="^embeddings must be auto, on or off, got 'maybe'$"):
        load_settings(tmp_path, environ={"VAULTMEM_EMBEDDINGS": "maybe"})
    with pytest.raises(ConfigError, match="^hybrid_fusion must be rrf or score, got 'max'$"):
        load_settings(tmp_path, environ={"VAULTMEM_HYBRID_FUSION": "max"})


def test_backfill_rejects_an_unknown_model_and_a_bad_limit(store):
    with pytest.raises(InvalidInput, match="^model 'all-mpnet-base-v2' is not available offline; "
                                           "vaultmem bundles all-MiniLM-L6-v2$"):
        store.backfill_embeddings(model="all-mpnet-base-v2")
    with pytest.raises(InvalidInput, match="^limit must be between 1 and 10,000, got 0$"):
        store.backfill_embeddings(limit=0)


# -- the benchmark's data handling --------------------------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [
    (["D1:3"], ["D1:3"]),
    (["D8:6; D9:17"], ["D8:6", "D9:17"]),
    (["D:11:26"], ["D11:26"]),
    (["D30:05", "D30:5"], ["D30:5"]),
    (["nonsense", ""], []),
])
def test_bench_normalises_messy_evidence_ids(raw, expected):
    assert bench.normalise_evidence(raw) == expected


def test_bench_reads_locomo_session_dates():
    assert bench.parse_session_date("1:56 pm on 8 May, 2023") == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.timezone.utc)
    with pytest.raises(ValueError, match="unrecognised session date 'soon'"):
        bench.parse_session_date("soon")


def test_bench_runs_on_a_tiny_locomo_file(tmp_path, capsys):
    sample = {
        "sample_id": "t-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "9:00 am on 1 March, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Rex."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started pottery classes."},
            ],
            "session_2_date_time": "9:00 am on 5 March, 2023",
            "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "Look at this.", "blip_caption": "a dog on a beach"},
            ],
        },
        "qa": [
            {"question": "What is the name of Ann's puppy?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
            {"question": "What class did Bo start?", "answer": "pottery", "evidence": ["D1:2; D:1:2"], "category": 1},
            {"question": "Where was the dog?", "answer": "beach", "evidence": ["D2:01"], "category": 4},
        ],
    }
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([sample]))
    assert bench.main(["--data", str(data), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"lexical decay=on", "lexical decay=off"}
    assert out["lexical decay=on"]["recall"]["all"] == {"n": 3, "R@1": 100.0, "R@5": 100.0, "R@10": 100.0,
                                                        "R@25": 100.0, "R@50": 100.0}
    assert out["lexical decay=on"]["recall"]["4 single-hop"]["n"] == 2
