"""Every platform-specific call vaultmem makes, each with its fallback (docs/architecture.md, "Platforms").

Linux, macOS and Windows differ where vaultmem touches the operating system: `fork` (Linux
only, here: macOS's fork is unsafe once frameworks are loaded, Windows has none), `fcntl`
(not on Windows), glibc's `malloc_trim`/`mallopt` (Linux with
glibc only), file systems that ignore case (macOS and Windows by default) and the file names
Windows refuses. The code above asks this module and never `sys.platform` itself.

`VAULTMEM_PLATFORM_RULES` forces the fallbacks on Linux, so the test suite runs each of
them here: a comma-separated list of `no-fork`, `no-fcntl`, `no-glibc`, `case-insensitive`,
or `windows` (all of them: the platform that has none of them). It is read at
each call, so a test sets it with `monkeypatch.setenv`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

ENV = "VAULTMEM_PLATFORM_RULES"
RULES = ("no-fork", "no-fcntl", "no-glibc", "case-insensitive")
WINDOWS = "windows"


def forced() -> frozenset[str]:
    """The fallbacks `VAULTMEM_PLATFORM_RULES` forces (`windows` stands for all of them)."""
    words = {w.strip().lower() for w in os.environ.get(ENV, "").split(",") if w.strip()}
    return frozenset(RULES) if WINDOWS in words else frozenset(words & set(RULES))


# -- processes ---------------------------------------------------------------------------------


def can_fork() -> bool:
    """Whether a child may be forked: Linux only (macOS's system libraries are not fork-safe,
    Windows has no fork). Elsewhere children are spawned: a fresh interpreter."""
    return sys.platform == "linux" and hasattr(os, "fork") and "no-fork" not in forced()


def pool_context() -> Any:
    """The multiprocessing context for worker pools: fork where it works, else spawn."""
    import multiprocessing

    return multiprocessing.get_context("fork" if can_fork() else "spawn")


def spawn_python(code: str, *args: str) -> subprocess.Popen[bytes]:
    """A new interpreter running `code` with `args` in sys.argv[1:]; it inherits no
    descriptors (POSIX) and no handles (Windows), so it holds none of this process's locks."""
    import subprocess  # here: subprocess and signal would slow every command's start

    return subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, close_fds=True)


# -- memory ------------------------------------------------------------------------------------

_LIBC: list[Any] = []


def glibc() -> Any:
    """glibc (it has malloc_trim and mallopt), or None elsewhere (macOS, musl, Windows)."""
    if "no-glibc" in forced():
        return None
    if not _LIBC:
        lib = None
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                import ctypes

                lib = ctypes.CDLL("libc.so.6")
                lib.malloc_trim, lib.mallopt  # noqa: B018 - both exist: glibc, not musl
        _LIBC.append(lib)
    return _LIBC[0]


# -- locks -------------------------------------------------------------------------------------


def has_fcntl() -> bool:
    """Whether `fcntl.flock` exists (every POSIX system; not Windows)."""
    if "no-fcntl" in forced():
        return False
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return False
    return True


class FileLock:
    """An exclusive advisory lock on a file, dropped by the system when the holder dies; nested
    acquires of one FileLock count (from any thread, as filelock's `thread_local=False`), and a
    second FileLock on the same file, in this process or another, waits.

    On POSIX it is flock(2) on the file, as filelock's UnixFileLock takes it, written out
    here: importing filelock 4 slows a cold command (it pulls in `secrets`, `hmac` and
    `decimal`). A forked child closes the descriptors
    of the locks its parent holds (`_forked`), as filelock 4 does: a rebuild's workers and a
    merge child must not keep the vault locked after the parent lets go. On Windows (and with
    `no-fcntl` forced) it is filelock's `FileLock` (msvcrt.locking)."""

    POLL = 0.05
    _held: weakref.WeakSet[FileLock] = weakref.WeakSet()

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self.fd: int | None = None
        self._count = 0
        self._guard = threading.Lock()
        self._other: Any = None
        if not has_fcntl():
            from filelock import FileLock as Library

            self._other = Library(self.path, thread_local=False)

    def acquire(self, timeout: float) -> bool:
        """Take the lock, waiting at most `timeout` seconds (0: not at all); False when another
        holder kept it that long."""
        if self._other is not None:
            from filelock import Timeout

            try:
                self._other.acquire(timeout=timeout)
            except Timeout:
                return False
            return True
        import fcntl

        with self._guard:
            if self._count:
                self._count += 1
                return True
            deadline = time.monotonic() + timeout
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        return False
                    time.sleep(self.POLL)
                    continue
                except BaseException:
                    os.close(fd)
                    raise
                break
            self.fd, self._count = fd, 1
            FileLock._held.add(self)
            return True

    def release(self) -> None:
        if self._other is not None:
            self._other.release()
            return
        with self._guard:
            if not self._count:
                return
            self._count -= 1
            if self._count == 0 and self.fd is not None:
                fd, self.fd = self.fd, None
                FileLock._held.discard(self)
                os.close(fd)  # closing the only descriptor of the open file drops the flock

    @property
    def is_locked(self) -> bool:
        return self._other.is_locked if self._other is not None else self._count > 0

    @classmethod
    def _forked(cls) -> None:
        """In a forked child: hold none of the parent's locks (the parent still does)."""
        for lock in list(cls._held):
            lock._guard = threading.Lock()  # another thread may have held it at the fork
            if lock.fd is not None:
                with contextlib.suppress(OSError):
                    os.close(lock.fd)
            lock.fd, lock._count = None, 0
        cls._held = weakref.WeakSet()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=FileLock._forked)


class ExclusiveLock:
    """An exclusive lock on a file, per open (a second one in the same process is refused too)
    and dropped by the system when the holder dies.

    With fcntl (POSIX) it is a `FileLock` (flock), on Windows filelock's (msvcrt.locking).
    With `no-fcntl` forced on POSIX it is a lock file created exclusively holding the
    owner's PID, taken over when that process is gone.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock: Any = None
        self._owned = False

    def try_acquire(self) -> bool:
        """Take the lock if it is free; False when another holder has it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if has_fcntl() or sys.platform == "win32":
            lock = FileLock(self.path)
            if not lock.acquire(timeout=0):
                return False
            self._lock = lock
            return True
        return self._try_pid_file()

    def _try_pid_file(self) -> bool:
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = _read_int(self.path)
                if holder is not None and (holder == os.getpid() or pid_alive(holder)):
                    return False
                with contextlib.suppress(FileNotFoundError):  # its holder is gone: take it over
                    os.unlink(self.path)
                continue
            with os.fdopen(fd, "w") as handle:
                handle.write(f"{os.getpid()}\n")
            self._owned = True
            return True
        return False

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if self._owned:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            self._owned = False

    def fds(self) -> list[int]:
        """The descriptors a forked child must close so the lock does not outlive this process."""
        fd = getattr(self._lock, "fd", None)
        return [fd] if isinstance(fd, int) else []

    def held_elsewhere(self) -> bool:
        """Whether another holder has the lock right now (never takes it for long)."""
        if not self.path.exists():
            return False
        probe = ExclusiveLock(self.path)
        if probe.try_acquire():
            probe.release()
            return False
        return True


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """True when a process with this id runs on this machine (or we may not signal it)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - os.kill(pid, 0) would terminate it there
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        ctypes.windll.kernel32.CloseHandle(handle)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


# -- file names --------------------------------------------------------------------------------

# Windows refuses these characters (and control characters) in a file name; Obsidian refuses
# `# ^ [ ] |` in a note's name (they mean heading, block, link and alias in a wikilink).
WINDOWS_FORBIDDEN = '<>:"/\\|?*'
OBSIDIAN_FORBIDDEN = "#^[]|"
_FORBIDDEN = re.compile("[" + re.escape(WINDOWS_FORBIDDEN + OBSIDIAN_FORBIDDEN) + r"\x00-\x1f\x7f]")
RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                      *(f"LPT{i}" for i in range(1, 10))})
# Windows' MAX_PATH is 260 characters for the whole path, vault folder included, which is not
# known on another device. vaultmem keeps what it writes within these, leaving 60 characters
# for the vault's own folder (`C:\Users\someone\Documents\Obsidian\Vault\` is 42).
MAX_NAME_CHARS = 120
MAX_PATH_CHARS = 200
MAX_NAME_BYTES = 255  # Linux and macOS: 255 bytes of UTF-8 per name


def name_problem(name: str) -> str | None:
    """What makes `name` unusable as a file name on Linux, macOS, Windows or in Obsidian; None if fine."""
    if not name or name in (".", ".."):
        return "is empty"
    bad = sorted(set(_FORBIDDEN.findall(name)))
    if bad:
        shown = ", ".join(repr(c) if c.isprintable() else f"U+{ord(c):04X}" for c in bad)
        return f"contains {shown}, which Windows or Obsidian forbid in file names"
    if name[-1] in ". ":
        return "ends in a dot or a space, which Windows drops from file names"
    if name.split(".")[0].rstrip(" ").upper() in RESERVED:
        return "is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension)"
    if len(name) > MAX_NAME_CHARS:
        return f"is {len(name)} characters; the limit is {MAX_NAME_CHARS} (Windows' 260-character paths)"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"is {len(name.encode('utf-8'))} bytes in UTF-8; Linux and macOS allow {MAX_NAME_BYTES}"
    return None


def sanitize_name(name: str) -> str:
    """`name` made acceptable to every platform and Obsidian (forbidden characters become `-`,
    a reserved device name gets `-note`, cut to the length limit); empty if nothing is left."""
    name = _cut(_FORBIDDEN.sub("-", name).strip(" .-"))
    if name.split(".")[0].rstrip(" ").upper() in RESERVED:
        stem, dot, rest = name.partition(".")
        name = _cut(f"{stem}-note{dot}{rest}")
    return name


def _cut(name: str) -> str:
    """Within MAX_NAME_CHARS and 200 bytes (room for a sync client's ` 2` or conflict suffix)."""
    name = name[:MAX_NAME_CHARS]
    while len(name.encode("utf-8")) > 200:
        name = name[:-1]
    return name.rstrip(" .-")


def path_problem(rel: str) -> str | None:
    """What makes a vault-relative path (`a/b/c.md`) unusable on some platform; None if fine."""
    if len(rel) > MAX_PATH_CHARS:
        return (f"is {len(rel)} characters from the vault's folder; the limit is {MAX_PATH_CHARS}, "
                "so the full path stays within Windows' 260")
    for part in rel.split("/"):
        problem = name_problem(part)
        if problem:
            return f"has a part {part!r} that {problem}"
    return None


# -- case ---------------------------------------------------------------------------------------


def case_variant(path: Path) -> Path | None:
    """An existing file or folder beside `path` whose name differs from it only in case.

    macOS and Windows (by default) treat such names as one file, and a vault synced from
    Linux lands there, so vaultmem never creates one even where the file system would allow it.
    """
    name = path.name
    key = name.casefold()
    for other in _folded(path.parent).get(key):
        if other != name:
            return path.parent / other
    return None


class FoldedNames:
    """A folder's names (as `os.listdir` of a bytes path gives them) by their case-folded form,
    for asking which names a form has.

    The ASCII names (nearly all, in most vaults) are held as one bytes string of NUL-separated
    names, lowered in one call: NUL cannot be in a name, and an ASCII name folds to its
    lowercase, of the same length, so a form is found with `bytes.find` and its spelling read
    at the same offset. The others are decoded into `first` (one spelling of each form, built
    in one pass in C) and `more` (the further spellings of forms several names share); so are
    names added later. In a fresh process (a cold `vaultmem save`) of a big folder this is
    cheaper than a dict of every name: what counts there is the new memory touched (page
    faults), far less than the dict's."""

    __slots__ = ("first", "more", "_names", "_folded")

    def __init__(self, names: list[bytes]) -> None:
        self._names = b"\0".join(itertools.chain((b"",), itertools.compress(names, map(bytes.isascii, names)), (b"",)))
        self._folded = self._names.lower()
        others = [os.fsdecode(name) for name in itertools.filterfalse(bytes.isascii, names)]
        self.first: dict[str, str] = dict(zip(map(str.casefold, others), others, strict=True))
        self.more: dict[str, tuple[str, ...]] = {}
        if len(self.first) != len(others):  # names differing only in case: keep every spelling
            spellings: dict[str, list[str]] = {}
            for name in others:
                spellings.setdefault(name.casefold(), []).append(name)
            self.first = {key: found[0] for key, found in spellings.items()}
            self.more = {key: tuple(found[1:]) for key, found in spellings.items() if len(found) > 1}

    def get(self, key: str) -> tuple[str, ...]:
        """Every name in the folder whose case-folded form is `key` (the ASCII ones first)."""
        found: tuple[str, ...] = ()
        if key.isascii():  # an ASCII name folds to ASCII (so may others: the Kelvin sign, in `first`)
            needle = f"\0{key}\0".encode("ascii")
            at = self._folded.find(needle)
            while at >= 0:
                found += (self._names[at + 1:at + 1 + len(key)].decode("ascii"),)
                at = self._folded.find(needle, at + len(key) + 1)
        name = self.first.get(key)
        if name is not None:
            found += (name, *self.more.get(key, ()))
        return found

    def add(self, name: str) -> None:
        key = name.casefold()
        if key in self.first:
            self.more[key] = (*self.more.get(key, ()), name)
        else:
            self.first[key] = name


_LISTINGS: dict[str, tuple[tuple[int, int, int], FoldedNames]] = {}


def _folded(folder: Path) -> FoldedNames:
    """The names in `folder` by their case-folded form. Listing and folding a big folder is
    costly in a fresh process, and a save asks twice (a free name, then the
    exclusive create), so the listing is kept while the folder's (inode, mtime, ctime) stay
    the same: any entry added or removed changes them."""
    stamp = folder_stamp(folder)
    if stamp is None:
        return FoldedNames([])
    cached = _LISTINGS.get(str(folder))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        names = os.listdir(os.fsencode(folder))
    except (FileNotFoundError, NotADirectoryError):
        return FoldedNames([])
    folded = FoldedNames(names)
    if len(_LISTINGS) >= 16:
        _LISTINGS.clear()
    _LISTINGS[str(folder)] = (stamp, folded)
    return folded


def folder_stamp(folder: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(folder)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def created(path: Path, before: tuple[int, int, int] | None) -> None:
    """vaultmem just created `path` (and removed its temp file): when nothing else changed the
    folder since it was listed (`before`, its stamp when the create began, is the listing's),
    add the name instead of listing again, so a process saving many notes lists a big folder once."""
    cached = _LISTINGS.get(str(path.parent))
    after = folder_stamp(path.parent)
    if cached is None or before is None or after is None or cached[0] != before:
        return
    folded = cached[1]
    folded.add(path.name)
    _LISTINGS[str(path.parent)] = (after, folded)


def taken(path: Path) -> bool:
    """Whether creating `path` would meet an existing file on a case-insensitive file system:
    the name itself or one differing only in case."""
    return os.path.lexists(path) or case_variant(path) is not None


def case_insensitive_fs(folder: Path) -> bool:
    """Whether the file system holding `folder` ignores case (macOS's APFS and Windows' NTFS by
    default); `case-insensitive` forces True."""
    if "case-insensitive" in forced():
        return True
    folder = Path(folder)
    swapped = folder.with_name(folder.name.swapcase())
    if folder.name == swapped.name:
        return sys.platform in ("darwin", "win32")
    return swapped.exists() and os.path.samefile(folder, swapped)


def link_exclusive(src: Path, dst: Path) -> None:
    """Hard-link `src` to `dst`, failing with FileExistsError when `dst` is taken, as a
    case-insensitive file system answers when only the case differs."""
    if "case-insensitive" in forced() and case_variant(dst) is not None:
        raise FileExistsError(17, "File exists (differs only in case)", str(dst))
    os.link(src, dst)


# -- folders -----------------------------------------------------------------------------------


def user_cache() -> Path:
    """The user's cache folder: `$XDG_CACHE_HOME`, else ~/Library/Caches on macOS,
    %LOCALAPPDATA% on Windows, ~/.cache elsewhere."""
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"])
    return Path.home() / ".cache"
