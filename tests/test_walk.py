"""The walk that finds a vault's notes (base/walk.py), and a cold read command that walks the
vault itself: it sees every edit made before it started, and cleans up what killed writers left."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner
from conftest import Clock, invoke
from test_watcher import note_text

from vaultmem.base import walk
from vaultmem.base.config import load_settings
from vaultmem.store import MemoryStore, Policy


def person_vault(root: Path) -> Path:
    """A vault as a person keeps it: their folders and notes (CRLF, a canvas, an attachment,
    a note in a dot folder and in a skipped one, a symlink), memories, an interrupted write."""
    MemoryStore(root, clock=Clock()).init()
    (root / "Projects/Apollo").mkdir(parents=True)
    (root / "Projects/Apollo/Plan.md").write_bytes(b"---\r\ntags: [work]\r\n---\r\nShip it.\r\n")
    (root / "Projects/Board.canvas").write_text('{"nodes": [], "edges": []}')
    (root / "Daily").mkdir()
    (root / "Daily/2026-11-21.md").write_text("# Friday\nSee [[Projects/Apollo/Plan]].\n")
    (root / "Daily/photo.png").write_bytes(b"\x89PNG")
    (root / ".obsidian").mkdir(exist_ok=True)
    (root / ".obsidian/workspace.md").write_text("not a note")
    (root / "node_modules").mkdir()
    (root / "node_modules/readme.md").write_text("not a note")
    (root / "Daily/link.md").symlink_to(root / "Daily/2026-11-21.md")
    (root / "memory/stm/zebra-walk-1.md").write_text(note_text("zebrawalk first memory", "11111111-2222-4333-8444-000000000001"))
    (root / "memory/stm/.zebra-walk-2.md.vaultmem-tmp-999999-x").write_text("half a write")
    return root


def test_the_walk_finds_the_notes_the_temp_files_and_the_canvases(tmp_path):
    root = str(person_vault(tmp_path / "vault"))
    found, temp, canvases = walk.walk(root)
    assert sorted(found) == ["Daily/2026-11-21.md", "Projects/Apollo/Plan.md", "memory/stm/zebra-walk-1.md"]
    st = os.stat(os.path.join(root, "Projects/Apollo/Plan.md"))
    assert found["Projects/Apollo/Plan.md"] == (st.st_mtime_ns, st.st_size)
    assert temp == [os.path.join(root, "memory/stm/.zebra-walk-2.md.vaultmem-tmp-999999-x")]
    assert canvases == ["Projects/Board.canvas"]
    unstated, _, _ = walk.walk(root, stat=False)
    assert unstated == dict.fromkeys(found, walk.UNSTATED)
    assert walk.walk(root, notes=False) == ({}, temp, canvases)


def test_a_cold_search_sees_every_edit_made_before_it(tmp_path):
    root = person_vault(tmp_path / "vault")
    first = MemoryStore(root, settings=load_settings(root), clock=Clock())
    assert first.search("zebrawalk")["count"] == 1
    first.close()
    # a person edits one memory and adds another in Obsidian, then runs a command
    (root / "memory/stm/zebra-walk-1.md").write_text(
        note_text("zebrawalk first memory, now about quokkas", "11111111-2222-4333-8444-000000000001"))
    (root / "memory/stm/zebra-walk-3.md").write_text(note_text("zebrawalk third memory", "11111111-2222-4333-8444-000000000003"))
    leftover = root / "memory/stm/.zebra-walk-2.md.vaultmem-tmp-999999-y"  # a killed writer's
    leftover.write_text("half a write")
    cold = MemoryStore(root, settings=load_settings(root), clock=Clock(), policy=Policy(trust_watcher=True))
    found = cold.search("quokkas")["results"]
    assert [r["id"] for r in found] == ["11111111-2222-4333-8444-000000000001"]
    assert (cold.last_sync.added, cold.last_sync.updated) == (1, 1)
    assert cold.search("zebrawalk")["count"] == 2
    assert not leftover.exists()
    cold.close()


def test_the_command_sees_a_note_written_just_before_it(tmp_path):
    root = person_vault(tmp_path / "vault")
    runner = CliRunner()

    def ids() -> list[str]:
        result = invoke(runner, "search", "zebrawalk", "--json", "--vault", str(root))
        assert result.exit_code == 0, result.output
        return sorted(r["id"] for r in json.loads(result.output)["results"])

    assert ids() == ["11111111-2222-4333-8444-000000000001"]
    (root / "memory/stm/zebra-walk-3.md").write_text(note_text("zebrawalk third memory", "11111111-2222-4333-8444-000000000003"))
    assert ids() == ["11111111-2222-4333-8444-000000000001", "11111111-2222-4333-8444-000000000003"]
