"""The memory lifecycle with a fixed clock: actr, observe, review, gc, promotion, unified search."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
from pathlib import Path

import pytest
from conftest import NOW, invoke

from vaultmem.base.config import Settings, load_settings
from vaultmem.base.errors import ConfigError, InvalidInput
from vaultmem.core import decay, scoring
from vaultmem.features import lifecycle
from vaultmem.store import MemoryStore
from vaultmem.text import format_unified

H = dt.timedelta(hours=1)
D = dt.timedelta(days=1)


def ts(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_memory(vault: Path, folder: str, name: str, mid: str, content: str, *, age: dt.timedelta = dt.timedelta(0),
                 created: dt.timedelta | None = None, use_count: int = 0, strength: float = 1.0,
                 status: str | None = None, tags: list[str] = (), extra: str = "") -> Path:
    """A memory note written directly, as Obsidian or a sync client would."""
    status = status or {"stm": "active", "ltm": "promoted", "archive": "archived"}[folder]
    created_t = NOW - (created if created is not None else age)
    tag_lines = "tags:\n" + "".join(f"  - {t}\n" for t in tags) if tags else "tags: []\n"
    text = (f"---\nid: {mid}\ncreated: {ts(created_t)}\nlast_used: {ts(NOW - age)}\nuse_count: {use_count}\n"
            f"strength: {strength}\nstatus: {status}\n{tag_lines}{extra}---\n{content}\n")
    path = vault / "memory" / folder / f"{name}.md"
    path.write_text(text)
    return path


def mid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-000000000000"


# -- ACT-R -----------------------------------------------------------------------------------------


def test_actr_single_presentation_is_the_power_of_its_age_in_hours():
    a = decay.actr_activation(created=NOW - 48 * H, last_used=NOW - 48 * H, use_count=0, access_times=[],
                              now=NOW, rate=0.6, baseline=0.0)
    assert a == pytest.approx(-0.6 * math.log(48))
    assert round(a, 6) == -2.322721


def test_actr_sums_recorded_accesses_and_clamps_ages_to_one_hour():
    a = decay.actr_activation(created=NOW - 240 * H, last_used=NOW - 10 * dt.timedelta(minutes=1), use_count=2,
                              access_times=[ts(NOW - 24 * H), ts(NOW - 10 * dt.timedelta(minutes=1))],
                              now=NOW, rate=0.5, baseline=1.0)
    assert a == pytest.approx(math.log(240 ** -0.5 + 24 ** -0.5 + 1.0) + 1.0)


def test_actr_approximates_unrecorded_older_uses_between_creation_and_oldest_record():
    a = decay.actr_activation(created=NOW - 100 * H, last_used=NOW - 2 * H, use_count=3,
                              access_times=[NOW - 2 * H], now=NOW, rate=0.6, baseline=0.0)
    mean = (100 ** 0.4 - 2 ** 0.4) / (0.4 * 98)
    assert a == pytest.approx(math.log(100 ** -0.6 + 2 ** -0.6 + 2 * mean))


def test_actr_without_history_uses_last_used_as_the_latest_use():
    a = decay.actr_activation(created=NOW - 10 * H, last_used=NOW - 5 * H, use_count=1, access_times=[],
                              now=NOW, rate=0.6, baseline=0.0)
    assert a == pytest.approx(math.log(10 ** -0.6 + 5 ** -0.6))


@pytest.mark.parametrize("urgency, rate, baseline", [
    ("critical", 0.3, 2.0), ("important", 0.5, 1.0), ("reference", 0.6, 0.0), ("background", 0.8, -1.0),
    (None, 0.6, 0.0), ("nonsense", 0.6, 0.0), ("CRITICAL", 0.3, 2.0),
])
def test_urgency_rates(urgency, rate, baseline):
    assert decay.actr_params(urgency, Settings()) == (rate, baseline)


@pytest.mark.parametrize("a, status", [(0.0, "active"), (-2.0, "active"), (-2.000001, "fading"),
                                       (-4.0, "fading"), (-4.000001, "archived")])
def test_activation_status_thresholds(a, status):
    assert decay.activation_status(a, Settings()) == status


def test_actr_score_is_strength_times_e_to_the_activation_and_immunity_holds():
    s = Settings(decay_model="actr")
    got = decay.score(use_count=0, last_used=NOW - 24 * H, strength=1.5, now=NOW, settings=s, created=NOW - 24 * H,
                      urgency="background")
    assert got == pytest.approx(1.5 * math.exp(-1.0 - 0.8 * math.log(24)))
    assert decay.score(use_count=4, last_used=NOW - 365 * D, strength=1.0, now=NOW, settings=s,
                       memory_type="core") == pytest.approx(5 ** 0.6)


def test_decay_curve_table_values():
    rows = {r["day"]: r for r in scoring.decay_curve(Settings())["rows"]}
    assert rows[0] == {"day": 0, "power_law": 1.0, "exponential": 1.0, "two_component": 1.0, "actr": 1.0}
    assert rows[30] == {"day": 30, "power_law": 0.081413, "exponential": 0.00098, "two_component": 0.015345,
                        "actr": round(720 ** -0.6, 6)}


def test_actr_settings_from_env_and_cortexgraph_aliases():
    env = {"VAULTMEM_DECAY_MODEL": "actr", "VAULTMEM_ACTR_RATE_CRITICAL": "0.25",
           "CORTEXGRAPH_AUTO_REINFORCE": "false", "CORTEXGRAPH_REVIEW_DANGER_ZONE_MIN": "0.1",
           "CORTEXGRAPH_CONSOLIDATION_INTERVAL": "600", "VAULTMEM_AUTO_GC": "yes"}
    s = load_settings(None, environ=env)
    assert (s.decay_model, s.actr_rate_critical, s.auto_reinforce, s.review_danger_zone_min,
            s.maintenance_interval, s.auto_gc, s.auto_promote) == ("actr", 0.25, False, 0.1, 600.0, True, False)
    with pytest.raises(ConfigError, match="^actr_default_urgency 'urgent' is unknown; "
                                          "use one of critical, important, reference, background$"):
        load_settings(None, environ={"VAULTMEM_ACTR_DEFAULT_URGENCY": "urgent"})


def test_touch_under_actr_records_capped_access_times(vault_path, clock):
    s = dataclasses.replace(load_settings(vault_path), decay_model="actr", access_history_size=2)
    store = MemoryStore(vault_path, settings=s, clock=clock)
    m = store.save("the ACT-R history")["memory_id"]  # no urgency markers: the default urgency
    for hours in (1, 2, 3):
        clock.advance(hours=hours)
        store.touch(m)
    text = (vault_path / store.open([m])["memories"][0]["path"]).read_text()
    assert "access_times:\n  - 2026-11-22T13:15:00Z\n  - 2026-11-22T16:15:00Z\n" in text
    rec = store.resolve(m)
    # created 6 h ago, uses at -5 h (unrecorded: spread over 3..6 h), -3 h and now (clamped to 1 h)
    expected = math.log(6 ** -0.6 + 3 ** -0.6 + 1.0 + (6 ** 0.4 - 3 ** 0.4) / (0.4 * 3))
    assert scoring.record_activation(rec, clock(), s) == pytest.approx(expected)
    store.close()


# -- review priority ----------------------------------------------------------------------------------


@pytest.mark.parametrize("score, priority, urgency", [
    (0.1, 0.0, "high"), (0.15, 0.0, "medium"), (0.2, 0.5, "medium"), (0.25, 1.0, "medium"),
    (0.3, 0.5, "low"), (0.35, 0.0, "low"), (0.5, 0.0, "low"),
])
def test_review_priority_and_urgency(score, priority, urgency):
    assert scoring.review_priority(score, Settings()) == pytest.approx(priority)
    assert scoring.decay_urgency(score, Settings()) == urgency


def test_search_blends_review_candidates_and_marks_them(store, vault_path):
    for n in range(10):
        write_memory(vault_path, "stm", f"fresh-{n}", mid(n), f"kafka topic partition note {n}", age=H)
    # 5.5 days old: power-law score 0.34 > in the danger zone; 6.5 days: 0.31
    write_memory(vault_path, "stm", "fading-a", mid(20), "kafka topic partition fading a", age=5.5 * D)
    write_memory(vault_path, "stm", "fading-b", mid(21), "kafka topic partition fading b", age=6.5 * D)
    write_memory(vault_path, "stm", "gone", mid(22), "kafka topic partition gone", age=60 * D)
    results = store.search("kafka topic partition", top_k=10)["results"]
    flags = [(r["id"][:8], r["review_candidate"]) for r in results]
    assert len(results) == 10
    assert [f for f in flags if f[1]] == [("00000015", True), ("00000014", True)]
    assert [i for i, f in enumerate(flags) if f[1]] == [2, 5]
    assert all(not r["review_candidate"] for r in store.search("kafka topic partition", top_k=10,
                                                               include_review_candidates=False)["results"])


def test_a_review_candidate_never_displaces_a_better_match(store, vault_path):
    for n in range(10):
        write_memory(vault_path, "stm", f"fresh-{n}", mid(n), f"kafka topic partition note {n}", age=H)
    # in the danger zone, but it matches one query word of three: it takes no slot
    write_memory(vault_path, "stm", "fading-weak", mid(20), "kafka consumer lag alert", age=5.5 * D)
    results = store.search("kafka topic partition", top_k=10)["results"]
    assert [r["id"] for r in results] == [mid(n) for n in range(10)]
    assert not any(r["review_candidate"] for r in results)
    # one that matches as well as the fresh notes does (its decay, not its match, ranked it lower)
    write_memory(vault_path, "stm", "fading-strong", mid(21), "kafka topic partition fading", age=5.5 * D)
    results = store.search("kafka topic partition", top_k=10)["results"]
    assert [r["id"] for r in results if r["review_candidate"]] == [mid(21)]
    assert mid(20) not in [r["id"] for r in results]


# -- observe -------------------------------------------------------------------------------------------


def test_observe_reinforces_counts_reviews_and_boosts_cross_domain(store, vault_path):
    a = write_memory(vault_path, "stm", "jwt-pref", mid(1), "Use JWT", age=2 * D, use_count=3,
                     tags=["security", "jwt", "preferences"])
    write_memory(vault_path, "stm", "api-style", mid(2), "REST style", age=2 * D, tags=["api", "backend"],
                 extra="review_count: 2\n")
    result = store.observe([mid(1), mid(2), "nope"], ["api", "authentication", "backend"])
    assert result == {
        "success": True, "reinforced": True, "count": 2, "cross_domain_count": 1,
        "results": [
            {"id": mid(1), "status": "reinforced", "cross_domain": True, "new_use_count": 4,
             "new_review_count": 1, "strength": 1.05},
            {"id": mid(2), "status": "reinforced", "cross_domain": False, "new_use_count": 1,
             "new_review_count": 3, "strength": 1.0},
            {"id": "nope", "status": "not_found"},
        ],
        "message": "Reinforced 2 memories (1 cross-domain)",
    }
    text = a.read_text()
    assert "last_used: 2026-11-22T10:15:00Z\nuse_count: 4\nstrength: 1.05\n" in text
    assert text.endswith("review_count: 1\nlast_review: 2026-11-22T10:15:00Z\ncross_domain_count: 1\n---\nUse JWT\n")


def test_observe_honours_auto_reinforce_off(vault_path, clock):
    store = MemoryStore(vault_path, settings=dataclasses.replace(load_settings(vault_path), auto_reinforce=False),
                        clock=clock)
    assert store.observe(["x"]) == {"reinforced": False, "reason": "auto_reinforce is disabled in config", "count": 0}


def test_cross_domain_is_jaccard_below_threshold():
    s = Settings()
    assert scoring.is_cross_domain(["a", "b", "c"], ["a", "d", "e", "f"], s)  # 1/6
    assert not scoring.is_cross_domain(["a", "b"], ["a", "b", "c"], s)  # 2/3
    assert not scoring.is_cross_domain([], ["a"], s)
    assert not scoring.is_cross_domain(["a"], [], s)


def test_observe_cli(runner, vault_path):
    write_memory(vault_path, "stm", "m1", mid(1), "hello", tags=["x"])
    out = invoke(runner, "observe", mid(1)[:8], "--context-tag", "y").output
    assert out == f"{mid(1)}: used 1× · reviewed 1× · strength 1.05 · cross-domain\nReinforced 1 memory (1 cross-domain)\n"


# -- gc ---------------------------------------------------------------------------------------------------


def gc_world(vault: Path) -> dict[str, Path]:
    return {
        "old": write_memory(vault, "stm", "old", mid(1), "forgotten thing", age=40 * D),
        "older": write_memory(vault, "stm", "older", mid(2), "very old thing", age=90 * D),
        "oldest": write_memory(vault, "stm", "oldest", mid(3), "ancient thing", age=200 * D),
        "fresh": write_memory(vault, "stm", "fresh", mid(4), "fresh thing", age=D),
        "pinned": write_memory(vault, "stm", "pinned", mid(5), "pinned thing", age=400 * D, extra="pinned: true\n"),
        "ltm": write_memory(vault, "ltm", "kept", mid(6), "long-term thing", age=400 * D),
    }


def test_gc_preview_selects_from_catalog_lowest_first(store, vault_path):
    gc_world(vault_path)
    s = store.settings
    scores = [decay.score(use_count=0, last_used=NOW - d * D, strength=1.0, now=NOW, settings=s) for d in (200, 90, 40)]
    assert scores[2] > 0.05 > scores[1]
    result = store.gc()
    assert result == {
        "success": True, "dry_run": True, "removed_count": 0, "archived_count": 2,
        "freed_score_sum": round(scores[0] + scores[1], 4), "memory_ids": [mid(3), mid(2)], "total_affected": 2,
        "candidates": [  # a preview shows what it would move: title and path
            {"id": mid(3), "title": "oldest", "path": "memory/stm/oldest.md", "score": round(scores[0], 4)},
            {"id": mid(2), "title": "older", "path": "memory/stm/older.md", "score": round(scores[1], 4)}],
        "skipped": [], "links_rewritten": [], "renamed": [],
        "message": "Would archive 2 low-scoring memories (threshold: 0.05); run with --apply to move them to memory/archive/",
    }
    assert (vault_path / "memory/stm/oldest.md").exists()


def test_gc_apply_archives_and_marks_status(store, vault_path):
    paths = gc_world(vault_path)
    before = paths["oldest"].read_text()
    result = store.gc(apply=True, limit=1)
    assert (result["archived_count"], result["memory_ids"], result["dry_run"]) == (1, [mid(3)], False)
    assert result["message"] == "Archived 1 low-scoring memory (threshold: 0.05), moved to memory/archive/"
    moved = vault_path / "memory/archive/oldest.md"
    assert not paths["oldest"].exists()
    assert moved.read_text() == before.replace("status: active\n", "status: archived\n").replace(
        "tags: []\n", "tags: []\narchived_at: 2026-11-22T10:15:00Z\n")
    assert store.search("ancient", status="archived")["results"][0]["status"] == "archived"
    assert store.gc()["memory_ids"] == [mid(2)]


def test_gc_delete_moves_to_trash_never_unlinks(store, vault_path):
    paths = gc_world(vault_path)
    result = store.gc(apply=True, delete=True)
    assert (result["removed_count"], result["archived_count"], result["total_affected"]) == (2, 0, 2)
    assert sorted(p.name for p in (vault_path / ".trash").iterdir()) == ["older.md", "oldest.md"]
    assert not paths["older"].exists()
    assert store.stats()["total_memories"] == 4


def test_gc_apply_rechecks_a_note_edited_after_selection(store, vault_path):
    paths = gc_world(vault_path)
    store.sync()
    candidates = lifecycle.gc_candidates(store, store.now())
    assert [c.id for c in candidates] == [mid(3), mid(2)]
    # Between preview and apply a person pins one note and adds a line to the other in Obsidian.
    pinned_text = paths["oldest"].read_text().replace("tags: []\n", "tags: []\npinned: true\n")
    paths["oldest"].write_text(pinned_text)
    edited = paths["older"].read_text() + "A line added in Obsidian.\n"
    paths["older"].write_text(edited)
    original = lifecycle.gc_candidates
    lifecycle.gc_candidates = lambda *_: candidates  # the stale selection, as if made before the edit
    try:
        result = store.gc(apply=True)
    finally:
        lifecycle.gc_candidates = original
    assert result["skipped"] == [{"id": mid(3), "path": "memory/stm/oldest.md",
                                  "reason": "score is now 1.0000 (>= 0.05): edited since selected"}]
    assert result["memory_ids"] == [mid(2)]
    assert paths["oldest"].read_text() == pinned_text
    assert (vault_path / "memory/archive/older.md").read_text() == edited.replace(
        "status: active\n", "status: archived\n").replace("tags: []\n", "tags: []\narchived_at: 2026-11-22T10:15:00Z\n")


def test_gc_apply_skips_a_note_moved_or_reinforced_since_selection(store, vault_path):
    paths = gc_world(vault_path)
    store.sync()
    candidates = lifecycle.gc_candidates(store, store.now())
    os.rename(paths["oldest"], vault_path / "memory/ltm/oldest.md")
    paths["older"].write_text(paths["older"].read_text().replace("last_used: 2026-08-24T10:15:00Z",
                                                                  "last_used: 2026-11-22T10:00:00Z"))
    original = lifecycle.gc_candidates
    lifecycle.gc_candidates = lambda *_: candidates
    try:
        result = store.gc(apply=True)
    finally:
        lifecycle.gc_candidates = original
    assert [s["id"] for s in result["skipped"]] == [mid(3), mid(2)]
    assert result["skipped"][0]["reason"] == "moved or deleted since it was selected"
    assert result["total_affected"] == 0
    assert not (vault_path / "memory/archive").exists() or not any((vault_path / "memory/archive").iterdir())


def test_gc_limit_is_validated(store):
    with pytest.raises(InvalidInput, match="^limit must be between 1 and 10,000, got 0$"):
        store.gc(limit=0)


def test_gc_cli_json_and_text(runner, vault_path):
    gc_world(vault_path)
    import json

    data = json.loads(invoke(runner, "gc", "--json").output)
    assert (data["dry_run"], data["total_affected"]) == (True, 2)
    out = invoke(runner, "gc", "--apply", "--delete").output
    assert out.splitlines()[0] == "Removed 2 low-scoring memories (threshold: 0.05), moved to .trash/"


# -- promotion ---------------------------------------------------------------------------------------------


def promo_world(vault: Path) -> None:
    write_memory(vault, "stm", "brand-new", mid(1), "brand new memory", strength=2.0)  # score 2.0, never used
    write_memory(vault, "stm", "used-once", mid(2), "used once and fresh", age=H, use_count=1, created=2 * D)
    write_memory(vault, "stm", "busy", mid(3), "used often lately", age=13 * D, use_count=5, created=13.5 * D)
    write_memory(vault, "stm", "busy-old", mid(4), "used often long ago", age=30 * D, use_count=5, created=40 * D)
    write_memory(vault, "stm", "weak", mid(5), "used once long ago", age=20 * D, use_count=1, created=21 * D)


def test_promotion_criteria_new_memory_does_not_qualify(store, vault_path):
    promo_world(vault_path)
    result = store.promote(auto=True, apply=False)
    s1 = (2 ** 0.6) * decay.power_law(3600, 1.1, 3.0)
    s3 = (6 ** 0.6) * decay.power_law(13 * 86400, 1.1, 3.0)
    assert s3 < 0.65
    assert result == {
        "success": True, "dry_run": True, "candidates_found": 2, "promoted_count": 0, "promoted_ids": [],
        "candidates": [
            {"id": mid(2), "title": "used-once", "path": "memory/stm/used-once.md", "content_preview": "used once and fresh",
             "reason": "High score (1.50 >= 0.65)", "score": round(s1, 4), "use_count": 1, "age_days": 2.0,
             "new_path": None},
            {"id": mid(3), "title": "busy", "path": "memory/stm/busy.md", "content_preview": "used often lately",
             "reason": "Frequent use (5 >= 5 uses within 14 days)", "score": round(s3, 4), "use_count": 5,
             "age_days": 13.5, "new_path": None},
        ],
        "skipped": [], "links_rewritten": [], "renamed": [],
        "message": "Would promote 2 memories to memory/ltm/",
    }


def test_promote_apply_moves_to_ltm_keeping_the_file_name(store, vault_path):
    promo_world(vault_path)
    before = (vault_path / "memory/stm/used-once.md").read_text()
    result = store.promote(auto=True)
    assert (result["promoted_count"], result["promoted_ids"]) == (2, [mid(2), mid(3)])
    assert result["message"] == "Promoted 2 memories to memory/ltm/"
    after = (vault_path / "memory/ltm/used-once.md").read_text()
    assert after == before.replace("status: active\n", "status: promoted\n").replace(
        "tags: []\n", "tags: []\npromoted_at: 2026-11-22T10:15:00Z\n")
    assert not (vault_path / "memory/stm/used-once.md").exists()
    assert store.open([mid(2)])["memories"][0]["status"] == "promoted"
    assert store.promote(auto=True)["candidates_found"] == 0


def test_promote_by_id_needs_criteria_or_force(store, vault_path):
    promo_world(vault_path)
    result = store.promote(mid(1)[:8])
    assert result["promoted_count"] == 0 and result["candidates_found"] == 0
    assert result["message"] == (
        f"Memory {mid(1)} does not meet the promotion criteria: score 2.00 needs >= 0.65 with at least one use, "
        "or 5 uses within 14 days (has 0); use --force to promote anyway")
    forced = store.promote(mid(1)[:8], force=True)
    assert forced["promoted_ids"] == [mid(1)] and forced["candidates"][0]["reason"] == "Forced"
    assert (vault_path / "memory/ltm/brand-new.md").exists()
    assert store.promote(mid(1))["message"] == f"Memory {mid(1)} is already promoted (memory/ltm/brand-new.md)"
    with pytest.raises(InvalidInput, match="^pass a memory id to promote, or --auto to find the candidates$"):
        store.promote()


def test_promote_apply_rechecks_an_edit_made_after_selection(store, vault_path):
    promo_world(vault_path)
    store.sync()
    candidates = lifecycle.promotion_candidates(store, store.now())
    path = vault_path / "memory/stm/busy.md"
    path.write_text(path.read_text().replace("use_count: 5", "use_count: 2"))  # corrected by hand in Obsidian
    edited = path.read_text()
    original = lifecycle.promotion_candidates
    lifecycle.promotion_candidates = lambda *_: candidates
    try:
        result = store.promote(auto=True)
    finally:
        lifecycle.promotion_candidates = original
    assert result["promoted_ids"] == [mid(2)]
    assert result["skipped"][0]["id"] == mid(3)
    assert result["skipped"][0]["reason"].startswith("no longer meets the criteria (score ")
    assert path.read_text() == edited


def test_promote_cli_dry_run(runner, vault_path):
    promo_world(vault_path)
    out = invoke(runner, "promote", "--auto", "--dry-run").output
    assert out.splitlines()[0] == "Would promote 2 memories to memory/ltm/"
    assert (vault_path / "memory/stm/busy.md").exists()


# -- hand moves, maintenance -----------------------------------------------------------------------------------


def test_hand_moved_note_takes_its_folder_status_and_reading_never_writes(store, vault_path):
    p = write_memory(vault_path, "stm", "moved", mid(7), "moved by hand in Obsidian")
    store.sync()
    os.rename(p, vault_path / "memory/ltm/moved.md")
    before = (vault_path / "memory/ltm/moved.md").read_bytes()
    store.sync()
    store.search("moved")
    store.stats()
    assert store.resolve(mid(7)).status == "promoted"  # the folder is the truth
    assert (vault_path / "memory/ltm/moved.md").read_bytes() == before  # a read wrote nothing
    store.touch(mid(7))  # vaultmem writes the note anyway: it aligns `status` in the same edit
    text = (vault_path / "memory/ltm/moved.md").read_text()
    assert "status: promoted\n" in text and "status: active" not in text
    assert store.sync().changed == 0


def test_maintenance_previews_by_default_and_applies_when_configured(vault_path, clock):
    gc_world(vault_path)
    promo_world_path = vault_path / "memory/stm/used-once.md"
    write_memory(vault_path, "stm", "used-once", mid(8), "used once and fresh", age=H, use_count=1)
    store = MemoryStore(vault_path, settings=load_settings(vault_path), clock=clock)
    result = store.maintenance()
    assert result["applied"] == {"gc": False, "promote": False}
    assert (result["gc"]["total_affected"], result["promote"]["candidates_found"]) == (2, 1)
    assert result["message"] == ("Would archive 2 low-scoring memories (threshold: 0.05); run with --apply to move "
                                 "them to memory/archive/; Would promote 1 memory to memory/ltm/")
    assert promo_world_path.exists()
    auto = MemoryStore(vault_path, settings=dataclasses.replace(store.settings, auto_gc=True, auto_promote=True),
                       clock=clock)
    done = auto.maintenance()
    assert (done["gc"]["archived_count"], done["promote"]["promoted_count"]) == (2, 1)
    assert (vault_path / "memory/ltm/used-once.md").exists()
    assert Settings().maintenance_interval == 3600.0


# -- unified search ---------------------------------------------------------------------------------------------


def test_search_unified_ranks_stm_ltm_and_vault_notes_dedups_and_paginates(store, vault_path):
    write_memory(vault_path, "stm", "s1", mid(1), "architecture decision: hexagonal ports", age=H)
    write_memory(vault_path, "ltm", "l1", mid(2), "architecture decision: hexagonal ports and adapters", age=30 * D)
    (vault_path / "Projects").mkdir()
    (vault_path / "Projects/Architecture.md").write_text("# Architecture\nOur architecture decision record.\n")
    (vault_path / "Projects/Copy.md").write_text("architecture decision: hexagonal ports\n")  # same text as s1
    write_memory(vault_path, "archive", "a1", mid(3), "architecture decision archived", age=90 * D)
    result = store.search_unified("architecture decision", page_size=2)
    page2 = store.search_unified("architecture decision", page=2, page_size=2)
    assert result["pagination"] == {"page": 1, "page_size": 2, "total_count": 3, "total_pages": 2, "has_more": True}
    assert page2["pagination"]["has_more"] is False
    ranked = result["results"] + page2["results"]
    # the copy of s1's text is a duplicate, the archived memory is out: one of each source remains
    assert sorted((r["source"], r["path"]) for r in ranked) == [
        ("ltm", "memory/ltm/l1.md"), ("stm", "memory/stm/s1.md"), ("vault", "Projects/Architecture.md")]
    assert [r["score"] for r in ranked] == sorted((r["score"] for r in ranked), reverse=True)
    by_source = {r["source"]: r for r in ranked}
    # weights: STM rank = 1.0 * rank_score(relevance, decay); vault note rank = 0.7 * relevance
    assert by_source["vault"]["score"] == round(0.7 * by_source["vault"]["relevance"], 4)
    assert by_source["vault"]["decay_score"] is None and by_source["vault"]["id"] is None
    top = ranked[0]
    lines = format_unified(result["results"], result["pagination"], verbose=True).splitlines()
    assert lines[0] == "Found 3 results (page 1 of 2):"
    assert lines[2:5] == ["1. [Vault] # Architecture", "   Our architecture decision record.",
                          f"   score: {top['score']:.4f}"]
    assert lines[5] == "   path: Projects/Architecture.md"
    assert f"   id: {mid(1)} · path: memory/stm/s1.md" in lines
    lone = store.search_unified("architecture decision", ltm_weight=0.0, stm_weight=1.0, preview_length=5)
    assert (lone["results"][0]["source"], lone["results"][0]["content"]) == ("stm", "archi...")


def test_search_unified_validates_and_cli(runner, vault_path):
    write_memory(vault_path, "stm", "s1", mid(1), "zebra crossing")
    out = invoke(runner, "search", "zebra", "--unified").output
    assert out.splitlines()[:3] == ["Found 1 result (page 1 of 1):", "", "1. [STM] zebra crossing"]
    store = MemoryStore(vault_path)
    with pytest.raises(InvalidInput, match="^ltm_weight must be between 0.0 and 2.0, got 3.0$"):
        store.search_unified("x", ltm_weight=3.0)
    with pytest.raises(InvalidInput, match="^page_size must be between 1 and 100, got 0$"):
        store.search_unified("x", page_size=0)
