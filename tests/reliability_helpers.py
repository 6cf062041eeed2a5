"""Shared by the reliability tests: seeding a vault, snapshots, and the end-of-run invariants.

`check_vault` is the definition of "nothing lost, nothing corrupted" the tests assert:
every note parses, every memory id lives in exactly one file, no temp file survives the
next command, and `index status` is clean after one sync.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vaultmem.base.config import load_settings
from vaultmem.storage import note as notes
from vaultmem.storage.vault import TMP_MARK
from vaultmem.store import MemoryStore

NOW = dt.datetime(2026, 11, 22, 10, 15, 0, tzinfo=dt.timezone.utc)
# Read at import: the test suite's autouse fixture clears VAULTMEM_* variables before each test.
SOAK = os.environ.get("VAULTMEM_SOAK") == "1"
REPORT = os.environ.get("VAULTMEM_RELIABILITY_REPORT")


def fixed_clock() -> dt.datetime:
    return NOW


def ts(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def mid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


def write_memory(vault: Path, folder: str, name: str, n: int, content: str, *, age_days: float = 0,
                 use_count: int = 0, tags: tuple[str, ...] = ()) -> Path:
    """A memory note written directly, as Obsidian or a sync client would."""
    status = {"stm": "active", "ltm": "promoted", "archive": "archived"}[folder]
    when = ts(NOW - dt.timedelta(days=age_days))
    tag_lines = "tags:\n" + "".join(f"  - {t}\n" for t in tags) if tags else "tags: []\n"
    text = (f"---\nid: {mid(n)}\ncreated: {when}\nlast_used: {when}\nuse_count: {use_count}\n"
            f"strength: 1.0\nstatus: {status}\n{tag_lines}---\n{content}\n")
    path = vault / "memory" / folder / f"{name}-{mid(n)[:8]}.md"
    path.write_text(text, encoding="utf-8")
    return path


def seed(vault: Path, n_old: int = 8, n_fresh: int = 8, n_dupes: int = 3) -> list[str]:
    """Weak old memories (gc fodder), fresh ones (touch/promote fodder), near-duplicates
    (consolidation fodder) and a person's own note. Returns the seeded memory ids."""
    ids = []
    for i in range(n_old):
        write_memory(vault, "stm", f"old-fact-{i}", 100 + i, f"Old fact number {i} about the staging cluster.",
                     age_days=400)
        ids.append(mid(100 + i))
    for i in range(n_fresh):
        write_memory(vault, "stm", f"fresh-fact-{i}", 200 + i, f"Fresh fact {i}: the team prefers option {i}.",
                     age_days=1, use_count=0, tags=("team",))
        ids.append(mid(200 + i))
    for i in range(n_dupes):
        write_memory(vault, "stm", f"dupe-{i}", 300 + i,
                     "The deploy pipeline runs on GitHub Actions and publishes to PyPI on every tag.",
                     age_days=2)
        ids.append(mid(300 + i))
    (vault / "Projects").mkdir(exist_ok=True)
    (vault / "Projects" / "Apollo.md").write_text("# Apollo\nThe person's own project note.\n", encoding="utf-8")
    return ids


def open_store(vault: Path) -> MemoryStore:
    vault = Path(vault)
    return MemoryStore(vault, settings=load_settings(vault), clock=fixed_clock)


def run_killed(vault: Path, action: Callable[[MemoryStore], int], kill_at: int | None, hooked: Sequence[str],
               prepare: Callable[[MemoryStore], Any] | None = None) -> tuple[int, int]:
    """Fork; the child opens the vault, runs `prepare`, then `action` with the `os` functions
    named in `hooked` counted, and SIGKILLs itself before hooked call `kill_at` (None: never).

    Returns (the child's exit code, which is `action`'s result, or minus the signal that ended
    it; the number of hooked calls it made, when it finished).
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read_fd)
            calls = [0]

            def wrap(name: str) -> None:
                real = getattr(os, name)

                def counted(*args: Any, **kwargs: Any) -> Any:
                    calls[0] += 1
                    if kill_at is not None and calls[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return real(*args, **kwargs)

                setattr(os, name, counted)

            store = open_store(vault)
            if prepare is not None:
                prepare(store)
            for name in hooked:
                wrap(name)
            code = action(store)
            os.write(write_fd, str(calls[0]).encode())
            os._exit(code)
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
            os._exit(3)
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read_fd) as pipe:
        made = pipe.read()
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status), 0
    return os.WEXITSTATUS(status), int(made or 0)


def snapshot(vault: Path) -> dict[str, bytes]:
    """Every file in the vault outside .vaultmem/ (notes, the person's files, trash)."""
    return {p.relative_to(vault).as_posix(): p.read_bytes() for p in sorted(vault.rglob("*"))
            if p.is_file() and ".vaultmem" not in p.relative_to(vault).parts}


def memory_files(vault: Path) -> dict[str, str]:
    """path -> text of every note under memory/ and .trash/."""
    found = {}
    for base in (vault / "memory", vault / ".trash"):
        for p in sorted(base.rglob("*.md")) if base.exists() else ():
            found[p.relative_to(vault).as_posix()] = p.read_text(encoding="utf-8")
    return found


def parse(text: str) -> dict[str, Any]:
    split = notes.split_note(text)
    assert split.frontmatter is not None, "note lost its frontmatter"
    return notes.load_yaml(split.frontmatter)


def ids_by_file(vault: Path) -> Counter[str]:
    """How many files hold each memory id (every note must parse: a half-written one fails here)."""
    count: Counter[str] = Counter()
    for rel, text in memory_files(vault).items():
        try:
            props = parse(text)
        except Exception as exc:  # noqa: BLE001 - name the file in the failure
            raise AssertionError(f"{rel} does not parse: {exc}\n{text!r}") from None
        assert text.endswith("\n"), f"{rel} is truncated: {text[-80:]!r}"
        if "/blocks/" in rel or "/reviews/" in rel or "/sessions/" in rel:
            continue  # parsed (not half-written) but not memories
        count[str(props["id"])] += 1
    return count


def temp_files(vault: Path) -> list[str]:
    return sorted(p.relative_to(vault).as_posix() for p in vault.rglob(f"*{TMP_MARK}*"))


def check_after_next_command(vault: Path) -> dict[str, Any]:
    """Run the next command (a sync, as every command does first), then `index status`."""
    store = open_store(vault)
    try:
        store.sync()
        status = store.index_status()
    finally:
        store.close()
    assert temp_files(vault) == [], temp_files(vault)
    assert not (vault / ".vaultmem" / "index.building").exists()
    assert status["clean"], status
    return status


def report(test: str, **figures: Any) -> None:
    """Append a test's figures to $VAULTMEM_RELIABILITY_REPORT (JSON lines) for docs/reliability.md."""
    import json

    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"test": test, "soak": SOAK, **figures}) + "\n")
