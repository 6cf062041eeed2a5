"""The seeds' switches as settings: Mnemosyne's autoRecall, autoCapture, enableAutoLink,
autoLinkThreshold, captureMaxChars; CortexGraph's cluster defaults and environment names."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Clock, invoke
from test_store_hooks import CLAUDE_JSONL

from vaultmem.base.config import load_settings, resolve_vault
from vaultmem.base.errors import ConfigError
from vaultmem.store import MemoryStore


def store_with(vault: Path, **overrides) -> MemoryStore:
    return MemoryStore(vault, settings=load_settings(vault, overrides=overrides), clock=Clock())


def test_auto_recall_off_keeps_the_session_and_recalls_nothing(vault_path):
    on = store_with(vault_path)
    on.store_memory("Redis cache on staging uses maxmemory 256mb", agent="cc")
    on.capture(CLAUDE_JSONL, agent="cc")
    assert on.context("Why is the Redis cache slow?", agent="cc")["memories"] != []
    on.close()
    off = store_with(vault_path, auto_recall=False)
    r = off.context("Why is the Redis cache slow?", agent="cc")
    assert (r["memories"], r["proactive"], r["count"]) == ([], [], 0)
    assert r["sessionSnapshot"] is not None and "## Last session (" in r["context"]
    off.close()


def test_auto_capture_off_keeps_the_snapshot_and_captures_nothing(vault_path):
    s = store_with(vault_path, auto_capture=False)
    r = s.capture(CLAUDE_JSONL, agent="cc")
    assert (r["captured"], r["capturedCount"]) == ([], 0)
    assert (vault_path / r["snapshot"]["path"]).is_file()
    s.close()


def test_capture_max_chars_bounds_each_captured_memory(vault_path):
    s = store_with(vault_path, capture_max_chars=30)
    r = s.capture(CLAUDE_JSONL, agent="cc")
    assert r["capturedCount"] == 3
    texts = [m["content"] for m in s.search(None, top_k=10)["results"] if m["source"] == "auto-capture"]
    assert len(texts) == 3 and max(map(len, texts)) <= 30
    s.close()


@pytest.mark.parametrize("overrides,linked", [({}, 1), ({"enable_auto_link": False}, 0),
                                              ({"auto_link_threshold": 0.99}, 0)])
def test_auto_links_follow_enable_auto_link_and_its_threshold(vault_path, overrides, linked):
    s = store_with(vault_path, **overrides)
    s.store_memory("The Redis cluster was migrated to port 6380", agent="ops")
    assert s.store_memory("Redis cluster migrated to port 6380 in January", agent="dev")["linkedCount"] == linked
    s.close()


def _pair(s: MemoryStore) -> None:
    s.save("Deploys go out on Tuesday after the standup", dedupe=False)
    s.save("Deploys go out on Tuesday after the weekly standup", dedupe=False)
    s.save("The cafeteria serves soup on Fridays", dedupe=False)


def test_cluster_threshold_and_min_cluster_size_are_the_defaults(vault_path, monkeypatch):
    s = store_with(vault_path)
    _pair(s)
    assert (s.cluster()["threshold"], s.cluster()["clusters_found"]) == (0.83, 1)
    s.close()
    monkeypatch.setenv("CORTEXGRAPH_MIN_CLUSTER_SIZE", "3")
    s = store_with(vault_path)
    assert s.cluster()["clusters_found"] == 0  # the only cluster has two members
    s.close()
    monkeypatch.delenv("CORTEXGRAPH_MIN_CLUSTER_SIZE")
    monkeypatch.setenv("CORTEXGRAPH_CLUSTER_THRESHOLD", "0.99")
    s = store_with(vault_path)
    assert (s.cluster()["threshold"], s.cluster()["clusters_found"]) == (0.99, 0)
    assert s.cluster(threshold=0.83)["clusters_found"] == 1  # an explicit threshold wins
    s.close()


@pytest.mark.parametrize("value,expected", [("true", "on"), ("False", "off"), ("1", "on"), ("no", "off")])
def test_cortexgraph_enable_embeddings(vault_path, value, expected):
    assert load_settings(vault_path, environ={"CORTEXGRAPH_ENABLE_EMBEDDINGS": value}).embeddings == expected


def test_cortexgraph_enable_embeddings_must_be_a_boolean(vault_path):
    with pytest.raises(ConfigError) as err:
        load_settings(vault_path, environ={"CORTEXGRAPH_ENABLE_EMBEDDINGS": "maybe"})
    assert str(err.value) == "CORTEXGRAPH_ENABLE_EMBEDDINGS must be true or false, got 'maybe'"


def test_ltm_vault_path_names_the_vault_after_vaultmem_s_own(tmp_path):
    assert resolve_vault(None, {"LTM_VAULT_PATH": str(tmp_path / "v")}) == tmp_path / "v"
    assert resolve_vault(None, {"LTM_VAULT_PATH": str(tmp_path / "v"), "VAULTMEM_VAULT": str(tmp_path / "w")}) \
        == tmp_path / "w"


@pytest.mark.parametrize("line,message", [
    ("capture_max_chars: 5", "capture_max_chars must be 20 or more, got 5"),
    ("auto_link_threshold: 0", "auto_link_threshold must be above 0 and at most 1, got 0.0"),
    ("min_cluster_size: 1", "min_cluster_size must be 2 or more, got 1"),
    ("auto_recall: sometimes", "auto_recall in {cfg} must be a bool, got 'sometimes'"),
])
def test_bad_values_are_one_line_errors(runner, vault_path, line, message):
    cfg = vault_path / ".vaultmem/config.yaml"
    cfg.write_text(line + "\n")
    result = invoke(runner, "stats", "--vault", str(vault_path))
    assert (result.exit_code, result.output) == (1, "Error: " + message.format(cfg=cfg) + "\n")
