"""Retrieval quality without the embeddings extra: analysis, ranking, fusion, the benchmark's parsing."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pytest
from conftest import invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.base.config import load_settings
from vaultmem.base.errors import ConfigError, InvalidInput, MissingExtra
from vaultmem.cli import cli
from vaultmem.core import scoring
from vaultmem.core.scoring import fuse, semantic_relevance
from vaultmem.storage import embeddings
from vaultmem.storage.fulltext.analysis import analyzer
from vaultmem.storage.index import natural_query, property_terms, title_terms

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


def test_classifier_labels_and_wikilink_properties_are_not_searchable_words(store):
    # enrichment writes urgency/domain labels on every save: "reference" must not match them all
    mid = store.save("Renew the TLS certificate for the API gateway")["memory_id"]
    rec = store.resolve(mid)
    assert rec.props["urgency"] == "reference" and rec.props["domain"] == "technical"
    assert property_terms(rec) == ""
    assert store.search("reference")["count"] == 0 and store.search("technical")["count"] == 0
    linked = store.save("Gateway runbook lives in the ops wiki",
                        meta={"related": ["[[renew-the-tls-certificate-for-1a2b3c4d]]"], "project": "Atlas"})
    assert property_terms(store.resolve(linked["memory_id"])) == "Atlas"
    assert [r["id"] for r in store.search("certificate")["results"]] == [mid]


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


def test_semantic_relevance_runs_from_the_median_cosine_to_the_best():
    # sorted 0.1 0.3 0.5 0.6 0.9: median 0.5, best 0.9, span 0.4
    semantic = {"b": 0.9, "c": 0.6, "f": 0.5, "d": 0.3, "e": 0.1}
    assert semantic_relevance(semantic) == pytest.approx({"b": 1.0, "c": 0.25, "f": 0.0, "d": 0.0, "e": 0.0})
    # an even count: the median is the mean of the middle two, (0.4 + 0.6) / 2
    assert semantic_relevance({"p": 0.2, "q": 0.4, "r": 0.6, "s": 1.0}) == pytest.approx(
        {"p": 0.0, "q": 0.0, "r": 0.2, "s": 1.0})
    # nothing stands out (one memory, or all alike): every one is as relevant as the best
    assert semantic_relevance({"x": -0.2}) == {"x": 1.0}
    assert semantic_relevance({"x": 0.3, "y": 0.3}) == {"x": 1.0, "y": 1.0}
    assert semantic_relevance({}) == {}


def test_fuse_score_adds_half_of_each_and_scales_to_the_best_hit():
    lexical = {"a": 1.0, "b": 0.5}
    semantic = {"b": 0.9, "c": 0.6, "f": 0.5, "d": 0.3, "e": 0.1}
    # a: 0.5 * 1.0 + 0 = 0.5; b: 0.5 * 0.5 + 0.5 * 1.0 = 0.75 (best); c: 0.5 * 0.25
    assert fuse(lexical, semantic, "hybrid", "score") == pytest.approx(
        {"a": 0.5 / 0.75, "b": 1.0, "c": 0.125 / 0.75, "f": 0.0, "d": 0.0, "e": 0.0})
    # depth keeps the top 2 by cosine (and by BM25F), but the median is still over all five
    assert fuse(lexical, semantic, "hybrid", "score", depth=2) == pytest.approx(
        {"a": 0.5 / 0.75, "b": 1.0, "c": 0.125 / 0.75})
    assert fuse({}, semantic, "semantic") == pytest.approx({"b": 1.0, "c": 0.25, "f": 0.0, "d": 0.0, "e": 0.0})
    assert fuse({}, semantic, "semantic", depth=2) == pytest.approx({"b": 1.0, "c": 0.25})


def test_semantic_ranking_blends_decay_and_keeps_cosine_order_below_the_median(store, clock, monkeypatch):
    """Without the model: similarities are given, the rest is the real ranking path."""
    ids = {}
    for text in ("alpha", "beta", "gamma", "delta", "epsilon"):
        ids[text] = store.resolve(store.save(text)["memory_id"]).path
    cosines = {ids["alpha"]: 0.9, ids["beta"]: 0.7, ids["gamma"]: 0.5, ids["delta"]: 0.2, ids["epsilon"]: 0.4}
    monkeypatch.setattr(embeddings, "stale", lambda records, vectors, force=False: [])
    monkeypatch.setattr(embeddings, "similarities", lambda text, records, vectors: dict(cosines))
    store.settings.decay_weight = 0.0
    ranked, sims = store._rank_semantic("q", "semantic", ("active",), (), None, None, 5, store.now())
    # median 0.5, span 0.4: alpha 1.0, beta 0.5; gamma, epsilon, delta 0 and then by cosine
    assert [(r[0].path, round(r[2], 6)) for r in ranked] == [
        (ids["alpha"], 1.0), (ids["beta"], 0.5), (ids["gamma"], 0.0), (ids["epsilon"], 0.0), (ids["delta"], 0.0)]
    assert sims == cosines


def test_search_reports_its_mode_and_defaults_to_lexical_without_vectors(store):
    store.save("Use JWT tokens for authentication")
    assert store.search("authentication")["mode"] == "lexical"
    assert store.search("")["mode"] == "lexical"
    with pytest.raises(InvalidInput, match="^mode must be one of lexical, semantic, hybrid, got 'fuzzy'$"):
        store.search("x", mode="fuzzy")


def test_semantic_search_without_the_extra_says_what_to_install(store, monkeypatch, runner, vault_path):
    monkeypatch.setattr(embeddings, "engine_installed", lambda: False)
    message = ('semantic search needs the embeddings extra; install it with pip install "vaultmem[embeddings]", '
               "then run: vaultmem models install")
    for mode in ("semantic", "hybrid"):
        with pytest.raises(MissingExtra) as info:
            store.search("anything", mode=mode)
        assert str(info.value) == message
    for args in (["search", "anything", "--semantic"], ["backfill-embeddings", "--dry-run"]):
        out = runner.invoke(cli, args)
        assert (out.exit_code, out.output) == (1, f"Error: {message}\n")
    assert invoke(runner, "search", "anything").output == "No memories found.\n"


def test_semantic_search_on_a_machine_without_an_onnxruntime_wheel_says_so(store, monkeypatch):
    monkeypatch.setattr(embeddings, "engine_installed", lambda: False)
    monkeypatch.setattr(embeddings, "engine_supported", lambda: False)
    monkeypatch.setattr(embeddings.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(embeddings.sys, "platform", "freebsd14")
    monkeypatch.setattr(embeddings.platform, "machine", lambda: "riscv64")
    with pytest.raises(MissingExtra, match="^semantic search needs onnxruntime, which has no wheel for freebsd14 "
                                           "riscv64; lexical search works without it$"):
        store.search("anything", mode="semantic")
    store.save("lexical search works")
    assert store.search("lexical")["count"] == 1


def test_semantic_search_without_the_model_names_the_install_command(store, monkeypatch, runner, tmp_path):
    monkeypatch.setattr(embeddings, "engine_installed", lambda: True)
    monkeypatch.setenv("VAULTMEM_MODELS_DIR", str(tmp_path / "models"))
    message = (f"the embedding model bge-small-en-v1.5-int8 is not installed in {tmp_path / 'models'}"
               "/bge-small-en-v1.5-int8; install it once with: vaultmem models install")
    with pytest.raises(MissingExtra) as info:
        store.search("anything", mode="hybrid")
    assert str(info.value) == message
    out = runner.invoke(cli, ["search", "anything", "--semantic"])
    assert (out.exit_code, out.output) == (1, f"Error: {message}\n")
    assert not (tmp_path / "models").exists()  # nothing is fetched at search time


def test_embeddings_off_refuses_semantic_search_even_when_installed(store, monkeypatch):
    monkeypatch.setattr(embeddings, "installed", lambda: True)
    monkeypatch.setattr(embeddings, "require", lambda: None)
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
    with pytest.raises(InvalidInput, match="^model 'all-mpnet-base-v2' is not available; "
                                           "vaultmem embeds with bge-small-en-v1.5-int8$"):
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


def test_embedded_text_quotes_the_content_after_the_speaker_and_skips_classifier_labels(store):
    """What the model sees (no model needed): wordy properties, then the content in quotes;
    the enrichment's urgency/domain labels are not context."""
    rec = store.resolve(store.save("I adopted a puppy", meta={"speaker": "Ann", "urgency": "reference",
                                                              "domain": "general", "dia_id": "D1:3"})["memory_id"])
    assert embeddings.embed_text(rec) == 'Ann: "I adopted a puppy"'
    plain = store.resolve(store.save("Renew the TLS certificate")["memory_id"])
    assert embeddings.embed_text(plain) == "Renew the TLS certificate"


def test_bench_turns_are_a_minute_apart_and_now_is_the_last_sessions_end(tmp_path):
    sample = {"sample_id": "t-2", "qa": [], "conversation": {
        "session_1_date_time": "9:00 am on 1 March, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": f"D1:{n}", "text": f"turn {n}"} for n in (1, 2, 3)],
    }}
    store, path_to_dia, now = bench.build_vault(tmp_path / "v", sample, True)
    created = {path_to_dia[r.path]: r.created_dt for r in store.index.records("kind = 'memory'")}
    start = dt.datetime(2023, 3, 1, 9, 0, tzinfo=dt.timezone.utc)
    assert created == {f"D1:{n}": start + dt.timedelta(minutes=n - 1) for n in (1, 2, 3)}
    assert now == start + dt.timedelta(minutes=3)
    store.close()


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=3), st.floats(-1, 1, allow_nan=False), max_size=400), st.integers(1, 60))
def test_top_by_value_is_the_sorted_prefix(scores, depth):
    """Cut at the depth-th value with numpy (> 4 x depth scores), then sorted: the same list."""
    assert scoring.top_by_value(scores, depth) == sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32), st.integers(1001, 1400), st.lists(st.floats(-1, 1, allow_nan=False), max_size=5))
def test_semantic_scale_takes_the_same_median_with_numpy(seed, n, extremes):
    import random
    import statistics

    rng = random.Random(seed)
    values = [round(rng.uniform(-1, 1), rng.choice((2, 6))) for _ in range(n - len(extremes))] + extremes

    semantic = {f"p{n}": v for n, v in enumerate(values)}
    median, best = statistics.median(values), max(values)
    scale = scoring.semantic_scale(semantic)
    for v in values[:50]:
        assert scale(v) == (1.0 if best - median <= 0 else max(0.0, (v - median) / (best - median)))
