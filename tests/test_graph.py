"""Relations and the knowledge graph on real vaults: relate, open --relations, graph,
backlinks, canvas export, doctor, and what happens when a person renames or deletes notes."""

from __future__ import annotations

import json
import math
import os
import shutil

import pytest
from conftest import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem.base.config import load_settings
from vaultmem.cli import cli
from vaultmem.features.graph import validate_canvas
from vaultmem.store import MemoryStore

JWT = "7f3c2a1e-5b9d-4c1e-9a0b-2d4e6f8a1c3e"
API = "1a2b3c4d-1111-4222-8333-444455556666"
ZOE = "9c1e44f0-2d3b-4a6c-b7e8-f10a2b3c4d5e"
DEPLOY_PATH = "memory/stm/deploys-go-out-on-tuesdays-2b6d9e01.md"
JWT_PATH = "memory/stm/use-jwt-tokens-for-authentication-in-7f3c2a1e.md"
API_PATH = "memory/ltm/api-guidelines-1a2b3c4d.md"
ZOE_PATH = "memory/stm/zoe-prefers-cafe-meetings-9c1e44f0.md"


@pytest.fixture
def sample(sample_vault, clock):
    s = MemoryStore(sample_vault, settings=load_settings(sample_vault), clock=clock)
    yield s
    s.close()


@pytest.fixture
def sample_runner(monkeypatch, sample_vault):
    from click.testing import CliRunner

    monkeypatch.setenv("VAULTMEM_VAULT", str(sample_vault))
    return CliRunner()


# -- relate -------------------------------------------------------------------------------------


def test_relate_writes_only_the_relation_line(sample, sample_vault):
    before = (sample_vault / ZOE_PATH).read_bytes()
    result = sample.relate("9c1e44f0", "7f3c2a1e", "supports", 0.9, {"reason": "same project"})
    assert result == {
        "success": True,
        "relation_id": result["relation_id"],
        "from": ZOE,
        "to": JWT,
        "type": "supports",
        "strength": 0.9,
        "metadata": {"reason": "same project"},
        "path": ZOE_PATH,
        "existed": False,
        "message": f"Relation created: {ZOE} --[supports]--> {JWT}",
    }
    assert result["relation_id"].startswith("rel-") and len(result["relation_id"]) == 20
    after = (sample_vault / ZOE_PATH).read_bytes()
    added = (b"\n## Relations\n- supports:: [[use-jwt-tokens-for-authentication-in-7f3c2a1e]]"
             b" (strength:: 0.9) (reason:: same project)\n")
    assert after == before + added
    # a second relation joins the section; the same type + target again replaces its line
    sample.relate("9c1e44f0", "1a2b3c4d", "related")
    again = sample.relate("9c1e44f0", "7f3c2a1e", "supports", 0.4)
    assert again["existed"] is True and again["message"] == f"Relation updated: {ZOE} --[supports]--> {JWT}"
    same = sample.relate("9c1e44f0", "7f3c2a1e", "supports", 0.4)
    assert same["message"] == f"Relation already exists: {ZOE} --[supports]--> {JWT}"
    assert (sample_vault / ZOE_PATH).read_bytes() == before + (
        b"\n## Relations\n- supports:: [[use-jwt-tokens-for-authentication-in-7f3c2a1e]] (strength:: 0.4)\n"
        b"- related:: [[api-guidelines-1a2b3c4d]]\n")
    outgoing = sample.open(["9c1e44f0"], include_relations=True)["memories"][0]["relations"]["outgoing"]
    assert [(r["to"], r["type"], r["strength"]) for r in outgoing] == [(JWT, "supports", 0.4), (API, "related", 1.0)]


def test_relate_applies_to_the_note_as_it_is_on_disk_now(sample, sample_vault, monkeypatch):
    """A person's edit made after the last sync is kept: relate re-reads the note under the lock."""
    sample.sync()
    path = sample_vault / JWT_PATH
    path.write_text(path.read_text().replace("all new APIs.", "all new APIs (edited in Obsidian)."))
    edited = path.read_text()
    monkeypatch.setattr(sample, "sync", lambda *a, **k: None)  # the index still has the old text
    sample.relate(JWT, ZOE, "related")
    assert path.read_text() == edited + "- related:: [[zoe-prefers-cafe-meetings-9c1e44f0]]\n"


def test_relate_appends_to_an_existing_section(sample, sample_vault):
    before = (sample_vault / JWT_PATH).read_text()
    sample.relate(JWT, ZOE, "has_decision", metadata={"decided": "2026-11-22"})
    assert (sample_vault / JWT_PATH).read_text() == before + (
        "- has_decision:: [[zoe-prefers-cafe-meetings-9c1e44f0]] (decided:: 2026-11-22)\n")


def test_relate_keeps_crlf_and_a_bom(store, vault_path):
    path = vault_path / "memory/stm/crlf-note-11111111.md"
    text = "\ufeff---\r\nid: 11111111-0000-4000-8000-000000000000\r\nmine: kept  # comment\r\n---\r\nWindows text.\r\n"
    path.write_bytes(text.encode())
    other = store.save("Target memory")["memory_id"]
    store.relate("11111111", other, "causes")
    name = store.open([other])["memories"][0]["path"].rsplit("/", 1)[1][:-3]
    assert path.read_bytes().decode() == text + f"\r\n## Relations\r\n- causes:: [[{name}]]\r\n"


@pytest.mark.parametrize("args, message", [
    (["relate", "7f3c2a1e", "1a2b3c4d", "--type", "likes"],
     "Error: unknown relation type 'likes'; use one of related, causes, supports, contradicts, has_decision, "
     "consolidated_from\n"),
    (["relate", "7f3c2a1e", "deadbeef", "--type", "supports"],
     "Error: no memory matches 'deadbeef'; check the id with `vaultmem search`\n"),
    (["relate", "7f3c2a1e", "use-jwt-tokens-for-authentication-in-7f3c2a1e", "--type", "supports"],
     f"Error: cannot relate memory {JWT} to itself; pass two different memories\n"),
    (["relate", "7f3c2a1e", "1a2b3c4d", "--type", "supports", "--strength", "1.5"],
     "Error: relation strength must be between 0.0 and 1.0, got 1.5\n"),
    (["relate", "0badc0de", "1a2b3c4d", "--type", "supports"],
     "Error: no memory matches '0badc0de'; check the id with `vaultmem search`\n"),
    (["open", "7f3c2a1e", "--relations", "--page-size", "101"],
     "Error: page_size must be between 1 and 100, got 101\n"),
])
def test_errors_are_one_line(sample_runner, sample_vault, args, message):
    before = {p: p.read_bytes() for p in sample_vault.rglob("*.md")}
    result = sample_runner.invoke(cli, args)
    assert (result.output, result.exit_code) == (message, 1)
    assert {p: p.read_bytes() for p in sample_vault.rglob("*.md")} == before


def test_relate_cli_json(sample_runner):
    out = invoke(sample_runner, "relate", "9c1e44f0", "7f3c2a1e", "--type", "related", "--strength", "0.5",
                 "--meta", "reason=same week", "--json").output
    data = json.loads(out)
    assert {k: data[k] for k in ("success", "from", "to", "type", "strength", "metadata")} == {
        "success": True, "from": ZOE, "to": JWT, "type": "related", "strength": 0.5,
        "metadata": {"reason": "same week"}}


# -- open --relations -----------------------------------------------------------------------------


def test_open_with_relations(sample):
    result = sample.open([JWT, "1a2b3c4d", "nope"], include_relations=True, page=1, page_size=1)
    assert result["count"] == 1 and result["not_found"] == ["nope"]
    assert result["pagination"] == {"page": 1, "page_size": 1, "total_count": 2, "total_pages": 2, "has_more": True}
    jwt = result["memories"][0]
    assert jwt["id"] == JWT and jwt["promoted_at"] is None
    assert jwt["relations"] == {
        "outgoing": [{"to": API, "to_path": API_PATH, "target": "api-guidelines-1a2b3c4d", "type": "supports",
                      "strength": 1.0, "metadata": {}, "resolved": True}],
        "incoming": [{"from": None, "from_path": "Projects/Apollo.md", "kind": "note", "type": "links_to",
                      "strength": 1.0, "metadata": {}}],
    }
    page2 = sample.open([JWT, "1a2b3c4d", "nope"], include_relations=True, page=2, page_size=1)
    api = page2["memories"][0]
    assert api["promoted_at"] == "2026-11-02T08:00:00Z"
    assert [(r["from"], r["type"]) for r in api["relations"]["incoming"]] == [(None, "links_to"), (JWT, "supports")]
    # callers that do not ask for relations get the old shape
    plain = sample.open([JWT])
    assert "relations" not in plain["memories"][0] and "pagination" not in plain


def test_open_relations_cli_text(sample_runner):
    out = invoke(sample_runner, "open", "7f3c2a1e", "--relations").output
    assert out.endswith(
        "Use JWT tokens for authentication in all new APIs.\n\n"
        "-> supports memory/ltm/api-guidelines-1a2b3c4d.md\n"
        "<- links_to from Projects/Apollo.md\n")


# -- read_graph ------------------------------------------------------------------------------------


def test_read_graph_on_the_sample_vault(sample):
    sample.relate(ZOE, JWT, "related", 0.5)
    result = sample.read_graph("all", page=1, page_size=2)
    assert result["stats"] == {"total_memories": 6, "total_relations": 2, "avg_score": 0.9619,
                               "avg_use_count": 2.17, "status_filter": "all", "relations_shown": "page"}
    assert result["pagination"] == {"page": 1, "page_size": 2, "total_count": 6, "total_pages": 3, "has_more": True}
    assert [m["id"] for m in result["memories"]] == [JWT, API]
    assert [(r["from"], r["type"], r["to"], r["strength"]) for r in result["relations"]] == [
        (JWT, "supports", API, 1.0), (ZOE, "related", JWT, 0.5)]
    # relations are those touching this page's memories; all_relations lists every one
    assert sample.read_graph("all", page=3, page_size=2)["relations"] == []
    assert len(sample.read_graph("all", page=3, page_size=2, all_relations=True)["relations"]) == 2
    active = sample.read_graph()  # default: active memories only; the promoted API note drops out
    assert active["stats"]["total_memories"] == 4
    assert [(r["from"], r["to"]) for r in active["relations"]] == [(ZOE, JWT)]
    assert "score" not in sample.read_graph("all", include_scores=False)["memories"][0]


@pytest.mark.parametrize("person_notes", [0, 40], ids=["mostly-memories", "mostly-notes"])
@pytest.mark.parametrize("model", ["power_law", "exponential", "two_component", "actr"])
def test_graph_scores_equal_decay_score(sample, sample_vault, clock, model, person_notes, monkeypatch):
    """Whichever way the catalog is read (one pass when most notes are memories, the kind
    index when most are the person's), every memory is scored as score_of scores it, and
    stats agree, scored in SQLite or (without its math functions) in Python."""
    import dataclasses

    from vaultmem.core import memories
    from vaultmem.features.graph import _scored_memories

    for i in range(person_notes):
        (sample_vault / f"Projects/extra-{i}.md").write_text(f"# Extra {i}\nA note of the person's.\n")
    sample.settings = dataclasses.replace(sample.settings, decay_model=model)
    clock.advance(days=3)
    sample.sync()
    stats = sample.stats()
    with monkeypatch.context() as patched:
        patched.setattr(memories, "math_functions", lambda: False)
        assert sample.stats() == stats
    assert stats["vault_notes"] == 2 + person_notes
    fast = {path: score for path, score, _u in _scored_memories(sample, None, clock())}
    slow = {r.path: sample.score_of(r, clock()) for r in sample.index.records("kind = 'memory'")}
    assert fast.keys() == slow.keys() and all(abs(fast[p] - slow[p]) < 1e-12 for p in fast)
    assert stats["total_memories"] == len(slow)
    assert stats["avg_score"] == round(math.fsum(slow.values()) / len(slow), 4)


def test_relation_counts_match_a_plain_count(sample, sample_vault):
    sample.relate(ZOE, JWT, "related")
    sample.relate(DEPLOY_PATH.rsplit("/", 1)[1], API, "causes")
    (sample_vault / "memory/stm/note-to-self.md").write_text("[[Apollo]] [[api-guidelines-1a2b3c4d]]\n")
    for status in ("active", "promoted", "archived", "all"):
        result = sample.read_graph(status, all_relations=True)
        assert result["stats"]["total_relations"] == len(result["relations"])
    assert sample.read_graph("all")["stats"]["total_relations"] == 4
    assert sample.read_graph("all", limit=2, all_relations=True)["stats"]["total_relations"] == 1


def test_graph_cli(sample_runner):
    out = invoke(sample_runner, "graph", "--status", "promoted").output
    assert out == (
        "1 memories (promoted) · 0 relations · avg score 1.5619 · avg use 7 · page 1/1\n"
        "  [1.56] 1a2b3c4d  API guidelines: every public endpoint is REST, described in OpenAPI 3.1, versioned in the \n"
    )
    data = json.loads(invoke(sample_runner, "graph", "--status", "all", "--json").output)
    assert set(data) == {"success", "memories", "relations", "stats", "pagination"}
    assert set(data["relations"][0]) >= {"id", "from", "to", "type", "strength", "created_at"}


# -- backlinks --------------------------------------------------------------------------------------


def test_backlinks_from_memories_and_notes(sample_runner):
    data = json.loads(invoke(sample_runner, "backlinks", "api-guidelines-1a2b3c4d", "--json").output)
    assert data["count"] == 2
    assert data["memories"] == [{"path": JWT_PATH, "id": JWT, "type": "supports", "strength": 1.0, "line": 20,
                                 "embed": False, "subpath": None}]
    assert data["notes"] == [{"path": "Projects/Apollo.md", "id": None, "type": "links_to", "strength": 1.0,
                              "line": 9, "embed": False, "subpath": None}]
    out = invoke(sample_runner, "backlinks", "2b6d9e01").output
    assert out == (f"1 link to {DEPLOY_PATH}\nyour notes:\n  Daily/2026-11-21.md:4  links_to\n")


def test_backlinks_by_alias_and_path(store, vault_path):
    mid = store.save("Alias target")["memory_id"]
    path = store.open([mid])["memories"][0]["path"]
    (vault_path / path).write_text((vault_path / path).read_text().replace("---\nAlias", "aliases:\n  - Nick\n---\nAlias"))
    (vault_path / "n1.md").write_text("by alias [[nick]] and by path [[" + path[:-3] + "|x]] and ![[" + path + "]]\n")
    result = store.backlinks(mid)
    assert [(r["path"], r["embed"]) for r in result["notes"]] == [("n1.md", False), ("n1.md", False), ("n1.md", True)]


# -- robustness: what a person does in Obsidian ------------------------------------------------------


def test_rename_with_links_updated(sample, sample_vault):
    new = "memory/ltm/api-rules-1a2b3c4d.md"
    os.rename(sample_vault / API_PATH, sample_vault / new)
    for rel in (JWT_PATH, "Projects/Apollo.md"):  # what "Automatically update internal links" does
        p = sample_vault / rel
        p.write_text(p.read_text().replace("[[api-guidelines-1a2b3c4d", "[[api-rules-1a2b3c4d"))
    assert [(r["from"], r["to"], r["to_path"]) for r in sample.read_graph("all")["relations"]] == [(JWT, API, new)]
    assert sample.backlinks(API)["count"] == 2
    assert sample.doctor()["counts"]["broken_links"] == 0


def test_rename_without_updating_links(sample, sample_vault):
    new = "memory/ltm/api-rules-1a2b3c4d.md"
    assert sample.backlinks(API)["count"] == 2  # indexed before the rename
    os.rename(sample_vault / API_PATH, sample_vault / new)
    assert sample.read_graph("all")["relations"] == []
    assert sample.backlinks(API)["count"] == 0
    outgoing = sample.open([JWT], include_relations=True)["memories"][0]["relations"]["outgoing"]
    assert outgoing == [{"to": None, "to_path": None, "target": "api-guidelines-1a2b3c4d", "type": "supports",
                         "strength": 1.0, "metadata": {}, "resolved": False}]
    broken = [p for p in sample.doctor()["problems"] if p["check"] == "broken_link"]
    assert [(p["path"], p["line"], p["target"]) for p in broken] == [
        ("Projects/Apollo.md", 9, "api-guidelines-1a2b3c4d"), (JWT_PATH, 20, "api-guidelines-1a2b3c4d")]
    # renaming it back heals everything without touching the linking notes
    os.rename(sample_vault / new, sample_vault / API_PATH)
    assert sample.backlinks(API)["count"] == 2


def test_delete_a_linked_note_then_a_daily_note_links_to_a_memory(sample, sample_vault):
    sample.read_graph("all")
    shutil.move(sample_vault / API_PATH, sample_vault / ".trash")
    assert sample.read_graph("all")["stats"]["total_relations"] == 0
    assert [p["target"] for p in sample.doctor()["problems"] if p["check"] == "broken_link"] == [
        "api-guidelines-1a2b3c4d", "api-guidelines-1a2b3c4d"]
    (sample_vault / "Daily/2026-11-22.md").write_text("Talked to Zoë: [[zoe-prefers-cafe-meetings-9c1e44f0#^x|Zoë]]\n")
    result = sample.backlinks(ZOE)
    assert [(r["path"], r["subpath"]) for r in result["notes"]] == [("Daily/2026-11-22.md", "^x")]
    # the links live in the catalog: a rebuild gives the same answers
    sample.rebuild_index()
    assert sample.backlinks(ZOE)["notes"] == result["notes"]


def _links_table(store):
    return store.index.db.execute("SELECT src, pos, target_key, type, dst FROM links ORDER BY src, pos").fetchall()


def test_incremental_resolution_matches_a_rebuild(sample, sample_vault):
    """After renames, deletions, new aliases and name clashes, the links the sync re-resolved
    are exactly what a rebuild from the notes computes."""
    steps = [
        lambda: os.rename(sample_vault / API_PATH, sample_vault / "memory/ltm/api-rules.md"),
        lambda: (sample_vault / "Projects/Rules.md").write_text("---\naliases: [api-guidelines-1a2b3c4d]\n---\nx\n"),
        lambda: (sample_vault / "Other/api-rules.md").parent.mkdir(),
        lambda: (sample_vault / "Other/api-rules.md").write_text("clash [[api-rules]] [[Projects/Rules]]\n"),
        lambda: os.rename(sample_vault / "memory/ltm/api-rules.md", sample_vault / API_PATH),
        lambda: shutil.move(sample_vault / "Projects/Apollo.md", sample_vault / ".trash"),
        lambda: (sample_vault / "Daily/x.md").write_text("[[Project Apollo]] [[deploys-go-out-on-tuesdays-2b6d9e01]]\n"),
        lambda: shutil.move(sample_vault / "Projects/Rules.md", sample_vault / ".trash"),
    ]
    rebuilt = MemoryStore(sample_vault, settings=load_settings(sample_vault))
    for step in steps:
        step()
        sample.sync()
        incremental = _links_table(sample)
        rebuilt.rebuild_index()  # the same vault: replaces the index the sync just updated
        assert incremental == _links_table(rebuilt)
    rebuilt.close()


def test_graph_queries_read_no_files_after_sync(sample, monkeypatch):
    sample.read_graph("all")
    import pathlib

    def forbidden(*a, **k):
        raise AssertionError("a graph query re-read a file")

    monkeypatch.setattr(pathlib.Path, "read_bytes", forbidden)
    monkeypatch.setattr(pathlib.Path, "read_text", forbidden)
    assert sample.read_graph("all")["stats"]["total_relations"] == 1
    assert sample.backlinks(API)["count"] == 2


# -- canvas --------------------------------------------------------------------------------------------


def test_canvas_of_the_whole_graph_is_valid_json_canvas(sample, tmp_path):
    result = sample.export_canvas("graph.canvas", status="all")
    assert result["path"] == "graph.canvas"
    data = json.loads((sample.vault.root / "graph.canvas").read_text())
    assert validate_canvas(data) == []
    assert result["nodes"] == 6 and result["edges"] == 1
    assert {n["file"] for n in data["nodes"]} >= {JWT_PATH, API_PATH}
    edge = data["edges"][0]
    by_id = {n["id"]: n["file"] for n in data["nodes"]}
    assert (by_id[edge["fromNode"]], by_id[edge["toNode"]], edge["label"], edge["toEnd"]) == (
        JWT_PATH, API_PATH, "supports", "arrow")


def test_canvas_around_a_memory(sample_runner, sample_vault, tmp_path):
    out = sample_vault / "memory/around.canvas"
    assert invoke(sample_runner, "graph", "--canvas", str(out), "--around", "1a2b3c4d", "--depth", "1").output == (
        "Wrote memory/around.canvas (3 notes, 3 links)\n")
    data = json.loads(out.read_text())
    assert validate_canvas(data) == []
    assert sorted(n["file"] for n in data["nodes"]) == sorted([API_PATH, JWT_PATH, "Projects/Apollo.md"])
    center = next(n for n in data["nodes"] if n["file"] == API_PATH)
    assert (center["x"], center["y"]) == (0, 0)
    assert sorted(e.get("label", "") for e in data["edges"]) == ["", "", "supports"]  # plain links: no label


def test_a_canvas_path_is_read_from_the_vault_and_never_leads_out(sample_runner, sample_vault, tmp_path,
                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)  # run from another folder: the relative path still means the vault's
    assert invoke(sample_runner, "graph", "--canvas", "memory/g.canvas").output == "Wrote memory/g.canvas (6 notes, 1 links)\n"
    assert (sample_vault / "memory/g.canvas").is_file() and not (tmp_path / "memory").exists()
    before = {p: p.read_bytes() for p in sample_vault.rglob("*") if p.is_file() and ".vaultmem" not in p.parts}
    for args, message in [
        ((str(tmp_path / "out.canvas"),), f"Error: canvas {tmp_path / 'out.canvas'} is outside the vault; pass a path "
                                          "inside it, e.g. memory/graph.canvas (read from the vault's folder)\n"),
        (("../out.canvas",), "Error: path '../out.canvas' is outside the vault; pass a vault-relative path\n"),
    ]:
        result = invoke(sample_runner, "graph", "--canvas", *args)
        assert (result.exit_code, result.output) == (1, message)
    assert not (tmp_path / "out.canvas").exists()
    # the person's own canvas (or one they edited) is never overwritten; vaultmem's own is
    board = sample_vault / "Board.canvas"
    board.write_text('{"nodes": [{"id": "a1b2c3d4e5f60708", "type": "text", "text": "plan", "x": 0, "y": 0,'
                     ' "width": 100, "height": 60}], "edges": []}\n')
    result = invoke(sample_runner, "graph", "--canvas", "Board.canvas")
    assert (result.exit_code, result.output) == (1, "Error: Board.canvas exists and is not a canvas vaultmem wrote (or you "
                                                    "edited it); pass another file name, or delete it first\n")
    assert invoke(sample_runner, "graph", "--canvas", "memory/g.canvas").exit_code == 0
    after = {p: p.read_bytes() for p in sample_vault.rglob("*") if p.is_file() and ".vaultmem" not in p.parts}
    assert {p for p in after if after[p] != before.get(p)} == {board}


def test_validate_canvas_catches_problems():
    bad = {"nodes": [{"id": "a", "type": "file", "x": 0, "y": 0, "width": 1, "height": 1},
                     {"id": "a", "type": "text", "text": "t", "x": 0, "y": 0, "width": 1, "height": "1"}],
           "edges": [{"id": "e", "fromNode": "a", "toNode": "zz", "toEnd": "big"}]}
    assert validate_canvas(bad) == [
        "node 'a': file missing", "node 'a': height missing or not int", "duplicate id 'a'",
        "edge 'e': toNode 'zz' names no node", "edge 'e': bad toEnd"]


# -- doctor ---------------------------------------------------------------------------------------------


def test_doctor_finds_every_kind_of_problem(sample_runner, sample_vault):
    jwt = (sample_vault / JWT_PATH).read_text()
    (sample_vault / "memory/stm/use-jwt-tokens-for-authentication-in-7f3c2a1e (conflicted copy 2026-11-22).md").write_text(jwt)
    (sample_vault / "Projects/Apollo.sync-conflict-20261122-101500-ABCDEFG.md").write_text("x\n")
    (sample_vault / "Projects/Apollo 2.md").write_text("x\n")
    (sample_vault / "Daily/apollo.md").write_text("see [[Nowhere]] and ![[diagram.png]] and [[#Top]]\n")
    result = invoke(sample_runner, "doctor", "--json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    # the conflicted copy is indexed as kind "conflict", not as a second memory with the same id
    assert data["counts"] == {"broken_links": 1, "duplicate_ids": 0, "duplicate_names": 1, "malformed_notes": 1,
                              "conflict_copies": 3, "conflict_markers": 0, "unclear_private": 0, "credentials": 0,
                              "dashboard": 0, "canvas_cards": 0}
    messages = [p["message"] for p in data["problems"]]
    assert messages == [
        "Daily/apollo.md:1: [[Nowhere]] points to no note; fix the link or restore the note",
        "2 notes are named apollo.md (Daily/apollo.md, Projects/Apollo.md); rename one so [[links]] stay unambiguous",
        "memory/stm/broken-yaml-note-0badc0de.md: invalid YAML at line 4: did not find expected ',' or ']'",
        "Projects/Apollo 2.md looks like a sync-conflict copy of Apollo.md; merge what differs into the original "
        "and delete the copy",
        "Projects/Apollo.sync-conflict-20261122-101500-ABCDEFG.md looks like a sync-conflict copy of Apollo.md; "
        "merge what differs into the original and delete the copy",
        "memory/stm/use-jwt-tokens-for-authentication-in-7f3c2a1e (conflicted copy 2026-11-22).md looks like a "
        "sync-conflict copy of use-jwt-tokens-for-authentication-in-7f3c2a1e.md; merge what differs into the "
        "original and delete the copy",
    ]


def test_doctor_on_a_clean_vault_exits_zero(runner):
    invoke(runner, "save", "A clean memory")
    result = invoke(runner, "doctor")
    assert (result.output, result.exit_code) == ("No problems found\n", 0)


def test_doctor_checks_are_a_list_of_functions(store):
    from vaultmem.features import doctor

    def always(store, cat):
        return [{"check": "custom", "path": "x.md", "message": "custom problem"}]

    result = doctor.run(store, [*doctor.CHECKS, ("custom", always)])
    assert result["clean"] is False and result["counts"]["custom"] == 1


def test_an_old_index_without_links_is_rebuilt(sample_vault, clock):
    old = MemoryStore(sample_vault, settings=load_settings(sample_vault), clock=clock)
    old.sync()
    with old.index.db as db:  # what a vaultmem before the graph issue left behind
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        db.execute("DELETE FROM links")
    old.close()
    fresh = MemoryStore(sample_vault, settings=load_settings(sample_vault), clock=clock)
    assert fresh.backlinks(API)["count"] == 2
    assert fresh.last_sync is not None and fresh.last_sync.rebuilt
    fresh.close()


_NAMES = ["alpha", "beta", "Gamma", "delta"]
_FOLDERS = ["", "a/", "memory/stm/", "b/c/"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["write", "rename", "delete", "alias"]),
                              st.sampled_from(_FOLDERS), st.sampled_from(_NAMES),
                              st.lists(st.sampled_from(_NAMES + ["a/alpha", "c/delta", "nick"]), max_size=3)),
                    min_size=1, max_size=8))
def test_stored_resolution_always_equals_a_fresh_one(tmp_path_factory, ops):
    """Whatever a person does, the dst the sync stored equals resolving every link afresh."""
    from vaultmem.storage.links import Resolver

    root = tmp_path_factory.mktemp("v")
    s = MemoryStore(root)
    s.init()
    for op, folder, name, targets in ops:
        path = root / f"{folder}{name}.md"
        existing = sorted(p for p in root.rglob("*.md") if ".vaultmem" not in p.parts)
        if op == "write":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(" ".join(f"[[{t}]]" for t in targets) + "\n")
        elif op == "rename" and existing:
            src = existing[len(targets) % len(existing)]
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                os.rename(src, path)
        elif op == "delete" and existing:
            existing[len(targets) % len(existing)].unlink()
        elif op == "alias" and existing:
            existing[0].write_text(f"---\naliases: [{name}, nick]\n---\n[[{name}]]\n")
        s.sync()
        db = s.index.db
        resolver = Resolver([p for (p,) in db.execute("SELECT path FROM notes")],
                            db.execute("SELECT path, alias FROM aliases").fetchall())
        for src, key, dst in db.execute("SELECT src, target_key, dst FROM links"):
            assert dst == resolver.resolve(key, src), (op, src, key)
    s.close()


def test_links_survive_the_parallel_rebuild(sample, monkeypatch):
    import threading

    from vaultmem.storage import index

    sample.sync()
    serial = _links_table(sample)
    assert len(serial) == 4
    monkeypatch.setattr(index, "PARALLEL_PARSE_MIN", 1)  # parse in forked workers even for 8 notes
    assert threading.active_count() == 1  # else the rebuild would run in this process alone and prove nothing
    sample.rebuild_index()
    assert _links_table(sample) == serial
    assert sample.backlinks(API)["count"] == 2


def test_canvas_reads_at_a_glance(store, vault_path, clock):
    """Colour by status (yellow when due for review), size by use and strength, one edge per
    pair and relation type even when a note links twice, relation types as labels."""
    a = store.save("Use JWT tokens for authentication in all new APIs", strength=2.0)
    b = store.save("API guidelines: REST everywhere, versioned URLs")
    for _ in range(10):
        store.touch(a["memory_id"])
    store.relate(a["memory_id"], b["memory_id"], "supports")
    name_b = b["path"].rsplit("/", 1)[1][:-3]
    path_a = vault_path / a["path"]
    path_a.write_text(path_a.read_text() + f"\nSee [[{name_b}]] and again [[{name_b}]].\n")
    c = store.save("The old VPN gateway was vpn-01")
    clock.advance(days=9)
    result = store.export_canvas("g.canvas")
    data = json.loads((vault_path / "g.canvas").read_text())
    assert validate_canvas(data) == []
    nodes = {n["file"]: n for n in data["nodes"]}
    by_id = {n["id"]: n["file"] for n in data["nodes"]}
    assert (nodes[a["path"]]["width"], nodes[a["path"]]["height"]) == (600, 360)  # 10 uses, strength 2: 1.5x
    assert (nodes[b["path"]]["width"], nodes[b["path"]]["height"]) == (400, 240)
    assert nodes[a["path"]]["color"] == "5"
    scores = {m["path"]: m["score"] for m in store.search(None, top_k=10)["results"]}
    assert 0.15 <= scores[c["path"]] <= 0.35 and nodes[c["path"]]["color"] == "3"  # due for review
    edges = sorted((by_id[e["fromNode"]], by_id[e["toNode"]], e.get("label", "")) for e in data["edges"])
    assert edges == [(a["path"], b["path"], ""), (a["path"], b["path"], "supports")]
    assert result["edges"] == 2


def test_stats_in_sqlite_and_in_python_agree_on_a_person_s_memories(store, vault_path, clock, monkeypatch):
    """Memories as people write them (CRLF, pinned, a core type in capitals, their own status,
    a forgotten one, one without properties): stats give the same counts and averages scored
    in SQLite as in Python."""
    from vaultmem.core import memories

    stm = vault_path / "memory/stm"
    (stm / "pinned.md").write_bytes(b"---\r\nid: a1\r\nlast_used: 2026-01-01T00:00:00Z\r\nuse_count: 7\r\n"
                                    b"pinned: true\r\nstatus: draft\r\n---\r\nPinned, in draft.\r\n")
    (stm / "core.md").write_text("---\nmemory_type: Core\nuse_count: 3\nstrength: 0.4\n---\nA core fact.\n")
    (stm / "old.md").write_text("---\nlast_used: 2025-06-01T00:00:00Z\nuse_count: 2\n---\nAn old one.\n")
    (stm / "gone.md").write_text("---\nid: g1\ndeleted: true\n---\nForgotten.\n")
    (stm / "plain.md").write_text("A note a person dropped in, no properties.\n")
    for note in stm.iterdir():  # a note without last_used dates from its file: a fixed day
        os.utime(note, (clock().timestamp() - 86_400, clock().timestamp() - 86_400))
    clock.advance(days=30)
    stats = store.stats()
    with monkeypatch.context() as patched:
        patched.setattr(memories, "math_functions", lambda: False)
        assert store.stats() == stats
    assert {k: stats[k] for k in ("total_memories", "by_status", "avg_score", "avg_use_count",
                                  "below_forget_threshold")} == {
        "total_memories": 5, "by_status": {"active": 4, "promoted": 0, "archived": 0, "deleted": 1},
        "avg_score": 0.9131, "avg_use_count": 2.4, "below_forget_threshold": 1}  # 12 uses; old.md below
