"""A big rebuild shared between this process and worker processes (`RebuildWorkers`): the
same catalog, links, aliases, postings and document order as a rebuild done here alone,
forked or spawned, whichever process runs slower and takes over part of another's range
(`Shares`), and a worker that fails stops the rebuild without touching the index."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

import vaultmem.storage.index as index_module
from vaultmem.base import portable
from vaultmem.base.portable import ENV as RULES
from vaultmem.store import MemoryStore

WORDS = ["deploy", "budget", "tango", "redis", "lisbon", "invoice", "kafka", "garden", "piano", "ferry"]


def big_vault(tmp_path: Path) -> Path:
    """The sample vault (memories, a person's notes with links, a malformed note) and 120
    memories besides, a few linking to each other and to the person's notes by name and path."""
    vault = tmp_path / "v"
    shutil.copytree(FIXTURES / "sample-vault", vault)
    stm = vault / "memory" / "stm"
    for n in range(120):
        words = " ".join(WORDS[(n * k) % len(WORDS)] for k in (1, 3, 7))
        link = f"\n\nSee [[m{n - 1:03d}]] and [Apollo](../../Projects/Apollo.md)." if n % 10 == 0 and n else ""
        (stm / f"m{n:03d}.md").write_text(
            f"---\nid: {n:08x}-0000-4000-8000-000000000000\ncreated: 2026-11-{1 + n % 20:02d}T10:00:00Z\n"
            f"last_used: 2026-11-{1 + n % 20:02d}T10:00:00Z\nuse_count: {n % 4}\nstrength: 1.0\nstatus: active\n"
            f"aliases: [alias-{n}]\ntags: [{WORDS[n % 10]}]\n---\nNote {n} about {words}.{link}\n",
            encoding="utf-8")
    (stm / "m050.md").write_text("---\nid: [unclosed\n---\nbroken\n", encoding="utf-8")  # in a worker's slice
    return vault


def snapshot(store: MemoryStore) -> dict[str, object]:
    ix = store.index
    db = ix.db
    searcher = ix.text_search().searcher(ix.ix)
    return {
        "notes": sorted(db.execute("SELECT * FROM notes").fetchall()),
        "links": sorted(db.execute("SELECT src, pos, target, target_key, subpath, alias, embed, type, strength,"
                                   " meta, line, dst FROM links").fetchall(), key=repr),
        "aliases": sorted(db.execute("SELECT * FROM aliases").fetchall()),
        # document numbers in path order, as a serial rebuild leaves them (ties break by them)
        "docs": [fields["path"] for _doc, fields in sorted(searcher.iter_docs())],
        "hits": [ix.search(w, kinds=("memory",), statuses=None, limit=100)[0] for w in WORDS],
        "schema": catalog_schema(db),
    }


def segments_of(store: MemoryStore) -> list:
    return store.index.segments()


def catalog_schema(db) -> list[tuple[str, str, str]]:
    return sorted(db.execute("SELECT type, name, sql FROM main.sqlite_master").fetchall(), key=repr)


@pytest.mark.parametrize("rules", ["", "no-fork"])
def test_a_shared_rebuild_equals_one_done_alone(tmp_path, monkeypatch, rules):
    vault = big_vault(tmp_path)
    store = MemoryStore(vault)
    alone = store.rebuild_index()
    assert store.index.parse_context is None
    expected = snapshot(store)
    monkeypatch.setattr(index_module, "PARALLEL_PARSE_MIN", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)  # two workers and this process: three slices
    monkeypatch.setenv(RULES, rules)
    shared = store.rebuild_index()
    assert store.index.parse_context == ("fork" if portable.can_fork() else "spawn")  # spawn: macOS, Windows, no-fork
    assert shared == alone
    assert [m["path"] for m in shared["malformed"]] == ["memory/stm/broken-yaml-note-0badc0de.md",
                                                        "memory/stm/m050.md"]
    got = snapshot(store)
    assert len(segments_of(store)) == 1  # all parse; this process alone writes, one segment
    for key in expected:
        assert got[key] == expected[key], key
    assert not [p for p in (vault / ".vaultmem").rglob("worker-*")]  # the workers' catalogs are gone
    assert not (vault / ".vaultmem" / "index" / "chunks").exists()  # and the claims' documents
    assert store.backlinks("00000009-0000-4000-8000-000000000000")["count"] == 1
    store.close()


@pytest.mark.parametrize("parallel", [False, True])
def test_a_rebuilt_catalog_has_every_index(tmp_path, monkeypatch, parallel):
    """A rebuild fills its catalog without the secondary indexes and makes them at the end:
    the file it leaves (read before anything opens it again) has a new catalog's schema."""
    import sqlite3

    vault = big_vault(tmp_path)
    if parallel:
        monkeypatch.setattr(index_module, "PARALLEL_PARSE_MIN", 1)
        monkeypatch.setattr(os, "cpu_count", lambda: 3)
    store = MemoryStore(vault)
    store.rebuild_index()
    assert (store.index.parse_context is not None) == parallel
    store.close()
    rebuilt = sqlite3.connect(vault / ".vaultmem" / "index" / "catalog.sqlite")
    fresh = index_module._connect(tmp_path / "fresh.sqlite")
    assert catalog_schema(rebuilt) == catalog_schema(fresh)
    assert {"notes_id", "notes_kind_status", "notes_episodes", "links_target", "links_dst",
            "aliases_alias"} <= {name for _type, name, _sql in catalog_schema(rebuilt)}
    rebuilt.close()
    fresh.close()


@pytest.mark.skipif(not portable.can_fork(), reason="the slowness is a monkeypatch, which only a forked worker inherits")
@pytest.mark.parametrize("slow", ["worker", "main"])
def test_the_faster_process_takes_over_the_slower_ones_range(tmp_path, monkeypatch, slow):
    """One worker parses the first half, this process (between the documents it writes) the
    second; whichever runs slower has the far end of its half parsed by the other."""
    vault = big_vault(tmp_path)
    store = MemoryStore(vault)
    store.rebuild_index()
    expected = snapshot(store)
    notes = sorted(store.vault.scan())
    half = len(notes) // 2
    slow_notes = notes[:half] if slow == "worker" else notes[half:]
    log = tmp_path / "parsed"
    log.mkdir()
    real = index_module.read_opened

    def uneven(vault_, rel, fd):
        if rel in slow_notes:
            time.sleep(0.02)
        with open(log / str(os.getpid()), "a", encoding="utf-8") as file:
            file.write(rel + "\n")
        return real(vault_, rel, fd)

    monkeypatch.setattr(index_module, "read_opened", uneven)  # forked workers inherit it
    monkeypatch.setattr(index_module, "PARALLEL_PARSE_MIN", 1)
    monkeypatch.setattr(index_module, "TAKE_OVER_MIN", 4)
    monkeypatch.setattr(index_module, "CLAIM", 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # one worker: the first half there, the second here
    shared = store.rebuild_index()
    parsed = {int(f.name): f.read_text(encoding="utf-8").split() for f in log.iterdir()}
    assert len(parsed) == 2 and os.getpid() in parsed
    assert sorted(rel for rels in parsed.values() for rel in rels) == notes  # each note parsed once
    fast = next(pid for pid, rels in parsed.items() if rels[0] not in slow_notes)
    taken = [rel for rel in parsed[fast] if rel in slow_notes]
    assert taken and sorted(taken) == slow_notes[len(slow_notes) - len(taken):]  # the far end of it
    assert shared["malformed"] == [{"path": "memory/stm/broken-yaml-note-0badc0de.md",
                                    "reason": shared["malformed"][0]["reason"]},
                                   {"path": "memory/stm/m050.md", "reason": shared["malformed"][1]["reason"]}]
    got = snapshot(store)
    for key in expected:
        assert got[key] == expected[key], key
    store.close()


@pytest.mark.parametrize("cpus", [1, 3])
def test_the_progress_bar_counts_every_note_whichever_process_parses_it(tmp_path, monkeypatch, cpus):
    vault = big_vault(tmp_path)
    store = MemoryStore(vault)
    monkeypatch.setattr(index_module, "PARALLEL_PARSE_MIN", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    seen: list[tuple[int, int]] = []

    def progress(items, length):
        for n, item in enumerate(items, 1):
            seen.append((n, length))
            yield item
        seen.append("end")  # run to its end, as a click bar must be to show 100 %

    store.rebuild_index(progress)
    assert store.index.parse_context == (None if cpus == 1 else "fork" if portable.can_fork() else "spawn")
    notes = len(store.vault.scan())
    assert seen == [*((n, notes) for n in range(1, notes + 1)), "end"]
    store.close()


def test_a_range_taken_over_waits_for_its_new_owner():
    shares = index_module.Shares(100, 2)
    assert shares.claim(0, 10) == range(0, 10)
    assert shares.claim(1, 50) == range(50, 100) and not shares.claim(1, 50)
    assert shares.take_over(1, 10)  # 40 left of 10..50: the far half, 30..50, before 1 writes its segment
    assert shares.claim(0, 100) == range(10, 30) and not shares.claim(0, 100)
    assert not shares.take_over(0, 1)  # 1 is writing its segment: 30..50 waits for it
    assert shares.position(1) == 30 and shares.claim(1, 5) == range(30, 35)
    assert not shares.take_over(0, 16)  # 15 left, under the least
    assert shares.take_over(0, 2) and shares.claim(0, 100) == range(42, 50)  # 1 parses again
    assert shares.claim(1, 100) == range(35, 42)


@settings(max_examples=300, deadline=None)
@given(total=st.integers(0, 200), processes=st.integers(1, 4), size=st.integers(1, 9), least=st.integers(1, 20),
       turns=st.lists(st.integers(0, 3), max_size=400))
def test_shares_hand_every_note_to_one_process_in_contiguous_ranges(total, processes, size, least, turns):
    shares = index_module.Shares(total, processes)
    ranges: list[list[list[int]]] = [[[]] for _ in range(processes)]  # per process, its ranges' notes
    finished = [False] * processes

    def turn(p: int) -> None:
        if finished[p]:
            return
        chunk = shares.claim(p, size)
        if chunk:
            ranges[p][-1] += chunk
        elif shares.take_over(p, least):
            ranges[p].append([])
        else:
            finished[p] = True

    for p in turns:  # any interleaving of the processes' steps
        turn(p % processes)
    while not all(finished):
        for p in range(processes):
            turn(p)
    claimed = [r for mine in ranges for r in mine if r]
    assert all(r == list(range(r[0], r[-1] + 1)) for r in claimed)  # each range contiguous, in order
    assert [n for r in sorted(claimed) for n in r] == list(range(total))  # every note once, by start
    assert shares.done() == 0


@pytest.mark.skipif(not portable.can_fork(), reason="the fault is a monkeypatch, which only a forked worker inherits")
def test_a_failing_worker_stops_the_rebuild_and_keeps_the_index(tmp_path, monkeypatch):
    vault = big_vault(tmp_path)
    store = MemoryStore(vault)
    store.rebuild_index()
    before = snapshot(store)
    files = {p: p.read_bytes() for p in vault.rglob("*") if p.is_file() and ".vaultmem" not in p.parts}
    real = index_module.read_opened
    notes = sorted(store.vault.scan())
    in_the_worker_s_half = notes[len(notes) // 4]  # the worker parses the first half, this process the second

    def failing(vault_, rel, fd):
        if rel == in_the_worker_s_half and os.getpid() != main:
            os.close(fd)
            raise MemoryError("out of memory")
        return real(vault_, rel, fd)

    main = os.getpid()

    monkeypatch.setattr(index_module, "read_opened", failing)  # forked workers inherit it
    monkeypatch.setattr(index_module, "PARALLEL_PARSE_MIN", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    with pytest.raises(RuntimeError, match=r"^a rebuild worker failed: MemoryError: out of memory"):
        store.rebuild_index()
    monkeypatch.setattr(index_module, "read_opened", real)
    store.close()
    store = MemoryStore(vault)
    assert snapshot(store) == before
    assert {p: p.read_bytes() for p in vault.rglob("*") if p.is_file() and ".vaultmem" not in p.parts} == files
    store.close()


def _retell(vault: Path, numbers: range) -> None:
    """Each of these memories now tells of a gondola instead of its words (a new size too)."""
    for n in numbers:
        path = vault / "memory" / "stm" / f"m{n:03d}.md"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(f"Note {n} about", f"Note {n} now only about a gondola, not"), encoding="utf-8")


def test_a_sync_that_finds_most_notes_changed_rebuilds(tmp_path, monkeypatch):
    monkeypatch.setattr(index_module, "BULK_MIN", 10)
    vault = big_vault(tmp_path)
    store = MemoryStore(vault)
    store.index.sync()
    reader = MemoryStore(vault)  # another process's view, its searcher open before the change
    assert reader.index.search("piano", kinds=("memory",), statuses=None, limit=200)[0]
    _retell(vault, range(0, 120, 2))  # 60 of the vault's 136 notes: over 40 %
    report = store.index.sync()
    assert (report.rebuilt, report.added, report.updated, report.removed) == (True, 0, 60, 0)
    assert report.unchanged == len(store.vault.scan()) - 60
    assert snapshot(store) == snapshot_of_a_fresh_rebuild(vault, tmp_path)
    gondolas = reader.index.search("gondola", kinds=("memory",), statuses=None, limit=200)[0]
    assert len(gondolas) == 59  # m050 is malformed; the other process follows the rebuilt index


def test_a_sync_that_finds_a_few_notes_changed_updates_them(tmp_path, monkeypatch):
    monkeypatch.setattr(index_module, "BULK_MIN", 10)
    vault = big_vault(tmp_path)
    store = MemoryStore(vault)
    store.index.sync()
    _retell(vault, range(0, 120, 5))  # 24 of 136: under 40 %
    report = store.index.sync()
    assert (report.rebuilt, report.updated) == (False, 24)
    assert snapshot(store)["notes"] == snapshot_of_a_fresh_rebuild(vault, tmp_path)["notes"]


def snapshot_of_a_fresh_rebuild(vault: Path, tmp_path: Path) -> dict[str, object]:
    copy = tmp_path / "fresh"
    shutil.copytree(vault, copy, ignore=shutil.ignore_patterns(".vaultmem"))
    store = MemoryStore(copy)
    store.index.rebuild()
    return snapshot(store)


@pytest.mark.skipif(not hasattr(os, "posix_fadvise") or not Path("/proc/self/fd").is_dir(),
                    reason="posix_fadvise and /proc: Linux")
def test_open_ahead_opens_each_file_before_its_turn_and_never_blocks(tmp_path, monkeypatch):
    from vaultmem.base.config import Settings
    from vaultmem.storage.vault import Vault

    root = tmp_path / "v"
    root.mkdir()
    names = [f"n{k}.md" for k in range(10)]
    for name in names:
        (root / name).write_text(name)
    (root / "n3.md").unlink()  # gone since the scan: handed out with its error
    (root / "n5.md").unlink()
    os.mkfifo(root / "n5.md")  # an open for reading would wait for a writer without O_NONBLOCK
    advised: list[str] = []
    real = os.posix_fadvise

    def spy(fd: int, offset: int, length: int, advice: int) -> None:
        assert (offset, length, advice) == (0, 0, os.POSIX_FADV_WILLNEED)
        advised.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real(fd, offset, length, advice)  # ESPIPE for the FIFO: ignored

    monkeypatch.setattr(os, "posix_fadvise", spy)
    seen = []
    for rel, fd in Vault(root, Settings()).open_ahead(names, window=3):
        seen.append(rel)
        # by a file's turn, the files up to three places later were opened and asked for, in order
        assert advised == [n for n in names[:len(seen) + 3] if n != "n3.md"]
        if rel == "n3.md":
            assert isinstance(fd, FileNotFoundError)
            continue
        assert os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == rel
        if rel != "n5.md":
            assert os.read(fd, 100) == rel.encode()
        os.close(fd)
    assert seen == names
    assert list(Vault(root, Settings()).open_ahead([])) == []


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="/proc: Linux")
def test_open_ahead_closes_what_it_did_not_hand_out_when_the_loop_stops(tmp_path):
    from vaultmem.base.config import Settings
    from vaultmem.storage.vault import Vault

    for k in range(20):
        (tmp_path / f"n{k}.md").write_text("x")
    before = len(os.listdir("/proc/self/fd"))
    ahead = Vault(tmp_path, Settings()).open_ahead([f"n{k}.md" for k in range(20)], window=8)
    rel, fd = next(ahead)
    assert len(os.listdir("/proc/self/fd")) == before + 9  # the one handed out and 8 ahead
    ahead.close()
    os.close(fd)
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_rebuild_reads_each_note_by_its_open_descriptor_with_the_scans_fingerprint(tmp_path, monkeypatch):
    from vaultmem.storage import index as idx
    from vaultmem.storage.vault import UNSTATED, Vault

    vault = big_vault(tmp_path)
    store = MemoryStore(vault)
    real_scan = Vault.scan

    def a_note_gone_since(self, notes=True, stat=True):  # deleted between the walk and its read
        found = real_scan(self, notes, stat)
        return {**found, "memory/stm/gone.md": UNSTATED} if not stat else found

    monkeypatch.setattr(Vault, "scan", a_note_gone_since)
    report = store.index.rebuild()
    monkeypatch.setattr(Vault, "scan", real_scan)
    assert ("memory/stm/gone.md", "cannot read file: No such file or directory") in report.malformed
    rows = {p: (m, s) for p, m, s in store.index.db.execute("SELECT path, mtime_ns, size FROM notes")}
    assert rows.pop("memory/stm/gone.md") == (0, 0)
    assert rows == store.vault.scan()  # every other note's fingerprint is the one a scan sees
    assert store.index.sync().removed == 1
    assert idx.read_opened(store.vault, "x.md", PermissionError(13, "Permission denied")).error == (
        "cannot read file: Permission denied")
