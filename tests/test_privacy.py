"""Agent privacy, one rule below everything: another agent's private memory is invisible and
untouchable through every registered MCP tool and resource; the person (no agent) sees all.

The tool list is read from the server, and each tool's arguments are built from its input
schema, so a tool added later is covered without touching this file.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Clock

from vaultmem.base.config import load_settings
from vaultmem.core.model import visible_to
from vaultmem.mcp.server import URI_PREFIX, build_server
from vaultmem.storage.index import Record
from vaultmem.store import MemoryStore

MARK = "quokkahint"  # in alice's private notes' text and file names, nowhere else
QUERY = "ZEBRACODE bastion passphrase"


def make_vault(root: Path) -> dict[str, Any]:
    """alice's two near-identical private memories (old: gc and consolidation would act on
    them), bob's private memory, a shared memory linking to alice's, and alice's linking back."""
    clock = Clock()
    store = MemoryStore(root, clock=clock)
    store.init()
    a1 = store.save("Quokkahint: the ZEBRACODE bastion passphrase rotates monthly", agent="alice",
                    meta={"private": True}, tags=["ops"])
    a2 = store.save("Quokkahint: the ZEBRACODE bastion passphrase rotates every month", agent="alice",
                    meta={"private": True}, tags=["ops"], dedupe=False)
    b1 = store.save("Wombatnote: bob keeps the ZEBRACODE bastion checklist", agent="bob", meta={"private": True})
    shared = store.save("The ZEBRACODE bastion host is bastion-1 in eu-west", tags=["ops"])
    store.relate(shared["memory_id"], a1["memory_id"], "related")
    store.relate(a1["memory_id"], shared["memory_id"], "supports")
    store.close()
    return {"a1": a1, "a2": a2, "b1": b1, "shared": shared}


def run(server: Any, scenario: Any) -> Any:
    from mcp import Client

    async def main() -> Any:
        async with Client(server) as client:
            return await scenario(client)

    return asyncio.run(main())


def _value(name: str, schema: dict[str, Any], ids: dict[str, Any]) -> Any:
    """A value for one parameter that aims at alice's private memories."""
    types = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", [])}
    low = name.lower()
    if low in ("memory_ids",):
        return [ids["a1"]["memory_id"], ids["a2"]["memory_id"]]
    if low == "to_memory_id":
        return ids["shared"]["memory_id"]
    if low.endswith("memory_id") or low == "memoryid":
        return ids["a1"]["memory_id"]
    if low == "agentid":
        return "alice"
    if "enum" in schema:
        return schema["enum"][0]
    if "string" in types:
        return QUERY
    if "boolean" in types:
        return False
    if "integer" in types:
        return max(schema.get("minimum", 1), 1)
    if "number" in types:
        return schema.get("minimum", 0.5)
    if "array" in types:
        return [QUERY]
    if "object" in types:
        return {}
    raise AssertionError(f"no value for parameter {name}: {schema}")


def calls(tool: Any, ids: dict[str, Any]) -> list[dict[str, Any]]:
    """Argument sets for one tool: required and aiming parameters; then each enum value
    (modes, strategies); then every flag switched on and `dry_run` off; and, for tools that
    take a source and a target, alice's memory as the target too."""
    props: dict[str, Any] = tool.input_schema.get("properties", {})
    required = set(tool.input_schema.get("required", []))
    aiming = {n for n in props if n.lower().endswith(("memory_id", "memory_ids", "memoryid"))
              or n in ("agentId", "query", "message", "topic", "prompt")}
    base = {n: _value(n, props[n], ids) for n in props if n in required or n in aiming}
    out = [base]
    for name, schema in props.items():
        for choice in schema.get("enum", [])[1:]:
            out.append({**base, name: choice})
    flags = {n: n != "dry_run" for n, s in props.items() if s.get("type") == "boolean"}
    if flags:
        out.append({**base, **flags, **({"auto_detect": True} if "auto_detect" in props else {})})
    if "to_memory_id" in props:
        out.append({**base, "from_memory_id": ids["shared"]["memory_id"], "to_memory_id": ids["a1"]["memory_id"]})
    return out


def everything(server: Any, ids: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Every tool with every argument set, the resource list and alice's resources: the
    texts that came back, and which tool calls they came from."""

    async def scenario(client: Any) -> tuple[list[str], list[str]]:
        texts, where = [], []
        for tool in (await client.list_tools()).tools:
            for args in calls(tool, ids):
                result = await client.call_tool(tool.name, args)
                text = "\n".join(getattr(c, "text", "") for c in result.content)
                texts.append(text + json.dumps(result.structured_content or {}))
                where.append(f"{tool.name} {args}")
        listed = await client.list_resources()
        texts.append(json.dumps([r.model_dump(mode="json") for r in listed.resources]))
        where.append("resources/list")
        for key in ("a1", "a2"):
            try:
                read = await client.read_resource(f"{URI_PREFIX}{ids[key]['memory_id']}")
                texts.append(json.dumps(read.model_dump(mode="json")))
            except Exception as exc:  # the SDK raises the server's "not found" error
                texts.append(str(exc))
            where.append(f"resources/read {key}")
        return texts, where

    return run(server, scenario)


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if ".vaultmem" not in p.parts}


@pytest.mark.parametrize("read_only", [False, True])
def test_no_tool_or_resource_shows_or_changes_another_agents_private_memory(tmp_path, read_only):
    root = tmp_path / "vault"
    ids = make_vault(root)
    before = files(root)
    store = MemoryStore(root, settings=load_settings(root), clock=Clock())
    store.agent = "bob"
    server = build_server(store, read_only=read_only)
    try:
        texts, where = everything(server, ids)
    finally:
        server.bridge.close()
    leaks = [w for t, w in zip(texts, where, strict=True) if MARK in t.lower()]
    assert leaks == []
    after = files(root)
    for key in ("a1", "a2"):  # alice's notes: not one byte changed
        assert after[ids[key]["path"]] == before[ids[key]["path"]]
    # nothing bob's server wrote carries alice's text or a link to her notes
    assert [p for p, data in after.items()
            if data.decode().lower().count(MARK) > before.get(p, b"").decode().lower().count(MARK)] == []
    # and bob still sees his own private memory
    assert len(where) >= 20 and any("wombatnote" in t.lower() for t in texts)


def test_the_person_sees_every_memory_and_a_merge_keeps_its_owner(tmp_path):
    """The same calls from a server without an agent: alice's memories are found (so the
    harness above would see a leak), and consolidating them keeps `private` and `agent`."""
    root = tmp_path / "vault"
    ids = make_vault(root)
    store = MemoryStore(root, settings=load_settings(root), clock=Clock())
    server = build_server(store)
    try:
        texts, where = everything(server, ids)
    finally:
        server.bridge.close()
    seen = {w.split(" ", 1)[0] for t, w in zip(texts, where, strict=True) if MARK in t.lower()}
    assert {"search_memory", "open_memories", "search_unified", "memory_recall", "read_graph",
            "resources/read", "resources/list"} <= seen
    store = MemoryStore(root, settings=load_settings(root), clock=Clock())
    try:
        for rec in store.index.records("kind = 'memory'"):
            if MARK in rec.content.lower():
                assert (rec.agent, rec.props.get("private")) == ("alice", True), rec.path
    finally:
        store.close()


def test_a_private_memory_links_nowhere_for_another_agent(tmp_path):
    """Backlinks and the graph of a shared memory leave out links from and to a private one."""
    root = tmp_path / "vault"
    ids = make_vault(root)
    store = MemoryStore(root, settings=load_settings(root), clock=Clock())
    try:
        store.agent = "bob"
        shared = ids["shared"]["memory_id"]
        assert (store.backlinks(shared)["count"], store.backlinks(shared)["memories"]) == (0, [])
        graph = store.read_graph()
        assert {m["id"] for m in graph["memories"]} == {shared, ids["b1"]["memory_id"]}
        assert graph["relations"] == []
        store.agent = None
        assert [b["path"] for b in store.backlinks(shared)["memories"]] == [ids["a1"]["path"]]
        assert len(store.read_graph()["relations"]) == 2
    finally:
        store.close()


def test_the_catalog_view_applies_visible_to(tmp_path):
    """`Index.set_viewer`'s SQL and `core.model.visible_to` are the same rule, for every
    `private` value a person may write, owner and viewer (every combination in one vault: this
    was a property test drawing 200 of them, one vault each)."""
    store = MemoryStore(tmp_path / "v", clock=Clock())
    store.init()
    records: list[Record] = []
    for n, private in enumerate([True, False, "true", 1, None, "yes", "On", "maybe", "no", 0, ""]):
        for owner in [None, "alice", "bob", "o'brien"]:
            meta = {} if private is None else {"private": private}
            saved = store.save(f"A memory about the staging database {n} for {owner}", agent=owner, meta=meta,
                               dedupe=False)
            records.append(store.index.get(saved["path"]))
    assert len({r.path for r in records}) == 44
    try:
        for viewer in ["alice", "bob", "o'brien", "carol"]:
            store.agent = viewer
            seen = {r.path: store.index.get(r.path) is not None for r in records}
            assert seen == {r.path: visible_to(r, viewer) for r in records}, viewer
            assert 0 < sum(seen.values()) < len(records)  # the rule shows some and hides some
    finally:
        store.close()


HAND_WRITTEN = """---
id: {ident}
agent: alice
private: {value}
---
The wifi password hint for the lake house is the name of the first boat
"""


@pytest.mark.parametrize(("value", "hidden", "named"), [
    ("yes", True, False), ("on", True, False), ("YES", True, False), ("1", True, False), ("True", True, False),
    ("maybe", True, True), ("[alice]", True, True), ("2", True, True),
    ("no", False, False), ("off", False, False), ("false", False, False), ("0", False, False),
])
def test_privacy_fails_closed_on_values_a_person_writes(tmp_path, value, hidden, named):
    """`private: yes` (or on, 1, any case) hides alice's memory from bob as `true` does; a value
    that is neither yes nor no hides it too, and doctor names the note."""
    store = MemoryStore(tmp_path / "v", clock=Clock())
    store.init()
    rel = "memory/stm/lake-house-wifi.md"
    (tmp_path / "v" / rel).write_text(HAND_WRITTEN.format(ident="11111111-2222-4333-8444-555555555555", value=value))
    try:
        store.agent = "bob"
        assert store.search("wifi lake house")["count"] == (0 if hidden else 1)
        store.agent = "alice"
        assert store.search("wifi lake house")["count"] == 1
        store.agent = None
        problems = [p for p in store.doctor()["problems"] if p["check"] == "unclear_private"]
        assert [p["path"] for p in problems] == ([rel] if named else [])
        if named:
            assert problems[0]["message"].endswith("is neither yes nor no, so the memory is kept private; "
                                                   "write private: true or private: false")
    finally:
        store.close()
