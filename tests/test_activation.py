"""analyze_message / analyze_for_recall / auto-recall with a cooldown that holds."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys

import pytest
import yaml
from conftest import FIXTURES, Clock, invoke

from vaultmem.base.config import load_settings
from vaultmem.base.errors import InvalidInput
from vaultmem.features.activation import analyze_for_recall, analyze_message
from vaultmem.store import MemoryStore

MESSAGES = yaml.safe_load((FIXTURES / "activation" / "messages.yaml").read_text())
FLOOR = 0.95


def test_accuracy_on_the_labelled_messages(capsys):
    assert len(MESSAGES) >= 80
    save_ok = sum(analyze_message(m["text"])["should_save"] == m["save"] for m in MESSAGES)
    recall_ok = sum(analyze_for_recall(m["text"])["should_search"] == m["recall"] for m in MESSAGES)
    with capsys.disabled():
        print(f"\nactivation: save accuracy {save_ok}/{len(MESSAGES)}, recall accuracy {recall_ok}/{len(MESSAGES)}")
    assert save_ok / len(MESSAGES) >= FLOOR and recall_ok / len(MESSAGES) >= FLOOR


def test_seed_example_preference():
    result = analyze_message("I prefer PostgreSQL for databases")
    assert result["should_save"] is True and result["confidence"] == 0.7311  # sigmoid(-2 + 2.7 + 0.3)
    assert "preference" in result["reasoning"] or "i prefer" in result["reasoning"]
    assert set(result) == {"should_save", "confidence", "suggested_entities", "suggested_tags",
                           "suggested_strength", "reasoning", "phrase_signals"}
    assert result["phrase_signals"] == {"preference": ["i prefer"], "entities": 1}
    assert result["suggested_entities"] == ["PostgreSQL"] and result["suggested_strength"] == 1.2


def test_seed_example_remember():
    result = analyze_message("Remember: I prefer TypeScript over JavaScript for all new projects")
    assert result["should_save"] is True and result["confidence"] > 0.9
    assert result["suggested_entities"] == ["TypeScript", "JavaScript"] and result["suggested_strength"] == 1.5


def test_key_does_not_fire_on_keyboard(tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    spec = yaml.safe_load((FIXTURES.parent / "templates" / "activation.yaml").read_text())
    spec["save"]["signals"]["importance"]["phrases"] = ["key"]
    (templates / "activation.yaml").write_text(yaml.safe_dump(spec))
    assert "importance" not in analyze_message("Which keyboard layout is best?", templates)["phrase_signals"]
    assert analyze_message("The key point: ship it", templates)["phrase_signals"]["importance"] == ["key"]


def test_recall_seed_examples():
    result = analyze_for_recall("What did I say about my API preferences?")
    assert result["should_search"] is True and result["confidence"] > 0.9
    assert result["suggested_query"] == "API preferences"
    assert set(result) == {"should_search", "confidence", "suggested_query", "suggested_tags",
                           "suggested_entities", "reasoning"}
    assert analyze_for_recall("What did I say about TypeScript?")["suggested_query"] == "TypeScript"
    assert analyze_for_recall("thanks!")["should_search"] is False


def test_empty_message_is_refused():
    with pytest.raises(InvalidInput, match="^message is empty; pass the text to analyze$"):
        analyze_message("  ")


def test_cli_analyze(runner):
    out = invoke(runner, "analyze", "I prefer PostgreSQL for databases").output
    assert out.splitlines()[0] == "should_save: true (confidence 0.73)"
    data = json.loads(invoke(runner, "analyze", "--recall", "Do you remember my editor?", "--json").output)
    assert data["should_search"] is True and data["suggested_query"] == "editor"


# -- auto-recall ----------------------------------------------------------------------------


def test_auto_recall_reinforces_related_memories_once_per_cooldown(store, clock):
    redis = store.save("Redis cluster listens on port 6380")["memory_id"]
    store.save("Zoe prefers meetings at the cafe")
    first = store.auto_recall_process_message("I'm debugging the Redis cluster today")
    assert first["enabled"] is True and first["mode"] == "silent"
    assert "Redis" in first["topics_found"]
    assert first["memories_found"] == 1 and first["memories_reinforced"] == [redis]
    second = store.auto_recall_process_message("Redis again")
    assert second["memories_reinforced"] == [] and second["skipped_cooldown"] == [redis]
    assert store.open([redis])["memories"][0]["use_count"] == 1
    clock.advance(minutes=61)
    third = store.auto_recall_process_message("Redis once more")
    assert third["memories_reinforced"] == [redis]
    assert store.open([redis])["memories"][0]["use_count"] == 2


def test_auto_recall_reinforces_only_strong_matches_and_obeys_auto_reinforce(vault_path, clock):
    store = MemoryStore(vault_path, settings=load_settings(vault_path), clock=clock)
    redis = store.save("Redis cache evictions spike when the Redis maxmemory is reached")["memory_id"]
    store.save("The Kubernetes cluster autoscaler adds nodes at 80 percent load")
    result = store.auto_recall_process_message("Why does the Redis cache evict keys? Is the cluster full?")
    assert result["memories_reinforced"] == [redis]  # not the loosely related Kubernetes memory
    off = MemoryStore(vault_path, settings=dataclasses.replace(load_settings(vault_path), auto_reinforce=False),
                      clock=Clock(clock() + dt.timedelta(hours=2)))
    quiet = off.auto_recall_process_message("Redis cache evictions again")
    assert (quiet["memories_found"], quiet["memories_reinforced"]) == (1, [])
    assert quiet["message"] == "Found related memories; auto_reinforce is off, none reinforced"
    assert off.open([redis])["memories"][0]["use_count"] == 1


def test_cooldown_holds_across_store_instances_and_processes(vault_path, clock):
    a = MemoryStore(vault_path, settings=load_settings(vault_path), clock=clock)
    mid = a.save("Kafka brokers listen on port 9092")["memory_id"]
    assert a.auto_recall_process_message("Kafka lag is growing")["memories_reinforced"] == [mid]
    b = MemoryStore(vault_path, settings=load_settings(vault_path), clock=Clock(clock()))
    assert b.auto_recall_process_message("Kafka lag again")["skipped_cooldown"] == [mid]
    code = ("import json,sys; from vaultmem.store import MemoryStore; from vaultmem.base.timeutil import env_clock;"
            f"s=MemoryStore({str(vault_path)!r}, clock=env_clock());"
            "print(json.dumps(s.auto_recall_process_message('Kafka consumer lag')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout)
    assert result["memories_reinforced"] == [] and result["skipped_cooldown"] == [mid]
    assert (vault_path / ".vaultmem/state/auto_recall.json").is_file()


def test_auto_recall_with_nothing_to_find(store):
    result = store.auto_recall_process_message("ok")
    assert result == {"success": True, "enabled": True, "mode": "silent", "topics_found": [],
                      "memories_found": 0, "memories_reinforced": [], "skipped_cooldown": [],
                      "message": "No topics found in the message"}
