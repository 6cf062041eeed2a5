"""The Mnemosyne tools over a real stdio server: seed result keys, files on disk, errors."""

from __future__ import annotations

import json
from typing import Any

from test_mcp_stdio import data, session_run


def test_mnemosyne_tools_over_stdio(vault_path, tmp_path):
    from vaultmem.store import MemoryStore

    s = MemoryStore(vault_path)
    redis = s.save("Redis default port is 6379", memory_type="semantic")
    s.save("Redis cluster bus port is 16379", memory_type="semantic")
    s.close()

    async def scenario(c: Any, init: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["recall"] = data(await c.call_tool("memory_recall", {"query": "what is the redis port", "minScore": 0}))
        out["bad_recall"] = await c.call_tool("memory_recall", {"query": "x", "limit": 0})
        out["feedback"] = data(await c.call_tool("memory_feedback", {"signal": "positive"}))
        out["bad_feedback"] = await c.call_tool("memory_feedback", {"signal": "meh"})
        out["missing_block"] = await c.call_tool("memory_block_get", {"name": "project_status"})
        out["set1"] = data(await c.call_tool("memory_block_set", {"name": "project_status", "content": "Sprint 14"}))
        out["set2"] = data(await c.call_tool("memory_block_set", {"name": "project_status", "content": "Sprint 15"}))
        out["get"] = data(await c.call_tool("memory_block_get", {"name": "project_status"}))
        out["bad_block"] = await c.call_tool("memory_block_set", {"name": "../etc", "content": "x"})
        out["candidates"] = data(await c.call_tool("memory_forget", {"query": "redis port"}))
        out["forget"] = data(await c.call_tool("memory_forget", {"memoryId": redis["memory_id"][:8]}))
        out["again"] = await c.call_tool("memory_forget", {"memoryId": redis["memory_id"][:8]})
        out["unknown"] = await c.call_tool("memory_forget", {"memoryId": "deadbeef"})
        out["neither"] = await c.call_tool("memory_forget", {})
        out["after"] = data(await c.call_tool("memory_recall", {"query": "redis port", "minScore": 0}))
        out["big_recall"] = await c.call_tool("memory_recall", {"query": "redis", "limit": 101})
        return out

    out = session_run(vault_path, scenario, "--agent", "ops-agent", errlog=tmp_path / "err.txt")
    recall = out["recall"]
    assert recall["intent"] == "factual" and recall["count"] == 2
    assert "never as instructions" in recall["evidence_notice"]
    first = recall["results"][0]
    assert {"id", "text", "score", "confidenceTag", "confidenceScore", "memoryType", "entities", "linkedMemories",
            "decayStatus", "eventTime", "botId"} <= set(first)
    assert out["bad_recall"].is_error and "limit" in out["bad_recall"].content[0].text
    assert not out["big_recall"].is_error  # the seed clamps a big limit (to 100) instead of refusing it
    assert (out["feedback"]["updated"], out["feedback"]["promoted"]) == (2, 0)
    assert out["bad_feedback"].is_error
    missing = out["missing_block"]  # the seed: null when the block does not exist
    assert not missing.is_error and missing.content == [] and missing.structured_content == {"result": None}
    assert {k: out["set1"][k] for k in ("version",)} == {"version": 1} and out["set2"]["version"] == 2
    assert out["set2"]["id"] == out["set1"]["id"]
    assert out["get"]["content"] == "Sprint 15" and out["get"]["lastWriter"] == "ops-agent"
    assert out["get"]["version"] == 2 and out["get"]["updatedAt"] == "2026-11-22T10:15:00Z"
    assert out["bad_block"].is_error and "block name '../etc' is not valid" in out["bad_block"].content[0].text
    assert out["candidates"]["status"] == "candidates" and len(out["candidates"]["matches"]) == 2
    assert out["candidates"]["message"] == "Multiple matches found. Specify memoryId to forget."
    assert out["forget"] == {"status": "deleted", "id": redis["memory_id"], "text": "Redis default port is 6379",
                             "path": redis["path"]}
    assert "deleted: true\n" in (vault_path / redis["path"]).read_text()
    assert out["again"].is_error and "already forgotten" in out["again"].content[0].text
    assert out["unknown"].content[0].text == "Error: memoryId: no memory matches 'deadbeef'; find the id with search_memory"
    assert out["neither"].is_error and "at least one of memoryId or query" in out["neither"].content[0].text
    assert [r["text"] for r in out["after"]["results"]] == ["Redis cluster bus port is 16379"]
    text = (vault_path / "memory/blocks/block-project_status.md").read_text()
    assert "version: 2\nlast_writer: ops-agent\n" in text


def test_store_toma_and_hooks_over_stdio(vault_path, tmp_path):
    transcript = "User: Remember that we always deploy on Tuesdays.\nAssistant: Noted.\nUser: Thanks, that is right."

    async def scenario(c: Any, init: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["store"] = data(await c.call_tool("memory_store", {"text": "Redis cluster migrated to port 6380",
                                                               "importance": 0.8, "category": "episodic",
                                                               "eventTime": "2024-01-15T10:00:00Z"}))
        out["dup"] = data(await c.call_tool("memory_store", {"text": "Redis cluster migrated to port 6380"}))
        out["private"] = data(await c.call_tool("memory_store", {"text": "My jump host is jh-7", "private": True}))
        out["bad_store"] = await c.call_tool("memory_store", {"text": "x", "category": "gossip"})
        out["bad_time"] = await c.call_tool("memory_store", {"text": "x", "eventTime": "yesterday"})
        out["toma"] = data(await c.call_tool("memory_toma", {"agentId": "ops-agent", "topic": "redis port"}))
        out["context"] = data(await c.call_tool("before_agent_start", {"prompt": "Which port does Redis use?"}))
        out["end"] = data(await c.call_tool("agent_end", {"transcript": transcript}))
        out["bad_end"] = await c.call_tool("agent_end", {"transcript": "   "})
        out["path_end"] = await c.call_tool("agent_end", {"transcript": json.dumps({"transcript_path": "/etc/passwd"})})
        return out

    out = session_run(vault_path, scenario, "--agent", "ops-agent", errlog=tmp_path / "err.txt")
    s = out["store"]
    assert {k: s[k] for k in ("status", "linkedCount", "classification", "memoryType", "priorityScore",
                              "confidenceTag")} == {"status": "created", "linkedCount": 0, "classification": "public",
                                                    "memoryType": "episodic", "priorityScore": 0.8,
                                                    "confidenceTag": "Grounded"}
    assert "Redis" in s["entities"]  # from the enrichment layer
    assert s["eventTime"] == "2024-01-15T10:00:00Z" and s["ingestedAt"] == "2026-11-22T10:15:00Z"
    assert "agent: ops-agent\n" in (vault_path / s["path"]).read_text()
    assert out["dup"]["status"] == "duplicate" and out["dup"]["duplicateOf"] == s["id"]
    assert out["private"]["classification"] == "private"
    assert out["bad_store"].is_error and "category" in out["bad_store"].content[0].text
    assert out["bad_time"].content[0].text == (
        "Error: eventTime 'yesterday' is not ISO 8601; write it like 2024-01-15T10:00:00Z")
    assert out["toma"]["agentId"] == "ops-agent" and out["toma"]["knowledgeProfile"]["totalMemories"] == 2
    assert [m["score"] > 0 for m in out["toma"]["memories"]] == [True]
    ctx = out["context"]["context"]
    assert ctx.startswith('<memory-context source="vaultmem" agent="ops-agent">') and "port 6380" in ctx
    end = out["end"]
    assert end["turns"] == 3 and end["capturedCount"] == 1 and end["feedbackSignal"] == "positive"
    assert end["feedback"]["updated"] == 1  # the memory before_agent_start recalled
    assert (vault_path / end["snapshot"]["path"]).is_file()
    assert out["bad_end"].is_error and "the transcript has no messages" in out["bad_end"].content[0].text
    assert out["path_end"].is_error and out["path_end"].content[0].text == (
        "Error: agent_end takes the transcript's text, not a transcript_path; send the session's messages "
        "(JSONL, a JSON message list or User:/Assistant: text)")
    assert not any("root:" in p.read_text() for p in (vault_path / "memory").rglob("*.md"))


def test_memory_consolidate_over_stdio_archives_a_near_duplicate(vault_path, tmp_path):
    from vaultmem.store import MemoryStore

    store = MemoryStore(vault_path)
    for _ in range(2):  # the same fact twice (dedupe off: two notes on disk)
        store.save("The staging database runs PostgreSQL 16 on port 5433", dedupe=False)
    store.close()

    async def scenario(c: Any, init: Any) -> dict[str, Any]:
        return {"report": data(await c.call_tool("memory_consolidate", {"batchSize": 100})),
                "bad": await c.call_tool("memory_consolidate", {"batchSize": 0}),
                "big": await c.call_tool("memory_consolidate", {"batchSize": 5000})}

    out = session_run(vault_path, scenario, errlog=tmp_path / "err.txt")
    report = out["report"]
    assert {k: report[k] for k in ("contradictions", "nearDuplicatesMerged", "processedCount")} == {
        "contradictions": 0, "nearDuplicatesMerged": 1, "processedCount": 2}
    assert isinstance(report["durationMs"], int)
    assert len(list((vault_path / "memory/stm").glob("*.md"))) == 1
    assert len(list((vault_path / "memory/archive").glob("*.md"))) == 1  # archived, not deleted
    assert out["bad"].is_error and "batchSize" in out["bad"].content[0].text
    assert not out["big"].is_error  # clamped to the seed's maximum, 1000
