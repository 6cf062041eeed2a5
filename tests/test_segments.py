"""Segment merging in a forked child (segments.py): what it merges, that the merged index is
correct, and that a merge SIGKILLed before any file-system step leaves a usable index.

Like the crash tests, a forked child hooks the `os` calls that change files and kills itself
just before the k-th one, for every k; the parent only checks what is on disk afterwards.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from reliability_helpers import check_after_next_command, open_store, run_killed

from vaultmem.base import portable
from vaultmem.storage import segments
from vaultmem.store import MemoryStore

# the forked child; the spawned one (macOS, Windows) is tested in tests/test_portable.py
pytestmark = pytest.mark.skipif(not portable.can_fork(), reason="forking a merge child is Linux-only")

# every call that creates, renames or removes a file or folder (os.remove is not os.unlink)
HOOKED = ("replace", "rename", "link", "unlink", "remove", "rmdir", "mkdir", "fsync", "open")


def word(i: int, version: int = 0) -> str:
    """A word only note i (at this version) contains: letters only, so the analyzer keeps it whole."""
    return "".join("bcdfghjklm"[int(d)] for d in f"{i:03d}") + "quokka" + "xyz"[version]


def write(vault: Path, i: int, version: int = 0) -> None:
    ident = f"{i:08x}-0000-4000-8000-{i:012x}"
    text = f"---\nid: {ident}\ntags:\n  - seg\n---\nNote {i} says {word(i, version)} about the harbour.\n"
    (vault / "memory/stm" / f"note-{i:03d}.md").write_text(text, encoding="utf-8")


def sizes(store: MemoryStore) -> list[tuple[int, int]]:
    """(documents, deleted) of every segment, smallest first."""
    return sorted((s.doc_count_all(), s.deleted_count()) for s in store.index.segments())


def found(store: MemoryStore, text: str) -> list[str]:
    paths, _ = store.index.search(text, kinds=("memory",), statuses=None, limit=100)
    return sorted(p for p, _score in paths)


def assert_every_note_current(store: MemoryStore, versions: dict[int, int]) -> None:
    """Each note is found by its current word, and only by it; the index holds each note once."""
    for i, version in versions.items():
        assert found(store, word(i, version)) == [f"memory/stm/note-{i:03d}.md"], (i, version)
        if version:
            assert found(store, word(i, 0)) == [], f"note {i} still found by its old text"
    ix = store.index.ix
    assert ix.doc_count() == len(versions)


def committed_without_merging(vault: Path, notes: int, edits: int) -> tuple[MemoryStore, dict[int, int]]:
    """`notes` notes in one segment, then `edits` commits of one edited note each (merge off)."""
    store = open_store(vault)
    store.init()
    for i in range(notes):
        write(vault, i)
    store.sync()
    versions = dict.fromkeys(range(notes), 0)
    store.index.merge_on_commit = False
    for i in range(edits):
        write(vault, i, 1)
        versions[i] = 1
        store.sync()
    return store, versions


class Seg:
    def __init__(self, docs: int, deleted: int = 0) -> None:
        self.docs, self.deleted = docs, deleted

    def doc_count_all(self) -> int:
        return self.docs

    def deleted_count(self) -> int:
        return self.deleted


def test_plan_merges_small_segments_past_the_limit_and_everything_past_the_garbage_share():
    big = Seg(100)
    small = [Seg(1) for _ in range(8)]
    assert segments.plan([]) == []
    assert segments.plan([big]) == []
    assert segments.plan([big, *small[:7]]) == []  # 8 segments: not more than MAX_SEGMENTS
    assert segments.plan([big, *small]) == small  # 9: the small ones, not the big one
    assert segments.plan([Seg(100, 25)]) == []  # 25% deleted: not past the share
    lots_deleted = Seg(100, 26)
    assert segments.plan([lots_deleted]) == [lots_deleted]  # rewritten alone to drop its deletions
    outside = [big, Seg(13), Seg(13)]
    assert segments.plan(outside) == outside[1:]  # 26 documents outside the big one: merged into a peer
    assert segments.plan([big, Seg(13), Seg(13, 1)]) == []  # 25 live ones outside
    assert segments.plan([big, Seg(26)]) == []  # a peer


def test_plan_leaves_a_rebuild_s_segments_as_they_are():
    """A rebuild leaves one segment per process that parsed: peers, merged only when worn."""
    halves, rest = [Seg(50_000), Seg(50_000)], Seg(2_600)
    assert segments.plan([*halves, rest]) == []
    assert segments.plan([*halves, rest, Seg(1)]) == []  # 2,601 small documents: not past the share
    commits = [Seg(1) for _ in range(6)]
    assert segments.plan([*halves, rest, *commits]) == [rest, *commits]  # 9 segments: the small ones
    worn = Seg(50_000, 12_501)
    assert segments.plan([halves[0], worn, rest]) == [worn, rest]  # rewritten alone, with the small one
    peers = [Seg(30_000) for _ in range(9)]
    assert segments.plan(peers) == peers[1:]  # more than MAX_SEGMENTS peers: all but the biggest


def test_the_watcher_s_commits_leave_a_parallel_rebuild_s_segment(tmp_path, monkeypatch):
    """A rebuild that parsed in several processes leaves one segment; the commits of a watcher
    after it (merges deferred to a child) do not call for a merge that rewrites it."""
    import threading

    from vaultmem.storage import index as index_mod

    if (os.cpu_count() or 1) < 2 or threading.active_count() > 1:
        pytest.skip("a rebuild parses in one process here")
    monkeypatch.setattr(index_mod, "PARALLEL_PARSE_MIN", 10)
    vault = tmp_path / "v"
    store = open_store(vault)
    try:
        store.init()
        for i in range(60):
            write(vault, i)
        store.rebuild_index()
        rebuilt = sizes(store)
        assert store.index.parse_context is not None and rebuilt == [(60, 0)]
        store.defer_index_merges()  # as the watcher does
        for i in range(3):
            write(vault, i, 1)
            store.sync()
        assert not store.index_merge_due()
        now = sizes(store)
        assert len(now) == len(rebuilt) + 3 and sorted(docs for docs, _ in now)[-len(rebuilt):] == [
            docs for docs, _ in rebuilt]  # the rebuild's segment, still whole, and one per commit
    finally:
        store.close()


def test_commits_without_merging_add_one_segment_each(tmp_path):
    store, _ = committed_without_merging(tmp_path / "v", notes=20, edits=12)
    try:
        # the first segment holds the 20 notes, 12 of them deleted (replaced), then one per commit
        assert sizes(store) == [(1, 0)] * 12 + [(20, 12)]
    finally:
        store.close()


def test_child_merge_leaves_the_index_searchable_and_correct(tmp_path):
    store, versions = committed_without_merging(tmp_path / "v", notes=20, edits=12)
    try:
        assert segments.finished(segments.start_merge(store.vault), wait=True) == segments.MERGED
        assert sizes(store) == [(20, 0)]  # 12 of 20 deleted is past the share: one segment, no deletions
        assert not (store.vault.derived_dir / "merging.json").exists()  # its record, gone with it
        assert_every_note_current(store, versions)
        # nothing left to merge: the next child says so and changes nothing
        assert segments.finished(segments.start_merge(store.vault), wait=True) == segments.NOTHING_TO_DO
        assert sizes(store) == [(20, 0)]
        check_after_next_command(store.vault.root)
    finally:
        store.close()


def test_child_merge_of_small_segments_keeps_the_big_one(tmp_path):
    vault = tmp_path / "v"
    store, versions = committed_without_merging(vault, notes=40, edits=0)
    try:
        for i in range(40, 49):  # nine new notes, nine commits: ten segments
            write(vault, i)
            versions[i] = 0
            store.sync()
        assert sizes(store) == [(1, 0)] * 9 + [(40, 0)]
        assert segments.finished(segments.start_merge(store.vault), wait=True) == segments.MERGED
        assert sizes(store) == [(9, 0), (40, 0)]
        assert_every_note_current(store, versions)
    finally:
        store.close()


def _merge_in_child(vault: Path, kill_at: int | None) -> tuple[int, int]:
    """Fork; the child merges (exit 0, or 1: nothing to merge) and SIGKILLs itself before
    hooked call `kill_at`; see `run_killed`."""
    return run_killed(vault, lambda store: 0 if segments.merge(store.vault) else 1, kill_at, HOOKED)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked merge at every step: needs fork (POSIX)")
def test_merge_killed_before_every_file_system_step_leaves_a_usable_index(tmp_path):
    template = tmp_path / "template"
    store, versions = committed_without_merging(template, notes=20, edits=12)
    store.close()
    work = tmp_path / "work"
    shutil.copytree(template, work)
    code, total = _merge_in_child(work, None)
    assert code == 0 and total >= 10, f"the merge did not run cleanly in the child (exit {code}, {total} steps)"
    seen: set[str] = set()
    for k in range(1, total + 1):
        shutil.rmtree(work)
        shutil.copytree(template, work)
        code, _ = _merge_in_child(work, k)
        assert code == -signal.SIGKILL, f"the merge was not killed at step {k} (exit {code})"
        # the old generation or the merged one: either way every note is there, current, once
        after = open_store(work)
        try:
            state = {str([(1, 0)] * 12 + [(20, 12)]): "old", str([(20, 0)]): "merged"}.get(str(sizes(after)))
            assert state, f"step {k}: {sizes(after)}"
            seen.add(state)
            assert_every_note_current(after, versions)
        finally:
            after.close()
        check_after_next_command(work)
        # the Whoosh write lock died with the child: the next merge (or commit) goes through
        assert _merge_in_child(work, None)[0] in (0, 1), f"no merge after a kill at step {k}"
        after = open_store(work)
        try:
            assert sizes(after) == [(20, 0)]
            assert_every_note_current(after, versions)
            # a writer's temporary files left by the kill go with the next sync (their folder,
            # MAIN.tmp, stays between writes: fulltext.engine.storage)
            write(work, 19, 2)
            after.sync()
            assert_every_note_current(after, {**versions, 19: 2})
            whoosh = work / ".vaultmem/index/whoosh"
            leftovers = sorted(p.name for p in whoosh.iterdir()
                               if (p.name.endswith(".tmp") and p.name != "MAIN.tmp") or p.name.startswith("."))
            leftovers += sorted(p.name for p in (whoosh / "MAIN.tmp").glob("*"))
            assert leftovers == [], f"step {k}: {leftovers}"
        finally:
            after.close()
    assert seen == {"old", "merged"}  # kills before and after the new generation was written


@pytest.mark.skipif(sys.platform == "win32", reason="probes the lock with fcntl (POSIX)")
def test_merge_child_does_not_keep_the_watchers_instance_lock(tmp_path):
    """A watcher SIGKILLed while its merge child runs must not block the next watcher."""
    import fcntl

    from vaultmem import watcher as w
    from vaultmem.watcher import InstanceLock

    store, versions = committed_without_merging(tmp_path / "v", notes=20, edits=12)
    lock = InstanceLock(store.vault.state_dir)
    lock.acquire()
    try:
        with store.vault.lock():  # the child waits for the vault lock: alive while we look
            pid = segments.start_merge(store.vault, close_fds=lock.fds())
            lock.release()  # as the kernel does when the watcher dies
            fd = os.open(store.vault.state_dir / w.LOCK_FILE, os.O_RDWR)
            try:  # free once the child closed its copy (it cannot exit before we release the vault lock)
                deadline = time.monotonic() + 30
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        assert time.monotonic() < deadline, "the merge child kept the instance lock"
                        time.sleep(0.02)  # polling interval, not a timing assumption
            finally:
                os.close(fd)
            assert segments.finished(pid) is None  # still waiting for the vault lock
        assert segments.finished(pid, wait=True) == segments.MERGED
        assert sizes(store) == [(20, 0)]
        assert_every_note_current(store, versions)
    finally:
        lock.release()
        store.close()
