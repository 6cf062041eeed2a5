"""Whoosh segment merging in a short-lived child process, so the watcher's memory stays flat.

Every Whoosh commit writes a new segment; by default the committing process also merges
segments (`MERGE_SMALL`), and merging the big segment of a 10,000-note vault allocates tens of
MiB of small Python objects (the posting pool). They are freed afterwards, but the survivors
scattered among them keep pymalloc's arenas and glibc's heap from shrinking: a long-lived
watcher's RSS stepped up by ~30 MiB at each big merge and never came back down.

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

MAX_SEGMENTS = 8  # more segments than this: merge all but the biggest
GARBAGE_SHARE = 0.25  # deletions in the biggest segment, or documents outside it, past this share of it: merge all

NOTHING_TO_DO, MERGED, FAILED = 1, 0, 2  # the child's exit codes


def plan(segments: Sequence[Any]) -> list[Any]:
    """The segments to merge into one (empty: leave the index as it is).

    Searches read every segment and skip deleted documents, so both are kept bounded: the
    small segments the watcher's commits leave are merged once there are more than
    MAX_SEGMENTS; the big segment is rewritten (with the rest) only when its deleted
    documents, or the documents outside it, pass GARBAGE_SHARE of it, so a big merge
    happens once per ~1,250 edits of a 10,000-note vault rather than every few batches.
    """
    if not segments:
        return []
    big = max(segments, key=lambda s: s.doc_count_all())
    size = big.doc_count_all()
    rest = [s for s in segments if s is not big]
    outside = sum(s.doc_count_all() - s.deleted_count() for s in rest)
    if big.deleted_count() > GARBAGE_SHARE * size or (rest and outside > GARBAGE_SHARE * size):
        return list(segments)
    if len(segments) > MAX_SEGMENTS:
        return rest
    return []


def merge(vault: Any) -> bool:
    """Merge the segments `plan` picks, under the vault lock; False when there was nothing to do."""
    from vaultmem.storage.index import open_whoosh

    with vault.lock():
        ix = open_whoosh(vault.index_dir / "whoosh")
        chosen = {s.segment_id() for s in plan(ix._segments())}
        if not chosen:
            return False
        writer = ix.writer()

        def policy(writer: Any, segments: list[Any]) -> list[Any]:
            from whoosh.reading import SegmentReader

            keep = []
            for seg in segments:
                if seg.segment_id() in chosen:
                    reader = SegmentReader(writer.storage, writer.schema, seg)
                    writer.add_reader(reader)
                    reader.close()
                else:
                    keep.append(seg)
            return keep

        try:
            writer.commit(mergetype=policy)
        except BaseException:
            if not writer.is_closed:  # set by whoosh at run time
                writer.cancel()
            raise
        return True


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
