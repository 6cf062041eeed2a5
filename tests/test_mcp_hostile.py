"""Hostile input for every registered tool: an isError result, the vault unchanged, still serving.

Generated from each tool's own JSON schema, so a newly wired tool is covered automatically:
- a value of the wrong JSON type for every parameter;
- a NUL byte in every text parameter (and in list items);
- a 10,000-character string for every text parameter bounded below that;
- `../` paths, absolute paths, NUL bytes and 10,000-character strings for every id parameter.
A tool with required parameters needs a valid baseline in BASE_ARGS (the test says so).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from vaultmem.mcp.server import build_server, registered

ID = "00000001-0000-4000-8000-000000000000"
ID_PARAMS = {"memory_id", "memory_ids", "from_memory_id", "to_memory_id", "cluster_id", "memoryId"}
# Valid values for required parameters, so each case breaks exactly one parameter.
BASE_ARGS: dict[str, dict[str, Any]] = {
    "save_memory": {"content": "a harmless fact"},
    "touch_memory": {"memory_id": ID},
    "open_memories": {"memory_ids": [ID]},
    "observe_memory_usage": {"memory_ids": [ID]},
    "promote_memory": {"memory_id": ID, "dry_run": True},
    "gc": {"dry_run": False, "archive_instead": True},
    "create_relation": {"from_memory_id": ID, "to_memory_id": ID, "relation_type": "related"},
    "analyze_message": {"message": "I prefer tea"},
    "analyze_for_recall": {"message": "what did I say about tea?"},
    "auto_recall_process_message": {"message": "tea"},
    # Mnemosyne tools
    "memory_recall": {"query": "deploy host"},
    "memory_store": {"text": "a harmless fact"},
    "memory_block_get": {"name": "project_status"},
    "memory_block_set": {"name": "project_status", "content": "green"},
    "memory_feedback": {"signal": "positive", "memoryId": ID},
    "memory_toma": {"agentId": "devops-agent", "topic": "deploys"},
    "memory_consolidate": {"batchSize": 100},
    "agent_end": {"transcript": "User: hi\nAssistant: hello"},
}
# A value of each JSON type; a parameter gets the first whose type it does not accept.
WRONG: list[tuple[set[str], Any]] = [({"integer", "number"}, 12345), ({"string"}, "many"), ({"object"}, {"a": 1})]
HOSTILE_IDS = ["../../etc/passwd", "/etc/passwd", "..", "C:\\Windows\\x", "a\x00b", "x" * 10_000]


def arms(prop: dict[str, Any]) -> list[dict[str, Any]]:
    return [arm for arm in prop.get("anyOf", [prop]) if arm.get("type") != "null"]


def cases(schema: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """(parameter, hostile value, why) for one tool's input schema."""
    out: list[tuple[str, Any, str]] = []
    for param, prop in schema.get("properties", {}).items():
        kinds = {arm["type"] for arm in arms(prop)}
        wrong = next(value for types, value in WRONG if not types & kinds)
        out.append((param, wrong, "wrong type"))
        text_arm = next((arm for arm in arms(prop) if arm["type"] == "string"), None)
        list_arm = next((arm for arm in arms(prop) if arm["type"] == "array"), None)
        if param in ID_PARAMS:
            for value in HOSTILE_IDS:
                out.append((param, [value] if text_arm is None else value, f"hostile id {value[:20]!r}"))
            continue
        if text_arm is not None:
            out.append((param, "a\x00b", "NUL byte"))
            if text_arm.get("maxLength", 10**9) < 10_000:
                out.append((param, "x" * 10_000, "10,000 characters"))
        if list_arm is not None and list_arm.get("items", {}).get("type") == "string":
            out.append((param, ["ok", "a\x00b"], "NUL byte in a list item"))
            if list_arm["items"].get("maxLength", 10**9) < 10_000:
                out.append((param, ["x" * 10_000], "10,000-character list item"))
    return out


def files(vault: Path) -> dict[str, bytes]:
    """Every file a person could see (the index under .vaultmem/ is a derived cache)."""
    return {str(p.relative_to(vault)): p.read_bytes() for p in sorted(vault.rglob("*"))
            if p.is_file() and ".vaultmem" not in p.relative_to(vault).parts}


@pytest.fixture
def hostile_vault(vault_path: Path) -> Path:
    # A stale memory (gc would take it), a used one (promotable), and a person's note.
    (vault_path / "memory/stm/target.md").write_text(
        f"---\nid: {ID}\ncreated: 2026-01-01T00:00:00Z\nlast_used: 2026-01-01T00:00:00Z\nuse_count: 6\n"
        "strength: 1.0\nstatus: active\ntags:\n  - ops\n---\nThe deploy host is ci-1\n")
    (vault_path / "Notes.md").write_text("# Notes\nA person's note.\n")
    return vault_path


@pytest.mark.parametrize("name", sorted(spec.name for spec in registered()))
def test_hostile_input_is_an_error_and_changes_no_file(store, hostile_vault, name):
    from mcp import Client

    server = build_server(store)
    before = files(hostile_vault)

    async def main() -> list[str]:
        problems = []
        async with Client(server) as client:
            schema = next(t.input_schema for t in (await client.list_tools()).tools if t.name == name)
            base = BASE_ARGS.get(name, {})
            missing = set(schema.get("required", [])) - set(base)
            assert not missing, f"add a valid baseline for {name}'s {sorted(missing)} to BASE_ARGS"
            for param, value, why in cases(schema):
                result = await client.call_tool(name, {**base, param: value})
                text = result.content[0].text if result.content else ""
                if not result.is_error:
                    problems.append(f"{param} ({why}): not an error: {text[:120]}")
                elif param not in text and not text.startswith("Error: memory_id"):
                    problems.append(f"{param} ({why}): message does not name it: {text[:160]}")
                if files(hostile_vault) != before:
                    problems.append(f"{param} ({why}): the vault changed")
                    return problems
            alive = await client.call_tool("get_performance_metrics", {})
            assert not alive.is_error
        return problems

    try:
        problems = asyncio.run(main())
    finally:
        server.bridge.close()
    assert problems == []
    assert files(hostile_vault) == before


def test_cases_cover_every_parameter_of_every_tool():
    """The generator yields at least a wrong-type case per parameter, and id attacks for id params."""
    schema = {"properties": {"memory_id": {"type": "string", "maxLength": 255},
                             "tags": {"anyOf": [{"type": "array", "items": {"type": "string", "maxLength": 100}},
                                                {"type": "null"}]},
                             "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
    got = [(param, why) for param, _value, why in cases(schema)]
    assert got == [("memory_id", "wrong type"), *[("memory_id", f"hostile id {v[:20]!r}") for v in HOSTILE_IDS],
                   ("tags", "wrong type"), ("tags", "NUL byte in a list item"), ("tags", "10,000-character list item"),
                   ("limit", "wrong type")]


@pytest.mark.parametrize("name", sorted(spec.name for spec in registered() if spec.writes_vault))
def test_read_only_server_refuses_every_writing_tool(store, hostile_vault, name):
    from mcp import Client

    server = build_server(store, read_only=True)
    before = files(hostile_vault)

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, BASE_ARGS.get(name, {}))

    try:
        result = asyncio.run(main())
    finally:
        server.bridge.close()
    assert result.is_error and result.content[0].text == f"Unknown tool: {name}"
    assert files(hostile_vault) == before
