"""The vault walked ahead by a forked child (base/walk.py, cli/ahead.py): a cold read command
gets the same listing it would have walked itself, every edit made before it started is in
it, and anything unusual leaves the command to walk on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Clock
from test_watcher import note_text

from vaultmem.base import walk
from vaultmem.base.config import load_settings
from vaultmem.cli import ahead
from vaultmem.store import MemoryStore, Policy

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the walk runs ahead only where fork is safe")


@pytest.fixture(autouse=True)
def _no_child_left():
    yield
    walk.cancel_ahead()


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


def test_the_child_sends_the_digest_of_exactly_the_walk(tmp_path):
    root = str(person_vault(tmp_path / "vault"))
    found, temp, canvases = walk.walk(root)
    assert sorted(found) == ["Daily/2026-11-21.md", "Projects/Apollo/Plan.md", "memory/stm/zebra-walk-1.md"]
    st = os.stat(os.path.join(root, "Projects/Apollo/Plan.md"))
    assert found["Projects/Apollo/Plan.md"] == (st.st_mtime_ns, st.st_size)
    assert temp == [os.path.join(root, "memory/stm/.zebra-walk-2.md.vaultmem-tmp-999999-x")]
    assert canvases == ["Projects/Board.canvas"]
    assert walk.start_ahead(root) is True
    assert walk.ahead_pending(root) and not walk.ahead_pending(root + "-other")
    # the digest is the parent's own: a forked child hashes strings with the same key
    assert walk.take_ahead(root) == (walk.listing_digest(found), temp, canvases)
    assert walk.take_ahead(root) is None  # taken once; the next check walks itself
    assert not walk.ahead_pending(root)


def test_a_walk_for_another_folder_is_stopped_and_reaped(tmp_path):
    root = str(person_vault(tmp_path / "vault"))
    assert walk.start_ahead(root)
    pid = walk._ahead[1]
    assert walk.take_ahead(str(tmp_path)) is None
    assert walk._ahead is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left


def test_a_child_that_fails_leaves_the_walk_to_the_command(tmp_path, monkeypatch):
    root = str(person_vault(tmp_path / "vault"))

    def broken(*_args, **_kwargs):
        raise OSError("disk gone")

    monkeypatch.setattr(walk, "walk", broken)  # what the forked child runs
    assert walk.start_ahead(root)
    assert walk.take_ahead(root) is None


def test_only_one_walk_at_a_time_and_none_without_fork(tmp_path, monkeypatch):
    root = str(person_vault(tmp_path / "vault"))
    assert walk.start_ahead(root) and walk.start_ahead(root) is False
    walk.cancel_ahead()
    assert walk._ahead is None
    with monkeypatch.context() as patch:
        patch.setattr(os, "sched_getaffinity", lambda _pid: {0})  # one core: nothing to overlap
        assert walk.start_ahead(root) is False
    monkeypatch.setenv("VAULTMEM_PLATFORM_RULES", "no-fork")
    assert walk.start_ahead(root) is False


def test_a_cold_search_uses_the_walk_and_sees_every_edit_made_before_it(tmp_path):
    root = person_vault(tmp_path / "vault")
    first = MemoryStore(root, settings=load_settings(root), clock=Clock())
    assert first.search("zebrawalk")["count"] == 1
    first.close()
    # a person edits one memory and adds another in Obsidian, then runs a command
    (root / "memory/stm/zebra-walk-1.md").write_text(
        note_text("zebrawalk first memory, now about quokkas", "11111111-2222-4333-8444-000000000001"))
    (root / "memory/stm/zebra-walk-3.md").write_text(note_text("zebrawalk third memory", "11111111-2222-4333-8444-000000000003"))
    assert ahead.start(["search", "zebrawalk", "--vault", str(root)]) is True
    cold = MemoryStore(root, settings=load_settings(root), clock=Clock(), policy=Policy(trust_watcher=True))
    found = cold.search("quokkas")["results"]
    assert walk._ahead is None  # the freshness check took the child's listing
    assert [r["id"] for r in found] == ["11111111-2222-4333-8444-000000000001"]
    assert (cold.last_sync.added, cold.last_sync.updated) == (1, 1)
    assert cold.search("zebrawalk")["count"] == 2
    assert not (root / "memory/stm/.zebra-walk-2.md.vaultmem-tmp-999999-x").exists()  # left over: cleaned
    cold.close()


def test_which_commands_walk_ahead(tmp_path, monkeypatch):
    root = person_vault(tmp_path / "vault")
    started = []
    monkeypatch.setattr(walk, "start_ahead", lambda r: started.append(r) or True)
    assert ahead.start(["search", "x", f"--vault={root}"]) and started == [str(root)]
    monkeypatch.setenv("VAULTMEM_VAULT", str(root))
    assert ahead.start(["recall", "x"]) and started[-1] == str(root)
    assert ahead.start(["context", "--json"])
    # writes, long-lived processes, help, a missing folder: nothing starts
    for args in (["save", "x"], ["mcp"], ["watch"], ["search", "--help"], [], ["--version"],
                 ["search", "x", "--vault", str(tmp_path / "missing")]):
        assert ahead.start(args) is False, args
    assert len(started) == 3
    # a running watcher answers the freshness check: no walk
    (root / ".vaultmem/state").mkdir(parents=True, exist_ok=True)
    (root / ".vaultmem/state/watcher.json").write_text(json.dumps({"pid": os.getpid(), "state": "running"}))
    assert ahead.start(["search", "x"]) is False


def test_the_vault_option_and_the_command_are_read_from_the_command_line():
    assert ahead.vault_option(["x", "--vault", "/v", "--json"]) == "/v"
    assert ahead.vault_option(["--vault=/v w"]) == "/v w"
    assert ahead.vault_option(["--", "--vault", "/v"]) is None  # a query, after --
    assert ahead.vault_option(["--vault"]) is None
    assert ahead.invoked_as_command("/home/p/.local/bin/vaultmem")
    assert ahead.invoked_as_command("C:\\Python\\Scripts\\vaultmem.exe")
    assert ahead.invoked_as_command("/src/vaultmem/vaultmem/__main__.py")
    assert not ahead.invoked_as_command("/usr/bin/pytest")


def test_the_command_gives_the_same_answer_with_and_without_the_walk_ahead(tmp_path):
    root = person_vault(tmp_path / "vault")
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_PLATFORM_RULES"}

    def search(**extra: str) -> dict:
        done = subprocess.run([sys.executable, "-m", "vaultmem", "search", "zebrawalk", "--json", "--vault", str(root)],
                              capture_output=True, text=True, env={**env, **extra}, timeout=120, check=True)
        return json.loads(done.stdout)

    assert [r["id"] for r in search()["results"]] == ["11111111-2222-4333-8444-000000000001"]
    (root / "memory/stm/zebra-walk-3.md").write_text(note_text("zebrawalk third memory", "11111111-2222-4333-8444-000000000003"))
    with_walk = search()
    (root / "memory/stm/zebra-walk-4.md").write_text(note_text("zebrawalk fourth memory", "11111111-2222-4333-8444-000000000004"))
    without = search(VAULTMEM_PLATFORM_RULES="no-fork")
    assert sorted(r["id"] for r in with_walk["results"]) == ["11111111-2222-4333-8444-000000000001",
                                                              "11111111-2222-4333-8444-000000000003"]
    assert sorted(r["id"] for r in without["results"]) == ["11111111-2222-4333-8444-000000000001",
                                                            "11111111-2222-4333-8444-000000000003",
                                                            "11111111-2222-4333-8444-000000000004"]


def test_an_unchanged_vault_is_known_from_two_digests_without_a_walk_or_the_listing(tmp_path, monkeypatch):
    root = person_vault(tmp_path / "vault")
    first = MemoryStore(root, settings=load_settings(root), clock=Clock())
    first.search("zebrawalk")
    first.close()
    leftover = root / "memory/stm/.zebra-walk-2.md.vaultmem-tmp-999999-y"  # a killed writer's
    leftover.write_text("half a write")
    assert ahead.start(["search", "zebrawalk", "--vault", str(root)]) is True

    def no(*_args, **_kwargs):
        raise AssertionError("walked or read the listing in the command")

    from vaultmem.storage.index import Index

    monkeypatch.setattr(walk, "walk", no)  # after the fork: the child has its own copy
    monkeypatch.setattr(Index, "fingerprints", no)
    cold = MemoryStore(root, settings=load_settings(root), clock=Clock())
    assert cold.search("zebrawalk")["count"] == 1
    assert (cold.last_sync.unchanged, cold.last_sync.added, cold.last_sync.updated) == (3, 0, 0)
    assert walk._ahead is None
    assert not leftover.exists()  # met by the child's walk, cleaned up by the command
    cold.close()


def test_the_child_holds_none_of_the_commands_terminal_or_pipes(tmp_path, monkeypatch):
    root = str(person_vault(tmp_path / "vault"))
    real = walk.walk

    def slow(*args, **kwargs):
        import time

        time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(walk, "walk", slow)  # what the forked child runs: long enough to look at it
    assert walk.start_ahead(root)
    pid = walk._ahead[1]
    import time

    deadline = time.monotonic() + 0.9
    while time.monotonic() < deadline and os.readlink(f"/proc/{pid}/fd/1") != os.devnull:
        time.sleep(0.01)
    assert [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)] == [os.devnull] * 3
    assert walk.take_ahead(root)[0] == walk.listing_digest(real(root)[0])
