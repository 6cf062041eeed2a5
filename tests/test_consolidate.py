"""Similarity, clusters, duplicates and merges on a vault with known duplicates."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import invoke

from vaultmem.base.errors import ConflictError, InvalidInput, NotFound
from vaultmem.features import consolidate as C
from vaultmem.store import MemoryStore

MEMORIES = {
    "jwt1": ("Use JWT tokens for authentication in all new APIs.", ["auth"], ["JWT"], 1.0, 2),
    "jwt2": ("Use JWT tokens for authentication in all new APIs. Tokens expire after 15 minutes.",
             ["auth", "security"], ["JWT"], 1.2, 3),
    "jwt3": ("For authentication in all new APIs use JWT tokens. Refresh tokens live for 7 days.",
             ["auth"], ["JWT", "OAuth"], 1.1, 0),
    "pg1": ("The staging database runs PostgreSQL 16 on port 5433.", ["infra"], ["PostgreSQL"], 1.0, 1),
    "pg2": ("The staging database runs PostgreSQL 16 on port 5433.", ["infra"], ["PostgreSQL"], 1.0, 4),
    "dark": ("Alice prefers dark mode in every editor.", ["preferences"], ["Alice"], 1.0, 0),
    "notdark": ("Alice does not prefer dark mode in every editor.", ["preferences"], ["Alice"], 1.0, 0),
    "deploy": ("Deploys to production happen on Thursdays after the release review.", ["process"], [], 1.0, 0),
    "coffee": ("The office coffee machine is on the third floor.", [], [], 1.0, 0),
}


def build(store: MemoryStore, clock) -> dict[str, dict]:
    """Save the fixture memories one hour apart; use counts set through touch."""
    saved = {}
    for key, (content, tags, entities, strength, uses) in MEMORIES.items():
        # dedupe=False: the fixture holds exact duplicates on purpose
        result = store.save(content, tags=tags, entities=entities, strength=strength, dedupe=False)
        for _ in range(uses):
            store.touch(result["memory_id"])
        saved[key] = result
        clock.advance(hours=1)
    return saved


@pytest.fixture
def fx(store, clock):
    return build(store, clock)


def ids(fx, *keys):
    return sorted(fx[k]["memory_id"] for k in keys)


def test_similarity_is_cosine_of_unit_vectors():
    a = {"x": 0.6, "y": 0.8}
    assert C.similarity(a, a) == pytest.approx(1.0)
    assert C.similarity(a, {"z": 1.0}) == 0.0
    assert C.similarity(a, {"x": 1.0}) == pytest.approx(0.6)


def test_similar_pairs_matches_brute_force():
    import random

    rng = random.Random(7)
    words = [f"w{i}" for i in range(40)]
    vectors = [C._normalise({w: rng.random() for w in rng.sample(words, rng.randint(1, 8))}) for _ in range(150)]
    for threshold in (0.3, 0.6, 0.83):
        brute = {(i, j) for i in range(len(vectors)) for j in range(i + 1, len(vectors))
                 if C.similarity(vectors[i], vectors[j]) >= threshold}
        assert {(i, j) for i, j, _ in C.similar_pairs(vectors, threshold)} == brute


def test_clusters_are_exact(store, fx):
    result = store.cluster(threshold=0.7)
    assert result["mode"] == "clustering" and result["clusters_found"] == 3
    got = {tuple(c["memory_ids"]): c for c in result["clusters"]}
    assert set(got) == {tuple(ids(fx, "pg1", "pg2")), tuple(ids(fx, "dark", "notdark")),
                        tuple(ids(fx, "jwt1", "jwt2", "jwt3"))}
    pg = got[tuple(ids(fx, "pg1", "pg2"))]
    assert pg["cohesion"] == 1.0 and pg["suggested_action"] == "auto-merge" and pg["size"] == 2
    assert pg["content_previews"] == ["The staging database runs PostgreSQL 16 on port 5433."] * 2
    assert set(pg) == {"id", "size", "cohesion", "suggested_action", "memory_ids", "content_previews"}
    assert got[tuple(ids(fx, "dark", "notdark"))]["suggested_action"] == "review-contradiction"
    assert got[tuple(ids(fx, "jwt1", "jwt2", "jwt3"))]["suggested_action"] == "llm-review"
    # unrelated notes never cluster, even at a low threshold
    low = store.cluster(threshold=0.5)
    members = {m for c in low["clusters"] for m in c["memory_ids"]}
    assert not members & set(ids(fx, "deploy", "coffee"))


def test_default_threshold_keeps_only_close_pairs(store, fx):
    result = store.cluster()
    assert [c["memory_ids"] for c in result["clusters"]] == [ids(fx, "pg1", "pg2"), ids(fx, "dark", "notdark")]
    assert result["threshold"] == 0.83 and result["strategy"] == "similarity"


def test_max_cluster_size_caps_clusters(store, fx):
    result = store.cluster(threshold=0.5, max_cluster_size=2)
    assert all(c["size"] == 2 for c in result["clusters"])
    with pytest.raises(InvalidInput, match="max_cluster_size must be between 2 and 100, got 1"):
        store.cluster(max_cluster_size=1)


def test_cluster_ids_are_stable_across_calls_and_processes(store, fx, vault_path):
    first = store.cluster(threshold=0.7)
    assert first == store.cluster(threshold=0.7)
    out = subprocess.run([sys.executable, "-m", "vaultmem", "cluster", "--threshold", "0.7", "--json",
                          "--vault", str(vault_path)], capture_output=True, text=True, check=True)
    other = json.loads(out.stdout)
    assert [c["id"] for c in other["clusters"]] == [c["id"] for c in first["clusters"]]
    assert C.cluster_id(reversed(ids(fx, "pg1", "pg2"))) == C.cluster_id(ids(fx, "pg1", "pg2"))


def test_duplicates(store, fx):
    result = store.cluster(find_duplicates=True)
    assert result["mode"] == "duplicate_detection" and result["duplicates_found"] == 1
    pair = result["duplicates"][0]
    assert [pair["id1"], pair["id2"]] == ids(fx, "pg1", "pg2") and pair["similarity"] == 1.0
    # negation counts: "does not prefer" is no duplicate of "prefers"
    assert store.cluster(find_duplicates=True, duplicate_threshold=0.85)["duplicates_found"] == 2


def test_merge_contents_keeps_unique_sentences_once():
    merged = C.merge_contents([
        "Use JWT tokens for authentication in all new APIs.",
        "Use JWT tokens for authentication in all new APIs. Tokens expire after 15 minutes.",
        "For authentication in all new APIs use JWT tokens. Refresh tokens live for 7 days.",
    ])
    assert merged == ("Use JWT tokens for authentication in all new APIs.\n\n"
                      "Tokens expire after 15 minutes.\n\nRefresh tokens live for 7 days.")
    # a longer sentence that contains a kept one replaces it in place
    assert C.merge_contents(["Deploy on Thursdays.", "Deploy on Thursdays after review."]) == \
        "Deploy on Thursdays after review."


def test_merged_strength_from_cohesion():
    assert C.merged_strength([1.0, 1.2, 1.1], 0.8) == 1.36
    assert C.merged_strength([1.9, 2.0], 1.0) == 2.0


def test_preview_writes_nothing(store, fx, vault_path):
    before = sorted(p.name for p in vault_path.rglob("*.md"))
    cid = [c for c in store.cluster(threshold=0.7)["clusters"] if c["size"] == 3][0]["id"]
    result = store.consolidate(cid, mode="preview", threshold=0.7, cohesion_threshold=0.6)
    assert result["mode"] == "preview" and result["candidates_found"] == 1
    p = result["previews"][0]
    assert p["cluster_id"] == cid and p["memory_count"] == 3
    assert p["merged_tags"] == ["auth", "security"] and p["merged_entities"] == ["JWT", "OAuth"]
    assert p["calculated_strength"] == round(min(2.0, 1.2 + 0.1 * 2 * p["cohesion"]), 3)
    assert sorted(p.name for p in vault_path.rglob("*.md")) == before


def test_apply_merges_and_archives(store, fx, vault_path):
    cid = [c for c in store.cluster(threshold=0.7)["clusters"] if c["size"] == 3][0]["id"]
    result = store.consolidate(cid, mode="apply", threshold=0.7, cohesion_threshold=0.6)
    assert result["success"] and result["archived_count"] == 3 and result["consolidated_clusters"] == 1
    assert sorted(result["source_ids"]) == ids(fx, "jwt1", "jwt2", "jwt3")
    assert len(result["relation_ids"]) == 3
    merged = store.open([result["new_memory_id"]])["memories"][0]
    assert merged["content"] == ("Use JWT tokens for authentication in all new APIs.\n\n"
                                 "Tokens expire after 15 minutes.\n\nRefresh tokens live for 7 days.")
    assert merged["tags"] == ["auth", "security"] and merged["entities"] == ["JWT", "OAuth"]
    assert merged["use_count"] == 5 and merged["status"] == "active"
    assert merged["created_at"] == "2026-11-22T10:15:00Z"  # jwt1, the earliest
    assert merged["last_used"] == "2026-11-22T12:15:00Z"  # jwt3 saved two hours later
    assert merged["path"].startswith("memory/stm/")
    text = (vault_path / merged["path"]).read_text()
    for key in ("jwt1", "jwt2", "jwt3"):
        stem = fx[key]["path"].rsplit("/", 1)[1][:-3]
        assert f"- consolidated_from:: [[{stem}]]\n" in text
        archived = vault_path / "memory/archive" / f"{stem}.md"
        assert archived.is_file() and not (vault_path / fx[key]["path"]).exists()
        atext = archived.read_text()
        assert "status: archived\n" in atext and "consolidated_into:" in atext
    assert store.open([fx["jwt1"]["memory_id"]])["memories"][0]["status"] == "archived"
    # nothing deleted: 9 saved + 1 merged
    assert len(list((vault_path / "memory").rglob("*.md"))) == 10
    # the cluster is gone now
    with pytest.raises(NotFound, match=f"no cluster '{cid}' at threshold 0.7"):
        store.consolidate(cid, mode="apply", threshold=0.7)


def test_apply_refuses_a_note_edited_since_clustering(store, fx, vault_path):
    recs = [store.resolve(fx[k]["memory_id"]) for k in ("pg1", "pg2")]
    path = vault_path / recs[1].path
    path.write_text(path.read_text().replace("port 5433", "port 6543"))
    with pytest.raises(ConflictError, match="changed since it was clustered"):
        C.merge_records(store, recs, 1.0)
    assert path.is_file() and not list((vault_path / "memory/archive").glob("*.md"))


def test_apply_below_cohesion_threshold_is_refused(store, fx):
    cid = [c for c in store.cluster(threshold=0.7)["clusters"] if c["size"] == 3][0]
    with pytest.raises(InvalidInput, match=f"cluster {cid['id']} has cohesion {cid['cohesion']}, below 0.75"):
        store.consolidate(cid["id"], mode="apply", threshold=0.7)


def test_auto_apply_merges_every_cohesive_cluster(store, fx):
    result = store.consolidate(auto_detect=True, mode="apply", cohesion_threshold=0.95)
    assert result["consolidated_clusters"] == 1 and sorted(result["results"][0]["source_ids"]) == ids(fx, "pg1", "pg2")
    merged = store.open([result["results"][0]["new_memory_id"]])["memories"][0]
    assert merged["content"] == "The staging database runs PostgreSQL 16 on port 5433."
    assert merged["use_count"] == 5


def test_link_mode_writes_related_both_ways(store, fx, vault_path):
    cid = [c for c in store.cluster(threshold=0.7)["clusters"] if c["size"] == 3][0]["id"]
    result = store.consolidate(cid, mode="link", threshold=0.7)
    assert result["relations_created"] == 6 and result["cluster_id"] == cid
    assert result["message"] == "Created 6 bidirectional relations linking 3 memories"
    text = (vault_path / fx["jwt1"]["path"]).read_text()
    for key in ("jwt2", "jwt3"):
        assert f"- related:: [[{fx[key]['path'].rsplit('/', 1)[1][:-3]}]]" in text
    assert store.consolidate(cid, mode="link", threshold=0.7)["relations_created"] == 0


def test_consolidate_needs_cluster_or_auto(store, fx):
    with pytest.raises(InvalidInput, match="pass either a cluster id"):
        store.consolidate()


def test_cli_cluster_and_consolidate(runner, vault_path):
    store = MemoryStore(vault_path)
    for text in ("The staging database runs PostgreSQL 16 on port 5433.",) * 2:
        store.save(text, tags=["infra"], dedupe=False)  # a duplicate on purpose
    out = invoke(runner, "cluster", "--json")
    data = json.loads(out.output)
    cid = data["clusters"][0]["id"]
    out = invoke(runner, "consolidate", "--cluster", cid)
    assert out.output.startswith("1 clusters would be merged (preview: nothing written)\n")
    out = invoke(runner, "consolidate", "--cluster", cid, "--mode", "apply", "--json")
    assert json.loads(out.output)["archived_count"] == 2
    out = invoke(runner, "consolidate", "--cluster", cid, "--mode", "apply")
    assert out.exit_code == 1
    assert out.output == (f"Error: no cluster '{cid}' at threshold 0.83; run `vaultmem cluster` with the same "
                          "--threshold and pass an id it lists\n")


def test_deep_consolidation_four_phases(store, fx, clock, vault_path):
    import datetime as dt

    popular = store.save("The build cache lives in /var/cache/ci and is shared by all runners.")
    for _ in range(11):
        store.touch(popular["memory_id"])
    old = clock() - dt.timedelta(days=60)
    stale = store.save("Kubernetes namespace for the old billing service is billing-legacy.", strength=1.3)
    rec = C.move_record(store, store.resolve(stale["memory_id"]), "promoted", {"promoted_at": old})
    store.modify(store.index.get(rec), lambda c: {"last_used": old})
    weak = store.save("The printer on floor two jams with A3 paper.", strength=1.2)
    store.modify(store.resolve(weak["memory_id"]), lambda c: {"last_used": old})
    critical = store.save("Never restart the payment database during business hours.", strength=2.0)
    store.modify(store.resolve(critical["memory_id"]), lambda c: {"last_used": old, "urgency": "critical"})

    report = store.deep_consolidate(batch=100)
    assert {k: report[k] for k in ("contradictions", "nearDuplicatesMerged", "popularPromoted", "staleDemoted",
                                   "processedCount")} == {
        "contradictions": 1, "nearDuplicatesMerged": 1, "popularPromoted": 1, "staleDemoted": 2,
        "processedCount": 13}
    assert store.open([critical["memory_id"]])["memories"][0]["strength"] == 2.0  # critical is never stale
    assert isinstance(report["durationMs"], int)
    pair = report["contradiction_pairs"][0]
    assert sorted([pair["id1"], pair["id2"]]) == ids(fx, "dark", "notdark")
    dark_text = (vault_path / fx["dark"]["path"]).read_text()
    assert f"- contradicts:: [[{fx['notdark']['path'].rsplit('/', 1)[1][:-3]}]]" in dark_text
    # near-duplicate: pg2 (4 uses) kept with pg1's use, pg1 archived
    assert report["merged"][0]["kept_id"] == fx["pg2"]["memory_id"]
    kept = store.open([fx["pg2"]["memory_id"]])["memories"][0]
    assert kept["use_count"] == 5 and kept["created_at"] == "2026-11-22T13:15:00Z"
    assert store.open([fx["pg1"]["memory_id"]])["memories"][0]["status"] == "archived"
    promoted = store.open([popular["memory_id"]])["memories"][0]
    assert promoted["path"].startswith("memory/ltm/") and promoted["memory_type"] == "core"  # the seed: core
    back = store.open([stale["memory_id"]])["memories"][0]
    assert back["path"].startswith("memory/stm/") and back["status"] == "active"
    assert store.open([weak["memory_id"]])["memories"][0]["strength"] == 1.1
    # a second run finds nothing new to merge or promote, and contradictions are not duplicated
    again = store.deep_consolidate()
    assert (again["nearDuplicatesMerged"], again["popularPromoted"]) == (0, 0)
    assert (vault_path / fx["dark"]["path"]).read_text() == dark_text


def test_deep_dry_run_reports_the_same_four_phases_and_changes_nothing(store, fx, clock, vault_path):
    import datetime as dt

    popular = store.save("The build cache lives in /var/cache/ci and is shared by all runners.")
    for _ in range(11):
        store.touch(popular["memory_id"])
    weak = store.save("The printer on floor two jams with A3 paper.", strength=1.2)
    store.modify(store.resolve(weak["memory_id"]), lambda c: {"last_used": clock() - dt.timedelta(days=60)})
    before = {p: p.read_bytes() for p in sorted(vault_path.rglob("*.md"))}
    dry = store.deep_consolidate(dry_run=True)
    assert {p: p.read_bytes() for p in sorted(vault_path.rglob("*.md"))} == before
    assert (dry["dryRun"], dry["contradictions"], dry["nearDuplicatesMerged"], dry["popularPromoted"],
            dry["staleDemoted"]) == (True, 1, 1, 1, 1)
    assert dry["merged"][0]["kept_id"] == fx["pg2"]["memory_id"] and dry["links_rewritten"] == []
    real = store.deep_consolidate()
    assert [real[k] for k in ("contradictions", "nearDuplicatesMerged", "popularPromoted", "staleDemoted")] == [
        1, 1, 1, 1]
    assert real["dryRun"] is False and real["merged"][0]["kept_id"] == fx["pg2"]["memory_id"]


def test_deep_batch_is_validated(store):
    with pytest.raises(InvalidInput, match="batch must be between 1 and 1000, got 0"):
        store.deep_consolidate(batch=0)


def test_cli_deep(runner, vault_path):
    store = MemoryStore(vault_path)
    for text in ("The staging database runs PostgreSQL 16 on port 5433.",) * 2:
        store.save(text, dedupe=False)  # a duplicate on purpose
    out = invoke(runner, "consolidate", "--deep")
    assert out.output.splitlines()[:4] == ["Contradictions found: 0", "Duplicates merged:    1",
                                           "Popular promoted:     0", "Stale demoted:        0"]
    assert out.output.splitlines()[4].startswith("Processed 2 memories in ")
    store.save("The staging database runs PostgreSQL 16 on port 5433.", dedupe=False)
    dry = invoke(runner, "consolidate", "--deep", "--dry-run")
    assert dry.output.splitlines()[:5] == ["[DRY RUN] nothing was changed", "Contradictions found: 0",
                                           "Duplicates to merge:  1", "Popular to promote:   0",
                                           "Stale to demote:      0"]
    assert invoke(runner, "consolidate", "--dry-run").output.splitlines()[-1] == (
        "Error: --dry-run goes with --deep; --mode preview previews a cluster merge")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_word = st.sampled_from(["alpha", "beta", "gamma", "delta", "port", "jwt", "cache", "redis", "tuesday", "deploy"])
_sentence = st.lists(_word, min_size=1, max_size=6).map(lambda ws: " ".join(ws).capitalize() + ".")
_text = st.lists(_sentence, min_size=1, max_size=4).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_text, min_size=1, max_size=5))
def test_merge_loses_no_information(texts):
    merged = C.merge_contents(texts)
    kept = [C._words(s) for para in C.split_sentences(merged) for s in para]
    for text in texts:
        for para in C.split_sentences(text):
            for sentence in para:
                words = C._words(sentence)
                # every input sentence survives, or one kept sentence holds (nearly) all its words
                assert any(words <= k or (len(words & k) / len(words | k) >= 0.8 and len(words) <= len(k))
                           for k in kept)
    assert len(merged) <= len(" ".join(texts)) + 2 * len(texts)


def test_clustering_reads_the_catalog_not_the_files(store, fx, monkeypatch):
    store.sync()
    import vaultmem.storage.index as index_module

    def no_reads(*_a, **_k):
        raise AssertionError("clustering re-read a note file")

    monkeypatch.setattr(index_module, "read_record", no_reads)
    monkeypatch.setattr(index_module, "read_opened", no_reads)
    monkeypatch.setattr(index_module, "record_from_text", no_reads)
    assert store.cluster(threshold=0.7)["clusters_found"] == 3
    assert store.cluster(find_duplicates=True)["duplicates_found"] == 1


def test_candidate_generation_is_not_quadratic(monkeypatch):
    """At 3,000 memories of a realistic vocabulary, far fewer than N²/2 pairs are scored."""
    import random

    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(5000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    vectors = [C._normalise({w: 1.0 for w in rng.choices(vocab, weights, k=10)}) for _ in range(3000)]
    calls = 0
    real = C.similarity

    def counting(a, b):
        nonlocal calls
        calls += 1
        return real(a, b)

    monkeypatch.setattr(C, "similarity", counting)
    C.similar_pairs(vectors, 0.83)
    assert calls < 3000 * 2999 / 2 / 50


def test_cli_deep_runs_alone(runner):
    out = invoke(runner, "consolidate", "--deep", "--auto")
    assert out.exit_code == 2 and "Error: --deep runs on its own; drop --cluster/--auto" in out.output


def test_a_merge_keeps_each_memory_s_owner_and_never_mixes_owners(vault_path, clock):
    """The issue's repro: alice stores two near-identical private memories and consolidates
    everything she sees (bob's shared memory too); bob finds nothing of alice's, by search or
    recall: the merged note stays private to alice, and never takes in bob's memory."""
    from vaultmem.base.config import load_settings
    from vaultmem.store import MemoryStore

    def as_agent(agent):
        s = MemoryStore(vault_path, settings=load_settings(vault_path), clock=clock)
        s.agent = agent
        return s

    alice = as_agent("alice")
    alice.store_memory("The SSH bastion for production is bastion-7 on port 2222", private=True)
    alice.store_memory("The SSH bastion for production is bastion-7 on port 2222 according to the ops runbook",
                       private=True)
    bob = as_agent("bob")
    bob.save("The SSH bastion for staging is bastion-2 on port 22", agent="bob")
    person = as_agent("alice")
    result = person.consolidate(auto_detect=True, mode="apply", cohesion_threshold=0.3, threshold=0.3)
    merged = [r for r in result["results"]]
    assert merged, result  # alice's two memories merged with each other...
    for r in merged:
        sources = [person.resolve(i) for i in r["source_ids"]]
        assert len({(s.agent, s.props.get("private") is True) for s in sources}) == 1  # ...never with bob's
        note = person.resolve(r["new_memory_id"])
        assert (note.agent, note.props.get("private")) == ("alice", True)
    assert [h["content"] for h in bob.search("SSH bastion")["results"]] == [
        "The SSH bastion for staging is bastion-2 on port 22"]
    assert all("bastion-7" not in r["text"] for r in bob.recall("SSH bastion production")["results"])


def test_a_cluster_listed_at_a_low_threshold_can_be_linked_by_its_id(vault_path, clock):
    """LINK mode for medium-cohesion clusters was unreachable: cluster_memories at 0.3 listed an
    id that consolidate_memories (which re-clustered at 0.83) said did not exist."""
    from vaultmem.base.config import load_settings
    from vaultmem.store import MemoryStore

    store = MemoryStore(vault_path, settings=load_settings(vault_path), clock=clock)
    store.save("The billing service retries failed card payments three times")
    store.save("Card payments that fail in billing are retried by a nightly job")
    listed = store.cluster(threshold=0.3)["clusters"]
    assert len(listed) == 1 and listed[0]["cohesion"] < 0.83
    linked = store.consolidate(listed[0]["id"], mode="link")
    assert linked["relations_created"] == 2 and linked["cluster_id"] == listed[0]["id"]
    store.save("An unrelated memory about the office coffee machine")  # members unchanged: still found
    assert store.consolidate(listed[0]["id"], mode="preview")["candidates_found"] == 1
