"""Where the vault is, the walk that finds its notes, and the same walk run ahead by a child.

Light on purpose (os, pathlib, `portable`): a cold command imports it first of all
(cli/ahead.py), so that the child starts before the command's other imports.

`walk` is how `Vault.scan` lists every note with its (mtime_ns, size): the freshness check of
a cold command without a watcher. A stat is a system call per note, and on a virtual machine
the walk of 10,000 notes takes 60-70 ms, a quarter of a cold `vaultmem search`, all of it
after the command's imports (another 50-70 ms) have finished.

`start_ahead` forks a child at the very start of such a command, before its imports; the
child walks the vault on the other core and sends back the digest of what it found
(`listing_digest`: the count and the sum of each entry's string hash, whose key a forked
child shares), with the temp files and canvases it met. Meanwhile the command digests the
catalog's listing (`Index.sync`): the same digest means nothing changed, and the notes'
listing never crosses the pipe; another digest sends the command straight to its walk under
the vault lock, which a change needs anyway. The child starts after the command did, so every
edit finished before the command started is in its walk, as in the command's own. Only where
forking is safe (Linux, 2+ cores) and only for commands that read before they write: a
command that wrote a note before its freshness check would find its own note missing from a
walk made earlier. Anything unusual (the child failed, another vault, no fork) and the
command walks itself, as before.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from vaultmem.base import portable

DEFAULT_VAULT = Path("~/Documents/vaultmem").expanduser()
# Folders a walk never enters, and the mark in the name of every temp file vaultmem writes
# (`.<name>.vaultmem-tmp-<pid>-...`), so any process can recognise and clean up another's.
SKIP_DIRS = frozenset({".obsidian", ".trash", ".git", ".vaultmem", "node_modules", ".stfolder", ".stversions"})
TMP_MARK = ".vaultmem-tmp-"
NOTE_SUFFIX = ".md"
CANVAS_SUFFIX = ".canvas"
UNSTATED = (-1, -1)  # walk(stat=False): a note found and not stat'ed

_STAT_AT = os.scandir in os.supports_fd and hasattr(os, "O_DIRECTORY")  # see listed
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)

Listing = tuple[dict[str, tuple[int, int]], list[str], list[str]]
# What a child that walked ahead sends: its listing's digest (listing_digest), temp files, canvases.
Summary = tuple[tuple[int, int], list[str], list[str]]


def resolve_vault(option: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None) -> Path:
    """--vault, else VAULTMEM_VAULT, else CortexGraph's LTM_VAULT_PATH, else the default folder
    (~/Documents/vaultmem)."""
    environ = os.environ if environ is None else environ
    raw = option or environ.get("VAULTMEM_VAULT") or environ.get("LTM_VAULT_PATH") or DEFAULT_VAULT
    return Path(raw).expanduser().absolute()


def listing_digest(listing: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """An order-free digest of path -> (mtime_ns, size): the count and the exact sum of each
    entry's string hash (SipHash, keyed per process, and so the same in a forked child:
    `start_ahead`). Any change to a path or a fingerprint changes its entry's hash, so two
    listings that differ have the same digest with a chance of about 2**-64. (Summing tuple
    hashes is not enough: two files that swap sizes can leave that sum unchanged.) ~5 ms per
    10,000 entries; nothing outlives the call."""
    return rows_digest((path, mtime, size) for path, (mtime, size) in listing.items())


def rows_digest(rows: Iterable[tuple[str, int, int]]) -> tuple[int, int]:
    """listing_digest of (path, mtime_ns, size) rows, e.g. the catalog's as SQLite streams them."""
    hashes = [hash(f"{path}\0{mtime}\0{size}") for path, mtime, size in rows]
    return len(hashes), sum(hashes)


def listed(folder: str) -> Iterator[os.DirEntry[str]]:
    """`folder`'s entries (none when it cannot be listed). Where the system can, the folder is
    listed through an open descriptor, so an entry's `stat()` is an fstatat by its name instead
    of a walk of its full path: a scan of 10,000 notes 41.8 -> 37.2 ms. Windows lists by path."""
    fd = -1
    try:
        if _STAT_AT:
            fd = os.open(folder, _DIR_FLAGS)
        entries = os.scandir(fd if fd >= 0 else folder)
    except OSError:
        if fd >= 0:
            os.close(fd)
        return
    try:
        with entries:
            yield from entries
    finally:
        if fd >= 0:
            os.close(fd)


def walk(root: str, notes: bool = True, stat: bool = True) -> Listing:
    """(notes, temp files, canvases) under `root`: every markdown note, vault-relative and
    "/"-separated -> (mtime_ns, size) (UNSTATED with stat=False; none with notes=False); the
    absolute paths of interrupted writes' temp files met on the way; the canvases. Dot
    folders and SKIP_DIRS are not entered, symlinks not followed."""
    found: dict[str, tuple[int, int]] = {}
    temp: list[str] = []
    canvases: list[str] = []
    stack = [""]  # vault-relative folders ("" is the vault)
    while stack:
        rel = stack.pop()
        folder = os.path.join(root, rel) if rel else root
        prefix = rel + "/" if rel else ""
        for entry in listed(folder):
            name = entry.name
            if name[0] == ".":
                if TMP_MARK in name:
                    temp.append(os.path.join(folder, name))
                continue
            try:
                # a note first: most entries are (a folder named `x.md` goes on to is_dir)
                if name.endswith(NOTE_SUFFIX) and entry.is_file(follow_symlinks=False):
                    if notes:
                        if stat:
                            st = entry.stat(follow_symlinks=False)
                            found[prefix + name] = (st.st_mtime_ns, st.st_size)
                        else:
                            found[prefix + name] = UNSTATED
                elif entry.is_dir(follow_symlinks=False):
                    if name not in SKIP_DIRS:
                        stack.append(prefix + name)
                elif name.endswith(CANVAS_SUFFIX) and entry.is_file(follow_symlinks=False):
                    canvases.append(prefix + name)
            except OSError:
                continue
    return found, temp, canvases


# The walk a forked child is making: (root, pid, read end of its pipe), or None.
_ahead: tuple[str, int, int] | None = None


def start_ahead(root: str) -> bool:
    """Fork a child that walks `root` and sends back the digest of the notes it found, the
    temp files and the canvases (a `Summary`), for `take_ahead`; False (nothing started)
    where forking is unsafe, on a single core, when a walk is already under way, or when the
    fork fails."""
    global _ahead
    if _ahead is not None or not portable.can_fork() or len(os.sched_getaffinity(0)) < 2:
        return False  # (one core: the child's walk would only wait for this process's imports)
    try:
        read, write = os.pipe()
    except OSError:
        return False
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return False
    if pid == 0:  # the child: walk, send, and leave without running the parent's exit code
        code = 1
        try:
            os.close(read)
            # nothing of the command's terminal or pipes stays open here: a reader of the
            # command's output sees its end when the command ends, whatever this child does
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(null)
            found, temp, canvases = walk(root)
            data = marshal.dumps((listing_digest(found), temp, canvases))
            with open(write, "wb", closefd=True) as pipe:
                pipe.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    _ahead = (root, pid, read)
    import atexit

    atexit.register(cancel_ahead)
    return True


def ahead_pending(root: str) -> bool:
    """Whether a child is walking `root` for `take_ahead`: the caller can do other work first."""
    return _ahead is not None and _ahead[0] == root


def take_ahead(root: str) -> Summary | None:
    """What the child found walking `root` (once), or None: none was started, it was for
    another folder, or it failed; the caller walks itself then."""
    global _ahead
    if _ahead is None:
        return None
    started_for, pid, read = _ahead
    if started_for != root:
        cancel_ahead()
        return None
    _ahead = None
    chunks = []
    failed = False
    try:
        with open(read, "rb", closefd=True) as pipe:
            while chunk := pipe.read(1 << 20):
                chunks.append(chunk)
    except OSError:
        failed = True
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)  # it may be blocked writing to a pipe nobody reads
    try:
        _, status = os.waitpid(pid, 0)  # reaped whatever happened: no zombie
    except OSError:
        return None
    if failed or status != 0:
        return None
    try:
        (count, total), temp, canvases = marshal.loads(b"".join(chunks))
    except (EOFError, ValueError, TypeError):
        return None
    return (count, total), temp, canvases


def cancel_ahead() -> None:
    """Stop a child whose walk nobody took (the command ended early, or scanned another way)."""
    global _ahead
    if _ahead is None:
        return
    _root, pid, read = _ahead
    _ahead = None
    with contextlib.suppress(OSError):
        os.close(read)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


def watcher_running(state_dir: str | os.PathLike[str]) -> bool:
    """A watcher said it is running (in `state_dir`/state/watcher.json) and its process lives:
    a command's freshness then comes through it (storage/fence.py), with no walk to run
    ahead. Cheap; a wrong yes costs a wait."""
    import json

    try:
        with open(os.path.join(state_dir, "state", "watcher.json"), encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError):
        return False
    pid = data.get("pid") if isinstance(data, dict) else None
    return isinstance(pid, int) and data.get("state") == "running" and portable.pid_alive(pid)

