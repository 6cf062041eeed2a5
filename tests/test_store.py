"""The service layer on real files: save, search, open, touch, sync with Obsidian edits."""

from __future__ import annotations

import dataclasses
import os
import shutil

import pytest

from vaultmem.base.errors import (
    Ambiguous,
    InvalidInput,
    MalformedNote,
    NotFound,
    QuerySyntaxError,
    VaultmemError,
)
from vaultmem.core.scoring import rank_score
from vaultmem.store import MemoryStore, Policy


def test_save_writes_the_note_described_in_design(store, vault_path):
    result = store.save("Use JWT tokens for authentication in all new APIs", tags=["auth"], source="chat",
                        meta={"project": "apollo"})
    mid = result["memory_id"]
    assert result["success"] is True
    assert result["message"] == f"Memory saved with ID: {mid}"
    path = vault_path / result["path"]
    assert result["path"] == f"memory/stm/use-jwt-tokens-for-authentication-in-{mid[:8]}.md"
    assert path.read_text() == (
        "---\n"
        f"id: {mid}\n"
        "created: 2026-11-22T10:15:00Z\n"
        "last_used: 2026-11-22T10:15:00Z\n"
        "use_count: 0\n"
        "strength: 1.0\n"
        "status: active\n"
        "memory_type: semantic\n"
        "tags:\n"
        "  - auth\n"
        "entities:\n"
        "  - JWT\n"
        "  - APIs\n"
        "source: chat\n"
        "vaultmem: memory\n"
        "project: apollo\n"
        "urgency: reference\n"
        "domain: technical\n"
        "---\n"
        "Use JWT tokens for authentication in all new APIs\n"
    )
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp files left


def test_search_returns_the_seed_keys(store):
    mid = store.save("Use JWT tokens for authentication in all new APIs", tags=["auth"])["memory_id"]
    store.save("Deploys go out on Tuesdays", tags=["ops"])
    result = store.search("authentication", top_k=5)
    assert result["count"] == 1
    item = result["results"][0]
    assert item["id"] == mid
    assert {"id", "content", "tags", "score", "use_count", "last_used", "age_days", "path", "similarity"} <= set(item)
    assert item["score"] == 1.0 and item["use_count"] == 0 and item["age_days"] == 0.0
    assert item["last_used"] == "2026-11-22T10:15:00Z"


def test_search_finds_an_old_memory_among_many_recent_ones(store, clock):
    target = store.save("The staging database password rotation happens quarterly")["memory_id"]
    for i in range(300):
        clock.advance(hours=1)
        store.save(f"Routine note number {i} about the weekly planning meeting")
    result = store.search("quarterly rotation", top_k=3)
    assert [r["id"] for r in result["results"]][:1] == [target]


def test_strong_old_match_beats_weak_recent_match(store, clock):
    old = store.save("Kubernetes ingress uses nginx with TLS termination at the edge")["memory_id"]
    clock.advance(days=30)
    store.save("nginx logs rotate daily")
    ranked = [r["id"] for r in store.search("kubernetes ingress nginx TLS")["results"]]
    assert ranked[0] == old


def test_rank_score_keeps_relevance_first():
    assert rank_score(1.0, 0.01, 0.3) > rank_score(0.7, 2.0, 0.3)
    assert rank_score(0.5, 1.0, 0.3) > rank_score(0.5, 0.1, 0.3)
    assert rank_score(1.0, 0.0, 0.3) == pytest.approx(0.7)


def test_search_filters(store, clock):
    a = store.save("Alpha service uses gRPC", tags=["alpha"])["memory_id"]
    clock.advance(days=10)
    b = store.save("Beta service uses gRPC too", tags=["beta"])["memory_id"]
    ids = lambda **kw: {r["id"] for r in store.search("grpc", **kw)["results"]}  # noqa: E731
    assert ids() == {a, b}
    assert ids(tags=["alpha"]) == {a}
    assert ids(tags=["alpha", "beta"]) == {a, b}
    assert ids(window_days=7) == {b}
    assert ids(min_score=0.5) == {b}
    assert ids(status="archived") == set()


def test_empty_query_lists_by_score(store, clock):
    first = store.save("first")["memory_id"]
    clock.advance(days=2)
    second = store.save("second")["memory_id"]
    assert [r["id"] for r in store.search("")["results"]] == [second, first]


@pytest.mark.parametrize("query, message", [
    ('jwt "tokens', 'unbalanced " in query; close the quote or remove it'),
    ("(jwt OR auth", "unbalanced ( in query; close it with ) or remove it"),
    ("jwt)", "unbalanced ) in query; remove it or add the matching ("),
])
def test_query_syntax_errors(store, query, message):
    with pytest.raises(QuerySyntaxError) as info:
        store.search(query)
    assert str(info.value) == message


@pytest.mark.parametrize("kwargs, message", [
    ({"top_k": 0}, "top_k must be between 1 and 100, got 0"),
    ({"window_days": -1}, "window_days must be a positive number of days, got -1"),
    ({"status": "gone"}, "status must be one of active, promoted, archived, all, got 'gone'"),
    ({"tags": ["a,b"]}, "tag 'a,b' contains a comma, bracket or control character; remove it"),
])
def test_search_rejects_bad_parameters(store, kwargs, message):
    with pytest.raises(InvalidInput) as info:
        store.search("x", **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize("content, message", [
    ("   ", "content is empty; pass the text to remember"),
    ("x" * 50_001, "content is 50,001 characters; the limit is 50,000"),
    ("---\nid: evil\n---", "content starts with ---, which would read as frontmatter; rephrase the first line"),
])
def test_save_rejects_bad_content_and_writes_nothing(store, vault_path, content, message):
    before = sorted(p.name for p in (vault_path / "memory/stm").iterdir())
    with pytest.raises(InvalidInput) as info:
        store.save(content)
    assert str(info.value) == message
    assert sorted(p.name for p in (vault_path / "memory/stm").iterdir()) == before


def test_save_rejects_meta_that_shadows_an_owned_property(store):
    with pytest.raises(InvalidInput, match="meta key 'status' is a vaultmem property"):
        store.save("x", meta={"status": "promoted"})


@pytest.mark.parametrize(("meta", "message"), [
    ({"k": {"a": 1}}, "meta value for 'k' must be flat (text, number, list), not a map"),
    ({"k": [{"a": 1}]}, "meta value for 'k' must be flat (text, number, list), not a list of maps"),
    ({"k": ["a", [1, 2]]}, "meta value for 'k' must be flat (text, number, list), not a list of lists"),
    ({"k": float("nan")}, "meta value for 'k' is nan; a note cannot keep it, pass a finite number or text"),
    ({"k": [1.5, float("inf")]}, "meta value for 'k' is inf; a note cannot keep it, pass a finite number or text"),
    ({"k": b"raw"}, "meta value for 'k' must be text, a number, true/false, a date or a list of those, not bytes"),
    ({"k": {1, 2}}, "meta value for 'k' must be text, a number, true/false, a date or a list of those, not set"),
])
def test_save_refuses_meta_a_note_cannot_keep_as_the_same_value(store, vault_path, meta, message):
    """Before: a list of maps was written as Python's repr ("{'a': 1}"), NaN raised a bare ValueError."""
    with pytest.raises(InvalidInput) as info:
        store.save("a fact with odd extras", meta=meta)
    assert str(info.value) == message
    assert list((vault_path / "memory/stm").iterdir()) == []


def test_save_keeps_flat_meta_values_as_they_were_given(store, vault_path):
    # "n" is quoted: YAML 1.1 readers take a bare n for false
    result = store.save("a fact with extras", meta={"n": 3, "x": -0.5, "ok": True, "none": None, "l": ["a", 2, None]})
    text = (vault_path / result["path"]).read_text()
    assert "\n\"n\": 3\nx: -0.5\nok: true\nnone: null\nl:\n  - a\n  - 2\n  - null\n" in text


def test_open_by_id_short_id_and_file_name(store):
    result = store.save("Zoë prefers the café near the Zürich office")
    mid, name = result["memory_id"], result["path"].rsplit("/", 1)[1]
    for ref in (mid, mid[:8], name, name[:-3], name.upper()[:-3]):
        assert store.open([ref])["memories"][0]["id"] == mid
    missing = store.open([mid, "deadbeef"])
    assert missing["count"] == 1 and missing["not_found"] == ["deadbeef"]


def test_ambiguous_short_id_is_an_error(store, vault_path):
    text = "---\nid: {}\n---\nsame prefix\n"
    (vault_path / "memory/stm/a-aaaaaaaa.md").write_text(text.format("aaaaaaaa-0000-4000-8000-000000000001"))
    (vault_path / "memory/stm/b-aaaaaaaa.md").write_text(text.format("aaaaaaaa-0000-4000-8000-000000000002"))
    store.sync()
    with pytest.raises(Ambiguous, match=r"'aaaaaaaa' matches 2 notes \(memory/stm/a-aaaaaaaa.md, memory/stm/b-aaaaaaaa.md\)"):
        store.resolve("aaaaaaaa")


def test_touch_changes_only_its_lines(store, vault_path, clock):
    result = store.save("Use JWT tokens", tags=["auth"])
    path = vault_path / result["path"]
    before = path.read_text().splitlines()
    clock.advance(days=3)
    touched = store.touch(result["memory_id"][:8], boost_strength=True)
    after = path.read_text().splitlines()
    assert touched["old_score"] == 0.5 and touched["use_count"] == 1 and touched["strength"] == 1.1
    assert touched["new_score"] == pytest.approx(2 ** 0.6 * 1.1, abs=1e-4)
    assert touched["message"] == "Memory reinforced. Score: 0.50 -> 1.67"
    diff = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert diff == [
        ("last_used: 2026-11-22T10:15:00Z", "last_used: 2026-11-25T10:15:00Z"),
        ("use_count: 0", "use_count: 1"),
        ("strength: 1.0", "strength: 1.1"),
    ]


def test_strength_boost_caps_at_two(store):
    mid = store.save("important", strength=1.95)["memory_id"]
    assert store.touch(mid, boost_strength=True)["strength"] == 2.0


def test_edits_made_in_obsidian_are_seen_by_the_next_command(store, vault_path):
    result = store.save("Deploys happen on Tuesdays after the weekly standup", tags=["ops"])
    path = vault_path / result["path"]
    text = path.read_text().replace("weekly standup", "weekly retro on Wednesdays")
    text = text.replace("  - ops\n", "  - ops\n  - release\n").replace("strength: 1.0", "strength: 1.7")
    path.write_text(text)
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse clocks
    found = store.search("wednesdays", tags=["release"])["results"]
    assert [r["id"] for r in found] == [result["memory_id"]]
    assert found[0]["strength"] == 1.7
    assert store.search("standup")["count"] == 0


def test_touch_reapplies_on_top_of_a_concurrent_obsidian_edit(store, vault_path):
    result = store.save("Original text")
    path = vault_path / result["path"]
    rec = store.resolve(result["memory_id"])
    # the person edits after vaultmem read the index but before it writes
    path.write_text(path.read_text().replace("Original text", "Edited in Obsidian").replace("use_count: 0", "use_count: 5"))
    store.modify(rec, lambda current: {"use_count": current.use_count + 1})
    text = path.read_text()
    assert "Edited in Obsidian" in text and "use_count: 6" in text


def test_sample_vault_is_indexed_with_kinds_and_statuses(sample_vault, clock):
    store = MemoryStore(sample_vault, clock=clock)
    report = store.sync()
    assert report.malformed == [("memory/stm/broken-yaml-note-0badc0de.md",
                                 "invalid YAML at line 4: did not find expected ',' or ']'")]
    stats = store.stats()
    assert stats["total_memories"] == 6
    assert stats["by_status"] == {"active": 4, "promoted": 1, "archived": 1}
    assert stats["vault_notes"] == 2 and stats["malformed_notes"] == 1
    # the person's own notes are not memories
    assert store.search("apollo")["count"] == 0
    assert store.search("staging")["count"] == 0
    assert store.search("staging", status="archived")["count"] == 1
    assert store.search("café zürich")["results"][0]["id"].startswith("9c1e44f0")


def test_malformed_notes_are_never_rewritten(sample_vault, clock):
    broken = sample_vault / "memory/stm/broken-yaml-note-0badc0de.md"
    original = broken.read_bytes()
    store = MemoryStore(sample_vault, clock=clock)
    store.sync()
    with pytest.raises(NotFound):
        store.touch("0badc0de")
    assert broken.read_bytes() == original


@pytest.mark.parametrize("key", ["id", "status", "memory_type", "source", "context", "agent"])
@pytest.mark.parametrize(("value", "shape"), [("[a1b2c3d4, x]", "a list"), ("{a: 1}", "a mapping")])
def test_a_one_value_property_given_a_list_is_reported_not_read_as_its_repr(store, vault_path, key, value, shape):
    """A person typed `id: [x]` or `agent: [a, b]`: the note is malformed (named, kept as is),
    never the memory "['x']" nor a private memory of the agent "['a', 'b']"."""
    note = vault_path / "memory/stm/odd-id.md"
    props = {"id": "0dd1d000-0000-4000-8000-000000000000", "status": "active", key: value}
    note.write_bytes(("---\r\n" + "".join(f"{k}: {v}\r\n" for k, v in props.items())
                      + "---\r\nKafka cluster notes\r\n").encode())
    before = note.read_bytes()
    store.sync()
    assert store.index_status()["malformed"] == [
        {"path": "memory/stm/odd-id.md",
         "reason": f"property {key!r} is {shape}; give it one value (text) or remove the property"}]
    assert store.search("kafka")["count"] == 0
    assert note.read_bytes() == before


def test_touching_a_note_that_broke_since_indexing_refuses(store, vault_path):
    result = store.save("soon broken")
    path = vault_path / result["path"]
    rec = store.resolve(result["memory_id"])
    path.write_text(path.read_text().replace("tags: []", "tags: [oops"))
    before = path.read_bytes()
    with pytest.raises(MalformedNote, match="vaultmem will not rewrite it"):
        store.modify(rec, lambda current: {"use_count": 1})
    assert path.read_bytes() == before


def test_person_notes_are_never_modified(sample_vault, clock):
    before = {p: p.read_bytes() for p in sample_vault.rglob("*.md")}
    store = MemoryStore(sample_vault, clock=clock)
    store.stats()
    for ref in ("7f3c2a1e", "1a2b3c4d", "4d5e6f70"):
        store.touch(ref)
    changed = {p for p in before if p.read_bytes() != before[p]}
    assert {p.name for p in changed} == {
        "use-jwt-tokens-for-authentication-in-7f3c2a1e.md", "api-guidelines-1a2b3c4d.md",
        "postgres-connection-pool-settings-4d5e6f70.md"}


def test_hand_written_note_keeps_comments_and_odd_scalars_on_touch(sample_vault, clock):
    path = sample_vault / "memory/stm/postgres-connection-pool-settings-4d5e6f70.md"
    before = path.read_text().splitlines()
    MemoryStore(sample_vault, clock=clock).touch("4d5e6f70")
    after = path.read_text().splitlines()
    diff = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert diff == [("last_used: 2026-11-12T12:00:00Z", "last_used: 2026-11-22T10:15:00Z"),
                    ("use_count: 3   # reinforced three times", "use_count: 4")]
    assert len(before) == len(after)


def test_moving_a_file_by_hand_changes_its_status(store, vault_path):
    result = store.save("moved by hand")
    src = vault_path / result["path"]
    shutil.move(src, vault_path / "memory/ltm" / src.name)
    assert store.open([result["memory_id"]])["memories"][0]["status"] == "promoted"
    assert store.open([result["memory_id"]])["memories"][0]["path"].startswith("memory/ltm/")


def test_note_dropped_into_stm_without_id_becomes_a_memory(store, vault_path):
    path = vault_path / "memory/stm/my-own-memory.md"
    path.write_text("I wrote this memory by hand.\n")
    found = store.search("wrote hand")["results"]
    assert len(found) == 1
    mid = found[0]["id"]
    store.touch("my-own-memory")
    text = path.read_text()
    assert text.startswith(f"---\nid: {mid}\nuse_count: 1\nlast_used: 2026-11-22T10:15:00Z\n---\nI wrote")


def test_index_is_rebuilt_when_deleted_or_corrupt(store, vault_path):
    mid = store.save("survives index loss")["memory_id"]
    store.close()
    shutil.rmtree(vault_path / ".vaultmem/index")
    assert store.search("survives")["results"][0]["id"] == mid
    store.close()
    (vault_path / ".vaultmem/index/catalog.sqlite").write_bytes(b"garbage" * 100)
    for leftover in (vault_path / ".vaultmem/index").glob("catalog.sqlite-*"):
        leftover.unlink()
    assert store.search("survives")["results"][0]["id"] == mid


def test_index_status_reports_stale_missing_deleted_and_malformed(sample_vault, clock):
    store = MemoryStore(sample_vault, clock=clock)
    store.sync()
    assert store.index_status()["clean"] is True
    (sample_vault / "Daily/2026-11-21.md").write_text("changed\n")
    os.utime(sample_vault / "Daily/2026-11-21.md", ns=(1, 1))
    (sample_vault / "Daily/new.md").write_text("new\n")
    (sample_vault / "Projects/Apollo.md").unlink()
    status = store.index_status()
    assert (status["stale"], status["missing_from_index"], status["deleted_from_disk"]) == (
        ["Daily/2026-11-21.md"], ["Daily/new.md"], ["Projects/Apollo.md"])
    assert status["malformed"] == [{"path": "memory/stm/broken-yaml-note-0badc0de.md",
                                    "reason": "invalid YAML at line 4: did not find expected ',' or ']'"}]
    assert status["clean"] is False
    store.sync()
    assert store.index_status()["clean"] is True


def test_commands_on_a_missing_vault_say_how_to_fix_it(tmp_path, clock):
    store = MemoryStore(tmp_path / "nowhere", clock=clock)
    with pytest.raises(VaultmemError) as info:
        store.search("x")
    assert str(info.value) == f"vault {tmp_path / 'nowhere'} does not exist; run `vaultmem init {tmp_path / 'nowhere'}` first"


def test_init_is_idempotent(tmp_path, clock):
    store = MemoryStore(tmp_path / "v", clock=clock)
    first = store.init()
    assert "memory/stm/" in first["created"] and ".vaultmem/config.yaml" in first["created"]
    config = (tmp_path / "v/.vaultmem/config.yaml").read_text()
    second = store.init()
    assert second["created"] == [] and second["message"].endswith("was already initialised")
    assert (tmp_path / "v/.vaultmem/config.yaml").read_text() == config


def test_two_saves_in_the_same_second_get_distinct_files(store, vault_path):
    a = store.save("same words", dedupe=False)
    b = store.save("same words", dedupe=False)
    assert a["path"] != b["path"]
    assert len(list((vault_path / "memory/stm").glob("same-words-*.md"))) == 2


def test_a_note_with_every_query_word_beats_a_short_note_with_some(store):
    store.save("The team moved encryption from Vault to KMS")
    target = store.save("Dmitri and Pedro approved the plan; ticket 127 tracks the GitLab encryption. "
                        "The team moved pricing from Snowflake to GitLab; Jonas says p95 halved.")["memory_id"]
    assert store.search("Jonas moved encryption")["results"][0]["id"] == target


def test_file_name_words_of_a_memory_are_not_counted_twice(store, vault_path):
    plain = store.save("Kafka retention is seven days for the audit topic")["memory_id"]
    store.save("Retention of Kafka audit data is seven days per policy")
    rec = store.resolve(plain)
    from vaultmem.storage.index import _document

    assert "title" not in _document(rec)  # no words: the field is left out


def test_freshness_ttl_skips_rescans_but_not_own_writes(vault_path, clock):
    store = MemoryStore(vault_path, clock=clock, policy=Policy(freshness_ttl=3600))
    store.sync()
    (vault_path / "memory/stm/by-hand.md").write_text("typed in Obsidian just now\n")
    assert store.search("obsidian")["count"] == 0  # within the TTL: not rescanned yet
    mid = store.save("saved through vaultmem")["memory_id"]
    assert store.search("saved")["results"][0]["id"] == mid
    assert MemoryStore(vault_path, clock=clock).search("obsidian")["count"] == 1  # no TTL: scanned


def test_parallel_rebuild_indexes_the_same_notes(sample_vault, clock, monkeypatch):
    import vaultmem.storage.index as index_module

    store = MemoryStore(sample_vault, clock=clock)
    serial = store.rebuild_index()
    monkeypatch.setattr(index_module, "PARALLEL_PARSE_MIN", 1)
    parallel = store.rebuild_index()
    assert parallel == serial
    assert store.search("café zürich")["results"][0]["id"].startswith("9c1e44f0")


def test_a_long_lived_process_sees_another_process_s_write_without_a_rescan(vault_path, clock):
    """A server between two rescans of the files still reads the catalog as it is now: a
    touch through another connection (another process) shows in its next search."""
    # no rescan of the files within the hour: only the catalog can tell
    server = MemoryStore(vault_path, clock=clock, policy=Policy(freshness_ttl=3600.0))
    cli = MemoryStore(vault_path, clock=clock)
    saved = server.save("Deploys go out on Tuesdays")
    assert [m["use_count"] for m in server.search("deploys tuesdays")["results"]] == [0]
    cli.touch(saved["memory_id"])
    assert [m["use_count"] for m in server.search("deploys tuesdays")["results"]] == [1]
    server.close()
    cli.close()


def test_warm_opens_the_index_and_reads_nothing_into_the_notes(store, vault_path):
    """What a long-lived process does before its first call: the freshness check and the
    searcher, read only (no note changes, the next search within the TTL scans nothing)."""
    store.save("Deploys go out on Tuesdays", tags=["ops"])
    store.close()
    before = {p: p.read_bytes() for p in vault_path.rglob("*.md")}
    store = MemoryStore(vault_path, clock=store.clock, policy=Policy(freshness_ttl=60.0))
    store.warm()
    assert store.index.text_search().lexicon is not None and store.last_sync is not None
    assert {p: p.read_bytes() for p in vault_path.rglob("*.md")} == before
    scans = []
    store.vault.scan = lambda *a, **k: scans.append(1) or {}
    assert [r["content"] for r in store.search("deploys")["results"]] == ["Deploys go out on Tuesdays"]
    assert scans == []


def test_ranking_rows_kept_by_a_long_lived_process_follow_every_write(vault_path, clock, monkeypatch):
    """A server keeps the ranking rows it read (Index.rank_records) until the catalog changes:
    each read equals a fresh one from SQLite, a write by another process (a CLI touch) or by
    this one is seen by the next read, and the rows kept stay under their bound."""
    from vaultmem.storage import index as idx

    monkeypatch.setattr(idx, "RANK_CACHE_ROWS", 8)
    server = MemoryStore(vault_path, clock=clock, policy=Policy(long_lived=True))
    paths = [server.resolve(server.save(f"Kafka topic {i} keeps {i} days of orders", dedupe=False)["memory_id"]).path
             for i in range(12)]

    def fresh(some: list[str]) -> dict[str, tuple]:
        return {p: dataclasses.astuple(r) for p, r in server.index._read_rank_records(some).items()}

    def kept(some: list[str]) -> dict[str, tuple]:
        return {p: dataclasses.astuple(r) for p, r in server.index.rank_records(some).items()}

    assert kept(paths[:6]) == fresh(paths[:6])
    assert kept(paths[:6]) == fresh(paths[:6])  # now from the rows kept
    assert set(server.index._rank_rows) == set(paths[:6])
    cli = MemoryStore(vault_path, clock=clock)  # another process's connection to the catalog
    clock.advance(hours=2)
    cli.touch(paths[2].rsplit("/", 1)[1].removesuffix(".md"), boost_strength=True)
    cli.close()
    after = server.index.rank_records(paths[:6])
    assert after[paths[2]].use_count == 1 and after[paths[2]].strength == 1.1
    assert after[paths[2]].last_used == clock().timestamp()
    assert kept(paths[:6]) == fresh(paths[:6])
    server.touch(paths[3].rsplit("/", 1)[1].removesuffix(".md"))  # this process's own write
    assert server.index.rank_records(paths[3:4])[paths[3]].use_count == 1
    assert kept(paths) == fresh(paths)  # 12 rows read: the oldest go
    assert len(server.index._rank_rows) <= 8
    assert [r["content"] for r in server.search("kafka topic 7 days", top_k=1)["results"]] == [
        "Kafka topic 7 keeps 7 days of orders"]
    server.close()
    assert server.index._rank_rows == {}


def test_properties_read_from_the_catalog_are_each_records_own(store):
    """A search reads up to 110 memories' properties from the catalog; flat ones repeat and are
    parsed once per process (`record.props_of`). Each record still gets its own dict: one
    changed does not change another's or the next read, nested values included."""
    from vaultmem.storage import record

    a = store.resolve(store.save("Standup moved to 9:30", meta={"project": "apollo", "points": 3})["memory_id"])
    b = store.resolve(store.save("Retro moved to Friday", meta={"project": "apollo", "points": 3})["memory_id"])
    c = store.resolve(store.save("Demo moved to Monday", meta={"owners": ["ana", "bo"]})["memory_id"])
    flat = {"project": "apollo", "points": 3, "urgency": "reference", "domain": "project"}
    for read in (store.index.rank_records, store.index.by_paths):
        first = read([a.path, b.path, c.path])
        assert first[a.path].props == first[b.path].props == flat
        assert first[c.path].props["owners"] == ["ana", "bo"]
        first[a.path].props["points"] = 99
        first[c.path].props["owners"].append("cy")
        again = read([a.path, c.path])
        assert again[a.path].props == flat and first[b.path].props == flat
        assert again[c.path].props["owners"] == ["ana", "bo"]
    assert any(known == flat for known in record._FLAT_PROPS.values())
    assert not any("owners" in known for known in record._FLAT_PROPS.values())  # not flat: parsed each time
