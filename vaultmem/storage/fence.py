"""Freshness through a running watcher: a fence instead of stat'ing every note.

A cold command must see every edit finished before it started. Without a watcher it scans
the vault (a stat per note). With one, it drops a fence file,
`.vaultmem/fences/<nonce>.fence`, and waits for `<nonce>.done`. The watcher receives the
fence's creation event after every earlier event in the vault (one inotify queue, in order;
FSEvents and ReadDirectoryChangesW keep order too), applies everything pending at once, with
no debounce, and only then writes `.done`. So a confirmed fence means the index holds every
edit made before the fence. No confirmation within the wait (no watcher, a dead or degraded
one): the command scans as before. Never stale either way; fast when a watcher runs.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from vaultmem.base import portable

FENCE_DIR = "fences"
FENCE_SUFFIX, DONE_SUFFIX = ".fence", ".done"
# An in-process observer's own marker (observer.ChangeFeed): ordered like a fence, but never
# answered by a watcher, so no `.done` is left behind for it.
FEED_SUFFIX = ".feed"
WAIT = 1.0  # seconds a command waits for the watcher before it scans itself
POLL = 0.002


def fence_dir(state_dir: Path) -> Path:
    return state_dir / FENCE_DIR


def watcher_running(state_dir: str | os.PathLike[str]) -> bool:
    """A watcher said it is running (in `state_dir`/state/watcher.json) and its process lives:
    a command's freshness then comes through it. Cheap; a wrong yes costs a wait."""
    import json

    try:
        with open(os.path.join(state_dir, "state", "watcher.json"), encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError):
        return False
    pid = data.get("pid") if isinstance(data, dict) else None
    return isinstance(pid, int) and data.get("state") == "running" and portable.pid_alive(pid)


def through_watcher(state_dir: Path, wait: float = WAIT) -> bool:
    """True when a running watcher confirmed a fence: the index holds every edit made before
    this call. False (scan instead) when no watcher runs or it did not answer in `wait` s."""
    if not watcher_running(state_dir):
        return False
    folder = fence_dir(state_dir)
    nonce = f"{os.getpid()}-{os.urandom(6).hex()}"  # os, not secrets: hashlib's import slows a start
    fence, done = folder / (nonce + FENCE_SUFFIX), folder / (nonce + DONE_SUFFIX)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(fence, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.close(fd)
    except OSError:
        return False  # a read-only vault: scan
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline:
            if done.exists():
                return True
            time.sleep(POLL)
        return False
    finally:
        for path in (fence, done):
            with contextlib.suppress(OSError):
                path.unlink()


_MARKERS = f".vaultmem/{FENCE_DIR}/"  # where fences and markers are, vault-relative


def _name(rel: str, suffix: str) -> str | None:
    """The name of a file with this suffix directly in the fences folder, else None."""
    if rel.startswith(_MARKERS) and rel.endswith(suffix) and "/" not in rel[len(_MARKERS):]:
        return rel[len(_MARKERS):-len(suffix)]
    return None


def fence_nonce(rel: str) -> str | None:
    """The nonce of a fence file from a vault-relative path, or None for any other path."""
    return _name(rel, FENCE_SUFFIX)


def feed_marker(name: str) -> str:
    """The vault-relative path of an in-process observer's marker called `name`."""
    return f"{_MARKERS}{name}{FEED_SUFFIX}"


def is_marker(rel: str) -> bool:
    """A command's fence or an in-process observer's marker: both order the events before them."""
    return _name(rel, FENCE_SUFFIX) is not None or _name(rel, FEED_SUFFIX) is not None


def confirm(state_dir: Path, nonce: str) -> None:
    """The watcher's answer: everything before this fence is in the index."""
    folder = fence_dir(state_dir)
    fence, done = folder / (nonce + FENCE_SUFFIX), folder / (nonce + DONE_SUFFIX)
    if fence.exists():  # the command still waits
        with contextlib.suppress(OSError):
            done.touch()
        # A second confirmation of one fence (two events for it) can touch `done` just after
        # the command, answered by the first, removed both: the fence is gone then, so the
        # answer nobody will read is removed too rather than left in the folder.
        if not fence.exists():
            with contextlib.suppress(OSError):
                done.unlink()
