"""A cold `vaultmem save` writes the note at once and a background process fills in the
entities (spaCy) moments later: never lost, never over a person's edit, never stuck."""

from __future__ import annotations

import json
import time

import pytest
from conftest import Clock, invoke

from vaultmem.base.config import load_settings
from vaultmem.store import MemoryStore

TEXT = "We decided to move the billing database to PostgreSQL 16 on Tuesday with Alice Chen"


@pytest.fixture
def store(vault_path):
    s = MemoryStore(vault_path, settings=load_settings(vault_path), clock=Clock())
    yield s
    s.close()


def test_a_deferred_save_is_complete_at_once_and_gets_its_entities_after(store, vault_path):
    saved = store.save(TEXT, tags=["db"], defer_entities=True)
    assert (saved["status"], saved["enrichment"]) == ("created", "pending")
    note = vault_path / saved["path"]
    before = note.read_text()
    assert "entities: []\n" in before and "strength: 1.3\n" in before and "memory_type: episodic\n" in before
    assert store.search("billing PostgreSQL")["results"][0]["id"] == saved["memory_id"]  # indexed at once
    assert [p.name for p in store.pending_enrichments()] == [f"{saved['memory_id']}.json"]
    assert store.enrich_pending() == {"success": True, "enriched": 1, "kept": 0, "gone": 0, "pending": 0}
    after = note.read_text()
    # the same note as a synchronous save writes, except for the two lines the entities change
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert changed == [("strength: 1.3", "strength: 1.4"), ("entities: []", "entities: [PostgreSQL, Tuesday, Alice Chen]")]
    sync = store.save(TEXT + " again", dedupe=False)  # a synchronous save ends where the deferred one does
    assert [(m["entities"], m["strength"]) for m in store.open([sync["memory_id"]])["memories"]] == [
        (["PostgreSQL", "Tuesday", "Alice Chen"], 1.4)]
    assert store.enrich_pending()["enriched"] == 0  # nothing left: safe to run again


def test_values_a_person_set_meanwhile_are_kept(store, vault_path):
    a = store.save(TEXT, defer_entities=True)
    b = store.save("Carol Diaz owns the invoice service in Berlin since March", defer_entities=True)
    c = store.save("Dave Kim runs the Kafka cluster upgrade in Dublin next week", defer_entities=True, strength=1.9)
    note_a = vault_path / a["path"]
    note_a.write_text(note_a.read_text().replace("entities: []", "entities: [Billing]"))  # typed in Obsidian
    (vault_path / b["path"]).unlink()  # deleted in Obsidian
    assert store.enrich_pending() == {"success": True, "enriched": 1, "kept": 1, "gone": 1, "pending": 0}
    assert "entities: [Billing]\n" in note_a.read_text()
    cur = store.open([c["memory_id"]])["memories"][0]
    assert cur["strength"] == 1.9 and "Dave Kim" in cur["entities"]  # the given strength stays


def test_a_memory_moved_before_its_enrichment_is_followed(store, vault_path):
    saved = store.save(TEXT, defer_entities=True)
    store.promote(saved["memory_id"], apply=True, force=True)
    assert store.enrich_pending()["enriched"] == 1
    found = store.open([saved["memory_id"]])["memories"][0]
    assert found["path"].startswith("memory/ltm/") and found["entities"] == ["PostgreSQL", "Tuesday", "Alice Chen"]


def test_a_broken_note_never_blocks_the_queue(store, vault_path):
    bad = store.save(TEXT, defer_entities=True)
    good = store.save("Carol Diaz owns the invoice service in Berlin since March", defer_entities=True)
    path = vault_path / bad["path"]
    path.write_text(path.read_text().replace("use_count: 0", "use_count: [unclosed"))
    result = store.enrich_pending()
    assert (result["enriched"], result["pending"]) == (1, 0)
    assert "Carol Diaz" in store.open([good["memory_id"]])["memories"][0]["entities"]
    assert "use_count: [unclosed" in path.read_text()  # reported, never rewritten


def test_the_cli_returns_before_spacy_and_a_background_process_lands_the_entities(runner, vault_path, monkeypatch):
    monkeypatch.setenv("VAULTMEM_SAVE_ENRICHMENT", "background")
    out = json.loads(invoke(runner, "save", TEXT, "--json").output)
    assert out["enrichment"] == "pending" and isinstance(out["enrichment_pid"], int)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        memory = json.loads(invoke(runner, "open", out["memory_id"], "--json").output)["memories"][0]
        if memory["entities"]:
            break
        time.sleep(0.2)
    assert memory["entities"] == ["PostgreSQL", "Tuesday", "Alice Chen"] and memory["strength"] == 1.4
    assert not list((vault_path / ".vaultmem/enrich").glob("*.json"))
    now = json.loads(invoke(runner, "save", "Erin Park leads the Lisbon office move in May", "--enrich-now",
                            "--json").output)
    assert now["enrichment"] == "done" and "Erin Park" in now["entities"] and "enrichment_pid" not in now


def test_enrich_pending_by_hand(runner, vault_path, store):
    store.save(TEXT, defer_entities=True)
    assert invoke(runner, "enrich-pending").output == "enriched 1, kept 0 edited by you, 0 gone, 0 pending\n"
    assert json.loads(invoke(runner, "enrich-pending", "--json").output)["pending"] == 0
