"""Whoosh segment merging in a short-lived child process, so the watcher's memory stays flat.

Every Whoosh commit writes a new segment; by default the committing process also merges
segments (`MERGE_SMALL`), and merging a big segment allocates a great many small Python
objects (the posting pool). They are freed afterwards, but the survivors
scattered among them keep pymalloc's arenas and glibc's heap from shrinking: a long-lived
watcher's RSS stepped up at each big merge and never came back down.

So the watcher commits with `merge=False` (`Index.merge_on_commit`), and when `plan()` says
the segments need it, a forked child (`start_merge`) merges them under the vault lock and
exits; its memory goes back to the OS with it. A merge changes how the index is stored, not
what it holds, so a merge killed at any moment leaves the previous generation, which Whoosh
still reads (orphaned segment files are removed by the next commit's clean-up).

The child is forked on Linux; elsewhere (macOS, Windows, or `no-fork` forced) it is a new
interpreter spawned to run `merge` (`base/portable.py`). Either way the caller gets a PID and
reaps it with `finished`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vaultmem.base import portable

if TYPE_CHECKING:
    import subprocess  # the type only: spawn_python imports it when a merge is spawned

MAX_SEGMENTS = 8  # more segments than this: merge the small ones (plan)
# a segment's deletions past this share of it, or the small ones' documents past this share of the biggest: merge (plan)
GARBAGE_SHARE = 0.25

NOTHING_TO_DO, MERGED, FAILED = 1, 0, 2  # the child's exit codes


def plan(segments: Sequence[Any]) -> list[Any]:
    """The segments to merge into one (empty: leave the index as it is).

    Searches read every segment and skip deleted documents, so both are kept bounded. The
    segments past GARBAGE_SHARE of the biggest are its peers (a rebuild leaves one; merges
    of small ones grow into more), each left as it is until its own deleted documents
    pass GARBAGE_SHARE: then it is rewritten, with the small ones. The small ones (the
    watcher's commits leave one each) are merged together once there are more than
    MAX_SEGMENTS segments, or once their documents pass GARBAGE_SHARE of the biggest (the
    merged one is then a peer: it is not rewritten with every later commit). So no merge
    rewrites the big segments because there are several of them: in a big vault that held
    the vault lock longer than a save waits for it.
    When the peers alone are more than MAX_SEGMENTS, all but the biggest are merged.
    """
    if not segments:
        return []
    biggest = max(s.doc_count_all() for s in segments)
    small = [s for s in segments if s.doc_count_all() <= GARBAGE_SHARE * biggest]
    worn = [s for s in segments if s.doc_count_all() > GARBAGE_SHARE * biggest
            and s.deleted_count() > GARBAGE_SHARE * s.doc_count_all()]
    if worn:
        chosen = {id(s) for s in (*worn, *small)}
        return [s for s in segments if id(s) in chosen]  # in the index's order
    outside = sum(s.doc_count_all() - s.deleted_count() for s in small)
    if len(small) > 1 and (len(segments) > MAX_SEGMENTS or outside > GARBAGE_SHARE * biggest):
        return small
    if len(segments) > MAX_SEGMENTS:
        big = max(segments, key=lambda s: s.doc_count_all())
        return [s for s in segments if s is not big]
    return []


def merge(vault: Any) -> bool:
    """Merge the segments `plan` picks, under the vault lock; False when there was nothing to do."""
    from vaultmem.storage.fulltext import engine

    with vault.lock(), vault.merging():
        return engine.merge_segments(engine.open_index(vault.index_dir / "whoosh"), plan)


def start_merge(vault: Any, close_fds: Sequence[int] = ()) -> int:
    """Start a child that runs `merge` and exits; returns its PID (reap it with `finished`).

    Forked where fork works, else spawned. `close_fds` are closed in a forked child first: the
    watcher's instance lock (a flock shared by every copy of its descriptor) must not outlive a
    killed watcher in its merge child. A spawned child inherits no descriptors at all.
    """
    if not portable.can_fork():
        child = portable.spawn_python(_SPAWNED_CHILD, os.fspath(vault.root))
        _SPAWNED[child.pid] = child
        return child.pid
    from vaultmem.storage.vault import Vault

    with warnings.catch_warnings():  # Python 3.12+ warns about fork in threaded processes
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        return pid
    code = FAILED
    try:  # the child: only Whoosh files and the lock file; never returns into the caller
        for fd in close_fds:  # portable.FileLock closes its own descriptors in a forked child already
            try:
                os.close(fd)
            except OSError:
                pass
        # A lock object of its own: the parent's (same fd, same flock) would not exclude the parent.
        code = MERGED if merge(Vault(vault.root, vault.settings)) else NOTHING_TO_DO
    except BaseException as exc:  # noqa: BLE001 - reported through the exit code and stderr
        try:
            os.write(2, f"vaultmem: segment merge failed: {type(exc).__name__}: {exc}\n".encode())
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code)


_SPAWNED: dict[int, subprocess.Popen[bytes]] = {}  # spawned merge children not yet reaped
_SPAWNED_CHILD = "import sys; from vaultmem.storage.segments import child_main; sys.exit(child_main(sys.argv[1]))"


def child_main(root: str) -> int:
    """A spawned merge child: merge the vault's index segments; the exit code says how it went.
    The merge needs only the vault's folder: the index and the lock live where `Vault` puts them."""
    from pathlib import Path

    from vaultmem.base.config import Settings
    from vaultmem.storage.vault import Vault

    try:
        return MERGED if merge(Vault(Path(root), Settings())) else NOTHING_TO_DO
    except Exception as exc:  # reported through the exit code and stderr
        os.write(2, f"vaultmem: segment merge failed: {type(exc).__name__}: {exc}\n".encode())
        return FAILED


def finished(pid: int, wait: bool = False) -> int | None:
    """The merge child's exit code once it ended (negative: killed by that signal), else None."""
    child = _SPAWNED.get(pid)
    if child is not None:
        code = child.wait() if wait else child.poll()
        if code is not None:
            del _SPAWNED[pid]
        return code
    try:
        done, status = os.waitpid(pid, 0 if wait else os.WNOHANG)
    except ChildProcessError:  # already reaped
        return FAILED
    if done == 0:
        return None
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)
