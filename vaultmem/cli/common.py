"""What every command shares: the store for --vault, common options, errors as one line, JSON, progress."""

from __future__ import annotations

import functools
import json
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click

from vaultmem.base.errors import VaultmemError, one_line, storage_error


def _store(vault: str | None, quiet: bool = False, policy: Any = None) -> Any:
    """The store for --vault as a command uses it (`policy`: a long-lived process's, else a
    one-shot command's: progress on a terminal, a running watcher trusted)."""
    from vaultmem.base.config import load_settings, resolve_vault
    from vaultmem.base.timeutil import env_clock
    from vaultmem.store import MemoryStore, Policy

    root = resolve_vault(vault)
    # progress only on a terminal (a pipe or --quiet stays quiet); a running watcher vouches
    # for the index, so a command need not stat every note
    policy = policy or Policy(progress=progress_for(quiet), trust_watcher=True)
    store = MemoryStore(root, settings=load_settings(root), clock=env_clock(), policy=policy)
    if store.read_only and not quiet:
        click.echo(f"note: the vault is read-only ({store.read_only}); searching with the index in "
                   f"{store.derived_dir}, writes are off", err=True)
    return store


# One instance for every command's --vault: click.Path looks its name up in gettext's catalogs
# when made (a file system probe per locale variant), and one per command slowed every start.
FOLDER = click.Path(file_okay=False)


def vault_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--vault", "vault", type=FOLDER, envvar="VAULTMEM_VAULT",
        help="Vault folder (default: $VAULTMEM_VAULT, else ~/Documents/vaultmem).",
    )(fn)


def output_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(fn)
    return fn


def quiet_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--quiet", "-q", is_flag=True, help="No progress bar or warnings.")(fn)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Library errors become one-line `Error: ...` messages with exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except VaultmemError as exc:
            raise click.ClickException(one_line(exc)) from None
        except (OSError, sqlite3.Error) as exc:  # a full disk, a read-only vault: one line, not a traceback
            mapped = storage_error(exc)
            if mapped is None:
                raise
            raise click.ClickException(one_line(mapped)) from None

    return wrapper


def content_argument(value: str | None, what: str = "content") -> str:
    """A command's text as given, or read from stdin when it is `-` or left out with a pipe attached.

    A trailing newline (as `echo` adds) is dropped; anything else stays as written.
    """
    if value is not None and value != "-":
        return value
    stream = sys.stdin
    if value is None and stream.isatty():
        raise click.UsageError(f"Missing {what}: give it as an argument, or pipe it in with `-` "
                               f"(echo \"...\" | vaultmem ... -)")
    text = stream.read()
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    if not text.strip():
        raise click.UsageError(f"Nothing to read: stdin held no {what}; pipe the text in, e.g. "
                               f"echo \"...\" | vaultmem ... -")
    return text


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def progress_for(quiet: bool) -> Callable[[Iterable[str], int], Iterator[str]] | None:
    """A progress bar on an interactive terminal; nothing when piped or --quiet."""
    if quiet or not sys.stderr.isatty():
        return None

    def run(items: Iterable[str], length: int) -> Iterator[str]:
        if length < 500:  # a handful of changed notes: no bar flashing by
            yield from items
            return
        with click.progressbar(items, length=length, label="Indexing notes", file=sys.stderr) as bar:
            yield from bar

    return run


def warn_malformed(store: Any, quiet: bool) -> None:
    """Tell the person once, on the sync that found them, which notes could not be read."""
    report = store.last_sync
    if quiet or report is None or not report.malformed:
        return
    for path, reason in report.malformed[:10]:
        click.echo(f"warning: skipped malformed note {path}: {reason}", err=True)
    if len(report.malformed) > 10:
        click.echo(f"warning: ... and {len(report.malformed) - 10} more (see `vaultmem index status`)", err=True)


# -- links out to Obsidian ------------------------------------------------------------------------


def links_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--links", is_flag=True,
                        help="Print each note's obsidian:// link (a terminal that supports hyperlinks "
                             "makes the path clickable anyway).")(fn)


def hyperlinks_supported() -> bool:
    """Whether stdout is a terminal known to render OSC 8 hyperlinks (FORCE_HYPERLINK=1/0
    overrides; a pipe never gets escape codes)."""
    import os

    forced = os.environ.get("FORCE_HYPERLINK")
    if forced is not None:
        return forced not in ("", "0")
    if not sys.stdout.isatty() or os.environ.get("TERM") == "dumb":
        return False
    if os.environ.get("TERM_PROGRAM") in ("iTerm.app", "WezTerm", "vscode", "Hyper", "ghostty", "Tabby"):
        return True
    if os.environ.get("KITTY_WINDOW_ID") or os.environ.get("WT_SESSION") or os.environ.get("KONSOLE_VERSION"):
        return True
    vte = os.environ.get("VTE_VERSION", "")
    return vte.isdigit() and int(vte) >= 5000


def shown_path(store: Any, rel: str, links: bool) -> str:
    """A vault path as a person can follow it: with --links the obsidian:// link after it; on a
    terminal that renders hyperlinks, the path itself is the link."""
    uri = store.obsidian_uri(rel)
    if links:
        return f"{rel}  {uri}"
    if hyperlinks_supported():
        return f"\x1b]8;;{uri}\x1b\\{rel}\x1b]8;;\x1b\\"
    return rel


def open_in_obsidian(uri: str) -> None:
    """Hand an obsidian:// link to the system's opener (open, xdg-open, the Windows shell)."""
    import os
    import shutil
    import subprocess

    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        try:
            os.startfile(uri)  # type: ignore[attr-defined]
        except OSError as exc:
            raise VaultmemError(f"Windows cannot open obsidian:// links ({exc.strerror}); install Obsidian") from None
        return
    opener = "open" if sys.platform == "darwin" else "xdg-open"
    exe = shutil.which(opener)
    if exe is None:
        raise VaultmemError(f"cannot open obsidian:// links here: {opener} is not installed; "
                            "open the note in Obsidian by hand, or print its link with --links")
    done = subprocess.run([exe, uri], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise VaultmemError(f"no application opened the obsidian:// link ({opener} exited {done.returncode}); "
                            "install Obsidian, or print the link with --links")


def spawn_enrichment(root: Any) -> int | None:
    """Start `vaultmem enrich-pending` detached, to fill in the entities of the save that just
    returned; its pid, or None when it could not start (the job stays queued for the next
    save, the watcher or `vaultmem enrich-pending`)."""
    import os
    import subprocess

    kwargs: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                              "stderr": subprocess.DEVNULL, "close_fds": True}
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        kwargs["start_new_session"] = True  # survives the terminal closing; never a zombie of ours
    try:
        child = subprocess.Popen([sys.executable, "-m", "vaultmem", "enrich-pending", "--vault", os.fspath(root),
                                  "--quiet"], **kwargs)
    except OSError:
        return None
    return child.pid


def installed_executable() -> str:
    """The absolute path of this installation's `vaultmem` (for configs that git, GUI apps and
    MCP clients run without the person's shell PATH)."""
    import shutil
    from pathlib import Path

    beside = Path(sys.executable).parent / ("vaultmem.exe" if sys.platform == "win32" else "vaultmem")
    return str(beside if beside.exists() else Path(shutil.which("vaultmem") or "vaultmem").absolute())
