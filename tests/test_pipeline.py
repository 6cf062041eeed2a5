"""The consolidation pipeline and the review-note round trip."""

from __future__ import annotations

import json

import pytest
from conftest import invoke
from test_consolidate import build, ids

from vaultmem.base.config import load_settings
from vaultmem.base.errors import ConfigError, InvalidInput
from vaultmem.features import pipeline as P
from vaultmem.store import MemoryStore


@pytest.fixture
def fx(store, clock):
    saved = build(store, clock)
    saved["kafka"] = store.save("Kafka and Redis run in the analytics cluster.", entities=["Kafka", "Redis"])
    saved["ingest"] = store.save("The ingest service reads from Kafka and caches in Redis.", entities=["Kafka", "Redis"])
    clock.advance(days=1)
    for _ in range(5):
        store.touch(saved["deploy"]["memory_id"])
    clock.advance(days=6)
    return saved


def stem(fx, key):
    return fx[key]["path"].rsplit("/", 1)[1][:-3]


def test_stages_in_order_with_seed_shapes(store, fx):
    result = store.pipeline_run(dry_run=True)
    assert [k for k in result if k in P.AGENTS] == list(P.AGENTS)
    assert result["review_note"] is None
    assert list((store.vault.root / "memory/reviews").glob("*.md")) == []
    decay = result["decay"][0]
    assert set(decay) >= {"memory_id", "score", "urgency", "action"} and decay["urgency"] == "low"
    assert result["cluster"][0] == {"cluster_id": result["cluster"][0]["cluster_id"],
                                    "memory_ids": ids(fx, "pg1", "pg2"), "cohesion": 1.0, "action": "auto-merge"}
    merges = {tuple(m["source_ids"]): m["status"] for m in result["merge"]}
    assert merges == {tuple(ids(fx, "pg1", "pg2")): "proposed", tuple(ids(fx, "dark", "notdark")): "contradiction"}
    promoted = {p["memory_id"]: p["criteria_met"] for p in result["promote"]}
    assert promoted[fx["deploy"]["memory_id"]] == ["score", "use_count"]
    assert fx["coffee"]["memory_id"] not in promoted  # never used: no promotion on score alone
    rel = result["relations"][0]
    assert {rel["from_id"], rel["to_id"]} == {fx["kafka"]["memory_id"], fx["ingest"]["memory_id"]}
    assert len(result["relations"]) == 1
    assert rel["shared_entities"] == ["Kafka", "Redis"] and rel["relation_type"] == "related"
    assert rel["strength"] == 0.7 and rel["confidence"] == 0.5  # no tags: 0.7 * 1.0


def test_single_agent(store, fx):
    result = store.pipeline_run(agent="merge", dry_run=True)
    assert [k for k in result if k in P.AGENTS] == ["merge"]
    with pytest.raises(InvalidInput, match="agent must be one of decay, cluster, merge, promote, relations"):
        store.pipeline_run(agent="nope")


def test_review_round_trip(store, fx, vault_path, clock):
    result = store.pipeline_run()
    rel = result["review_note"]
    assert rel == "memory/reviews/vaultmem-review-2026-11-29.md" and result["added_to_review"] == result["proposals"]
    path = vault_path / rel
    text = path.read_text()
    merge_line = next(line for line in text.splitlines() if "%%vaultmem:merge:" in line)
    assert merge_line.startswith(f"- [ ] Merge [[{stem(fx, 'pg1')}]] + [[{stem(fx, 'pg2')}]]") or \
        merge_line.startswith(f"- [ ] Merge [[{stem(fx, 'pg2')}]] + [[{stem(fx, 'pg1')}]]")
    relate_line = next(line for line in text.splitlines() if "%%vaultmem:relate:" in line)
    # nothing ticked: nothing happens
    before = sorted(p.relative_to(vault_path).as_posix() for p in (vault_path / "memory").rglob("*.md"))
    untouched = store.apply_review()
    assert untouched["applied"] == [] and untouched["unticked"] == result["proposals"]
    assert sorted(p.relative_to(vault_path).as_posix() for p in (vault_path / "memory").rglob("*.md")) == before
    # a person ticks two boxes in Obsidian
    path.write_text(text.replace(merge_line, merge_line.replace("- [ ]", "- [x]", 1))
                        .replace(relate_line, relate_line.replace("- [ ]", "- [x]", 1)))
    first = store.apply_review(rel)
    assert [a["action"] for a in first["applied"]] == ["merge", "relate"] and first["failed"] == []
    assert first["applied"][1]["relations_created"] == 2
    new_id = first["applied"][0]["new_memory_id"]
    merged = store.open([new_id])["memories"][0]
    assert merged["content"] == "The staging database runs PostgreSQL 16 on port 5433." and merged["use_count"] == 5
    for key in ("pg1", "pg2"):
        assert (vault_path / "memory/archive" / f"{stem(fx, key)}.md").is_file()
    assert f"- related:: [[{stem(fx, 'ingest')}]]" in (vault_path / fx["kafka"]["path"]).read_text()
    done = path.read_text()
    assert "- [x] Merge" in done and "✅ 2026-11-29 %%vaultmem-done:merge:" in done
    assert "%%vaultmem:merge:" not in done and "%%vaultmem-done:relate:" in done
    # second run: a no-op
    second = store.apply_review(rel)
    assert second["applied"] == [] and second["already_done"] == 2
    assert path.read_text() == done
    assert len(list((vault_path / "memory").rglob("*.md"))) == len(before) + 1  # + merged (review note was there)
    # a new run re-proposes nothing pending or done today; only the new merged memory is new
    again = store.pipeline_run(scheduled=False)
    assert again["added_to_review"] == 1
    added = path.read_text().split("# Added 2026-11-29T19:15:00Z\n", 1)[1]
    assert added.count("- [ ]") == 1 and new_id in added


def test_failed_action_is_marked_and_not_retried(store, fx, vault_path):
    rel = store.pipeline_run()["review_note"]
    path = vault_path / rel
    text = path.read_text()
    line = next(line for line in text.splitlines() if "%%vaultmem:promote:" in line)
    path.write_text(text.replace(line, line.replace("- [ ]", "- [x]", 1)))
    target = line.split("%%vaultmem:promote:")[1].rstrip("%")
    store.touch(target)
    from vaultmem.features import consolidate as C
    C.archive_record(store, store.resolve(target), store.now())
    result = store.apply_review(rel)
    assert result["success"] is False and result["failed"][0]["error"].endswith("is archived, not active; nothing promoted")
    assert "%%vaultmem-failed:promote:" in path.read_text()
    assert store.apply_review(rel)["failed"] == []


def test_scheduled_respects_interval(store, fx, clock):
    first = store.pipeline_run(scheduled=True, interval_hours=24)
    assert first["skipped"] is False
    clock.advance(hours=2)
    second = store.pipeline_run(scheduled=True, interval_hours=24)
    assert second == {"success": True, "skipped": True, "last_run": "2026-11-29T19:15:00Z",
                      "next_run": "2026-11-30T19:15:00Z",
                      "message": "Pipeline last ran at 2026-11-29T19:15:00Z; next run due at 2026-11-30T19:15:00Z"}
    clock.advance(hours=23)
    assert store.pipeline_run(scheduled=True, interval_hours=24)["skipped"] is False


def test_safe_actions_auto_apply_when_configured(vault_path, clock, fx):
    (vault_path / ".vaultmem/config.yaml").write_text("pipeline_auto_apply: relate\n")
    store = MemoryStore(vault_path, settings=load_settings(vault_path), clock=clock)
    result = store.pipeline_run()
    assert [a["action"] for a in result["auto_applied"]] == ["relate"]
    assert "%%vaultmem:relate:" not in (vault_path / result["review_note"]).read_text()
    (vault_path / ".vaultmem/config.yaml").write_text("pipeline_auto_apply: merge\n")
    with pytest.raises(ConfigError, match="pipeline_auto_apply may list only the safe actions touch, relate; got 'merge'"):
        load_settings(vault_path)


def test_cli_pipeline(runner, vault_path):
    store = MemoryStore(vault_path)
    for text in ("The staging database runs PostgreSQL 16 on port 5433.",) * 2:
        store.save(text, entities=[], dedupe=False)  # a duplicate on purpose; no shared entities
    out = invoke(runner, "pipeline", "run", "--dry-run")
    assert out.output.splitlines()[-1] == "Dry run: 1 proposals (nothing written)"
    out = invoke(runner, "pipeline", "run", "--json")
    note = vault_path / json.loads(out.output)["review_note"]
    note.write_text(note.read_text().replace("- [ ]", "- [x]"))
    out = invoke(runner, "pipeline", "apply-review", note.name)
    assert out.output.splitlines()[-1] == "Applied 1 approved proposals (0 failed, 0 unticked)"
    out = invoke(runner, "pipeline", "apply-review")
    assert out.output == "Applied 0 approved proposals (0 failed, 0 unticked)\n"
    out = invoke(runner, "pipeline", "apply-review", "2020-01-01")
    assert out.output == ("Error: review note memory/reviews/2020-01-01.md does not exist; "
                          "run `vaultmem pipeline run` first\n")
