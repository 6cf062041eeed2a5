"""Forget (soft delete, short ids, query mode), restore, feedback and its persisted target."""

from __future__ import annotations

import json

import pytest
from conftest import invoke

from vaultmem.base.errors import InvalidInput, NotFound
from vaultmem.features.mnemosyne import feedback


def ids(result):
    return [r["id"] for r in result["results"]]


def test_forget_by_short_id_keeps_the_note_and_leaves_search(store, vault_path):
    keep = store.save("Staging deploys run nightly at 02:00")
    gone = store.save("Deploy to prod by SSH into legacy-01")
    result = store.forget(gone["memory_id"][:8])
    assert result == {"status": "deleted", "id": gone["memory_id"], "text": "Deploy to prod by SSH into legacy-01",
                      "path": gone["path"]}
    text = (vault_path / gone["path"]).read_text()
    assert "deleted: true\ndeleted_at: 2026-11-22T10:15:00Z\n---\nDeploy to prod by SSH into legacy-01\n" in text
    assert ids(store.search("deploy")) == [keep["memory_id"]]
    assert ids(store.search("deploy", status="all")) == [keep["memory_id"]]
    assert [r["id"] for r in store.recall("deploy", min_score=0)["results"]] == [keep["memory_id"]]
    with pytest.raises(NotFound, match=r"is already forgotten; `vaultmem restore "):
        store.forget(gone["memory_id"])
    restored = store.restore(gone["memory_id"][:8])
    assert restored["status"] == "restored" and restored["memoryStatus"] == "active"
    assert "deleted: false\n" in (vault_path / gone["path"]).read_text()
    assert set(ids(store.search("deploy"))) == {keep["memory_id"], gone["memory_id"]}
    with pytest.raises(InvalidInput, match="is not forgotten; nothing to restore"):
        store.restore(gone["memory_id"])


def test_forget_needs_an_id_or_a_query(store):
    with pytest.raises(InvalidInput, match="at least one of memoryId or query is required"):
        store.forget()


def test_query_with_one_match_above_0_9_deletes_it(store):
    store.save("Production deployment requires approval from the tech lead")
    target = store.save("The old staging server address was 10.0.0.5")
    result = store.forget(query="old staging server address was 10.0.0.5")
    assert result["status"] == "deleted" and result["id"] == target["memory_id"]


def test_an_ambiguous_query_returns_ranked_candidates(store):
    a = store.save("Production deployment requires approval")
    b = store.save("Staging deployment runs nightly")
    result = store.forget(query="deployment")
    assert result["status"] == "candidates"
    assert result["message"] == "Multiple matches found. Specify memoryId to forget."
    assert [m["id"] for m in result["matches"]] == sorted([a["memory_id"], b["memory_id"]],
                                                           key=lambda i: "production" not in store.resolve(i).path)
    assert [m["score"] for m in result["matches"]] == [0.5, 0.5]  # 1 shared word / sqrt(1 * 4)
    assert store.search("deployment")["count"] == 2  # nothing was deleted


def test_two_matches_above_0_9_are_candidates_not_deleted(store):
    store.save("Redis default port is 6379", agent="a")
    store.save("Redis default port is 6379.", agent="b", dedupe=False)
    result = store.forget(query="Redis default port is 6379")
    assert result["status"] == "candidates" and [m["score"] for m in result["matches"]] == [1.0, 1.0]


def test_forget_cli(runner, vault_path):
    from vaultmem.store import MemoryStore

    saved = MemoryStore(vault_path).save("The old staging server address was 10.0.0.5")
    out = invoke(runner, "forget", saved["memory_id"][:8]).output
    assert out == (f"Forgot {saved['memory_id'][:8]}: The old staging server address was 10.0.0.5\n"
                   f"  (the note is kept; `vaultmem restore {saved['memory_id'][:8]}` brings it back)\n")
    none = json.loads(invoke(runner, "forget", "--query", "kubernetes", "--json").output)
    assert none == {"status": "candidates", "matches": [], "message": "No memory matches 'kubernetes'; nothing was forgotten."}
    assert invoke(runner, "restore", saved["memory_id"][:8]).output.startswith("Restored ")
    both = runner.invoke(__import__("vaultmem.cli", fromlist=["cli"]).cli, ["forget", "abc", "--query", "x"])
    assert both.exit_code == 2 and "pass a memory id or --query, not both" in both.output


# -- feedback ----------------------------------------------------------------------------------


@pytest.mark.parametrize("hits,useful,promote,flag", [
    (2, 2, False, False),   # too few hits to promote
    (3, 3, True, False),    # 1.0 > 0.7 after 3
    (3, 2, False, False),   # 0.667 is not > 0.7
    (10, 7, False, False),  # exactly 0.7 is not > 0.7
    (10, 8, True, False),
    (4, 0, False, False),   # too few hits to flag
    (5, 1, False, True),    # 0.2 < 0.3 after 5
    (10, 3, False, False),  # exactly 0.3 is not < 0.3
])
def test_promotion_and_review_rules(hits, useful, promote, flag):
    assert feedback.should_promote(hits, useful) is promote
    assert feedback.should_flag(hits, useful) is flag


def test_three_positive_signals_promote_to_core(store, vault_path):
    saved = store.save("Use JWT tokens for authentication", memory_type="preference")
    results = [store.feedback("positive", saved["memory_id"][:8]) for _ in range(3)]
    assert [(r["updated"], r["promoted"]) for r in results] == [(1, 0), (1, 0), (1, 1)]
    text = (vault_path / saved["path"]).read_text()
    assert "memory_type: core\n" in text and "hit_count: 3\nuseful_count: 3\n" in text
    assert "promoted_at: 2026-11-22T10:15:00Z\npromoted_via: feedback\n" in text
    assert store.feedback("positive", saved["memory_id"])["promoted"] == 0  # already core


def test_five_negative_signals_flag_for_review(store, vault_path):
    saved = store.save("The build server is jenkins-01")
    flagged = [store.feedback("negative", saved["memory_id"])["flagged"] for _ in range(5)]
    assert flagged == [0, 0, 0, 0, 1]
    text = (vault_path / saved["path"]).read_text()
    assert "hit_count: 5\nuseful_count: 0\nneeds_review: true\n" in text


def test_feedback_without_id_uses_the_last_recall_across_processes(runner, vault_path):
    from vaultmem.store import MemoryStore

    s = MemoryStore(vault_path)
    a = s.save("Redis default port is 6379")
    b = s.save("Redis cluster bus port is 16379")
    s.save("Postgres listens on 5432")
    s.close()
    none = invoke(runner, "feedback", "positive")
    assert none.exit_code == 1
    assert none.output == "Error: no recent recall to give feedback on; run `vaultmem recall` first or pass --id\n"
    recalled = json.loads(invoke(runner, "recall", "redis port", "--min-score", "0", "--json").output)
    assert {r["id"] for r in recalled["results"]} == {a["memory_id"], b["memory_id"]}
    state = json.loads((vault_path / ".vaultmem/state/last_recall-_default.json").read_text())
    assert state["ids"] == [r["id"] for r in recalled["results"]] and state["query"] == "redis port"
    out = invoke(runner, "feedback", "positive").output
    assert out == "Feedback positive: 2 updated, 0 promoted to core, 0 flagged for review\n"
    # another agent has its own last recall
    other = invoke(runner, "feedback", "negative", "--agent", "ops")
    assert other.exit_code == 1


def test_feedback_skips_memories_forgotten_since_the_recall(store):
    a = store.save("Redis default port is 6379")
    store.save("Redis cluster bus port is 16379")
    store.recall("redis port", min_score=0)
    store.forget(a["memory_id"])
    assert store.feedback("negative")["updated"] == 1


def test_bad_signal(store):
    with pytest.raises(InvalidInput, match="signal must be positive or negative, got 'meh'"):
        store.feedback("meh", "abc")
