"""Which `vaultmem` commands have their vault walked ahead by a child (base/walk.py).

Called by `vaultmem.cli` before its imports, with the command line: for a command that
checks the vault for edits before it reads, a child forked here stats every note on the other
core while this process imports. Read commands only: one that writes a note before its first
scan must walk after that write. Nothing starts when a watcher runs for the vault (its fence
answers instead of a walk), for `--help`, or under a test runner (argv[0] is not `vaultmem`).
"""

from __future__ import annotations

from vaultmem.base import walk

COMMANDS = frozenset({"search", "recall", "context", "stats", "count", "open", "backlinks"})


def invoked_as_command(argv0: str) -> bool:
    """Whether this process is the `vaultmem` command (its script, or `python -m vaultmem`)."""
    path = argv0.replace("\\", "/")
    return path.rsplit("/", 1)[-1].lower() in ("vaultmem", "vaultmem.exe") or path.endswith("vaultmem/__main__.py")


def vault_option(args: list[str]) -> str | None:
    """The value of --vault in `args` (both spellings), or None."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--vault" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--vault="):
            return arg[len("--vault="):]
    return None


def start(args: list[str]) -> bool:
    """Start the walk for the command in `args` (sys.argv[1:]) where it helps; True if a child
    is walking. A guess from the raw command line is enough: the walk is used only when its
    folder is the one the command opens (walk.take_ahead)."""
    if not args or args[0] not in COMMANDS or "--help" in args:
        return False
    try:
        root = walk.resolve_vault(vault_option(args[1:]))
    except (OSError, RuntimeError):  # no home folder to expand ~ in
        return False
    if not root.is_dir() or walk.watcher_running(root / ".vaultmem"):
        return False
    return walk.start_ahead(str(root))
