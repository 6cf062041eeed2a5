"""Where the vault is, and the walk that finds its notes.

Light on purpose (os, pathlib): every command resolves its vault, and the
settings re-export these names (base/config.py).

`walk` is how `Vault.scan` lists every note with its (mtime_ns, size): the freshness check of
a cold command without a watcher. `listing_digest`/`rows_digest` let a long-lived process
keep a digest of the catalog's listing instead of the listing itself (`Index.diff`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

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


def resolve_vault(option: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None) -> Path:
    """--vault, else VAULTMEM_VAULT, else CortexGraph's LTM_VAULT_PATH, else the default folder
    (~/Documents/vaultmem)."""
    environ = os.environ if environ is None else environ
    raw = option or environ.get("VAULTMEM_VAULT") or environ.get("LTM_VAULT_PATH") or DEFAULT_VAULT
    return Path(raw).expanduser().absolute()


def listing_digest(listing: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """An order-free digest of path -> (mtime_ns, size): the count and the exact sum of each
    entry's string hash (SipHash, keyed per process: a digest is compared only within the
    process that made it). Any change to a path or a fingerprint changes its entry's hash, so two
    listings that differ have the same digest with a chance of about 2**-64. (Summing tuple
    hashes is not enough: two files that swap sizes can leave that sum unchanged.) Nothing
    outlives the call."""
    return rows_digest((path, mtime, size) for path, (mtime, size) in listing.items())


def rows_digest(rows: Iterable[tuple[str, int, int]]) -> tuple[int, int]:
    """listing_digest of (path, mtime_ns, size) rows, e.g. the catalog's as SQLite streams them."""
    hashes = [hash(f"{path}\0{mtime}\0{size}") for path, mtime, size in rows]
    return len(hashes), sum(hashes)


def listed(folder: str) -> Iterator[os.DirEntry[str]]:
    """`folder`'s entries (none when it cannot be listed). Where the system can, the folder is
    listed through an open descriptor, so an entry's `stat()` is an fstatat by its name instead
    of a walk of its full path, which makes a scan faster. Windows lists by path."""
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

