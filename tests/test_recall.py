"""Multi-signal recall: intents, the weight table, every signal formula, re-ranking, end to end."""

from __future__ import annotations

import datetime as dt
import json
import math

import pytest
from conftest import NOW, invoke

from vaultmem.features.mnemosyne import recall as R


@pytest.mark.parametrize("query,intent", [
    ("how do I restart the auth service", "procedural"),
    ("deployment steps for production", "procedural"),
    ("why did the deploy fail", "diagnostic"),
    ("redis timeout errors", "diagnostic"),
    ("when did we deploy", "temporal"),
    ("what changed recently", "temporal"),
    ("postgres vs mysql", "comparative"),
    ("compare the two caches", "comparative"),
    ("who reports to Alice", "relational"),
    ("what depends on redis", "relational"),
    ("which editor does the user prefer", "preference"),
    ("favorite color", "preference"),
    ("tell me about the payments project", "exploratory"),
    ("what is the redis port", "factual"),
    ("where is the staging server", "factual"),
    ("redis", "general"),
])
def test_intent_detection(query, intent):
    assert R.detect_intent(query) == intent


def test_every_intent_has_a_weight_row_that_sums_to_one():
    assert set(R.WEIGHTS) == {"general", "factual", "temporal", "procedural", "preference", "exploratory",
                              "diagnostic", "comparative", "relational"}
    for intent, row in R.WEIGHTS.items():
        assert len(row) == len(R.SIGNALS) and math.isclose(sum(row), 1.0), intent
    assert R.weights_for("general") == {"similarity": 0.4, "recency": 0.2, "importance": 0.2, "frequency": 0.1,
                                        "type_relevance": 0.1}  # the seed's base weights
    assert R.weights_for("factual")["similarity"] == 0.5
    assert R.weights_for("temporal")["recency"] == 0.35
    assert math.isclose(R.weights_for("procedural")["frequency"], R.WEIGHTS["general"][3] + 0.2)
    assert math.isclose(R.weights_for("preference")["type_relevance"], R.WEIGHTS["general"][4] + 0.2)
    assert set(R.weights_for("exploratory").values()) == {0.2}


def test_signal_formulas():
    assert R.similarity(5.0, 10.0, 1.0) == 0.5
    assert R.similarity(10.0, 10.0, 0.5) == 0.5  # best hit matching half the words
    assert R.similarity(1.0, 0.0, 1.0) == 0.0
    assert R.recency(NOW, NOW) == 1.0
    assert R.recency(NOW - dt.timedelta(days=7), NOW) == 0.5
    assert R.recency(NOW - dt.timedelta(days=14), NOW) == 0.25
    assert R.frequency(0) == 0.0
    assert math.isclose(R.frequency(20), 1.0) and R.frequency(500) == 1.0
    assert math.isclose(R.frequency(4), math.log(5) / math.log(21))
    assert R.importance_of({}) == 0.5
    assert R.importance_of({"importance": 0.8, "priority_score": 0.2}) == 0.8
    assert R.importance_of({"priority_score": 1.7}) == 1.0
    assert R.confidence_of({}) == R.DEFAULT_CONFIDENCE == 0.73
    assert R.type_relevance("procedural", "procedural") == 1.0
    assert R.type_relevance("procedural", "preference") == 0.3
    assert R.type_relevance("exploratory", "semantic") == 0.5
    assert R.type_relevance("factual", None) == 0.5


def test_composite_and_fading_penalty():
    signals = {"similarity": 1.0, "recency": 0.5, "importance": 0.4, "frequency": 0.0, "type_relevance": 1.0}
    assert math.isclose(R.composite(signals, "general"), 0.4 + 0.1 + 0.08 + 0.0 + 0.1)
    assert math.isclose(R.composite(signals, "temporal"), 0.3 + 0.175 + 0.06 + 0.1)
    assert math.isclose(R.composite(signals, "general", fading=True), 0.68 * 0.7)


@pytest.mark.parametrize("quality,agents,source,score,tag", [
    (0.9, 1, "manual", 0.73, "Grounded"),    # a direct single-agent store
    (0.9, 1, None, 0.69, "Grounded"),        # unknown source: trust 0.7
    (0.9, 3, "manual", 0.93, "Mesh Fact"),   # three agents agree
    (0.6, 1, "auto-capture", 0.5, "Inferred"),
    (0.2, 0, "auto-capture", 0.2, "Uncertain"),
    (1.0, 5, "block", 1.0, "Mesh Fact"),
])
def test_confidence_formula_and_tags(quality, agents, source, score, tag):
    value = R.confidence_score(quality, agents, source)
    assert math.isclose(value, score, abs_tol=1e-4) and R.confidence_tag(value) == tag


def test_tag_boundaries():
    assert [R.confidence_tag(x) for x in (0.85, 0.8499, 0.65, 0.6499, 0.40, 0.3999)] == [
        "Mesh Fact", "Grounded", "Grounded", "Inferred", "Inferred", "Uncertain"]


def test_decay_status_follows_actr_activation(store, clock):
    from vaultmem.core import decay, scoring

    saved = store.save("The staging host is stage-02")
    proc = store.save("To rotate keys: run vault rotate", memory_type="procedural")
    rec, prec = store.resolve(saved["memory_id"]), store.resolve(proc["memory_id"])
    seen = {}
    for days in (0, 1, 7, 30, 90, 365, 3650):
        now = clock.current + dt.timedelta(days=days)
        act = scoring.record_activation(rec, now, store.settings)
        seen[days] = R.decay_status(rec, now, store.settings)
        expected = decay.activation_status(act, store.settings)
        assert seen[days] == ("fading" if expected == "archived" else expected)
        assert R.decay_status(prec, now, store.settings) == "active"  # procedural never decays
    assert seen == {0: "active", 1: "active", 7: "fading", 30: "fading", 90: "fading", 365: "fading",
                    3650: "fading"}
    store.vault.move(rec.path, "memory/archive")
    store.sync()
    assert R.decay_status(store.resolve(saved["memory_id"]), clock.current, store.settings) == "archived"


# -- diversity ---------------------------------------------------------------------------------


def item(text, score, mtype="semantic"):
    return {"text": text, "score": score, "memoryType": mtype}


def fixed(table):
    return lambda a, b: table.get(frozenset((a, b)), 0.0)


def test_cluster_penalty_for_near_copies():
    ranked = R.diversify([item("a", 1.0), item("a2", 0.95), item("b", 0.7)], fixed({frozenset(("a", "a2")): 0.95}))
    assert [(r["text"], round(r["score"], 4), r["penalties"]) for r in ranked] == [
        ("a", 1.0, []), ("b", 0.7, []), ("a2", 0.57, ["cluster"])]


def test_overlap_penalty_between_0_8_and_0_9():
    ranked = R.diversify([item("a", 1.0), item("a2", 0.9), item("b", 0.7)], fixed({frozenset(("a", "a2")): 0.85}))
    assert [(r["text"], round(r["score"], 4), r["penalties"]) for r in ranked] == [
        ("a", 1.0, []), ("a2", 0.765, ["overlap"]), ("b", 0.7, [])]


def test_exactly_0_8_and_0_9_are_not_penalised_at_that_tier():
    ranked = R.diversify([item("a", 1.0), item("x", 0.9), item("y", 0.8)],
                         fixed({frozenset(("a", "x")): 0.8, frozenset(("a", "y")): 0.9}))
    assert [r["penalties"] for r in ranked] == [[], [], ["overlap"]]


def test_type_diversity_after_three_of_a_type():
    items = [item(f"e{i}", 1.0 - i * 0.01, "episodic") for i in range(5)] + [item("s", 0.955)]
    ranked = R.diversify(items, fixed({}))
    assert [r["text"] for r in ranked] == ["e0", "e1", "e2", "s", "e3", "e4"]
    assert [round(r["score"], 4) for r in ranked] == [1.0, 0.99, 0.98, 0.955, round(0.97 * 0.95, 4),
                                                      round(0.96 * 0.90, 4)]
    assert ranked[4]["penalties"] == ["type"]


# -- end to end ----------------------------------------------------------------------------------


def test_recall_keys_access_and_private_memories(store, vault_path):
    a = store.save("Redis default port is 6379", memory_type="semantic", agent="ops")
    p = store.save("Redis password rotation is my private note", agent="ops", meta={"private": True})
    store.agent = "dev"  # another agent's server: ops' private note is not there
    result = store.recall("what is the redis port", min_score=0)
    assert result["intent"] == "factual" and result["weights"] == R.weights_for("factual")
    first = result["results"][0]
    assert set(first) >= {"id", "text", "score", "confidenceTag", "confidenceScore", "memoryType", "entities",
                          "linkedMemories", "decayStatus", "eventTime", "botId"}
    assert first["id"] == a["memory_id"] and first["botId"] == "ops" and first["decayStatus"] == "active"
    assert first["eventTime"] == "2026-11-22T10:15:00Z" and first["confidenceTag"] == "Grounded"
    assert p["memory_id"] not in {r["id"] for r in result["results"]}
    store.agent = None  # the person (no agent) sees every memory, and may ask as one agent
    assert p["memory_id"] in {r["id"] for r in store.recall("redis", min_score=0)["results"]}
    assert p["memory_id"] in {r["id"] for r in store.recall("redis", min_score=0, agent="ops")["results"]}
    assert p["memory_id"] not in {r["id"] for r in store.recall("redis", min_score=0, agent="dev")["results"]}
    assert "use_count: 4\n" in (vault_path / a["path"]).read_text()  # each of the 4 recalls counts as access


def test_signals_recomputed_exactly(store, clock):
    saved = store.save("Redis default port is 6379", memory_type="semantic", meta={"importance": 0.8})
    clock.advance(days=7)
    r = store.recall("redis 6379", min_score=0)["results"][0]
    assert r["id"] == saved["memory_id"]
    assert r["signals"] == {"similarity": 1.0, "recency": 0.5, "importance": round(0.8 * 0.73, 4),
                            "frequency": 0.0, "type_relevance": 0.5}
    assert r["decayStatus"] == "fading"  # ACT-R activation -3.07 after a week unused
    assert r["score"] == round((0.4 * 1.0 + 0.2 * 0.5 + 0.2 * 0.8 * 0.73 + 0.1 * 0.5) * 0.7, 4)


def test_temporal_intent_prefers_the_recent_memory(store, clock):
    old = store.save("We deployed the billing service", memory_type="episodic")
    clock.advance(days=30)
    new = store.save("We deployed the billing service again", memory_type="episodic", dedupe=False)
    assert store.recall("when did we deploy the billing service", min_score=0)["results"][0]["id"] == new["memory_id"]
    assert old["memory_id"] != new["memory_id"]


def test_archived_excluded_and_fading_penalised(store, clock, vault_path):
    arch = store.save("The staging host was stage-01")
    store.vault.move(arch["path"], "memory/archive")
    fading = store.save("The staging host is stage-02")
    clock.advance(days=60)
    fresh = store.save("The staging host is stage-03 now")
    results = store.recall("staging host", min_score=0)["results"]
    assert arch["memory_id"] not in {r["id"] for r in results}
    by_id = {r["id"]: r for r in results}
    assert by_id[fading["memory_id"]]["decayStatus"] == "fading"
    assert by_id[fresh["memory_id"]]["decayStatus"] == "active"


def test_an_exact_match_outranks_fresh_loosely_related_memories(store, clock):
    """The issue's repro: an exact match that is fading ranked 5th behind four memories that
    shared one word with the query and had just been reinforced; minScore 0.3 kept them."""
    exact = store.save("We deployed auth v2.3 to production on the 3rd", memory_type="episodic")
    clock.advance(days=40)
    loose = [store.save(f"Kubernetes node pool {i} autoscaling notes: scale up at 70% CPU, "
                        f"scale down after 10 idle minutes; the auth sidecar restarts with it", dedupe=False)
             for i in range(4)]
    for _ in range(6):
        for m in loose:
            store.touch(m["memory_id"])
    found = store.recall("when did we deploy auth v2.3", min_score=0)["results"]
    assert found[0]["id"] == exact["memory_id"] and found[0]["decayStatus"] == "fading"
    assert all(r["signals"]["similarity"] < 0.2 and r["score"] < 0.3 for r in found[1:])
    assert [r["id"] for r in store.recall("when did we deploy auth v2.3", min_score=0.3)["results"]] == [
        exact["memory_id"]]


def test_min_score_and_limit(store):
    for i in range(6):
        store.save(f"Redis replica {i} runs on port 63{80 + i}")
    assert store.recall("redis replica port", limit=2, min_score=0)["count"] == 2
    assert store.recall("redis replica port", min_score=1.0)["count"] == 0
    from vaultmem.base.errors import InvalidInput

    with pytest.raises(InvalidInput, match="limit must be between 1 and 100, got 0"):
        store.recall("x", limit=0)
    with pytest.raises(InvalidInput, match="query is empty; pass what to recall"):
        store.recall("  ")


def test_recall_cli(runner, vault_path):
    from vaultmem.store import MemoryStore

    saved = MemoryStore(vault_path).save("To restart the auth service: ssh prod-01, then systemctl restart auth",
                                         memory_type="procedural")
    out = invoke(runner, "recall", "how do I restart the auth service").output.splitlines()
    assert out[0] == ("Intent: procedural (similarity 0.30, recency 0.10, importance 0.15, frequency 0.30, "
                      "type_relevance 0.15)")
    assert out[1].startswith("1. [Grounded] (0.") and "To restart the auth service" in out[1]
    assert out[2] == f"   {saved['memory_id'][:8]} · procedural · active"
    data = json.loads(invoke(runner, "recall", "restart auth", "--json", "--limit", "1").output)
    assert data["count"] == 1 and data["results"][0]["memoryType"] == "procedural"
    empty = invoke(runner, "recall", "kubernetes").output
    assert empty.splitlines()[1] == "No memory matches 'kubernetes' with a score of 0.3 or more."


# -- graph: chains, linked memories, graph context ---------------------------------------------


def test_reasoning_chain_depth_two_and_cycles():
    texts = {"a": "deployed service", "b": "config changed", "c": "restart needed", "d": "too deep"}
    out = {"a": [("because", "b")], "b": [("therefore", "c")], "c": [("leads_to", "d"), ("related", "a")]}
    assert R.reasoning_chain("a", out, texts) == "deployed service -> because -> config changed -> therefore -> restart needed"
    # the longest path wins: c -> a -> b (depth 2) over c -> d (depth 1)
    assert R.reasoning_chain("c", out, texts) == "restart needed -> related to -> deployed service -> because -> config changed"
    assert R.reasoning_chain("d", out, texts) is None
    assert R.reasoning_chain("a", {"a": [("related", "b")], "b": [("related", "c")]}, texts) is None
    loop = {"x": [("causes", "y")], "y": [("causes", "x")]}
    assert R.reasoning_chain("x", loop, {"x": "X", "y": "Y"}) == "X -> leads to -> Y"  # no cycle back to X
    assert R.reasoning_chain("a", {"a": [("has_decision", "b")]}, {"a": "A" * 80, "b": "B"}) == "A" * 59 + "… -> decided -> B"


def test_recall_walks_typed_links(store):
    a = store.save("We deployed the auth service on Friday", entities=["auth service"])
    b = store.save("The auth config changed its token TTL", entities=["token TTL"])
    c = store.save("A restart of every auth pod is needed", entities=["kubernetes"])
    d = store.save("Unrelated gardening note about auth tomatoes")
    store.relate(a["memory_id"], b["memory_id"], "supports")
    store.relate(b["memory_id"], c["memory_id"], "causes")
    store.relate(c["memory_id"], d["memory_id"], "causes")  # depth 3 from a: not in a's chain
    store.forget(d["memory_id"])
    by_text = {r["text"]: r for r in store.recall("deployed auth service friday", min_score=0)["results"]}
    top = by_text["We deployed the auth service on Friday"]
    assert top["reasoningChain"] == ("We deployed the auth service on Friday -> supports -> The auth config changed "
                                     "its token TTL -> leads to -> A restart of every auth pod is needed")
    assert top["linkedMemories"] == [b["memory_id"]] and top["graphContext"] == ["token TTL"]
    middle = by_text["The auth config changed its token TTL"]
    assert set(middle["linkedMemories"]) == {a["memory_id"], c["memory_id"]}
    assert "reasoningChain" not in by_text["A restart of every auth pod is needed"]  # its only link is forgotten



def test_agent_questions_are_routed_to_that_agent(store):
    mine = store.save("Redis Sentinel runs on ports 26379-26381", agent="devops-agent")
    store.save("Redis cache TTL for sessions is 3600 seconds", agent="backend-agent")
    r = store.recall("what does the devops agent know about redis?", min_score=0)
    assert r["agentAwareness"] == {"agentId": "devops-agent", "topic": "redis"}
    assert [m["id"] for m in r["results"]] == [mine["memory_id"]]
    plain = store.recall("what does the marketing agent know about redis", min_score=0)  # unknown agent
    assert "agentAwareness" not in plain


class _RecordingDb:
    """The catalog connection, recording each statement's text."""

    def __init__(self, db) -> None:
        self.db, self.texts = db, set()

    def execute(self, sql, *args):
        self.texts.add(sql)
        return self.db.execute(sql, *args)

    def __enter__(self):
        return self.db.__enter__()

    def __exit__(self, *exc):
        return self.db.__exit__(*exc)

    def __getattr__(self, name):
        return getattr(self.db, name)


def test_statement_texts_do_not_grow_with_the_number_of_results(store):
    """sqlite3 caches one compiled statement per distinct text, so a long-lived process must
    not build one per result count: lists go in as one JSON parameter (json_each) or as
    `IN` lists padded to a power of two (links.pad_params)."""
    import re

    for n in range(9):
        store.save(f"Redis cache note {n} about eviction", agent=f"bot-{n % 3}", dedupe=False)
    found = store.search("redis")["results"]
    store.relate(found[0]["id"], found[1]["id"], "related")
    recording = _RecordingDb(store.index.db)
    store.index._db = recording
    for k in range(1, 10):
        store.recall("redis eviction", limit=k, min_score=0.0)
        store.synthesize("redis eviction")
        store.read_graph(page=1, page_size=k)
    lengths = {len(m) // 2 + 1 for sql in recording.texts for m in re.findall(r"IN \(\?((?:,\?)*)\)", sql)}
    assert lengths <= {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}
    assert any("json_each" in sql for sql in recording.texts)
