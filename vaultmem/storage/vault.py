"""The vault on disk: layout, scanning, atomic writes, moves, the advisory lock."""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import re
import time
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

from vaultmem.base import portable, walk
from vaultmem.base.config import SKIP_DIRS, TMP_MARK, Settings
from vaultmem.base.errors import InvalidInput, VaultmemError

# Folders Obsidian, sync clients and vaultmem own; never scanned as notes.
LOCK_TIMEOUT = 60.0
# A segment merge (storage/segments.py) holds the lock for as long as it takes (long in a
# big vault): a writer that meets one waits this long for it, not LOCK_TIMEOUT.
MERGE_WAIT = 600.0
MERGE_RECORD = "merging.json"  # beside the lock while a merge holds it: its PID and start
READ_AHEAD = 64  # files a rebuild opens and asks the kernel to read before it gets to them (Vault.open_ahead)
UNSTATED = walk.UNSTATED  # Vault.scan(stat=False): a note found and not stat'ed
_OPEN_FLAGS = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
# A temp file whose writer is gone (or, from another host, older than this) is removed by sync.
STALE_TMP_SECONDS = 60.0
_TMP_PID = re.compile(re.escape(TMP_MARK) + r"(\d+)-")

# `.gitignore` written into .vaultmem/: the index and vectors are derived, the rest is this
# device's own; only the settings and the rule templates are shared between devices.
GITIGNORE = ("# this device's own: the index and vectors (derived from the notes), locks, state, jobs.\n"
             "# Shared with your other devices: config.yaml and templates/ only.\n"
             "/*\n!/.gitignore\n!/config.yaml\n!/templates/\n")

_CONFIG_TEMPLATE = """\
# vaultmem settings for this vault (all optional; see `vaultmem config`).
# decay_model: power_law        # power_law | exponential | two_component | actr
# pl_halflife_days: 3.0
# forget_threshold: 0.05
# promote_threshold: 0.65
"""


def _secret_gate(old: str | None, new: str) -> None:
    """secrets.check_added, imported here: compiling its patterns is a cost only
    commands that write should pay."""
    from vaultmem.base import secrets

    secrets.check_added(old, new)


class Vault:
    """One Obsidian vault: where notes live and how vaultmem touches them safely."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = Path(root).absolute()
        self.settings = settings
        self.state_dir = self.root / ".vaultmem"
        # where the derived index, the lock and state files live: the vault's .vaultmem/, or,
        # when the vault cannot be written (a read-only mount, a shared folder), the user's cache
        self.derived_dir = self.state_dir
        self.read_only: str | None = None  # why the vault cannot be written, or None
        if self.state_dir.is_dir():
            why = _unwritable(self.state_dir)
            if why:
                self.read_only = why
                self.derived_dir = cache_dir(self.root)
        self.index_dir = self.derived_dir / "index"
        self._lock: Any = None
        self.temp_files: list[str] = []  # temp files of interrupted writes the last scan met
        self._canvases: tuple[float, list[str]] = (float("-inf"), [])  # (when, paths): canvas_files

    def _check_writable(self, path: Path) -> None:
        """On a read-only vault only the derived files in the cache may be written."""
        if self.read_only and not Path(path).absolute().is_relative_to(self.derived_dir):
            raise VaultmemError(f"the vault is read-only ({self.read_only}); vaultmem can search it but not change it")

    # -- layout ---------------------------------------------------------------------------
    @property
    def memory_dirs(self) -> dict[str, str]:
        """Status -> folder (relative, POSIX) for the three lifecycle folders."""
        s = self.settings
        return {"active": s.stm_dir.strip("/"), "promoted": s.ltm_dir.strip("/"),
                "archived": s.archive_dir.strip("/")}

    def layout(self) -> list[str]:
        s = self.settings
        return [s.stm_dir, s.ltm_dir, s.archive_dir, s.blocks_dir, s.sessions_dir, s.reviews_dir]

    def exists(self) -> bool:
        return self.state_dir.is_dir()

    def init(self) -> list[str]:
        """Create the layout; idempotent. Returns the folders and files it created."""
        if self.root.exists() and not self.root.is_dir():
            raise InvalidInput(f"{self.root} is a file, not a folder; choose another --vault")
        created: list[str] = []
        for rel in [*self.layout(), ".vaultmem", ".vaultmem/index"]:
            path = self.root / rel
            if not path.is_dir():
                path.mkdir(parents=True, exist_ok=True)
                created.append(rel.strip("/") + "/")
        for rel, text in ((".vaultmem/.gitignore", GITIGNORE), (".vaultmem/config.yaml", _CONFIG_TEMPLATE)):
            path = self.root / rel
            if not path.exists():
                self.write_text(path, text)
                created.append(rel)
        return created

    def require(self) -> None:
        """Fail clearly when the vault has not been initialised."""
        if not self.root.is_dir():
            raise VaultmemError(f"vault {self.root} does not exist; run `vaultmem init {self.root}` first")
        if not self.exists():
            raise VaultmemError(f"{self.root} is not a vaultmem vault yet; run `vaultmem init {self.root}` first")

    def status_of(self, rel: str) -> str | None:
        """The lifecycle status a file's folder implies (at any depth: `memory/stm/work/x.md` is
        short-term), or None outside the three lifecycle folders."""
        for status, folder in self.memory_dirs.items():
            if rel.startswith(folder + "/"):
                return status
        return None

    def owns(self, rel: str) -> bool:
        """True for a path inside vaultmem's own folders (memories, blocks, sessions, reviews):
        the only files vaultmem writes or moves. Everything else is the person's."""
        return any(rel.startswith(folder.strip("/") + "/") for folder in self.layout())

    def read_text(self, path: Path) -> str:
        """A note's text exactly as stored: CRLF and a BOM stay (Path.read_text would turn
        CRLF into LF, and a write-back would then change every line)."""
        return path.read_bytes().decode("utf-8")

    # -- paths ----------------------------------------------------------------------------
    def rel(self, path: Path | str) -> str:
        return Path(path).absolute().relative_to(self.root).as_posix()

    def abs(self, rel: str) -> Path:
        """The absolute path of a vault-relative path, refusing anything that escapes."""
        if "\x00" in rel:
            raise InvalidInput("path contains a NUL byte; pass a plain vault-relative path")
        candidate = (self.root / rel)
        if os.path.isabs(rel) or ".." in Path(rel).parts:
            raise InvalidInput(f"path {rel!r} is outside the vault; pass a vault-relative path")
        resolved = candidate.resolve()
        root = self.root.resolve()
        if resolved != root and root not in resolved.parents:
            raise InvalidInput(f"path {rel!r} leads outside the vault (symlink?); refusing it")
        return candidate

    # -- scanning -------------------------------------------------------------------------
    def check_new_name(self, path: Path) -> None:
        """Refuse to create a file Windows, macOS or Obsidian could not hold (its name, its length)
        or one whose name differs only in case from a file beside it (one file on macOS and Windows)."""
        if not Path(path).absolute().is_relative_to(self.root):
            return  # the derived files of a read-only vault, in the user's cache
        rel = self.rel(path)
        problem = portable.path_problem(rel)
        if problem:
            raise InvalidInput(f"cannot create {rel}: the path {problem}; choose a shorter or plainer name")
        other = portable.case_variant(path)
        if other is not None:
            raise VaultmemError(f"cannot create {rel}: {self.rel(other)} exists and differs only in case, "
                                "which macOS and Windows treat as the same file; use that name or another")

    def match_case(self, rel: str) -> str:
        """`rel` with each folder spelt as an existing folder differing only in case is spelt, so a
        move into `ltm/Work/` lands in an existing `ltm/work/`, as it would on macOS and Windows."""
        parts = rel.split("/")
        here = self.root
        for i, part in enumerate(parts[:-1]):
            if not (here / part).is_dir():
                other = portable.case_variant(here / part)
                if other is None or not other.is_dir():
                    break
                parts[i] = other.name
            here = here / parts[i]
        return "/".join(parts)

    def scan(self, notes: bool = True, stat: bool = True) -> dict[str, tuple[int, int]]:
        """Every markdown note: vault-relative path -> (mtime_ns, size); with stat=False the
        notes unstat'ed, each -> UNSTATED (a rebuild fstats each as it reads it); with
        notes=False only the walk (no note is stat'ed, nothing returned).

        Temp files of interrupted writes met on the way are kept in `self.temp_files`, the
        canvases in `canvas_files`'s list.
        """
        found, temp, canvases = walk.walk(str(self.root), notes=notes, stat=stat)
        self._walked(temp, canvases)
        return found

    def _walked(self, temp: list[str], canvases: list[str]) -> None:
        for state_folder in (self.state_dir, self.state_dir / "state"):  # skipped by the walk
            with contextlib.suppress(OSError), os.scandir(state_folder) as entries:
                temp.extend(e.path for e in entries if TMP_MARK in e.name)
        self.temp_files = temp
        self._canvases = (time.monotonic(), sorted(canvases))

    def open_ahead(self, paths: Iterable[str], window: int = READ_AHEAD) -> Generator[tuple[str, int | OSError], None, None]:
        """Each of `paths` (vault-relative) in order, with its file open for reading (a
        descriptor the caller reads and closes) or the OSError opening it raised. A file is
        opened `window` places before it is handed out and, where the system has
        posix_fadvise, the kernel is asked to start reading it then (WILLNEED), so that a loop
        reading every note (a rebuild) does not wait on a cold disk one file at a time: the
        reads queue and overlap. Opened
        once, with O_NONBLOCK (a FIFO never blocks): a rebuild reads by descriptor, and
        neither stats nor opens a note by its path again. Descriptors not handed out are
        closed when the loop stops early."""
        root = str(self.root)
        flags = os.O_RDONLY | _OPEN_FLAGS
        advise = getattr(os, "posix_fadvise", None)
        pending: collections.deque[tuple[str, int | OSError]] = collections.deque()
        try:
            for rel in paths:
                try:
                    fd: int | OSError = os.open(os.path.join(root, rel), flags)
                except OSError as exc:
                    fd = exc  # gone or unreadable: its read says so
                else:
                    if advise is not None:
                        with contextlib.suppress(OSError):
                            advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)  # ESPIPE for a FIFO
                pending.append((rel, fd))
                if len(pending) > window:
                    yield pending.popleft()
            while pending:
                yield pending.popleft()
        finally:
            for _rel, fd in pending:
                if isinstance(fd, int):
                    os.close(fd)

    def canvas_files(self, max_age: float = 2.0) -> list[str]:
        """The vault's canvases (vault-relative), as a walk at most `max_age` seconds old found
        them: the last scan's, else a walk that stats nothing."""
        at, found = self._canvases
        if time.monotonic() - at > max_age:
            self.scan(notes=False)
            at, found = self._canvases
        return found

    def stray_temp_files(self) -> list[Path]:
        """Temp files a killed vaultmem process left behind (a full walk; for tests and doctor)."""
        return [p for p in self.root.rglob(f".*{TMP_MARK}*") if ".obsidian" not in p.parts]

    def remove_stale_temp_files(self, paths: list[str] | None = None, now: float | None = None) -> list[str]:
        """Delete temp files whose writer died (pid gone) or that are older than a minute.

        A temp file is never a note: it is the unfinished copy of a write that did not reach
        `os.replace`, so removing it loses nothing. Returns the vault-relative paths removed.
        """
        import time

        now = time.time() if now is None else now
        removed: list[str] = []
        for path in self.temp_files if paths is None else paths:
            name = os.path.basename(path)
            match = _TMP_PID.search(name)
            try:
                age = now - os.stat(path, follow_symlinks=False).st_mtime
            except OSError:
                continue
            if not (age > STALE_TMP_SECONDS or (match and not pid_alive(int(match.group(1))))):
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed.append(self.rel(path))
        return removed

    def _temp_prefix(self, path: Path) -> str:
        return f".{path.name[:60]}{TMP_MARK}{os.getpid()}-"

    # -- writing --------------------------------------------------------------------------
    def _synced_temp(self, path: Path, text: str) -> str:
        """A temp file beside `path` holding `text`, fsynced; the caller puts it in place."""
        import tempfile

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self._temp_prefix(path), dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return tmp

    def write_text(self, path: Path, text: str) -> None:
        """Atomic write: a temp file in the same folder, fsync, then os.replace. The secret
        gate first: nothing vaultmem writes brings in a credential (SecretBlocked)."""
        self._check_writable(path)
        try:
            old: str | None = path.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            old = None
            self.check_new_name(path)
        _secret_gate(old, text)
        tmp = self._synced_temp(path, text)
        try:
            try:
                os.chmod(tmp, os.stat(path).st_mode & 0o7777)
            except FileNotFoundError:
                os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def read_stamped(self, path: Path) -> tuple[str, tuple[int, int, int]]:
        """A note's exact text and the (inode, mtime_ns, size) it had while being read: a save
        that lands during the read is read again, so the stamp always describes the text."""
        while True:
            with open(path, "rb") as handle:
                before = os.fstat(handle.fileno())
                data = handle.read()
            after = os.stat(path)
            stamp = (after.st_ino, after.st_mtime_ns, after.st_size)
            if (before.st_ino, before.st_mtime_ns, before.st_size) == stamp:
                return data.decode("utf-8"), stamp

    def replace_if_unchanged(self, path: Path, expected: str, stamp: tuple[int, int, int], text: str) -> bool:
        """See _replace_if_unchanged; the secret gate first."""
        self._check_writable(path)
        _secret_gate(expected, text)
        return self._replace_if_unchanged(path, expected, stamp, text)

    def _replace_if_unchanged(self, path: Path, expected: str, stamp: tuple[int, int, int], text: str) -> bool:
        """Atomic write that happens only if the file still is what the change was computed
        from (same bytes, same inode, mtime and size): False, and nothing written, when someone
        saved it in between. The last check and the swap are two system calls apart, so a save
        can only be lost in those microseconds, not during the whole read-modify-write."""
        tmp = self._synced_temp(path, text)
        try:
            try:
                os.chmod(tmp, os.stat(path).st_mode & 0o7777)
                if path.read_bytes() != expected.encode("utf-8"):
                    return False
                st = os.stat(path)
            except FileNotFoundError:
                return False
            if (st.st_ino, st.st_mtime_ns, st.st_size) != stamp:
                return False
            os.replace(tmp, path)
            return True
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def create_exclusive(self, path: Path, text: str) -> None:
        """Write a new note, never replacing an existing file of that name (secret gate first)."""
        self._check_writable(path)
        self.check_new_name(path)  # also refuses a name differing only in case from a file there
        _secret_gate(None, text)
        before = portable.folder_stamp(path.parent)
        tmp = self._synced_temp(path, text)
        try:
            os.chmod(tmp, 0o644)
            portable.link_exclusive(Path(tmp), path)  # fails if the name is taken: no clobbering
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        portable.created(path, before)

    def move(self, src_rel: str, dst_folder: str) -> str:
        """Move a note to another folder keeping its file name; returns the new path."""
        src = self.abs(src_rel)
        dst = self.abs(f"{dst_folder.strip('/')}/{src.name}")
        if portable.taken(dst):
            raise VaultmemError(f"cannot move {src_rel}: {self.rel(dst)} already exists; rename one of them")
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
        return self.rel(dst)

    def move_to(self, src_rel: str, dst_rel: str) -> None:
        """Move a note to exactly `dst_rel`, never replacing a file there."""
        src, dst = self.abs(src_rel), self.abs(dst_rel)
        self._check_writable(src)
        if portable.taken(dst):
            raise VaultmemError(f"cannot move {src_rel}: {dst_rel} already exists (or a name differing only in case); "
                                "rename one of them")
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)

    def trash(self, rel: str) -> str:
        """Obsidian's soft delete: move into `.trash/`, numbering the name on a clash."""
        src = self.abs(rel)
        self._check_writable(src)
        trash = self.root / ".trash"
        if trash.is_symlink():  # a note moved through it would leave the vault
            raise VaultmemError(".trash is a symbolic link out of the vault's own folders; make it a plain folder, "
                                "or archive instead of deleting (gc --apply without --delete)")
        if trash.exists() and not trash.is_dir():
            raise VaultmemError(".trash is a file, not a folder; rename or remove it, "
                                "or archive instead of deleting (gc --apply without --delete)")
        trash.mkdir(exist_ok=True)
        dst = trash / src.name
        n = 1
        while portable.taken(dst):
            dst = trash / f"{src.stem} {n}{src.suffix}"
            n += 1
        try:
            os.rename(src, dst)
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise VaultmemError(".trash is on another filesystem (a mount point); make it a plain folder "
                                    "of the vault, or archive instead of deleting (gc --apply without --delete)") from None
            raise
        return self.rel(dst)

    # -- locking --------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
        """The vault's advisory lock, held around one read-modify-write or index commit."""
        if self._lock is None:
            self.derived_dir.mkdir(parents=True, exist_ok=True)
            # One re-entrant lock object per Vault: nested holds in one process never deadlock.
            self._lock = portable.FileLock(self.derived_dir / "lock")
        lock = self._lock
        if not lock.acquire(timeout=timeout) and not (timeout > 0 and self._wait_out_merge(lock, timeout)):
            merge = self.merge_holding()
            if merge is not None:
                raise VaultmemError(
                    f"the watcher's index merge (PID {merge[0]}) has held {self.derived_dir / 'lock'} for "
                    f"{time.time() - merge[1]:.0f} s; it ends on its own: retry when it has")
            raise VaultmemError(
                f"another vaultmem process has held {self.derived_dir / 'lock'} for {timeout:.0f} s; "
                "check for a stuck process and retry"
            )
        try:
            yield
        finally:
            lock.release()

    @contextlib.contextmanager
    def merging(self) -> Iterator[None]:
        """Held by a segment merge inside `lock()`: its PID and start recorded beside the lock
        (MERGE_RECORD), so that a writer meeting the lock held waits for the merge to end
        (`MERGE_WAIT`) and says what it waited for."""
        import json

        record = self.derived_dir / MERGE_RECORD
        try:
            record.write_text(json.dumps({"pid": os.getpid(), "started": time.time()}), encoding="utf-8")
            recorded = True
        except OSError:  # unrecorded, a waiting writer gives up after LOCK_TIMEOUT as for any holder
            recorded = False
        try:
            yield
        finally:
            if recorded:
                with contextlib.suppress(OSError):
                    record.unlink()

    def merge_holding(self) -> tuple[int, float] | None:
        """(PID, start) of a live segment merge holding the lock, or None."""
        import json

        try:
            data = json.loads((self.derived_dir / MERGE_RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        pid, started = (data.get("pid"), data.get("started")) if isinstance(data, dict) else (None, None)
        if isinstance(pid, int) and isinstance(started, (int, float)) and portable.pid_alive(pid):
            return pid, float(started)
        return None

    def _wait_out_merge(self, lock: portable.FileLock, timeout: float) -> bool:
        """The lock after a segment merge that holds it ends (it ends on its own), up to
        MERGE_WAIT; then `timeout` more for whoever holds it next. False without a merge."""
        if self.merge_holding() is None:
            return False
        deadline = time.monotonic() + MERGE_WAIT
        while time.monotonic() < deadline:
            if lock.acquire(timeout=1.0):
                return True
            if self.merge_holding() is None:  # the merge ended; another writer has the lock
                return lock.acquire(timeout=timeout)
        return False


# Dropbox "(conflicted copy ...)", Obsidian Sync / Nextcloud "(conflict 2026-...)", Syncthing ".sync-conflict-...".
_TEMP_SUFFIXES = (".tmp", "~", ".swp", ".swx", ".bak")


def _unwritable(folder: Path) -> str | None:
    """Why nothing can be written in `folder` (a read-only file system, no permission), or None.
    A file is made and removed (what `os.access` says is not what a network share or an ACL
    does); by hand, not with tempfile, whose import would slow every command's start."""
    probe = folder / f".probe{TMP_MARK}{os.getpid()}-{os.urandom(6).hex()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return exc.strerror or "not writable"
        raise
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def cache_dir(root: Path) -> Path:
    """The user's cache folder for a vault that cannot hold its own index:
    `$XDG_CACHE_HOME/vaultmem/<name>-<hash of the path>` (~/.cache on Linux, ~/Library/Caches
    on macOS, %LOCALAPPDATA% on Windows)."""
    import hashlib

    digest = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:12]
    return portable.user_cache() / "vaultmem" / f"{safe_file_name(root.name) or 'vault'}-{digest}"


def is_note_path(rel: str) -> bool:
    """Whether a vault-relative path is a note the index cares about (what `Vault.scan` finds)."""
    if not rel.endswith(".md") or rel.endswith(_TEMP_SUFFIXES):
        return False
    for part in rel.split("/"):
        # Hidden names cover .obsidian/.trash/.git/.vaultmem, emacs `.#x.md` lock files and
        # vaultmem's own `.<name>.vaultmem-tmp-*` temp files, exactly as Vault.scan skips them.
        if not part or part.startswith(".") or part in SKIP_DIRS or TMP_MARK in part:
            return False
    return True


CONFLICT_COPY = re.compile(r" ?\((?:conflicted copy|conflict)\b[^)]*\)|\.sync-conflict-\d{8}-\d{6}(?:-[A-Z0-9]+)?",
                           re.I)


# A file manager's copy of a memory note (`<slug>-<id8>.md`): macOS Finder `x 2.md`, `x copy.md`,
# `x copy 2.md`; Windows Explorer `x - Copy.md`, `x - Copy (2).md`. Only names carrying a memory's
# id suffix: a person's `Chapter 2.md` is not a copy of anything.
FILE_MANAGER_COPY = re.compile(r"-[0-9a-f]{8}(?: [0-9]+| copy(?: [0-9]+)?| - Copy(?: \([0-9]+\))?)\.md$", re.I)


def is_conflict_copy(rel: str) -> bool:
    """True for the copies sync clients write when two devices changed one note, and for a
    file manager's copy of a memory note."""
    name = rel.rsplit("/", 1)[-1]
    return bool(CONFLICT_COPY.search(name) or FILE_MANAGER_COPY.search(name))


pid_alive = portable.pid_alive  # one check for every platform (base/portable.py)


def safe_file_name(name: str) -> str:
    """A name usable as an Obsidian note file name on every platform (one plain path part)."""
    name = portable.sanitize_name(name)
    return name or "note"
