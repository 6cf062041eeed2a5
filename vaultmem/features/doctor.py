"""`vaultmem doctor`: health checks over the catalog, each a small function.

A check takes the store and a `graph.Catalog` snapshot and returns problems as dicts with
`check`, `path` and `message` (plus check-specific keys). Add a check by writing a function
and appending it to `CHECKS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from vaultmem.core.port import MemoryCore
from vaultmem.features.graph import Catalog, unresolved
from vaultmem.features.sync import other_memory
from vaultmem.storage.record import private_flag
from vaultmem.storage.vault import CONFLICT_COPY

Problem = dict[str, Any]
Check = Callable[[MemoryCore, Catalog], list[Problem]]

_CONFLICT_COPY = CONFLICT_COPY
_MARKER = re.compile(r"(?m)^<<<<<<< .*\r?\n(?:.*\r?\n)*?=======\r?$")
_NUMBERED_COPY = re.compile(r"^(?P<base>.+) (?P<n>[2-9]|[1-9]\d+)\.md$")


def broken_links(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """Wikilinks whose target is no note in the vault (renamed or deleted without updating)."""
    return [{"check": "broken_link", "path": e.src, "line": e.line, "target": e.target, "type": e.type,
             "message": f"{e.src}:{e.line}: [[{e.target}]] points to no note; fix the link or restore the note"}
            for e in sorted(unresolved(cat), key=lambda e: (e.src, e.line, e.pos))]


def duplicate_ids(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """Two memory notes with one `id` (a copied note): vaultmem cannot tell them apart."""
    rows = cat.db.execute(
        "SELECT id, group_concat(path, '\n') FROM notes WHERE kind = 'memory' GROUP BY id HAVING count(*) > 1"
    ).fetchall()
    problems = []
    for mid, paths in sorted(rows):
        listed = sorted(paths.split("\n"))
        problems.append({"check": "duplicate_id", "path": listed[0], "id": mid, "paths": listed,
                         "message": f"id {mid} is used by {len(listed)} notes ({', '.join(listed)}); "
                                    "give the copies a new id or delete them"})
    return problems


def duplicate_names(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """Notes sharing a file name in different folders: `[[name]]` links become ambiguous."""
    by_name: dict[str, list[str]] = {}
    for path in cat.notes:
        by_name.setdefault(path.rsplit("/", 1)[-1].lower(), []).append(path)
    problems = []
    for name, paths in sorted(by_name.items()):
        if len(paths) > 1:
            listed = sorted(paths)
            problems.append({"check": "duplicate_name", "path": listed[0], "paths": listed,
                             "message": f"{len(listed)} notes are named {name} ({', '.join(listed)}); "
                                        "rename one so [[links]] stay unambiguous"})
    return problems


def malformed_notes(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """Notes vaultmem cannot parse (bad YAML, not UTF-8, too large); never rewritten."""
    rows = cat.db.execute("SELECT path, error FROM notes WHERE kind = 'malformed' ORDER BY path").fetchall()
    return [{"check": "malformed", "path": path, "message": f"{path}: {error}"} for path, error in rows]


def conflict_copies(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """Copies sync clients leave behind: Dropbox/Obsidian Sync, Syncthing, iCloud `Note 2.md`."""
    lower = {p.lower() for p in cat.notes}
    problems = []
    for path in sorted(cat.notes):
        folder, _, name = path.rpartition("/")
        numbered = _NUMBERED_COPY.match(name)
        original = None
        if _CONFLICT_COPY.search(name):
            original = _CONFLICT_COPY.sub("", name)
        elif numbered and f"{folder + '/' if folder else ''}{numbered['base']}.md".lower() in lower:
            original = f"{numbered['base']}.md"
        if original is None:
            continue
        ids = dict(cat.db.execute("SELECT path, id FROM notes WHERE path IN (?, ?)",
                                  (path, f"{folder + '/' if folder else ''}{original}")).fetchall())
        if len(ids) == 2 and other_memory(ids[path], ids[f"{folder + '/' if folder else ''}{original}"]):
            problems.append({"check": "conflict_copy", "path": path, "original": original,
                             "message": f"{path} is named like a sync-conflict copy of {original} but holds "
                                        f"another memory (id {ids[path]}); rename it so it is kept as its own"})
            continue
        problems.append({"check": "conflict_copy", "path": path, "original": original,
                         "message": f"{path} looks like a sync-conflict copy of {original}; "
                                    "merge what differs into the original and delete the copy"})
    return problems


def credentials(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """Notes holding something credential-like. `save` refuses these; hand-written ones are only flagged."""
    from vaultmem.base.secrets import find_secret

    problems = []
    for rec in store.index.records("kind != 'malformed' ORDER BY path"):
        try:
            text = store.vault.abs(rec.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found = find_secret(text)
        if found is not None:
            line = text.count("\n", 0, found.start) + 1
            problems.append({"check": "credential", "path": rec.path, "line": line, "kind": found.kind,
                             "message": f"{rec.path}:{line}: looks like {found.kind}; "
                                        "move the credential to a password manager"})
    return problems


def conflict_markers(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """Notes in vaultmem's folders that still hold a clash a sync kept between git's markers."""
    problems = []
    for (path,) in cat.db.execute("SELECT path FROM notes ORDER BY path").fetchall():
        if not store.vault.owns(path):
            continue
        try:
            text = store.vault.abs(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found = _MARKER.search(text)
        if found is not None:
            line = text.count("\n", 0, found.start()) + 1
            problems.append({"check": "conflict_markers", "path": path, "line": line,
                             "message": f"{path}:{line}: a sync kept a clash between conflict markers; keep the "
                                        "text you want, delete the <<<<<<< ======= >>>>>>> lines, then "
                                        "`vaultmem sync`"})
    return problems


def unclear_private(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """Memories whose `private` is neither clearly yes nor no: they are kept private (privacy
    fails closed), and the person is told so."""
    problems = []
    for rec in store.index.records("kind = 'memory' AND json_type(props, '$.private') IS NOT NULL ORDER BY path"):
        value = rec.props.get("private")
        if not private_flag(value)[1]:
            problems.append({"check": "unclear_private", "path": rec.path, "value": value,
                             "message": f"{rec.path}: private: {value!r} is neither yes nor no, so the memory is "
                                        "kept private; write private: true or private: false"})
    return problems


def canvas_cards(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """Canvas file cards that show a file the vault does not have (deleted, or moved by hand
    without Obsidian), and canvases Obsidian cannot open (not JSON Canvas)."""
    from vaultmem.storage import canvas

    problems: list[Problem] = []
    for rel in store.vault.canvas_files():  # the sync just walked, or walks now
        try:
            text = store.vault.abs(rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        cards = canvas.file_cards(text)
        if cards is None:
            problems.append({"check": "malformed_canvas", "path": rel,
                             "message": f"{rel} is not a JSON Canvas file (Obsidian cannot open it); "
                                        "fix its JSON or delete it"})
            continue
        for line, target in cards:
            if not store.file_exists(target):
                problems.append({"check": "broken_canvas_card", "path": rel, "line": line, "target": target,
                                 "message": f"{rel}:{line}: a card shows {target}, which is not in the vault; "
                                            "point the card at the note or remove it"})
    return problems


def dashboard(store: MemoryCore, cat: Catalog) -> list[Problem]:
    """vaultmem's Bases dashboard computes the score with an older configuration."""
    from vaultmem.features import obsidian

    if not obsidian.base_stale(store):
        return []
    rel = obsidian.base_path(store).relative_to(store.vault.root).as_posix()
    return [{"check": "dashboard", "path": rel,
             "message": f"{rel} no longer matches .vaultmem/config.yaml; run `vaultmem obsidian setup`"}]


CHECKS: list[tuple[str, Check]] = [
    ("broken_links", broken_links),
    ("duplicate_ids", duplicate_ids),
    ("duplicate_names", duplicate_names),
    ("malformed_notes", malformed_notes),
    ("conflict_copies", conflict_copies),
    ("conflict_markers", conflict_markers),
    ("unclear_private", unclear_private),
    ("credentials", credentials),
    ("dashboard", dashboard),
    ("canvas_cards", canvas_cards),
]


def run(store: MemoryCore, checks: list[tuple[str, Check]] | None = None) -> dict[str, Any]:
    """Run every check; `clean` is False when any found a problem."""
    store.sync()
    cat = Catalog(store)
    problems: list[Problem] = []
    counts: dict[str, int] = {}
    for name, check in checks or CHECKS:
        found = check(store, cat)
        counts[name] = len(found)
        problems.extend(found)
    clean = not problems
    return {"success": True, "clean": clean, "counts": counts, "problems": problems,
            "message": "No problems found" if clean else
                       f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found"}
