"""Agent awareness: toma, profiles, knowledge gaps, Mesh Fact synthesis, counts, skills."""

from __future__ import annotations

import json

import pytest
from conftest import invoke

from vaultmem.base.errors import InvalidInput
from vaultmem.features.mnemosyne import awareness


@pytest.fixture
def fleet(store, clock):
    s = store
    ids = {}
    ids["pg"] = s.save("Production DB is PostgreSQL 15 on port 5432", agent="devops", memory_type="semantic",
                       meta={"domain": "technical", "confidence": 0.8})
    ids["backup"] = s.save("To back up the DB: 1) stop writes 2) run pg_dump 3) upload to S3", agent="devops",
                           memory_type="procedural", meta={"domain": "technical"})
    clock.advance(hours=2)
    ids["sentinel"] = s.save("Redis Sentinel runs on ports 26379-26381", agent="devops", memory_type="semantic",
                             meta={"domain": "technical", "confidence": 0.6})
    ids["ttl"] = s.save("Redis cache TTL for sessions is 3600 seconds", agent="backend", memory_type="semantic",
                        meta={"domain": "project"})
    for agent in ("devops", "backend", "sre"):
        ids[f"sessions-{agent}"] = s.save("Redis is used for session storage and pub/sub", agent=agent, dedupe=False,
                                          memory_type="semantic")
    ids["secret"] = s.save("Redis admin console is on the private jump host", agent="devops",
                           meta={"private": True})
    return ids


def test_toma_result_keys_and_profile(store, fleet):
    store.agent = "backend"  # another agent: devops' private memory is not there
    result = store.toma("devops", "redis ports", limit=5)
    assert set(result) == {"agentId", "topic", "memories", "knowledgeProfile"}
    assert result["memories"][0]["text"] == "Redis Sentinel runs on ports 26379-26381"
    assert set(result["memories"][0]) == {"id", "text", "confidenceTag", "memoryType", "eventTime", "score"}
    assert result["memories"][0]["confidenceTag"] == "Inferred"  # confidence 0.6
    assert all(m["text"] != "Redis admin console is on the private jump host" for m in result["memories"])
    assert result["knowledgeProfile"] == {
        "totalMemories": 4, "topDomains": ["technical"], "topTypes": ["semantic", "procedural"],
        "avgConfidence": round((0.8 + 0.73 + 0.6 + 0.73) / 4, 4), "lastActiveAt": "2026-11-22T12:15:00Z"}
    store.agent = "devops"  # the agent itself sees its private memory
    assert store.bot_profile("devops")["totalMemories"] == 5
    store.agent = None  # so does the person (a CLI or server started without an agent)
    assert store.bot_profile("devops")["totalMemories"] == 5
    assert any(m["text"] == "Redis admin console is on the private jump host"
               for m in store.toma("devops", "redis admin console")["memories"])


def test_toma_does_not_count_as_access(store, fleet, vault_path):
    store.toma("devops", "redis")
    assert "use_count: 0\n" in (vault_path / fleet["sentinel"]["path"]).read_text()


def test_knowledge_gap(store, fleet):
    store.agent = "sre"
    gap = store.knowledge_gap("devops", "backend", "redis")
    assert [m["text"] for m in gap["onlyA"]] == ["Redis Sentinel runs on ports 26379-26381"]
    assert [m["text"] for m in gap["onlyB"]] == ["Redis cache TTL for sessions is 3600 seconds"]
    assert [m["text"] for m in gap["shared"]] == ["Redis is used for session storage and pub/sub"]


def test_synthesize_marks_a_fact_three_agents_hold(store, fleet, vault_path):
    result = store.synthesize("redis")
    assert result["sources"] == 3 and result["contributingAgents"] == ["backend", "devops", "sre"]
    assert result["meshFacts"] == 1 and result["message"] == ""
    insight = result["insights"][0]
    assert insight["confidenceTag"] == "Mesh Fact" and insight["agents"] == ["backend", "devops", "sre"]
    assert insight["text"] == "Redis is used for session storage and pub/sub"
    text = (vault_path / fleet["sessions-sre"]["path"]).read_text()
    assert "mesh_fact: true\nmesh_agents:\n  - backend\n  - devops\n  - sre\n" in text and "confidence: 0.9\n" in text
    recalled = store.recall("redis session storage", min_score=0)["results"]
    assert {r["confidenceTag"] for r in recalled if r["text"].startswith("Redis is used")} == {"Mesh Fact"}


def test_synthesize_needs_three_agents(store):
    store.save("Kafka retains topics for 7 days", agent="a", dedupe=False)
    store.save("Kafka retains topics for 7 days.", agent="b", dedupe=False)
    result = store.synthesize("kafka")
    assert result["meshFacts"] == 0 and result["insights"][0]["confidenceTag"] == "Grounded"
    assert result["message"] == "Only 2 agents hold memories on this topic; a Mesh Fact needs 3"


def test_count_by_folder_and_type(store, fleet):
    store.block_set("status", "ok")
    store.forget(fleet["ttl"]["memory_id"])
    store.vault.move(fleet["pg"]["path"], "memory/ltm")
    result = store.count()
    assert result == {"total": 7, "shared": 6, "private": 1, "skills": 1, "deleted": 1,
                      "byFolder": {"stm": 6, "ltm": 1, "archive": 0, "blocks": 1, "sessions": 0},
                      "byType": {"procedural": 1, "semantic": 6}}  # enrichment typed the untyped one


@pytest.mark.parametrize("text,steps", [
    ("To back up the DB: 1) stop writes 2) run pg_dump 3) upload to S3", 3),
    ("Deploy:\n1. test\n2. build\n3. ship\n4. verify", 4),
    ("Restart:\n- stop\n- start", 2),
    ("Just run make deploy", 1),
])
def test_steps_in(text, steps):
    assert awareness.steps_in(text) == steps


def test_skills(store, fleet):
    listed = store.skills()
    assert listed["total"] == 1 and listed["skills"][0]["steps"] == 3 and listed["skills"][0]["score"] is None
    found = store.skills("back up database")
    assert [s["id"] for s in found["skills"]] == [fleet["backup"]["memory_id"]]
    assert store.skills("redis")["skills"] == []


def test_bad_agent():
    with pytest.raises(InvalidInput, match="agentId is empty; pass the agent id, e.g. devops-agent"):
        awareness.toma(None, " ", "x")


def test_awareness_cli(runner, vault_path, clock):
    from vaultmem.store import MemoryStore

    s = MemoryStore(vault_path, clock=clock)
    for agent in ("a1", "a2", "a3"):
        s.save("Deployments go through staging then canary", agent=agent, meta={"domain": "project"}, dedupe=False)
    s.save("To deploy: 1. merge 2. tag 3. watch the canary", agent="a1", memory_type="procedural")
    s.close()
    out = invoke(runner, "bot-profile", "a1").output
    assert out == ("Agent:           a1\nTotal Memories:  2\nTop Domains:     project (50%), technical (50%)\n"
                   "Top Types:       procedural (50%), semantic (50%)\nAvg Confidence:  0.73 (Grounded)\n"
                   "Last Active:     2026-11-22T10:15:00Z\n")
    synth = invoke(runner, "synthesize", "deployments").output
    assert "Sources: 3 agents contributed" in synth
    assert "  1. [Mesh Fact] Deployments go through staging then canary  (a1, a2, a3)" in synth
    gap = invoke(runner, "knowledge-gap", "a1", "a2", "deploy").output
    assert gap.startswith('Knowledge Gap: a1 vs a2 on "deploy"\n\na1 knows (that a2 does not):\n')
    counted = invoke(runner, "count").output.splitlines()
    assert counted[0] == "Shared Memories:        4" and counted[4] == "Total:                  4"
    assert invoke(runner, "skills").output.splitlines()[2] == (
        "  1. [Grounded] To deploy: 1. merge 2. tag 3. watch the canary (3 steps)")
    toma = json.loads(invoke(runner, "toma", "a1", "deploy", "--json").output)
    assert toma["agentId"] == "a1" and len(toma["memories"]) == 1  # "deploy" does not stem like "deployments"
