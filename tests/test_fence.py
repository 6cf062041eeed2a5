"""Freshness through a running watcher (storage/fence.py): a cold command asks the watcher to
vouch for the index instead of stat'ing every note, and is never stale."""

from __future__ import annotations

import json
import os

from conftest import Clock
from test_watcher import Running, note_text

from vaultmem.base.config import load_settings
from vaultmem.storage import fence
from vaultmem.store import MemoryStore, Policy


def cold(vault_path) -> MemoryStore:
    """A store as a CLI command makes it: trusts a running watcher."""
    return MemoryStore(vault_path, settings=load_settings(vault_path), clock=Clock(), policy=Policy(trust_watcher=True))


def test_every_edit_before_the_command_is_seen_without_a_scan(vault_path):
    running = Running(vault_path, debounce=5.0, max_delay=10.0)  # a slow watcher: the fence must not wait for it
    try:
        for i in range(25):
            ident = f"11111111-2222-4333-8444-{i:012d}"
            (vault_path / f"memory/stm/edit-{i}.md").write_text(note_text(f"zebrafence{i} was written", ident))
            s = cold(vault_path)
            found = s.search(f"zebrafence{i}")["results"]
            assert [r["id"] for r in found] == [ident], i
            assert s.last_sync is not None and (s.last_sync.added, s.last_sync.unchanged) == (0, 0)  # no scan
            s.close()
        assert not list(fence.fence_dir(vault_path / ".vaultmem").iterdir())  # fences cleaned up
    finally:
        running.stop()


def test_without_a_watcher_the_command_scans(vault_path):
    (vault_path / "memory/stm/a.md").write_text(note_text("zebrafence plain scan"))
    s = cold(vault_path)
    assert fence.through_watcher(vault_path / ".vaultmem") is False
    assert s.search("zebrafence")["count"] == 1 and s.last_sync.added == 1  # scanned
    s.close()


def test_a_watcher_that_died_is_not_waited_for(vault_path):
    state = vault_path / ".vaultmem/state"
    state.mkdir(parents=True, exist_ok=True)
    dead = 2 ** 22 + 12345  # beyond pid_max's default: no such process
    (state / "watcher.json").write_text(json.dumps({"pid": dead, "state": "running"}))
    assert fence.watcher_running(vault_path / ".vaultmem") is False
    (state / "watcher.json").write_text(json.dumps({"pid": os.getpid(), "state": "stopped"}))
    assert fence.watcher_running(vault_path / ".vaultmem") is False


def test_a_stopped_watcher_leaves_commands_to_scan(vault_path):
    running = Running(vault_path)
    running.stop()
    (vault_path / "memory/stm/late.md").write_text(note_text("zebrafence after the watcher stopped"))
    s = cold(vault_path)
    assert s.search("zebrafence")["count"] == 1 and s.last_sync.added == 1
    s.close()


def test_a_late_second_confirmation_leaves_no_answer_behind(tmp_path, monkeypatch):
    """The watcher can confirm one fence twice (two events for it); when the command, answered
    by the first, removes its fence and answer between the second's check and its touch, the
    second answer is removed too (a flaky leftover in the fence test's folder before)."""
    from pathlib import Path

    state = tmp_path / ".vaultmem"
    folder = fence.fence_dir(state)
    folder.mkdir(parents=True)
    (folder / ("n1" + fence.FENCE_SUFFIX)).touch()
    real_touch = Path.touch

    def touch(self, *args, **kwargs):
        (folder / ("n1" + fence.FENCE_SUFFIX)).unlink()  # the command finishes just now
        real_touch(self, *args, **kwargs)

    monkeypatch.setattr(Path, "touch", touch)
    fence.confirm(state, "n1")
    assert list(folder.iterdir()) == []
    monkeypatch.setattr(Path, "touch", real_touch)
    (folder / ("n2" + fence.FENCE_SUFFIX)).touch()
    fence.confirm(state, "n2")  # a command still waiting gets its answer
    assert sorted(p.name for p in folder.iterdir()) == ["n2" + fence.DONE_SUFFIX, "n2" + fence.FENCE_SUFFIX]
