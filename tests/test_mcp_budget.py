"""The character budgets of docs/mcp.md ("Budgets"), measured through the SDK's client:
tools/list per profile, and a 10-result search's text block and structuredContent."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from vaultmem.mcp.server import PROFILES, registered

BENCH = Path(__file__).resolve().parent.parent / "bench" / "mcp_budget.py"
spec = importlib.util.spec_from_file_location("mcp_budget", BENCH)
budget = importlib.util.module_from_spec(spec)
spec.loader.exec_module(budget)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    root = tmp_path_factory.mktemp("budget") / "vault"
    budget.fill(root)
    return budget.measure(root)


def test_tool_lists_fit_their_budgets(figures):
    assert figures["tools_list"]["core"] <= 4_000
    assert figures["tools_list"]["all"] <= 15_000
    assert figures["tools"] == {"core": 5, "cortexgraph": 18, "mnemosyne": 10, "all": 28}


def test_a_ten_result_search_fits_its_budget(figures):
    assert figures["search_count"] == 10
    assert figures["search_text"] <= 3_500
    assert figures["search_structured"] <= 6_000
    text = json.loads(figures["search_text_sample"])
    # the model's view keeps what it needs to weigh and use each memory, compactly
    assert set(text["results"][0]) >= {"id", "content", "tags", "score", "use_count", "last_used"}
    assert "\n" not in figures["search_text_sample"]


def test_profiles_are_seed_sets_and_read_only_narrows_them():
    assert PROFILES["all"] == PROFILES["cortexgraph"] | PROFILES["mnemosyne"]
    assert {s.name for s in registered(profile="core")} == {
        "save_memory", "search_memory", "open_memories", "touch_memory", "memory_recall"}
    assert {s.name for s in registered(read_only=True, profile="core")} == {"search_memory", "open_memories"}


def test_the_core_profile_over_stdio_and_from_the_vault_s_config(vault_path, tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_mcp_stdio import session_run

    async def scenario(session, init):
        return {t.name for t in (await session.list_tools()).tools}, init.instructions

    names, instructions = session_run(vault_path, scenario, "--tools", "core", errlog=tmp_path / "err.log")
    assert names == {"save_memory", "search_memory", "open_memories", "touch_memory", "memory_recall"}
    assert "gc" not in instructions and "search_memory" in instructions
    (vault_path / ".vaultmem/config.yaml").write_text("mcp_tools: mnemosyne\n")
    names, _ = session_run(vault_path, scenario, "--read-only", errlog=tmp_path / "err.log")
    assert names == {"memory_block_get", "memory_toma"}  # memory_recall counts as access: it writes


def test_an_unknown_profile_is_a_one_line_error(runner, vault_path):
    from conftest import invoke

    (vault_path / ".vaultmem/config.yaml").write_text("mcp_tools: tiny\n")
    result = invoke(runner, "mcp", "--vault", str(vault_path))
    assert (result.exit_code, result.output) == (
        1, "Error: mcp_tools must be one of core, cortexgraph, mnemosyne, all, got 'tiny'\n")
    result = invoke(runner, "mcp", "config", "--client", "cursor", "--tools", "core", "--vault", str(vault_path))
    assert json.loads(result.output.split("\n# merge")[0])["mcpServers"]["vaultmem"]["args"][-2:] == ["--tools", "core"]
