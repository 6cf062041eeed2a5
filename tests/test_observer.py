"""observer.ChangeFeed: a long-lived process without a watcher (`vaultmem mcp`) learns what
changed in the vault through its own observer and a marker, instead of stat'ing every note;
whenever it cannot vouch, it scans. Never stale either way."""

from __future__ import annotations

import dataclasses
import os
import shutil

import pytest
from conftest import Clock
from test_watcher import note_text

from vaultmem.base.config import load_settings
from vaultmem.mcp import server as mcp_server
from vaultmem.observer import ChangeFeed, serving_policy
from vaultmem.storage import fence
from vaultmem.store import MemoryStore, Policy


class Counting:
    """Counts the full scans a store makes (Index.sync: a stat of every note)."""

    def __init__(self, store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scans = 0
        real = store.index.sync

        def sync(*args, **kwargs):
            self.scans += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(store.index, "sync", sync)


@pytest.fixture
def fed(vault_path, monkeypatch):
    """A store as `vaultmem mcp` holds it: its own change feed, primed by a first full scan."""
    store = MemoryStore(vault_path, settings=load_settings(vault_path), clock=Clock(),
                        policy=Policy(change_feed=ChangeFeed.started))
    assert store.change_feed is None  # started by the first freshness check, on the thread that serves
    counting = Counting(store, monkeypatch)
    store.sync()  # the first call scans: the feed cannot vouch for what came before it
    assert counting.scans == 1
    feed = store.change_feed
    assert isinstance(feed, ChangeFeed)
    yield store, counting, feed
    store.close()  # closes its feed


def markers(vault_path):
    return sorted(p.name for p in fence.fence_dir(vault_path / ".vaultmem").iterdir())


def test_edits_new_and_removed_notes_are_seen_without_a_scan(fed, vault_path):
    store, counting, _feed = fed
    for i in range(20):
        ident = f"11111111-2222-4333-8444-{i:012d}"
        (vault_path / f"memory/stm/fed-{i}.md").write_text(note_text(f"quokkafeed{i} was written", ident))
        assert [r["id"] for r in store.search(f"quokkafeed{i}")["results"]] == [ident], i
        assert (store.last_sync.updated, store.last_sync.removed) == (1, 0)
    edited = vault_path / "memory/stm/fed-3.md"
    edited.write_text(note_text("now about a wombat", "11111111-2222-4333-8444-000000000003"))
    assert [r["content"] for r in store.search("wombat")["results"]] == ["now about a wombat"]
    (vault_path / "memory/stm/fed-4.md").unlink()
    assert store.search("quokkafeed4")["results"] == []
    assert store.last_sync.removed == 1
    assert store.search("quokkafeed5")["count"] == 1
    assert (store.last_sync.updated, store.last_sync.removed, store.last_sync.unchanged) == (0, 0, 0)  # nothing new
    assert counting.scans == 1  # none after the first
    assert markers(vault_path) == []  # each marker removed; no watcher's `.done` either
    assert isinstance(store.index._fingerprints[1], tuple)  # the first scan's listing is not held whole


def test_a_folder_moved_in_is_a_full_scan(fed, vault_path, tmp_path):
    store, counting, _feed = fed
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "moved.md").write_text(note_text("a platypus in a moved folder", "11111111-2222-4333-8444-999999999999"))
    shutil.move(str(outside), str(vault_path / "memory/stm/outside"))
    assert [r["content"] for r in store.search("platypus")["results"]] == ["a platypus in a moved folder"]
    assert counting.scans == 2


def test_a_dead_observer_means_a_scan_then_a_new_observer(fed, vault_path):
    store, counting, feed = fed
    feed._observer.stop()
    feed._observer.join(timeout=5)
    (vault_path / "memory/stm/late.md").write_text(note_text("an echidna after the observer died",
                                                             "11111111-2222-4333-8444-888888888888"))
    assert store.search("echidna")["count"] == 1
    assert counting.scans == 2  # it could not vouch: scanned, and restarted
    (vault_path / "memory/stm/later.md").write_text(note_text("a numbat after the restart",
                                                              "11111111-2222-4333-8444-777777777777"))
    assert store.search("numbat")["count"] == 1
    assert counting.scans == 2  # the new observer vouches again


def test_a_marker_that_cannot_be_written_means_a_scan(fed, vault_path, monkeypatch):
    store, counting, _feed = fed
    real_open = os.open

    def refuse(path, *args, **kwargs):
        if str(path).endswith(fence.FEED_SUFFIX):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    (vault_path / "memory/stm/ro.md").write_text(note_text("a bilby in a read-only moment",
                                                           "11111111-2222-4333-8444-666666666666"))
    assert store.search("bilby")["count"] == 1
    assert counting.scans == 2


def test_an_index_kept_outside_the_vault_is_never_vouched_for(tmp_path, vault_path):
    feed = ChangeFeed(vault_path, tmp_path / "elsewhere")
    assert feed.start() is False
    assert feed.changes() is None


def test_the_mcp_server_reads_changes_through_its_feed(vault_path, monkeypatch):
    # the server's policy, but every call checks (the server checks at most once a second)
    policy = dataclasses.replace(serving_policy(), freshness_ttl=0.0)
    store = MemoryStore(vault_path, settings=load_settings(vault_path), clock=Clock(), policy=policy)
    server = mcp_server.prepare(store)
    on_store_thread = server.bridge.submit  # SQLite connections belong to that thread
    try:
        on_store_thread(lambda: None).result()  # the bridge's warm-up ran: its freshness check started the feed
        assert isinstance(store.change_feed, ChangeFeed)
        on_store_thread(store.sync).result()
        counting = Counting(store, monkeypatch)
        (vault_path / "memory/stm/srv.md").write_text(note_text("a quoll the server sees",
                                                                "11111111-2222-4333-8444-555555555555"))
        assert on_store_thread(lambda: store.search("quoll")["count"]).result() == 1
        assert counting.scans == 0
    finally:
        server.bridge.close()  # closes the store and its feed


def test_reading_the_vault_wakes_no_observer_but_writing_does(vault_path, monkeypatch):
    """A file opened, read and closed (every search opens the index folder; Obsidian and the
    watcher read notes all day) reaches no observer thread; a note written still does."""
    from vaultmem.observer import Pending, observe, stop_observer

    note = vault_path / "memory/stm/read-me.md"
    note.write_text(note_text("a wombat read many times", "11111111-2222-4333-8444-444444444444"))
    pending = Pending()
    observer = observe(vault_path, pending)
    queued: list[str] = []
    real_put = observer.event_queue.put

    def put(item, *args, **kwargs):
        if isinstance(item, tuple):  # (event, watch); stop() puts a bare sentinel
            queued.append(type(item[0]).__name__)
        return real_put(item, *args, **kwargs)

    monkeypatch.setattr(observer.event_queue, "put", put)
    try:
        for _ in range(20):
            note.read_bytes()
            os.listdir(vault_path / "memory/stm")
            os.listdir(vault_path / ".vaultmem")
        written = vault_path / "memory/stm/written.md"
        written.write_text(note_text("a numbat written once", "11111111-2222-4333-8444-333333333333"))
        changed = pending.take(timeout=5.0, debounce=0.05, max_delay=1.0)
        assert changed is not None and "memory/stm/written.md" in changed[0]
        assert {"FileOpenedEvent", "FileClosedNoWriteEvent", "DirModifiedEvent"} & set(queued) == set()
        assert "FileCreatedEvent" in queued
    finally:
        stop_observer(observer)
