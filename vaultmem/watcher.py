"""The watcher daemon: keeps the index true while a person edits the vault, runs maintenance.

A watchdog observer reports file events; they are coalesced per path and, once the vault
has been quiet for `debounce` seconds (or `max_delay` passed during a burst), applied in
one batch. A batch never trusts event types: it looks at each touched path on disk and
compares it with what the catalog holds, so atomic saves, vim's rename dance and
vaultmem's own writes (already indexed, same mtime and size) all come out right.

watchdog is imported only inside `Watcher.start`, so `vaultmem --help` stays cheap.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem.base import portable
from vaultmem.base.config import TMP_MARK
from vaultmem.base.errors import VaultmemError
from vaultmem.base.timeutil import format_time
from vaultmem.observer import (
    Pending,
    _observer_healthy,
    limit_message,
    observe,
    relevant,  # noqa: F401  (the watcher's name for it, as before the observer had a module)
    stop_observer,
)
from vaultmem.store import MemoryStore

log = logging.getLogger("vaultmem.watcher")

DEBOUNCE = 0.1  # seconds of quiet before a batch is applied
MAX_DELAY = 1.0  # a continuous stream of events still flushes this often
FULL_SYNC_THRESHOLD = 1000  # a bigger batch is cheaper (and safer) as one scan + diff
DEGRADED_SYNC_INTERVAL = 10.0  # full-sync period when the observer died (watch limit)
# a dead observer is restarted, at most this many times in this many seconds, then degraded
RESTARTS_ALLOWED, RESTART_PERIOD = 5, 60.0
TRIM_INTERVAL = 5.0  # seconds between malloc_trim calls
MMAP_THRESHOLD = 128 * 1024  # glibc: allocations this big or bigger are mmapped, and unmapped when freed
STATUS_FILE = "state/watcher.json"
PID_FILE = "state/watcher.pid"
LOCK_FILE = "state/watcher.lock"


# -- one watcher per vault ---------------------------------------------------------------------


class InstanceLock:
    """One watcher per vault: an exclusive lock on `.vaultmem/state/watcher.lock`
    (`portable.ExclusiveLock`: flock, Windows' own lock, or a PID lock file) and the owner's
    PID in `.vaultmem/state/watcher.pid`, for the message a second watcher prints.

    The system drops the lock when the process dies, so a PID left by a killed watcher
    (stale) never blocks the next one.
    """

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / PID_FILE
        self._lock = portable.ExclusiveLock(state_dir / LOCK_FILE)
        self._held = False
        self.stale_pid: int | None = None

    def acquire(self, wait: float = 1.0) -> None:
        deadline = time.monotonic() + wait
        while not self._lock.try_acquire():
            if time.monotonic() >= deadline:
                pid = _read_pid(self.path)
                who = f"PID {pid}" if pid else "PID unknown, it is starting"
                raise VaultmemError(
                    f"a watcher already runs for this vault ({who}); stop it first (`kill {pid or '<pid>'}`) "
                    "or check it with `vaultmem watch --status`"
                )
            time.sleep(0.05)
        self._held = True
        self.stale_pid = _read_pid(self.path)
        _write_atomic(self.path, f"{os.getpid()}\n")

    def release(self) -> None:
        if self._held:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self._lock.release()
            self._held = False

    def fds(self) -> list[int]:
        """Descriptors a forked merge child closes, so the lock never outlives the watcher."""
        return self._lock.fds()

    def held_by_other(self) -> bool:
        """Whether another process (or another InstanceLock) holds the lock right now (for --status)."""
        return not self._held and self._lock.held_elsewhere()


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}")
    tmp.write_text(text, encoding="ascii")
    os.replace(tmp, path)


# -- status file -------------------------------------------------------------------------------


def read_status_file(state_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((state_dir / STATUS_FILE).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic but not fsynced: the status is advisory and rewritten after every batch."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


def watcher_status(store: Any) -> dict[str, Any]:
    """Whether a watcher runs for the vault, since when, and the last batch it applied."""
    store.require_vault()
    state_dir = store.state_dir
    data = read_status_file(state_dir)
    running = InstanceLock(state_dir).held_by_other()
    pid = data.get("pid")
    result = {
        "success": True,
        "vault": str(store.root),
        "running": running,
        "pid": pid if running else None,
        "since": data.get("started_at") if running else None,
        "last_batch": data.get("last_batch"),
        "last_maintenance": data.get("last_maintenance"),
        "batches": data.get("batches", 0),
        "stopped_at": None if running else data.get("stopped_at"),
    }
    if running:
        result["message"] = f"A watcher is running for {store.root} (PID {pid}, since {data.get('started_at')})"
    elif data.get("state") == "running":
        result["message"] = (f"No watcher is running for {store.root}; the last one (PID {pid}) "
                             "stopped without shutting down cleanly")
    elif data.get("stopped_at"):
        result["message"] = f"No watcher is running for {store.root}; the last one stopped at {data.get('stopped_at')}"
    else:
        result["message"] = f"No watcher has run for {store.root}; start one with `vaultmem watch`"
    return result


# -- maintenance ---------------------------------------------------------------------------------


def run_maintenance(store: Any) -> dict[str, Any]:
    """One maintenance tick (gc and promotion as configured) through `MemoryStore.maintenance`."""
    try:
        result = dict(store.maintenance())
    except VaultmemError as exc:
        log.error("maintenance failed: %s", exc)
        return {"success": False, "message": str(exc)}
    except Exception as exc:  # never let a tick kill the daemon
        log.exception("maintenance failed: %s", exc)
        return {"success": False, "message": f"{type(exc).__name__}: {exc}"}
    log.info("maintenance: %s", result.get("message") or _summary(result))
    return result


def _summary(result: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in result.items() if isinstance(v, (int, float, bool, str)) and k != "success"]
    return ", ".join(parts) or "done"


# -- the watcher -------------------------------------------------------------------------------


class Watcher:
    """Observer + coalescing + batches + maintenance ticks for one vault."""

    def __init__(
        self,
        store: Any,
        *,
        debounce: float = DEBOUNCE,
        max_delay: float = MAX_DELAY,
        maintenance_interval: float | None = None,
        full_sync_threshold: int = FULL_SYNC_THRESHOLD,
        observer_factory: Callable[[], Any] | None = None,
    ) -> None:
        self.store = store
        self.debounce = debounce
        self.max_delay = max_delay
        interval = store.settings.maintenance_interval if maintenance_interval is None else maintenance_interval
        self.maintenance_interval = float(interval)
        self.full_sync_threshold = full_sync_threshold
        self.pending = Pending()
        self.stop_event = threading.Event()
        self.lock = InstanceLock(store.state_dir)
        self._observer_factory = observer_factory
        self._observer: Any = None
        self._degraded = False
        self._restarts: list[float] = []  # monotonic times of the recent observer restarts
        self.counts = {"batches": 0, "indexed": 0, "removed": 0, "skipped": 0, "ticks": 0, "merges": 0,
                       "observer_restarts": 0}
        self.status: dict[str, Any] = {}
        self.started = threading.Event()
        self._last_trim = 0.0
        self._merge_pid: int | None = None  # the segment-merge child running now
        self._merge_due = False  # a commit since the last look at the segments
        self._merging_in_child = False  # commits leave segment merging to a child (started at start())

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Take the per-vault lock, start the observer, catch up with a full sync."""
        self.store.require_vault()
        self.lock.acquire()
        try:
            if self.lock.stale_pid and self.lock.stale_pid != os.getpid():
                log.info("a previous watcher (PID %s) did not shut down cleanly; taking over", self.lock.stale_pid)
            _tune_malloc()
            self._merging_in_child = self.store.defer_index_merges()  # commits leave merging to a child
            self._start_observer()
            report = self._sync()  # after the observer starts, so nothing falls in between
            self.status = {
                "pid": os.getpid(), "vault": str(self.store.root), "state": "running",
                "started_at": format_time(self.store.now()), "stopped_at": None, "batches": 0,
                "last_batch": None, "last_maintenance": read_status_file(self.store.state_dir).get("last_maintenance"),
            }
            self._save_status()
            log.info("watching %s (PID %d); initial sync: %d indexed, %d removed, %d unchanged",
                     self.store.root, os.getpid(), report["indexed"], report["removed"], report["unchanged"])
        except BaseException:
            self._stop_observer()
            self.lock.release()
            raise
        self.started.set()

    def _start_observer(self) -> None:
        self._observer = observe(self.store.root, self.pending, self._observer_factory)

    def _restart_observer(self) -> None:
        """The observer or one of its emitter threads died. watchdog's inotify emitter dies
        when a folder it just began watching vanishes at once (a KeyError in its thread; Whoosh
        makes and removes such folders under .vaultmem/ on every commit), so start a new one and
        catch up with a full sync. If it cannot start (the inotify watch limit) or keeps dying,
        fall back to a full sync every DEGRADED_SYNC_INTERVAL seconds."""
        now = time.monotonic()
        self._restarts = [t for t in self._restarts if now - t < RESTART_PERIOD] + [now]
        self._stop_observer()
        if len(self._restarts) <= RESTARTS_ALLOWED:
            try:
                self._start_observer()
            except VaultmemError as exc:
                log.error("the file observer stopped and could not restart: %s", exc)
            else:
                self.counts["observer_restarts"] += 1
                log.warning("the file observer stopped; restarted it and caught up with a full sync")
                self.apply(set(), True)
                return
        self._degraded = True
        log.error("the file observer stopped (inotify watch limit?); falling back to a full sync every "
                  "%.0f s. %s", DEGRADED_SYNC_INTERVAL, limit_message(OSError(errno.ENOSPC, "")))

    def _stop_observer(self) -> None:
        stop_observer(self._observer)
        self._observer = None

    def stop(self) -> None:
        """Ask the loop to finish the batch in hand and return (safe from signal handlers)."""
        self.stop_event.set()

    def run(self) -> None:
        """start() if needed, then apply batches and ticks until stop(); always cleans up."""
        if not self.started.is_set():
            self.start()
        try:
            self._loop()
        finally:
            self.close()

    def close(self) -> None:
        self._stop_observer()
        batch, full = self.pending.drain()
        if batch or full:
            self.apply(batch, full)  # what arrived while stopping: commit it too
        if self._merge_pid is not None:  # let a running merge finish (it holds the vault lock)
            self._reap_merge(wait=True)
        if self._merging_in_child:
            self.store.resume_index_merges()
            self._merging_in_child = False
        if self.status:
            self.status.update(state="stopped", stopped_at=format_time(self.store.now()))
            with contextlib.suppress(OSError):
                self._save_status()
        self.lock.release()
        self.started.clear()
        log.info("watcher stopped")

    def _loop(self) -> None:
        next_tick = time.monotonic() + self.maintenance_interval
        next_degraded_sync = time.monotonic() + DEGRADED_SYNC_INTERVAL
        while not self.stop_event.is_set():
            timeout = max(0.0, min(0.25, next_tick - time.monotonic()))
            taken = self.pending.take(timeout, self.debounce, self.max_delay)
            if taken is not None:
                fences = self.pending.take_fences()  # the events before these fences are in `taken`
                if taken[0] or taken[1]:
                    self.apply(*taken)
                self.store.answer_fences(fences)
            self._merge_segments()
            now = time.monotonic()
            if now >= next_tick and not self.stop_event.is_set():
                self.tick()
                next_tick = time.monotonic() + self.maintenance_interval
            if not self._degraded and self._observer is not None and not _observer_healthy(self._observer):
                self._restart_observer()
            if self._degraded and now >= next_degraded_sync:
                self.apply(set(), True)
                next_degraded_sync = time.monotonic() + DEGRADED_SYNC_INTERVAL

    # -- batches -----------------------------------------------------------------------------
    def apply(self, paths: set[str], full: bool = False) -> dict[str, Any]:
        """Bring the index in line with the disk for these paths (or the whole vault)."""
        t0 = time.perf_counter()
        try:
            if full or len(paths) > self.full_sync_threshold:
                result = self._sync()
                result["skipped"] = 0
            else:
                result = self.store.refresh_paths(paths)
        except Exception as exc:  # a bad index state must not end the daemon
            log.error("could not apply a batch of %d paths: %s; retrying with a full sync", len(paths), exc)
            try:
                result = self._sync()
                result["skipped"] = 0
            except Exception as again:
                log.exception("full sync failed too: %s; will retry on the next change", again)
                return {"indexed": 0, "removed": 0, "skipped": 0, "malformed": [], "error": str(again)}
        self._apply_reviews(result.get("paths", []))
        self._embed(result.get("paths", []))
        self._merge_copies(paths, full)
        seconds = time.perf_counter() - t0
        self._trim_heap()
        for item in result["malformed"]:
            log.warning("skipped %s: %s", item["path"], item["reason"])
        self.counts["batches"] += 1
        for key in ("indexed", "removed", "skipped"):
            self.counts[key] += result[key]
        changed = result["indexed"] or result["removed"]
        changed = changed or result["malformed"]
        self._merge_due = self._merge_due or bool(changed)
        if changed:
            log.info("indexed %d, removed %d, malformed %d, unchanged %d (%.3f s)", result["indexed"],
                     result["removed"], len(result["malformed"]), result["skipped"], seconds)
        else:
            log.debug("%d paths already up to date (vaultmem's own writes or no change)", result["skipped"])
        if changed and self.status:
            self.status["batches"] = self.status.get("batches", 0) + 1
            self.status["last_batch"] = {
                "at": format_time(self.store.now()), "indexed": result["indexed"], "removed": result["removed"],
                "unchanged": result["skipped"], "malformed": len(result["malformed"]),
                "seconds": round(seconds, 4), "full_sync": bool(full),
                "paths": sorted(result.get("paths", []))[:10],
            }
            with contextlib.suppress(OSError):
                self._save_status()
        return result

    def _merge_copies(self, paths: set[str], full: bool) -> None:
        """A file-sync tool dropped a conflict copy of a memory note: merge it now (docs/sync.md)."""
        if not (full or any(MemoryStore.is_conflict_copy(p) for p in paths)):
            return
        try:
            result = self.store.merge_copies(apply=True)
        except Exception as exc:  # never the daemon's end: the next batch or `vaultmem sync copies` retries
            log.error("could not merge a conflict copy: %s", exc)
            return
        for item in result["copies"]:
            log.info("%s: %s -> %s%s", item["status"], item["copy"], item["original"],
                     "" if item["clean"] else " (a clash is kept between markers)")

    def _embed(self, paths: list[str]) -> None:
        """Keep vectors fresh for edited memories (only when the embeddings extra is enabled)."""
        if not paths:
            return
        try:
            self.store.embed_paths(paths)
        except Exception as exc:  # a model problem must not stop indexing
            log.warning("could not refresh embeddings for %d notes: %s", len(paths), exc)

    def _apply_reviews(self, paths: list[str]) -> None:
        """A person ticked boxes in a review note: carry out the ticked proposals once."""
        folder = self.store.settings.reviews_dir.strip("/") + "/"
        for rel in paths:
            if not rel.startswith(folder) or not (self.store.root / rel).is_file():
                continue
            try:
                outcome = self.store.apply_review(rel)
            except Exception as exc:  # a half-edited review note must not stop the daemon
                log.warning("could not apply review %s: %s", rel, exc)
                continue
            if outcome.get("applied") or outcome.get("failed"):
                log.info("review %s: %s", rel, outcome.get("message", "applied"))

    def _trim_heap(self) -> None:
        """Give freed memory back to the OS now and then, so a long-lived daemon stays flat.

        The observer thread allocates events that this thread frees; glibc keeps such memory
        in per-thread arenas and RSS creeps up with the number of events (flat with this).
        Not glibc: nothing to do.
        """
        now = time.monotonic()
        if now - self._last_trim < TRIM_INTERVAL:
            return
        self._last_trim = now
        trim = _malloc_trim()
        if trim is not None:
            trim(0)

    def _merge_segments(self) -> None:
        """Reap a finished merge child; fork one when the commits left too many segments.

        The watcher commits without merging (its heap would keep the high-water mark of
        every merge); a child merges and exits, so its memory goes back to the OS.
        """
        if self._merge_pid is not None and not self._reap_merge(wait=False):
            return
        if not self._merge_due or not self._merging_in_child:  # set at start() where fork works
            return
        self._merge_due = False
        try:
            due = self.store.index_merge_due()
        except Exception as exc:  # a damaged index: the next batch repairs it
            log.debug("cannot read the index segments: %s", exc)
            return
        if due:
            own = self.lock.fds()  # a forked child does not hold the instance lock
            self._merge_pid = self.store.start_index_merge(close_fds=own)
            log.debug("merging index segments in child process %d", self._merge_pid)

    def _reap_merge(self, wait: bool) -> bool:
        """Whether the merge child ended (and was reaped)."""
        assert self._merge_pid is not None
        outcome = self.store.index_merge_result(self._merge_pid, wait=wait)
        if outcome is None:
            return False
        if outcome.startswith("failed"):
            log.warning("the index segment merge (PID %d) %s; the index is unchanged and "
                        "will be merged again after the next change", self._merge_pid, outcome)
        else:
            self._merge_due = True  # commits made meanwhile may call for another merge
            log.debug("segment merge %d done (%s)", self._merge_pid, outcome)
        self.counts["merges"] += outcome == "merged"
        self._merge_pid = None
        return True

    def _sync(self) -> dict[str, Any]:
        return dict(self.store.refresh_all())

    # -- maintenance ---------------------------------------------------------------------------
    def tick(self) -> dict[str, Any]:
        """A full sync (catches anything the observer missed), then gc/promotion."""
        self.counts["ticks"] += 1
        try:
            self.apply(set(), True)
        except Exception as exc:  # pragma: no cover - apply already guards itself
            log.error("sync before maintenance failed: %s", exc)
        result = run_maintenance(self.store)
        if self.status:
            self.status["last_maintenance"] = {"at": format_time(self.store.now()),
                                               "message": result.get("message") or _summary(result)}
            with contextlib.suppress(OSError):
                self._save_status()
        return result

    def _save_status(self) -> None:
        _write_json(self.store.state_dir / STATUS_FILE, self.status)


def run_once(store: Any) -> dict[str, Any]:
    """`vaultmem watch --once`: one sync and one maintenance tick, for cron."""
    store.require_vault()
    t0 = time.perf_counter()
    report = store.refresh_all()
    for item in report["malformed"]:
        log.warning("skipped %s: %s", item["path"], item["reason"])
    log.info("sync: indexed %d, removed %d, malformed %d, unchanged %d", report["indexed"], report["removed"],
             len(report["malformed"]), report["unchanged"])
    maintenance = run_maintenance(store)
    state_dir = store.state_dir
    with contextlib.suppress(OSError):
        data = read_status_file(state_dir)
        data["last_maintenance"] = {"at": format_time(store.now()),
                                    "message": maintenance.get("message") or _summary(maintenance)}
        if not InstanceLock(state_dir).held_by_other():
            _write_json(state_dir / STATUS_FILE, data)
    return {
        "success": True,
        "sync": report,
        "maintenance": maintenance,
        "seconds": round(time.perf_counter() - t0, 3),
        "message": (f"Synced {report['indexed']} changed and {report['removed']} removed notes; "
                    f"maintenance: {maintenance.get('message') or _summary(maintenance)}"),
    }


def _glibc() -> Any:
    """glibc (for malloc_trim and mallopt), or None elsewhere (macOS, musl, Windows)."""
    return portable.glibc()


def _malloc_trim() -> Any:
    """glibc's malloc_trim, or None elsewhere."""
    lib = _glibc()
    return lib.malloc_trim if lib is not None else None


def _tune_malloc() -> None:
    """A fixed mmap threshold for the daemon: big blocks are mmapped and given back when freed.

    glibc raises the threshold to the size of any mmapped block that is freed (up to 32 MiB),
    after which a batch's big transient blocks (a 10,000-entry dict, a fetched result set)
    land in the heap instead, and the heap's top creeps up with them batch after batch
    (far less with this).
    """
    lib = _glibc()
    if lib is not None:
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # noqa: N806 - malloc.h names
        lib.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        lib.mallopt(M_TRIM_THRESHOLD, MMAP_THRESHOLD)


def configure_logging(verbose: bool) -> None:
    """Levels and timestamps on stderr; --verbose shows every batch and skipped path."""
    logger = logging.getLogger("vaultmem")
    if not any(h.get_name() == "vaultmem" for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S"))
        handler.set_name("vaultmem")
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)


def serve(store: Any, install_signals: bool = True) -> None:
    """`vaultmem watch`: run until SIGINT/SIGTERM, finishing the batch in hand."""
    watcher = Watcher(store)
    if install_signals:
        import signal

        def on_signal(signum: int, _frame: Any) -> None:
            log.info("received %s; finishing the batch in hand", signal.Signals(signum).name)
            watcher.stop()

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
    watcher.run()
