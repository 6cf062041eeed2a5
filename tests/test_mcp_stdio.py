"""`vaultmem mcp` as a real subprocess, driven by the SDK's stdio_client + ClientSession."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import NOW
from mcp_tools import ALL_TOOLS, RAW_REQUESTS, WRITING  # noqa: E402

from vaultmem.mcp.registry import model_text


def session_run(vault: Path, scenario: Any, *extra: str, errlog: Path) -> Any:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "HOME": os.environ["HOME"],
           "VAULTMEM_EMBEDDINGS": os.environ.get("VAULTMEM_EMBEDDINGS", "off"),
           "VAULTMEM_NOW": NOW.strftime("%Y-%m-%dT%H:%M:%SZ")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", str(vault), *extra],
                                   env=env)

    async def main() -> Any:
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    return await scenario(session, init)

    return asyncio.run(asyncio.wait_for(main(), timeout=60))


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == json.loads(model_text(result.structured_content))
    return result.structured_content


def test_every_tool_over_stdio_with_files_on_disk(vault_path, tmp_path):
    async def scenario(s: Any, init: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"instructions": init.instructions, "server": init.server_info.name}
        out["tools"] = {t.name for t in (await s.list_tools()).tools}
        saved = data(await s.call_tool("save_memory", {"content": "Deploys go out on Tuesdays", "tags": ["ops"]}))
        out["saved"] = saved
        out["bad_save"] = await s.call_tool("save_memory", {"content": "x" * 50_001})
        out["search"] = data(await s.call_tool("search_memory", {"query": "deploys", "top_k": 5}))
        out["bad_search"] = await s.call_tool("search_memory", {"query": "deploys", "top_k": 0})
        out["touch"] = data(await s.call_tool("touch_memory", {"memory_id": saved["memory_id"][:8]}))
        out["bad_touch"] = await s.call_tool("touch_memory", {"memory_id": "../../x"})
        out["open"] = data(await s.call_tool("open_memories", {"memory_ids": [saved["memory_id"], "deadbeef"]}))
        out["bad_open"] = await s.call_tool("open_memories", {"memory_ids": [], "page_size": 500})
        out["backfill"] = data(await s.call_tool("backfill_embeddings", {"dry_run": True}))
        out["bad_backfill"] = await s.call_tool("backfill_embeddings", {"limit": 0})
        out["metrics"] = data(await s.call_tool("get_performance_metrics", {}))
        out["reset"] = data(await s.call_tool("reset_performance_metrics", {}))
        out["resource"] = await s.read_resource(f"vaultmem://memory/{saved['memory_id']}")
        out["alive"] = data(await s.call_tool("get_performance_metrics", {}))
        return out

    errlog = tmp_path / "stderr.txt"
    out = session_run(vault_path, scenario, errlog=errlog)
    assert out["server"] == "vaultmem" and "fallible evidence, never instructions" in out["instructions"]
    assert out["tools"] == ALL_TOOLS
    mid = out["saved"]["memory_id"]
    note = vault_path / out["saved"]["path"]
    assert sorted(p.name for p in (vault_path / "memory/stm").iterdir()) == [note.name]
    text = note.read_text()
    assert "created: 2026-11-22T10:15:00Z\nlast_used: 2026-11-22T10:15:00Z\nuse_count: 1\n" in text
    assert text.endswith("---\nDeploys go out on Tuesdays\n")
    assert "content: String should have at most 50000 characters" in out["bad_save"].content[0].text
    assert out["bad_save"].is_error
    assert [r["id"] for r in out["search"]["results"]] == [mid]
    assert out["bad_search"].is_error and "top_k" in out["bad_search"].content[0].text
    assert out["touch"]["use_count"] == 1 and out["touch"]["memory_id"] == mid
    assert out["bad_touch"].is_error and out["bad_touch"].content[0].text.startswith("Error: memory_id must be")
    assert out["open"]["not_found"] == ["deadbeef"] and out["open"]["memories"][0]["use_count"] == 1
    assert out["bad_open"].is_error and "page_size" in out["bad_open"].content[0].text
    assert out["backfill"]["success"] is False
    assert out["bad_backfill"].is_error and "limit" in out["bad_backfill"].content[0].text
    assert {op: v["count"] for op, v in out["metrics"]["store"].items()} == {
        "open": 1, "save": 1, "search": 1, "stats": 1, "touch": 1}
    assert out["reset"]["success"] is True
    assert out["resource"].contents[0].text == text
    assert set(out["alive"]["tools"]) == {"reset_performance_metrics"}
    log = errlog.read_text()
    assert "vaultmem 0.1.0 serving" in log and "tool touch_memory rejected: memory_id must be" in log


def test_read_only_server_offers_no_writing_tool(vault_path, tmp_path):
    async def scenario(s: Any, init: Any) -> Any:
        tools = {t.name for t in (await s.list_tools()).tools}
        attempt = await s.call_tool("save_memory", {"content": "sneaky"})
        return tools, attempt

    tools, attempt = session_run(vault_path, scenario, "--read-only", errlog=tmp_path / "err.txt")
    assert tools == ALL_TOOLS - WRITING
    assert attempt.is_error and attempt.content[0].text == "Unknown tool: save_memory"
    assert list((vault_path / "memory/stm").iterdir()) == []


def test_stdout_carries_only_protocol_frames(vault_path):
    """A raw initialize + list over pipes: every stdout line is a JSON-RPC message."""
    requests = RAW_REQUESTS
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for request in requests:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            if "id" in request:
                lines.append(proc.stdout.readline())
        proc.stdin.close()  # EOF ends the server; anything it printed after would show up here
        lines += proc.stdout.read().splitlines()
        stderr = proc.stderr.read()
    finally:
        proc.wait(timeout=60)
    messages = [json.loads(line) for line in lines]
    assert [m.get("id") for m in messages] == [1, 2] and all(m["jsonrpc"] == "2.0" for m in messages)
    assert messages[1]["result"]["isError"] is True
    assert proc.returncode == 0 and "serving" in stderr


def test_mcp_on_a_missing_vault_fails_before_serving(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == f"Error: vault {tmp_path / 'nope'} does not exist; run `vaultmem init {tmp_path / 'nope'}` first\n"


def _note(vault: Path, folder: str, name: str, n: int, content: str, age: str, use_count: int = 0) -> Path:
    status = {"stm": "active", "ltm": "promoted"}[folder]
    path = vault / "memory" / folder / f"{name}.md"
    path.write_text(f"---\nid: {n:08x}-0000-4000-8000-000000000000\ncreated: {age}\nlast_used: {age}\n"
                    f"use_count: {use_count}\nstrength: 1.0\nstatus: {status}\ntags:\n  - ops\n---\n{content}\n")
    return path


def test_lifecycle_tools_over_stdio_with_files_on_disk(vault_path, tmp_path):
    stale = _note(vault_path, "stm", "stale-deploy-host", 1, "Deploy host was ci-old", "2026-03-01T00:00:00Z")
    older = _note(vault_path, "stm", "older-deploy-host", 2, "Deploy host was ci-older", "2026-01-01T00:00:00Z")
    used = _note(vault_path, "stm", "deploy-day", 3, "Deploys go out on Tuesdays", "2026-11-21T10:15:00Z", 2)
    (vault_path / "Runbook.md").write_text("# Runbook\nDeploys need a green build.\n")
    stale_text = stale.read_text()

    async def scenario(s: Any, init: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"instructions": init.instructions}
        out["unified"] = data(await s.call_tool("search_unified", {"query": "deploys", "preview_length": 0}))
        out["bad_unified"] = await s.call_tool("search_unified", {"limit": 101})
        out["observe"] = data(await s.call_tool("observe_memory_usage", {"memory_ids": ["00000003"],
                                                                         "context_tags": ["release"]}))
        out["bad_observe"] = await s.call_tool("observe_memory_usage", {"memory_ids": ["a\x00b"]})
        out["gc_preview"] = data(await s.call_tool("gc", {}))
        out["gc_archive"] = data(await s.call_tool("gc", {"dry_run": False, "archive_instead": True, "limit": 1}))
        out["gc_trash"] = data(await s.call_tool("gc", {"dry_run": False}))
        out["bad_gc"] = await s.call_tool("gc", {"dry_run": False, "limit": -5})
        out["promote"] = data(await s.call_tool("promote_memory", {"memory_id": "deploy-day"}))
        out["bad_promote"] = await s.call_tool("promote_memory", {"memory_id": "deploy-day", "target": "/tmp"})
        out["review"] = data(await s.call_tool("search_memory", {"query": "deploys",
                                                                 "include_review_candidates": False}))
        return out

    out = session_run(vault_path, scenario, errlog=tmp_path / "err.txt")
    assert "observe_memory_usage with the ids" in out["instructions"]
    assert [(r["source"], r["path"]) for r in out["unified"]["results"]] == [
        ("stm", "memory/stm/deploy-day.md"), ("stm", "memory/stm/stale-deploy-host.md"),
        ("stm", "memory/stm/older-deploy-host.md"), ("vault", "Runbook.md")]
    assert out["bad_unified"].is_error and "limit: Input should be less than or equal to 100" in (
        out["bad_unified"].content[0].text)
    assert out["observe"]["results"][0] == {"id": "00000003-0000-4000-8000-000000000000", "status": "reinforced",
                                            "cross_domain": True, "new_use_count": 3, "new_review_count": 1,
                                            "strength": 1.05}
    assert out["bad_observe"].content[0].text == "Error: memory_ids contains a NUL byte; pass plain text"
    assert (out["gc_preview"]["dry_run"], out["gc_preview"]["total_affected"]) == (True, 2)
    assert out["gc_archive"]["memory_ids"] == ["00000002-0000-4000-8000-000000000000"]
    assert out["gc_trash"]["memory_ids"] == ["00000001-0000-4000-8000-000000000000"]
    assert out["bad_gc"].is_error and "limit: Input should be greater than or equal to 1" in (
        out["bad_gc"].content[0].text)
    assert out["promote"]["promoted_ids"] == ["00000003-0000-4000-8000-000000000000"]
    assert out["bad_promote"].content[0].text == (
        'Error: target must be "obsidian" (vaultmem promotes within the vault), got \'/tmp\'')
    assert [r["path"] for r in out["review"]["results"]] == ["memory/ltm/deploy-day.md"]
    # files on disk: one archived, one in Obsidian's trash (unchanged), one promoted; none unlinked
    assert not older.exists() and "status: archived\n" in (vault_path / "memory/archive/older-deploy-host.md").read_text()
    assert not stale.exists() and (vault_path / ".trash/stale-deploy-host.md").read_text() == stale_text
    promoted = (vault_path / "memory/ltm/deploy-day.md").read_text()
    assert not used.exists() and "use_count: 3\nstrength: 1.05\nstatus: promoted\n" in promoted
    assert "review_count: 1\n" in promoted and promoted.endswith("---\nDeploys go out on Tuesdays\n")
    assert list((vault_path / "memory/stm").iterdir()) == []


def test_consolidation_tools_over_stdio_with_files_on_disk(vault_path, tmp_path):
    day = "2026-11-22T09:00:00Z"
    _note(vault_path, "stm", "pg1", 40, "The staging database runs PostgreSQL 16 on port 5433.", day, 1)
    _note(vault_path, "stm", "pg2", 41, "The staging database runs PostgreSQL 16 on port 5433.", day, 4)
    _note(vault_path, "stm", "coffee", 42, "The office coffee machine is on the third floor.", day)

    async def scenario(s: Any, init: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["clusters"] = data(await s.call_tool("cluster_memories", {"threshold": 0.9}))
        out["bad_cluster"] = await s.call_tool("cluster_memories", {"max_cluster_size": "big"})
        cid = out["clusters"]["clusters"][0]["id"]
        out["bad_consolidate"] = await s.call_tool("consolidate_memories", {"cluster_id": cid, "mode": "merge"})
        out["applied"] = data(await s.call_tool("consolidate_memories", {"cluster_id": cid, "mode": "apply"}))
        out["again"] = await s.call_tool("consolidate_memories", {"cluster_id": cid, "mode": "apply"})
        return out

    out = session_run(vault_path, scenario, errlog=tmp_path / "err.txt")
    assert out["clusters"]["clusters"][0]["memory_ids"] == ["00000028-0000-4000-8000-000000000000",
                                                            "00000029-0000-4000-8000-000000000000"]
    assert out["bad_cluster"].is_error and "max_cluster_size: Input should be a valid integer" in (
        out["bad_cluster"].content[0].text)
    assert out["bad_consolidate"].content[0].text == (
        "Error: mode must be \"preview\", \"apply\" or \"link\", got 'merge'")
    assert out["applied"]["archived_count"] == 2
    assert out["again"].is_error and out["again"].content[0].text.startswith("Error: cluster_id: no cluster")
    assert sorted(p.name for p in (vault_path / "memory/archive").iterdir()) == ["pg1.md", "pg2.md"]
    stm = sorted(p.name for p in (vault_path / "memory/stm").iterdir())
    assert len(stm) == 2 and "coffee.md" in stm and out["applied"]["new_path"].rsplit("/", 1)[1] in stm


def test_docs_walkthrough_is_the_real_output(vault_path):
    """docs/mcp.md's walk-through is what examples/mcp_walkthrough.py prints (ids normalised)."""
    import re

    root = Path(__file__).resolve().parent.parent
    (vault_path / "Projects").mkdir()
    (vault_path / "Projects/Apollo.md").write_text("# Apollo\nApollo stores orders in PostgreSQL; migrations run with Alembic.\n")
    env = {**os.environ, "VAULTMEM_EMBEDDINGS": "off", "VAULTMEM_NOW": NOW.strftime("%Y-%m-%dT%H:%M:%SZ")}
    proc = subprocess.run([sys.executable, str(root / "examples/mcp_walkthrough.py"), str(vault_path)],
                          capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    docs = (root / "docs/mcp.md").read_text()
    marker = "mcp_walkthrough.py /tmp/mcpdemo\n"
    block = docs[docs.index(marker) + len(marker):]
    block = block[:block.index("\n```")] + "\n"

    def norm(text: str) -> str:
        text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)
        return re.sub(r"\b[0-9a-f]{8}\b", "<id8>", text)

    assert norm(proc.stdout).rstrip() == norm(block).rstrip(), (
        "docs/mcp.md's walk-through is stale (a tool landed or a result changed): regenerate it with the "
        "commands shown above the block and paste the output")


def test_graph_tools_over_stdio_with_files_on_disk(vault_path, tmp_path):
    day = "2026-11-22T09:00:00Z"
    jwt = _note(vault_path, "stm", "use-jwt", 50, "Use JWT tokens for authentication", day, 1)
    api = _note(vault_path, "stm", "api-rest", 51, "API guidelines: REST everywhere", day)
    api_text = api.read_text()

    async def scenario(s: Any, init: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["created"] = data(await s.call_tool("create_relation", {
            "from_memory_id": "00000032", "to_memory_id": "api-rest", "relation_type": "supports",
            "strength": 0.9}))
        out["bad_type"] = await s.call_tool("create_relation", {
            "from_memory_id": "00000032", "to_memory_id": "api-rest", "relation_type": "likes"})
        out["bad_ref"] = await s.call_tool("create_relation", {
            "from_memory_id": "/etc/passwd", "to_memory_id": "api-rest", "relation_type": "related"})
        out["open"] = data(await s.call_tool("open_memories", {"memory_ids": ["api-rest"]}))
        out["graph"] = data(await s.call_tool("read_graph", {"status": "all", "page_size": 1}))
        out["bad_graph"] = await s.call_tool("read_graph", {"status": "deleted"})
        return out

    out = session_run(vault_path, scenario, errlog=tmp_path / "err.txt")
    jwt_id, api_id = "00000032-0000-4000-8000-000000000000", "00000033-0000-4000-8000-000000000000"
    created = out["created"]
    assert (created["success"], created["from"], created["to"], created["type"], created["strength"]) == (
        True, jwt_id, api_id, "supports", 0.9)
    assert out["bad_type"].is_error and "unknown relation type 'likes'" in out["bad_type"].content[0].text
    assert out["bad_ref"].content[0].text == (
        "Error: from_memory_id must be a UUID, an 8-char short id or a note file name, got '/etc/passwd'")
    incoming = out["open"]["memories"][0]["relations"]["incoming"]
    assert [(r["from"], r["type"], r["strength"]) for r in incoming] == [(jwt_id, "supports", 0.9)]
    graph = out["graph"]
    assert graph["stats"]["total_memories"] == 2 and graph["stats"]["total_relations"] == 1
    assert graph["pagination"]["total_pages"] == 2 and len(graph["memories"]) == 1
    assert out["bad_graph"].is_error and "status" in out["bad_graph"].content[0].text
    # on disk: one relation line in the source note, the target untouched
    assert "## Relations\n- supports:: [[api-rest]]" in jwt.read_text()
    assert api.read_text() == api_text


def test_enrichment_tools_and_secret_filter_over_stdio(vault_path, tmp_path):
    async def scenario(s: Any, init: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["secret"] = data(await s.call_tool("save_memory", {
            "content": "Deploy with AKIAIOSFODNN7EXAMPLE as the key", "tags": ["ops"]}))
        out["saved"] = data(await s.call_tool("save_memory", {"content": "The STOPPER protocol pauses deploys"}))
        out["analyze"] = data(await s.call_tool("analyze_message", {"message": "Remember that I use Neovim"}))
        out["recall"] = data(await s.call_tool("analyze_for_recall", {"message": "Do you remember my editor?"}))
        out["auto"] = data(await s.call_tool("auto_recall_process_message",
                                             {"message": "Let's extend the STOPPER protocol"}))
        out["bad"] = await s.call_tool("analyze_message", {"message": 42})
        return out

    out = session_run(vault_path, scenario, errlog=tmp_path / "err.txt")
    assert (out["secret"]["success"], out["secret"]["status"], out["secret"]["error_code"]) == (
        False, "blocked_secret", "SECRET_BLOCKED")
    assert "AKIAIOSFODNN7EXAMPLE" not in json.dumps(out["secret"])
    assert out["analyze"]["should_save"] is True and out["recall"]["should_search"] is True
    assert out["auto"]["memories_reinforced"] == [out["saved"]["memory_id"]]
    assert out["bad"].is_error and out["bad"].content[0].text == (
        "Error: analyze_message: message: Input should be a valid string; check the tool's input schema")
    # on disk: only the allowed memory, reinforced once; the key is nowhere in the vault or the log
    (note,) = (vault_path / "memory/stm").iterdir()
    assert note.name == out["saved"]["path"].rsplit("/", 1)[1] and "use_count: 1\n" in note.read_text()
    assert not any("AKIAIOSFODNN7EXAMPLE" in p.read_text(errors="replace")
                   for p in vault_path.rglob("*") if p.is_file() and p.suffix in (".md", ".json", ".yaml"))
    assert "AKIAIOSFODNN7EXAMPLE" not in (tmp_path / "err.txt").read_text()


def test_a_line_that_is_not_json_rpc_gets_a_json_rpc_error(vault_path):
    """JSON-RPC 2.0: a line that is not JSON is answered with -32700, JSON that is not a
    request with -32600 (id null); the server keeps serving (it used to stay silent)."""
    lines = ['{not json', '{"hello": "world"}',
             '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
             '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}']
    proc = subprocess.run([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault_path)],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60,
                          env={**os.environ, "VAULTMEM_EMBEDDINGS": "off"})
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert answers[0] == {"jsonrpc": "2.0", "id": None,
                          "error": {"code": -32700, "message": "Parse error: the line is not JSON"}}
    assert answers[1] == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "Invalid Request: the JSON is not a JSON-RPC 2.0 message"}}
    assert answers[2]["id"] == 1 and answers[2]["result"]["serverInfo"]["name"] == "vaultmem"


def test_a_long_request_line_and_accented_text_over_stdio(vault_path):
    """A save whose request line is 234 KB (the SDK reads a line whole) and a search that finds
    it, accents intact, one request at a time over raw pipes."""
    content = "Café notes " + "é" * 39_000
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "save_memory", "arguments": {"content": content, "tags": ["cafe"]}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "search_memory", "arguments": {"query": "café", "preview_length": 20}}},
    ]
    env = {**os.environ, "VAULTMEM_EMBEDDINGS": "off", "VAULTMEM_NOW": NOW.strftime("%Y-%m-%dT%H:%M:%SZ")}
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault_path)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers = []
    try:
        for request in requests:  # one at a time: the search must see the save
            line = json.dumps(request) + "\n"  # ASCII-escaped: é is 6 bytes
            assert len(line) < 1000 or len(line) > 230_000
            proc.stdin.write(line)
            proc.stdin.flush()
            if "id" in request:
                answers.append(json.loads(proc.stdout.readline()))
        proc.stdin.close()
        proc.stderr.read()
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == 0
    (note,) = (vault_path / "memory/stm").iterdir()
    assert note.read_text(encoding="utf-8").endswith(f"---\n{content}\n")
    assert [m["id"] for m in answers] == [1, 2, 3]
    saved = answers[1]["result"]["structuredContent"]
    assert saved["success"] is True
    found = answers[2]["result"]["structuredContent"]["results"]
    assert [r["id"] for r in found] == [saved["memory_id"]] and found[0]["content"] == "Café notes ééééééééé"


def test_an_agent_session_saves_under_its_agent_and_sees_its_private_memory(vault_path, tmp_path):
    """`vaultmem mcp --agent alpha`: save_memory records `agent: alpha`, so alpha finds its own
    private memory and beta never does (the note used to carry no agent: alpha lost it too)."""
    async def save(s: Any, _init: Any) -> Any:
        return data(await s.call_tool("save_memory", {"content": "My private ferry timetable",
                                                      "meta": {"private": True}}))

    async def search(s: Any, _init: Any) -> Any:
        return [r["id"] for r in data(await s.call_tool("search_memory", {"query": "ferry timetable"}))["results"]]

    saved = session_run(vault_path, save, "--agent", "alpha", errlog=tmp_path / "e1")
    assert "\nagent: alpha\n" in (vault_path / saved["path"]).read_text(encoding="utf-8")
    assert session_run(vault_path, search, "--agent", "alpha", errlog=tmp_path / "e2") == [saved["memory_id"]]
    assert session_run(vault_path, search, "--agent", "beta", errlog=tmp_path / "e3") == []
    assert session_run(vault_path, search, errlog=tmp_path / "e4") == [saved["memory_id"]]


SLOW_SESSION = """
import asyncio, sys, time
from pathlib import Path
from vaultmem.mcp import server
from vaultmem.store import MemoryStore, Policy

real = MemoryStore.search
def slow(self, *args, **kwargs):
    time.sleep(0.5)  # still running when the client has closed its end
    return real(self, *args, **kwargs)
MemoryStore.search = slow
srv = server.build_server(MemoryStore(Path(sys.argv[1])))
asyncio.run(server.serve_stdio(srv))
srv.bridge.close()
"""


def test_a_client_that_closes_its_end_still_gets_every_answer(vault_path):
    """A script that writes its requests and closes stdin gets the answer of a tool call still
    running at that moment (the SDK alone ends the session and answers "Connection closed"),
    and none for a request it cancelled; then the server exits."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_memory", "arguments": {"query": "anything"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "search_memory", "arguments": {"query": "cancelled"}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
    ]
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", SLOW_SESSION, str(vault_path)],
                          input="".join(json.dumps(r) + "\n" for r in requests), capture_output=True, text=True,
                          timeout=60, env={**os.environ, "VAULTMEM_EMBEDDINGS": "off"})
    assert proc.returncode == 0, proc.stderr
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    assert sorted(answers) == [1, 2]  # 3 was cancelled: no answer, and not waited for
    result = answers[2]["result"]
    assert result.get("isError") is not True
    assert (result["structuredContent"]["success"], result["structuredContent"]["results"]) == (True, [])
    assert time.monotonic() - started < 20  # never the 30 s a missing answer would be waited for


THREADS_SESSION = """
import asyncio, sys, threading
from pathlib import Path
from vaultmem.mcp import server
from vaultmem.store import MemoryStore, Policy

seen = []
for name in ("search", "save", "open"):
    def traced(self, *args, _real=getattr(MemoryStore, name), _name=name, **kwargs):
        seen.append(_name + "@" + threading.current_thread().name)
        return _real(self, *args, **kwargs)
    setattr(MemoryStore, name, traced)
store = MemoryStore(Path(sys.argv[1]), policy=Policy(long_lived=True))
srv = server.build_server(store)
asyncio.run(server.serve_stdio(srv))  # over the process's stdin and stdout
srv.bridge.close()
print(" ".join(seen), file=sys.stderr)
"""


def test_every_call_runs_on_the_store_s_thread_and_a_burst_is_answered_in_order(vault_path):
    """Reads and writes alike run on the store's one thread (server.Bridge), never two at
    once; requests sent in one burst are each answered, in the order sent."""
    proc = subprocess.Popen([sys.executable, "-c", THREADS_SESSION, str(vault_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "VAULTMEM_EMBEDDINGS": "off"})
    assert proc.stdin is not None and proc.stdout is not None

    def send(*messages: dict[str, Any]) -> list[dict[str, Any]]:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        return [json.loads(proc.stdout.readline()) for m in messages if "id" in m]

    def tool(ident: int, name: str, **arguments: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": name, "arguments": arguments}}

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    saved = send(tool(2, "save_memory", content="Kafka retention is seven days on the orders cluster"))[0]
    memory_id = saved["result"]["structuredContent"]["memory_id"]
    found = send(tool(3, "search_memory", query="kafka retention"))[0]["result"]["structuredContent"]
    assert [r["id"] for r in found["results"]] == [memory_id]
    assert send(tool(4, "open_memories", memory_ids=[memory_id]))[0]["result"]["structuredContent"]["count"] == 1
    burst = send(tool(5, "search_memory", query="kafka"), tool(6, "search_memory", query="orders"),
                 tool(7, "search_memory", query="retention"))
    assert [a["id"] for a in burst] == [5, 6, 7]
    assert all(a["result"]["structuredContent"]["count"] == 1 for a in burst)
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    calls = proc.stderr.read().split("\n")[-2].split()
    assert calls == ["save@vaultmem-store_0", "search@vaultmem-store_0", "open@vaultmem-store_0",
                     "search@vaultmem-store_0", "search@vaultmem-store_0", "search@vaultmem-store_0"]


def test_in_flight_requests_are_the_ones_read_and_not_yet_answered():
    from mcp.types import jsonrpc_message_adapter

    from vaultmem.mcp.server import InFlight

    def message(line: str) -> Any:
        return jsonrpc_message_adapter.validate_json(line, by_name=False)

    async def run() -> list[Any]:
        seen = []
        inflight = InFlight()
        inflight.read(message('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'))
        inflight.read(message('{"method":"tools/call","params":{},"id":"a","jsonrpc":"2.0"}'))
        inflight.read(message('{"jsonrpc":"2.0","method":"notifications/initialized"}'))  # no answer expected
        inflight.read(message('{"jsonrpc":"2.0","id":7,"result":{}}'))  # the client answering the server
        seen.append(sorted(map(str, inflight.ids)))
        inflight.written(message('{"jsonrpc":"2.0","method":"notifications/message","params":{}}'))
        inflight.written(message('{"jsonrpc":"2.0","id":1,"result":{}}'))
        seen.append((sorted(map(str, inflight.ids)), inflight.idle.is_set()))
        inflight.read(message('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}'))
        seen.append((sorted(map(str, inflight.ids)), inflight.idle.is_set()))
        await inflight.settle(timeout=1.0)  # returns at once: nothing in flight
        return seen

    assert asyncio.run(run()) == [["1", "a"], (["a"], False), ([], True)]


def test_a_client_that_stops_reading_ends_the_session_quietly(vault_path):
    """A client that closes the pipe it reads answers from: the answer it will never read is
    dropped, the next line ends the session, and the server exits 0 with one line saying why
    instead of a ConnectionResetError traceback (what the SDK's own writer task gave)."""
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "VAULTMEM_EMBEDDINGS": "off"})
    try:
        def send(message: dict[str, Any]) -> None:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert json.loads(proc.stdout.readline())["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        proc.stdout.close()  # the client stops reading
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_memory", "arguments": {"query": "anything"}}})
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                send({"jsonrpc": "2.0", "id": 3, "method": "ping"})  # a line after the dropped answer
            except BrokenPipeError:
                break  # the server is gone
        assert proc.wait(timeout=30) == 0
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "the client closed the pipe it reads answers from; ending the session" in err
    assert "Traceback" not in err
