"""Tool schemas match the seed tables: names, parameter names, JSON types, required flags.

SEED encodes all 18 CortexGraph tools (cortexgraph-tools-full.md; observe_memory_usage from
cortexgraph-api-reference.md). Types: "string", "integer", "number", "boolean", "object",
"array" (of strings), "string|array". A tool that is not registered yet is skipped with the
area that adds it; a registered tool must carry every seed parameter with the seed's type.
"""

from __future__ import annotations

import asyncio

import pytest

from vaultmem.mcp.server import build_server
from vaultmem.store import MemoryStore

S, INT, N, B, OBJ, A = "string", "integer", "number", "boolean", "object", "array"
REQ = True

# tool -> {parameter: (type, required)}
SEED: dict[str, dict[str, tuple[str, bool]]] = {
    "save_memory": {"content": (S, REQ), "tags": (A, False), "entities": (A, False), "source": (S, False),
                    "context": (S, False), "meta": (OBJ, False), "strength": (N, False)},
    "search_memory": {"query": (S, False), "tags": (A, False), "top_k": (INT, False), "window_days": (INT, False),
                      "min_score": (N, False), "use_embeddings": (B, False),
                      "include_review_candidates": (B, False), "page": (INT, False), "page_size": (INT, False),
                      "preview_length": (INT, False)},
    "search_unified": {"query": (S, False), "tags": (A, False), "limit": (INT, False), "stm_weight": (N, False),
                       "ltm_weight": (N, False), "window_days": (INT, False), "min_score": (N, False),
                       "page": (INT, False), "page_size": (INT, False), "preview_length": (INT, False),
                       "verbose": (B, False)},
    "touch_memory": {"memory_id": (S, REQ), "boost_strength": (B, False)},
    "observe_memory_usage": {"memory_ids": (A, REQ), "context_tags": (A, False)},
    "open_memories": {"memory_ids": ("string|array", REQ), "include_relations": (B, False),
                      "include_scores": (B, False), "page": (INT, False), "page_size": (INT, False)},
    "read_graph": {"status": (S, False), "include_scores": (B, False), "limit": (INT, False), "page": (INT, False),
                   "page_size": (INT, False)},
    "analyze_message": {"message": (S, REQ)},
    "analyze_for_recall": {"message": (S, REQ)},
    "auto_recall_process_message": {"message": (S, REQ)},
    "cluster_memories": {"strategy": (S, False), "threshold": (N, False), "max_cluster_size": (INT, False),
                         "find_duplicates": (B, False), "duplicate_threshold": (N, False)},
    "consolidate_memories": {"cluster_id": (S, False), "mode": (S, False), "auto_detect": (B, False),
                             "cohesion_threshold": (N, False)},
    "create_relation": {"from_memory_id": (S, REQ), "to_memory_id": (S, REQ), "relation_type": (S, REQ),
                        "strength": (N, False), "metadata": (OBJ, False)},
    "gc": {"dry_run": (B, False), "archive_instead": (B, False), "limit": (INT, False)},
    "promote_memory": {"memory_id": (S, False), "auto_detect": (B, False), "dry_run": (B, False),
                       "target": (S, False), "force": (B, False)},
    "backfill_embeddings": {"model": (S, False), "limit": (INT, False), "force": (B, False), "dry_run": (B, False)},
    "get_performance_metrics": {},
    "reset_performance_metrics": {},
}

# Tools (and parameters) that land with another area's issue.
# Enrichment tools are registered with `requires=` and offered once MemoryStore has their methods.
_ENRICH = callable(getattr(MemoryStore, "analyze_message", None))
PENDING_TOOLS: dict[str, str] = {} if _ENRICH else {
    "analyze_message": "the enrichment/analyze issue",
    "analyze_for_recall": "the enrichment/analyze issue",
    "auto_recall_process_message": "the enrichment/analyze issue",
}
PENDING_PARAMS: dict[tuple[str, str], str] = {}


def test_seed_encodes_all_18_tools():
    assert len(SEED) == 18


@pytest.fixture(scope="module")
def schemas(tmp_path_factory):
    from mcp import Client

    from vaultmem.store import MemoryStore

    store = MemoryStore(tmp_path_factory.mktemp("vault"))
    server = build_server(store)

    async def main():
        async with Client(server) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    try:
        return asyncio.run(main())
    finally:
        server.bridge.close()


def json_type(prop: dict) -> str:
    """The seed-style type of one JSON-schema property (null arms of optionals dropped)."""
    arms = prop.get("anyOf", [prop])
    kinds = [arm["type"] for arm in arms if arm.get("type") != "null"]
    for arm in arms:
        if arm.get("type") == "array":
            assert arm["items"]["type"] == "string", prop
    return "|".join(kinds)


def test_pending_lists_only_tools_that_are_not_registered(schemas):
    """Wiring a tool means removing it from PENDING_TOOLS, so the skip list stays honest."""
    assert set(PENDING_TOOLS) == set(SEED) - set(schemas)


@pytest.mark.parametrize("name", sorted(SEED))
def test_tool_schema_matches_the_seed(schemas, name):
    if name not in schemas:
        assert name in PENDING_TOOLS, f"{name} is neither registered nor pending"
        pytest.skip(f"{name} is added by {PENDING_TOOLS[name]}")
    schema = schemas[name]
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    missing = []
    for param, (kind, is_required) in SEED[name].items():
        if param not in props:
            if (name, param) in PENDING_PARAMS:
                missing.append(f"{param} ({PENDING_PARAMS[name, param]})")
                continue
            pytest.fail(f"{name} lacks seed parameter {param}")
        assert json_type(props[param]) == kind, (name, param, props[param])
        assert (param in required) == is_required, (name, param)
    assert set(props) - set(SEED[name]) == set(), f"{name} has parameters the seed does not"
    if missing:
        pytest.skip(f"{name} matches the seed except {', '.join(missing)}")


# -- Mnemosyne (mnemosyne-api-reference.md): 7 tools + the two lifecycle hooks ----------------------

MNEMOSYNE: dict[str, dict[str, tuple[str, bool]]] = {
    "memory_recall": {"query": (S, REQ), "limit": (INT, False), "minScore": (N, False)},
    "memory_store": {"text": (S, REQ), "importance": (N, False), "category": (S, False), "eventTime": (S, False)},
    "memory_forget": {"memoryId": (S, False), "query": (S, False)},
    "memory_block_get": {"name": (S, REQ)},
    "memory_block_set": {"name": (S, REQ), "content": (S, REQ)},
    "memory_feedback": {"signal": (S, REQ), "memoryId": (S, False)},
    "memory_toma": {"agentId": (S, REQ), "topic": (S, REQ), "limit": (INT, False)},
    "before_agent_start": {"prompt": (S, False)},
    "agent_end": {"transcript": (S, REQ)},
    "memory_consolidate": {"batchSize": (INT, False)},
}
# Parameters vaultmem adds to a seed tool, with the reason (documented in docs/mnemosyne.md).
MNEMOSYNE_EXTRA = {("memory_store", "private"): "the issue's --private (visible to the storing agent only)",
                   ("memory_consolidate", "dryRun"): "the seed CLI's consolidate --dry-run"}
MNEMOSYNE_PENDING: dict[str, str] = {}


def test_no_tool_beyond_both_seeds(schemas):
    assert set(schemas) <= set(SEED) | set(MNEMOSYNE)


@pytest.mark.parametrize("name", sorted(MNEMOSYNE))
def test_mnemosyne_tool_schema_matches_the_seed(schemas, name):
    if name not in schemas:
        assert name in MNEMOSYNE_PENDING
        pytest.skip(f"{name} lands with {MNEMOSYNE_PENDING[name]}")
    props = schemas[name].get("properties", {})
    required = set(schemas[name].get("required", []))
    for param, (kind, is_required) in MNEMOSYNE[name].items():
        assert param in props, f"{name} lacks seed parameter {param}"
        assert json_type(props[param]) == kind, (name, param, props[param])
        assert (param in required) == is_required, (name, param)
    extra = set(props) - set(MNEMOSYNE[name])
    assert extra == {p for (n, p) in MNEMOSYNE_EXTRA if n == name}, f"{name} has parameters the seed does not"
