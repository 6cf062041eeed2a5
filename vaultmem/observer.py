"""The file observer shared by the watcher and the MCP server: a watchdog observer of the
vault that coalesces touched notes and fence markers into a `Pending` (`observe`), and
`ChangeFeed`, which lets a long-lived process without a watcher (`vaultmem mcp`) learn what
changed through a marker instead of stat'ing every note. watchdog is imported only when an
observer starts, so `vaultmem --help` stays cheap."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.base.errors import VaultmemError
from vaultmem.store import MemoryStore, Policy

log = logging.getLogger("vaultmem.observer")

# The threads watchdog started for each observer `observe` made: the observer's, its emitters'
# and, in watchdog 7, the one that reads inotify for all of them. Told apart from the others by
# `threading.enumerate()` around the start, not by watchdog's attributes, which are its own.
_started: weakref.WeakKeyDictionary[Any, list[threading.Thread]] = weakref.WeakKeyDictionary()


def relevant(rel: str) -> bool:
    """Whether a vault-relative path is a note the index cares about (what a full scan finds)."""
    return MemoryStore.is_note_path(rel)


def limit_message(exc: OSError) -> str | None:
    """A one-line fix for the kernel's inotify limits, or None for any other error."""
    if exc.errno == errno.ENOSPC:
        current = _read_proc("/proc/sys/fs/inotify/max_user_watches")
        return (f"the inotify watch limit is reached (fs.inotify.max_user_watches = {current}); raise it with "
                "`sudo sysctl fs.inotify.max_user_watches=524288` and keep it by adding "
                "`fs.inotify.max_user_watches=524288` to /etc/sysctl.d/90-vaultmem.conf")
    if exc.errno == errno.EMFILE:
        current = _read_proc("/proc/sys/fs/inotify/max_user_instances")
        return (f"the inotify instance limit is reached (fs.inotify.max_user_instances = {current}); raise it with "
                "`sudo sysctl fs.inotify.max_user_instances=512` and keep it in /etc/sysctl.d/90-vaultmem.conf")
    return None


def _read_proc(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return "unknown"


# -- coalescing ----------------------------------------------------------------------------


class Pending:
    """Paths touched since the last batch (last state wins), filled by the observer thread."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._fences: list[str] = []  # commands waiting for the index (storage/fence.py)
        self._taken_fences: list[str] = []  # the fences behind the batch take() last returned
        self._full = False
        self._first = 0.0
        self._last = 0.0
        self.events = 0

    def add_fence(self, rel: str) -> None:
        """A command's fence: everything pending is applied at once, no debounce, then answered."""
        with self._cond:
            now = time.monotonic()
            if not (self._paths or self._full or self._fences):
                self._first = now
            self._last = now
            self._fences.append(rel)
            self._cond.notify()

    def take_fences(self) -> list[str]:
        """The fences that arrived before the batch take() returned (taken with it, atomically:
        a fence is answered only after every event before it is applied)."""
        with self._cond:
            fences, self._taken_fences = self._taken_fences, []
            return fences

    def add(self, rels: list[str], full: bool = False) -> None:
        with self._cond:
            now = time.monotonic()
            if not (self._paths or self._full):
                self._first = now
            self._last = now
            self._paths.update(rels)
            self._full = self._full or full
            self.events += 1
            self._cond.notify()

    def take(self, timeout: float, debounce: float, max_delay: float) -> tuple[set[str], bool] | None:
        """The next batch once it is ready, or None when nothing is ready within `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                now = time.monotonic()
                if self._paths or self._full or self._fences:
                    quiet, age = now - self._last, now - self._first
                    if quiet >= debounce or age >= max_delay or self._fences:
                        batch, full = self._paths, self._full
                        self._paths, self._full = set(), False
                        self._taken_fences += self._fences
                        self._fences = []
                        return batch, full
                    wait = min(debounce - quiet, max_delay - age)
                else:
                    wait = deadline - now
                    if wait <= 0:
                        return None
                self._cond.wait(wait)

    def drain(self) -> tuple[set[str], bool]:
        with self._cond:
            batch, full = self._paths, self._full
            self._paths, self._full = set(), False
            return batch, full


# -- observing -----------------------------------------------------------------------------


def watched_events() -> list[Any]:
    """The events `observe` asks the system for: a path created, deleted, moved, written or
    its times changed. Not a file opened or closed after reading, nor a folder "modified"
    (its entries changed: the events of the entries say which). Every search opens the index
    folder, and the watcher and Obsidian read notes all day: each of those opens and closes
    woke the observer's threads for an event dropped at once, a share of a `search_memory`
    call's CPU in the MCP server (docs/performance.md). On Linux the kernel is never asked for
    them (inotify's mask); elsewhere watchdog drops them before they are queued."""
    from watchdog import events as ev

    return [ev.FileCreatedEvent, ev.DirCreatedEvent, ev.FileDeletedEvent, ev.DirDeletedEvent, ev.FileMovedEvent,
            ev.DirMovedEvent, ev.FileModifiedEvent, ev.FileClosedEvent]


def observe(root: Path, pending: Pending, factory: Callable[[], Any] | None = None) -> Any:
    """A started watchdog observer of the vault that puts each note touched, and each fence
    a command drops (storage/fence.py), into `pending`; a folder created, moved or deleted
    asks for a full rescan. VaultmemError when it cannot watch (the inotify limit)."""
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    root_text = str(root)
    # FSEvents reports resolved paths (/private/var/... for /var/...): accept both spellings.
    prefixes = {root_text + os.sep, os.path.realpath(root_text) + os.sep}

    def rel_of(path: Any) -> str | None:
        path = os.fsdecode(path)
        for prefix in prefixes:
            if path.startswith(prefix):
                return path[len(prefix):].replace(os.sep, "/")
        return None

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            kind = event.event_type
            paths = [event.src_path]
            if kind == "moved":
                paths.append(event.dest_path)
            rels = [r for r in map(rel_of, paths) if r is not None]
            if kind == "created" and not event.is_directory and rels and MemoryStore.is_fence(rels[0]):
                pending.add_fence(rels[0])  # a command waits: after every earlier event
                return
            if event.is_directory:
                # A folder created, moved or deleted: its notes move with it. Rescan,
                # unless the folder is one vaultmem ignores (.git, .obsidian, ...).
                if kind != "modified" and any(relevant(r + "/x.md") for r in rels):
                    pending.add([], full=True)
                return
            rels = [r for r in rels if relevant(r)]
            if rels:
                pending.add(rels)

    before = set(threading.enumerate())
    observer = (factory or Observer)()  # watchdog 7 starts its inotify reader here
    observer.schedule(Handler(), root_text, recursive=True, event_filter=watched_events())
    _watch_overflow(pending)
    try:
        observer.start()
        _started[observer] = [t for t in threading.enumerate()
                              if t not in before and type(t).__module__.startswith("watchdog.")]
    except OSError as exc:
        with contextlib.suppress(Exception):
            observer.stop()
        message = limit_message(exc)
        if message:
            raise VaultmemError(message) from None
        raise VaultmemError(f"cannot watch {root_text}: {exc.strerror or exc}; check the folder's permissions") from None
    return observer


class ChangeFeed:
    """What changed in the vault, for a long-lived process that runs without a watcher
    (`vaultmem mcp`): a watchdog observer of its own fills a `Pending`, and `changes()`
    drops a marker (`.vaultmem/fences/<nonce>.feed`: ordered like a command's fence, never
    answered by a watcher) and returns every note touched before the marker's event arrived.
    A search 1 s after the last (Policy.freshness_ttl) then costs the marker's round trip
    instead of a stat of every note. None
    whenever it cannot vouch: before the first full scan after the observer started, a dead
    observer (restarted; the caller scans to catch up), a vault it cannot write the marker
    in, a marker not seen within `wait` s; (paths, True) after an overflow or a folder event.
    Never stale: None or True means scan."""

    def __init__(self, root: Path, state_dir: Path, *, wait: float = 0.5,
                 observer_factory: Callable[[], Any] | None = None) -> None:
        self.root, self.state_dir, self.wait = root, state_dir, wait
        self.pending = Pending()
        self._factory = observer_factory
        self._observer: Any = None
        self._primed = False  # a full scan has run since the observer started
        self._lock = threading.Lock()
        self.degraded = False

    def start(self) -> bool:
        """Start observing; False (and every later call scans) when the vault cannot be watched."""
        if os.path.realpath(self.state_dir) != os.path.realpath(self.root / ".vaultmem"):
            self.degraded = True  # the index lives outside the vault (a read-only vault): no marker to see
            return False
        try:
            self._observer = observe(self.root, self.pending, self._factory)
        except VaultmemError as exc:
            log.warning("cannot watch the vault for changes (%s); every freshness check scans it", exc)
            self.degraded = True
            return False
        return True

    def close(self) -> None:
        stop_observer(self._observer)
        self._observer = None

    @classmethod
    def started(cls, vault: Any) -> ChangeFeed | None:
        """A feed watching `vault` (a `Policy.change_feed` for a server), or None when it cannot
        (no vault there yet: the store's first call says so)."""
        if not os.path.isdir(vault.root):
            return None
        feed = cls(vault.root, vault.state_dir)
        return feed if feed.start() else None

    def changes(self) -> tuple[set[str], bool] | None:
        """(notes touched since the last call, whether a full scan is needed), or None: scan."""
        with self._lock:
            if self.degraded:
                return None
            if self._observer is None or not _observer_healthy(self._observer):
                self.close()
                self._primed = False
                if not self.start():
                    return None
            if not self._primed:
                self.pending.drain()
                self.pending.take_fences()
                self._primed = True
                return None  # the caller's full scan covers everything up to now
            return self._through_fence()

    def _through_fence(self) -> tuple[set[str], bool] | None:
        rel = MemoryStore.feed_marker(f"{os.getpid()}-{os.urandom(6).hex()}")
        path = self.root / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except OSError:
            return None  # a read-only vault: scan
        paths: set[str] = set()
        full = False
        deadline = time.monotonic() + self.wait
        try:
            while True:
                left = deadline - time.monotonic()
                taken = self.pending.take(max(left, 0.0), 0.0, 0.0) if left > 0 else None
                if taken is None:
                    return None  # the marker did not come back in time: the caller scans
                paths |= taken[0]
                full = full or taken[1]
                if rel in self.pending.take_fences():
                    return paths, full
        finally:
            with contextlib.suppress(OSError):
                path.unlink()


def stop_observer(observer: Any) -> None:
    """Stop and join an observer (None: nothing to stop)."""
    if observer is not None:
        with contextlib.suppress(Exception):
            observer.stop()
            observer.join(timeout=5)


def _observer_healthy(observer: Any) -> bool:
    if not observer.is_alive():
        return False
    # watchdog 7's inotify observer reads every event in one thread of its own; when that
    # thread dies (a KeyError for a folder that vanished as it was being watched: Whoosh's
    # MAIN.tmp), the emitters live on, deaf. A new observer gets a new reader.
    if not all(thread.is_alive() for thread in _started.get(observer, ())):
        return False
    return all(emitter.is_alive() for emitter in list(getattr(observer, "emitters", ())))


class _OverflowFilter(logging.Filter):
    """watchdog only logs an inotify queue overflow; turn it into a full rescan."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: Pending | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.pending is not None and "overflow" in record.getMessage().lower():
            self.pending.add([], full=True)
        return True


_overflow_filter = _OverflowFilter()


def _watch_overflow(pending: Pending) -> None:
    _overflow_filter.pending = pending
    logger = logging.getLogger("watchdog.observers.inotify")
    if _overflow_filter not in logger.filters:
        logger.addFilter(_overflow_filter)


def serving_policy() -> Policy:
    """The store's policy in an MCP server process: an assistant makes bursts of calls, so the
    vault is re-scanned for Obsidian edits at most once a second, and edits are seen as they
    happen through the process's own observer (a freshness check is a marker's round trip, not
    a stat of every note; a running watcher is asked first; without either the store scans);
    embeddings (when installed) load once: hybrid by default."""
    return Policy(freshness_ttl=1.0, trust_watcher=True, long_lived=True, change_feed=ChangeFeed.started)
