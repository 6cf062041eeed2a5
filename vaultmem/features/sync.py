"""One memory, many devices: the merge rule for a memory note, and git as the engine.

`merge_note(base, ours, theirs)` merges two devices' versions of one note against their
common ancestor (docs/sync.md):

- vaultmem's counters and times: `use_count` adds both sides' increments over the ancestor
  (no ancestor: the larger), `last_used` takes the later, `created` the earlier, `strength`
  the higher, `access_times` the union (the newest `access_history_size`), `review_count`,
  `hit_count` and `useful_count` add their increments too;
- `tags`, `entities` and `related`: the union, in the order they were written;
- every other property (the person's, and vaultmem's own others): a side that changed it
  from the ancestor wins; both changed it differently is a clash;
- the body: git's own three-way merge (`git merge-file`); a clash is kept visibly, both
  texts between git's markers, never dropped.

The result is `ours` with the merged properties edited in place (its key order, quoting and
line endings kept). `vaultmem sync merge-driver` runs it for git (registered by `vaultmem sync
setup` with the absolute path of this vaultmem, so git run by the Obsidian Git plugin or a GUI
finds it); a clash exits 1, as git's own merge does, and git reports the conflict.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.base.errors import InvalidInput, MalformedNote, VaultmemError
from vaultmem.base.timeutil import parse_time
from vaultmem.core.port import MemoryCore
from vaultmem.storage import note as notes
from vaultmem.storage.vault import CONFLICT_COPY, FILE_MANAGER_COPY, is_conflict_copy

if TYPE_CHECKING:
    import subprocess  # imported where git runs: every save loads this module, few run git

COUNTERS = ("use_count", "review_count", "hit_count", "useful_count")
UNIONS = ("tags", "entities", "related")
ATTRIBUTES = "memory/**/*.md merge=vaultmem\n"
# A memory moved on two devices keeps the more lasting state: long-term, then short-term, then
# archived (a promotion is never undone by a sync; an archive loses to a copy still in use).
STATUS_RANK = {"promoted": 0, "active": 1, "archived": 2}
LOCATION = ("status", "promoted_at", "archived_at")


def _props(text: str | None) -> tuple[dict[str, Any], str, notes.SplitNote | None]:
    if text is None:
        return {}, "", None
    split = notes.split_note(text)
    props = notes.load_yaml(split.frontmatter) if split.frontmatter is not None else {}
    return props, split.body, split


def _time(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    return parse_time(str(value)) if value not in (None, "") else None


def _number(value: Any) -> float | None:
    """A finite number, else None: inf, nan, 5,000 digits or a list merge as text, never raise."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _union(*lists: Any) -> list[Any]:
    out: list[Any] = []
    for items in lists:
        for item in notes.as_list(items) if not isinstance(items, list) else items:
            if item not in out:
                out.append(item)
    return out


def _settle_location(base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any],
                     ) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """Both devices moved the memory (promoted here, archived there): the status ranked first
    in STATUS_RANK wins with its own `archived_at`/`promoted_at`, so the merged note is in
    one lifecycle state, never a clash of two. One side's move alone is an ordinary change."""
    a, b, o = (str(side.get("status")) if isinstance(side.get("status"), str) else None
               for side in (ours, theirs, base))
    if a == b or a not in STATUS_RANK or b not in STATUS_RANK or (base and o in (a, b)):
        return ours, theirs
    winner, loser = (ours, theirs) if STATUS_RANK[a] < STATUS_RANK[b] else (theirs, ours)
    settled = {k: v for k, v in loser.items() if k not in LOCATION}
    settled.update({k: winner[k] for k in LOCATION if k in winner})
    return (ours, settled) if winner is ours else (settled, theirs)


def merge_properties(base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any],
                     history: int = 10) -> tuple[dict[str, Any], list[str]]:
    """The merged properties and the keys that clash (both sides changed them differently)."""
    merged: dict[str, Any] = {}
    clashes: list[str] = []
    ancestor = bool(base)
    ours, theirs = _settle_location(base, ours, theirs)
    for key in dict.fromkeys([*ours, *theirs]):
        a, b, o = ours.get(key), theirs.get(key), base.get(key)
        if key in COUNTERS and (_number(a) is not None or _number(b) is not None):
            na, nb, no = _number(a) or 0, _number(b) or 0, _number(o) or 0
            value = no + (na - no) + (nb - no) if ancestor and key in base else max(na, nb)
            merged[key] = int(value) if float(value).is_integer() else value
        elif key in ("last_used", "created") and (_time(a) or _time(b)):
            times = [t for t in (_time(a), _time(b)) if t is not None]
            merged[key] = max(times) if key == "last_used" else min(times)
        elif key == "strength" and (_number(a) is not None or _number(b) is not None):
            merged[key] = max(x for x in (_number(a), _number(b)) if x is not None)
        elif key == "access_times" and all(isinstance(x, list | None) for x in (a, b)):
            merged[key] = sorted(_union(a or [], b or []), key=str)[-history:]
        elif key in UNIONS:
            merged[key] = _union(a or [], b or []) if ancestor else _union_unrelated(a or [], b or [])
        elif _same(a, b):
            merged[key] = a if key in ours else b
        elif key not in theirs:  # theirs removed it
            if _same(a, o):
                continue
            merged[key] = a  # ours added or changed it: keep
        elif key not in ours:
            if _same(b, o):
                continue
            merged[key] = b
        elif _same(a, o):
            merged[key] = b
        elif _same(b, o):
            merged[key] = a
        else:
            # without an ancestor the same pair gives the same note on every device
            merged[key] = a if ancestor else min(a, b, key=repr)
            clashes.append(key)
    return merged, clashes


def _same(a: Any, b: Any) -> bool:
    """Equal as values, or written alike (`.nan` is not equal to itself, yet unchanged)."""
    return bool(a == b) or notes.same_value(a, b) or (type(a) is type(b) and repr(a) == repr(b))


def _union_unrelated(a: Any, b: Any) -> list[Any]:
    """Two lists without an ancestor: one holding all of the other wins (merging again changes
    nothing); else the union, the two taken in a fixed order (every device gets the same)."""
    la = notes.as_list(a) if not isinstance(a, list) else a
    lb = notes.as_list(b) if not isinstance(b, list) else b
    a_has_b, b_has_a = all(x in la for x in lb), all(x in lb for x in la)
    if a_has_b and b_has_a:
        return min(la, lb, key=repr)
    if a_has_b or b_has_a:
        return la if a_has_b else lb
    return _union(*sorted((la, lb), key=repr))


def _holds(big: str, small: str) -> bool:
    """Every line of `small` is in `big`, in order: `small`'s text is already part of `big`."""
    rest = iter(big.splitlines())
    return all(any(line == other for other in rest) for line in small.splitlines())


def merge_unrelated_bodies(a: str, b: str) -> tuple[str, bool]:
    """Two bodies without an ancestor (a sync tool's conflict copy): one that already holds the
    other's lines is the merge (so merging a merge again changes nothing); else both texts
    between git's markers, in a fixed order, so every device makes the same note of the pair."""
    if _holds(a, b):
        return a, True
    if _holds(b, a):
        return b, True
    first, second = sorted((a, b))
    return merge_file_text("", first, second)


def merge_file_text(base: str, ours: str, theirs: str, labels: tuple[str, str, str] = ("ours", "base", "theirs"),
                    ) -> tuple[str, bool]:
    """git merge-file -p: the three-way merge of texts; (merged, clean)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="vaultmem-merge-") as tmp:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(text.encode("utf-8"))
            paths.append(str(path))
        try:
            done = subprocess.run(["git", "merge-file", "-p", "-L", labels[0], "-L", labels[1], "-L", labels[2],
                                   *paths], capture_output=True, check=False)
        except FileNotFoundError:
            raise VaultmemError("git is not installed; install git to merge notes from several devices") from None
    if done.returncode < 0 or done.returncode > 127:
        raise VaultmemError(f"git merge-file failed ({done.stderr.decode(errors='replace').strip()})")
    return done.stdout.decode("utf-8"), done.returncode == 0


def merge_note(base: str | None, ours: str, theirs: str, history: int = 10) -> tuple[str, bool]:
    """Merge two versions of a memory note against their common ancestor (None: none).
    Returns (text, clean); an unclean text holds git's conflict markers in the body."""
    if ours == theirs:
        return ours, True
    try:
        p_base, body_base, _ = _props(base)
        p_ours, body_ours, split_ours = _props(ours)
        p_theirs, body_theirs, _ = _props(theirs)
    except MalformedNote:
        # not a note vaultmem can read (broken YAML): git's line merge of the whole file
        return merge_file_text(base or "", ours, theirs)
    newline = split_ours.newline if split_ours is not None else "\n"
    # bodies compared with their line endings normalised; the result takes ours' style
    body_base, body_ours, body_theirs = (b.replace("\r\n", "\n") for b in (body_base, body_ours, body_theirs))
    merged, clashes = merge_properties(p_base, p_ours, p_theirs, history)
    changes = {k: v for k, v in merged.items() if k not in p_ours or not notes.same_value(p_ours[k], v)}
    removed = [k for k in p_ours if k not in merged]
    if base is None and body_ours != body_theirs:
        body, clean = merge_unrelated_bodies(body_ours, body_theirs)
    elif body_ours == body_theirs or body_theirs == body_base:
        body, clean = body_ours, True
    elif body_ours == body_base:
        body, clean = body_theirs, True
    else:
        body, clean = merge_file_text(body_base, body_ours, body_theirs)
    head = notes.update_frontmatter(ours, changes, remove=removed) if (changes or removed) else ours
    text = notes.split_note(head).head if split_ours is not None and split_ours.frontmatter is not None else ""
    if clashes:
        first, second = (p_ours, p_theirs)
        if base is None and [repr(p_theirs.get(k)) for k in clashes] < [repr(p_ours.get(k)) for k in clashes]:
            first, second = second, first  # a fixed order: the same block on every device
        lines = [f"<<<<<<< ours: {k}: {first.get(k)!r}" for k in clashes] + ["======="] + \
                [f"{k}: {second.get(k)!r}" for k in clashes] + [">>>>>>> theirs (properties)"]
        block = "\n".join(lines) + "\n"
        if block not in body:  # kept once: merging the merge again adds nothing
            body = block + body
        clean = False
    if newline != "\n":
        body = body.replace("\n", newline)
    if split_ours is not None and split_ours.bom and not text.startswith("\ufeff"):
        text = "\ufeff" + text
    return text + body, clean


# -- git --------------------------------------------------------------------------------------


def merge_driver(base_path: str, ours_path: str, theirs_path: str, history: int = 10) -> bool:
    """git's merge driver: %O %A %B; the result goes into %A. True when clean.

    Whatever vaultmem's rule cannot take (bytes that are not UTF-8, values it cannot merge,
    anything unforeseen) falls back to git's line merge of the whole files, both sides kept
    between markers: a side is never dropped."""
    def read(path: str) -> bytes | None:
        try:
            return Path(path).read_bytes()
        except FileNotFoundError:
            return None

    ours, theirs = read(ours_path), read(theirs_path)
    if ours is None or theirs is None:
        raise InvalidInput("the merge driver needs the current and the other version (%A %B)")
    base = read(base_path) or b""
    try:
        text, clean = merge_note(base.decode("utf-8") or None, ours.decode("utf-8"), theirs.decode("utf-8"), history)
        merged = text.encode("utf-8")
    except Exception:  # noqa: BLE001 - any failure of the rule: the line merge keeps both sides
        merged, clean = merge_file_bytes(base, ours, theirs)
    tmp = f"{ours_path}.vaultmem-merge"
    Path(tmp).write_bytes(merged)
    os.replace(tmp, ours_path)
    return clean


def merge_file_bytes(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, bool]:
    """git merge-file on raw bytes, as git's own merge writes it; if even that fails, both
    whole files between markers. (merged, clean)"""
    import subprocess
    import tempfile

    try:
        with tempfile.TemporaryDirectory(prefix="vaultmem-merge-") as tmp:
            paths = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                path = Path(tmp) / name
                path.write_bytes(data)
                paths.append(str(path))
            done = subprocess.run(["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", *paths],
                                  capture_output=True, check=False)
        if 0 <= done.returncode <= 127:
            return done.stdout, done.returncode == 0
    except OSError:
        pass
    end = b"\r\n" if b"\r\n" in ours else b"\n"
    def closed(data: bytes) -> bytes:
        return data if not data or data.endswith(b"\n") else data + end
    return b"<<<<<<< ours" + end + closed(ours) + b"=======" + end + closed(theirs) + b">>>>>>> theirs" + end, False


def _git(root: Path, *args: str) -> str:
    """git's output; a failure raises with git's own last word."""
    done = _run_git(root, *args)
    if done.returncode != 0:
        raise VaultmemError(f"git {args[0]} failed in {root}: {_last_line(done)}")
    return done.stdout


def _git_show(root: Path, spec: str) -> str | None:
    """A file as git holds it (`rev:./path`, `:stage:./path`), byte for byte (CRLF kept:
    text mode would turn it into LF, and every line would then differ from the note)."""
    import subprocess

    try:
        done = subprocess.run(["git", "-C", str(root), "show", spec], capture_output=True, check=False)
    except FileNotFoundError:
        raise VaultmemError("git is not installed; install git to sync the vault with it") from None
    return done.stdout.decode("utf-8") if done.returncode == 0 else None


def setup_git(root: Path, executable: str) -> dict[str, Any]:
    """Register the merge driver for memory notes in the vault's git repository: the
    `.gitattributes` line and `merge.vaultmem.*` in the repository's config, with the
    absolute path of vaultmem. Idempotent."""
    try:
        top = Path(_git(root, "rev-parse", "--show-toplevel").strip())
    except VaultmemError:
        raise InvalidInput(f"{root} is not in a git repository; run `git init` there first") from None
    rel = Path(os.path.relpath(root, top)).as_posix()
    pattern = ATTRIBUTES if rel == "." else f"{rel}/{ATTRIBUTES}"
    attributes = top / ".gitattributes"
    try:
        old = attributes.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    added = pattern.strip() not in old.splitlines()
    if added:
        attributes.write_text(old + ("" if not old or old.endswith("\n") else "\n") + pattern, encoding="utf-8")
    driver = f'"{executable}" sync merge-driver %O %A %B %P'
    _git(root, "config", "merge.vaultmem.name", "vaultmem memory notes (counters add, times take the later)")
    _git(root, "config", "merge.vaultmem.driver", driver)
    return {"success": True, "repository": str(top), "gitattributes": ".gitattributes", "pattern": pattern.strip(),
            "attributes_added": added, "driver": driver}


def init_git(root: Path, executable: str) -> dict[str, Any]:
    """`vaultmem init --git`: a git repository in the vault (unless it is already in one) with
    the merge driver registered."""
    created = not in_git(root) or _run_git(root, "rev-parse", "--show-toplevel").returncode != 0
    if created:
        _git(root, "init", "-q")
    return {**setup_git(root, executable), "repository_created": created}


# -- file-sync tools: conflict copies ------------------------------------------------------------

_COPY_SUFFIX = re.compile(r"(-[0-9a-f]{8})(?: [0-9]+| copy(?: [0-9]+)?| - Copy(?: \([0-9]+\))?)(\.md)$", re.I)


def original_of(rel: str) -> str | None:
    """The note a sync tool's or file manager's conflict copy was copied from, or None."""
    folder, _, name = rel.rpartition("/")
    prefix = folder + "/" if folder else ""
    if CONFLICT_COPY.search(name):
        return prefix + CONFLICT_COPY.sub("", name)
    if FILE_MANAGER_COPY.search(name):
        return prefix + _COPY_SUFFIX.sub(r"\1\2", name)
    return None


def other_memory(copy_id: str | None, original_id: str | None) -> bool:
    """A file named like a conflict copy whose `id` is another memory's: not a copy of it."""
    return bool(copy_id) and bool(original_id) and copy_id != original_id


def merge_copies(store: MemoryCore, apply: bool = False) -> dict[str, Any]:
    """Conflict copies of memory notes (Obsidian Sync, Dropbox, Syncthing, iCloud, a file
    manager) merged into their original by the rule above, without an ancestor (counters take
    the larger, times the later, the bodies line by line, a clash kept between markers); with
    apply the merge is written and only then the copy goes to .trash/. A person's own notes
    are left to `vaultmem doctor`."""
    store.sync()
    found: list[dict[str, Any]] = []
    strangers: list[dict[str, Any]] = []
    ids = dict(store.index.db.execute("SELECT path, id FROM notes").fetchall())
    paths = set(ids)
    for rel in sorted(p for p in paths if is_conflict_copy(p)):
        original = original_of(rel)
        if original is None or original not in paths or not store.vault.owns(original):
            continue
        if other_memory(ids.get(rel), ids.get(original)):  # named like a copy, holding another memory
            strangers.append({"copy": rel, "original": original, "copy_id": ids[rel], "original_id": ids[original]})
            continue
        item = _merge_away(store, original, rel, None, {"copy": rel, "original": original}, apply, "trash")
        if item is not None:
            found.append(item)
    # one memory in two places (moved on two devices, each move synced): in a git repository
    # `vaultmem sync` settles it with the common ancestor; here there is none
    duplicates = [] if in_git(store.vault.root) else resolve_duplicates(store, apply=apply, remove="trash")
    return {"success": True, "applied": apply, "copies": found, "count": len(found), "duplicates": duplicates,
            "not_copies": strangers}


def merge_waiting_copies(store: MemoryCore) -> None:
    """Before a write (any command or tool that changes the vault): merge the conflict copies
    a file-sync tool left of memory notes, as the watcher does when one arrives; a read never
    does. Cheap when there are none: one indexed lookup."""
    if store.vault.read_only or not store.index.has_conflict_copies():
        return
    merge_copies(store, apply=True)  # its own writes do not call this again (Memories._before_write)


# -- one memory in two places ----------------------------------------------------------------


def _rank(vault: Any, rel: str) -> tuple[int, int, str]:
    """Which copy of a memory survives: long-term, short-term, archived, elsewhere; then the
    shorter path, then the first by name. Decided from the paths alone, so every device that
    meets the same two copies keeps the same one."""
    status = vault.status_of(rel)
    return (STATUS_RANK.get(status, len(STATUS_RANK)) if status else len(STATUS_RANK), len(rel), rel)


def duplicate_groups(store: MemoryCore) -> dict[str, list[str]]:
    """Memory id -> its paths, survivor first, for every id held by more than one memory note."""
    groups: dict[str, list[str]] = {}
    for mid, path in store.index.db.execute(
            "SELECT id, path FROM main.notes WHERE kind = 'memory' AND id IN "
            "(SELECT id FROM main.notes WHERE kind = 'memory' GROUP BY id HAVING count(*) > 1)"):
        groups.setdefault(mid, []).append(path)
    return {mid: sorted(paths, key=lambda rel: _rank(store.vault, rel)) for mid, paths in sorted(groups.items())}


def resolve_duplicates(store: MemoryCore, apply: bool = False, ancestor: Any = None,
                       remove: str = "trash") -> list[dict[str, Any]]:
    """One memory found in two places (promoted on one device, archived on another; copied by
    a sync tool) becomes one note: the copy in the more lasting folder survives (`_rank`), the
    other is merged into it by `merge_note` against `ancestor(id)` (the version both devices
    started from, when git knows it; else None: counters take the larger), and links to the
    other now point at the survivor. The other copy goes to `.trash/` (`remove="trash"`) or,
    in a git repository whose history keeps it, is deleted (`remove="delete"`)."""
    found: list[dict[str, Any]] = []
    for mid, paths in duplicate_groups(store).items():
        survivor = paths[0]
        for other in paths[1:]:
            base = ancestor(mid) if ancestor is not None else None
            item = _merge_away(store, survivor, other, base, {"id": mid, "kept": survivor, "merged": other,
                                                              "ancestor": base is not None}, apply, remove)
            if item is not None:
                found.append(item)
    return found


def _merge_away(store: MemoryCore, keep: str, other: str, base: str | None, item: dict[str, Any], apply: bool,
                remove: str) -> dict[str, Any] | None:
    """Merge note `other` into `keep` (against `base`, or none); with apply write it by
    compare-and-swap (an edit that lands meanwhile is never overwritten), then remove `other`
    (`.trash/`, or deleted where git keeps its history) and point links to it at `keep`.
    None when either note is gone."""
    target = store.vault.abs(keep)
    try:
        ours, stamp = store.vault.read_stamped(target)
        theirs = store.vault.read_text(store.vault.abs(other))
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    merged, clean = merge_note(base, ours, theirs, store.settings.access_history_size)
    item.update(clean=clean, changed=merged != ours, status="would merge")
    if not apply:
        return item
    with store.vault.lock():
        if merged != ours and not store.vault.replace_if_unchanged(target, ours, stamp, merged):
            item["status"] = f"skipped: {keep} changed meanwhile (merged on the next run)"
            return item
        sources = store.link_sources(other)
        if remove == "delete":
            store.vault.abs(other).unlink()
        else:
            item["trashed_to"] = store.vault.trash(other)
        store.index.refresh([keep], removed=[other])
        item["links_rewritten"] = store.relink(other, keep, sources)
    item["status"] = "merged"
    return item


def in_git(root: Path) -> bool:
    """Whether the vault is inside a git work tree (then `vaultmem sync` merges, with history)."""
    return any((folder / ".git").exists() for folder in (root, *root.parents))


# -- git sync: commit, pull (with the merge driver), settle, push ---------------------------------

_OLD_GITIGNORES = (
    "# derived from the notes by `vaultmem index rebuild`, or this device's own\nindex/\nlock\nstate/\nenrich/\nfences/\n",
)


def _run_git(root: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import subprocess

    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False,
                              env={**os.environ, "GIT_MERGE_AUTOEDIT": "no", "GIT_TERMINAL_PROMPT": "0", **(env or {})})
    except FileNotFoundError:
        raise VaultmemError("git is not installed; install git to sync the vault with it") from None


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
    hints = [line for line in lines if not line.startswith(("hint:", "From ", " * ", "   "))]
    return (hints or lines or [f"exit {done.returncode}"])[-1]


def _identity(root: Path) -> dict[str, str]:
    """git's author for vaultmem's commits: the person's when git knows them, else vaultmem@host."""
    if _run_git(root, "config", "user.email").stdout.strip() or os.environ.get("GIT_AUTHOR_EMAIL"):
        return {}
    import socket

    host = socket.gethostname() or "localhost"
    return {"GIT_AUTHOR_NAME": "vaultmem", "GIT_AUTHOR_EMAIL": f"vaultmem@{host}",
            "GIT_COMMITTER_NAME": "vaultmem", "GIT_COMMITTER_EMAIL": f"vaultmem@{host}"}


def _shared_paths(store: MemoryCore, everything: bool, top: Path) -> list[str]:
    """What `vaultmem sync` commits: vaultmem's own folders and settings (and the repository's
    `.gitattributes`, wherever the vault sits in it), or the whole vault."""
    attributes = Path(os.path.relpath(top / ".gitattributes", store.vault.root)).as_posix()
    if everything:
        return [".", attributes] if attributes != ".gitattributes" else ["."]
    rels = [folder.strip("/") for folder in store.vault.layout()] + [".vaultmem", attributes]
    tops = sorted({rel.split("/")[0] if rel.startswith("memory/") else rel for rel in rels})
    return [rel for rel in tops if (store.vault.root / rel).exists()]


def update_gitignore(store: MemoryCore) -> bool:
    """Bring an older `.vaultmem/.gitignore` vaultmem wrote up to date (one the person
    changed is left alone). True when it was rewritten."""
    from vaultmem.storage.vault import GITIGNORE

    path = store.vault.state_dir / ".gitignore"
    try:
        text = store.vault.read_text(path)
    except FileNotFoundError:
        text = None
    if text is not None and text not in _OLD_GITIGNORES:
        return False
    store.vault.write_text(path, GITIGNORE)
    return True


def git_sync(store: MemoryCore, executable: str, *, push: bool = True, everything: bool = False,
             message: str | None = None) -> dict[str, Any]:
    """`vaultmem sync`: commit this device's changes, pull (git merges memory notes with the
    driver), settle what git leaves to vaultmem (a memory moved on both devices; a memory
    touched here and moved or removed there), keep one note per memory, and push; then the
    index follows the files. A conflict in one of the person's own notes stops before the
    merge commit, with the notes named; nothing of theirs is resolved by vaultmem."""
    root = store.vault.root
    store.vault.require()
    top_run = _run_git(root, "rev-parse", "--show-toplevel")
    if top_run.returncode != 0:
        raise InvalidInput(f"{root} is not in a git repository; run `git init` there and add a remote "
                           "(`git remote add origin URL`), or use your sync tool and `vaultmem sync copies`")
    top = Path(top_run.stdout.strip())
    result: dict[str, Any] = {"success": True, "repository": str(top), "driver_registered": False,
                              "gitignore_updated": False, "committed": None, "pulled": False, "merge": None,
                              "resolved": [], "relinked": [], "clashes": [], "duplicates": [], "pushed": False,
                              "unresolved": []}
    expected = f'"{executable}" sync merge-driver %O %A %B %P'
    if _run_git(root, "config", "merge.vaultmem.driver").stdout.strip() != expected:
        setup_git(root, executable)
        result["driver_registered"] = True
    result["gitignore_updated"] = update_gitignore(store)
    env = _identity(root)
    git_dir = Path(_git(root, "rev-parse", "--absolute-git-dir").strip())
    store.sync()
    if (git_dir / "MERGE_HEAD").exists():
        _settle_merge(store, root, env, result)  # a sync stopped by a conflict of the person's: go on
        if result["unresolved"]:
            return _stopped(result)
    _commit(store, root, env, result, _shared_paths(store, everything, top), message)
    upstream = _run_git(root, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}")
    if upstream.returncode != 0:
        if not _run_git(root, "remote").stdout.strip():
            result["message"] = "no remote: committed here only; add one with `git remote add origin URL` " \
                                "and `git push -u origin HEAD`"
            return _finish(store, result)
        branch = _run_git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
        remotes = _run_git(root, "remote").stdout.split()
        if push and len(remotes) == 1 and _run_git(root, "ls-remote", "--exit-code", "--heads", remotes[0],
                                                   branch).returncode == 2:
            # the first device to sync publishes the branch (the remote does not have it yet)
            published = _run_git(root, "push", "-u", remotes[0], branch, env=env)
            if published.returncode != 0:
                raise VaultmemError(f"git push failed: {_last_line(published)}")
            result["pushed"] = True
            return _finish(store, result)
        raise InvalidInput(f"branch {branch} has no upstream; run `git push -u origin {branch}` once, "
                           "then `vaultmem sync`")
    for _attempt in range(5):
        before = _run_git(root, "rev-parse", "HEAD").stdout.strip()
        pull = _run_git(root, "pull", "--no-rebase", "--no-edit", env=env)
        result["pulled"] = True
        if pull.returncode != 0:
            if not (git_dir / "MERGE_HEAD").exists():
                raise VaultmemError(f"git pull failed: {_last_line(pull)}")
            store.sync()
            _settle_merge(store, root, env, result)
            if result["unresolved"]:
                return _stopped(result)
        after = _run_git(root, "rev-parse", "HEAD").stdout.strip()
        parents = _run_git(root, "rev-list", "--parents", "-n", "1", "HEAD").stdout.split()
        result["merge"] = result["merge"] or ("up to date" if after == before else
                                              "merged" if len(parents) > 2 else "fast-forward")
        store.sync()
        base = _run_git(root, "merge-base", parents[1], parents[2]).stdout.strip() \
            if after != before and len(parents) > 2 else ""
        result["duplicates"] += _settle_duplicates(store, root, env, base)
        if not push:
            break
        if _run_git(root, "rev-list", "--count", "@{u}..HEAD").stdout.strip() == "0":
            break  # nothing here the remote lacks
        pushed = _run_git(root, "push", env=env)
        if pushed.returncode == 0:
            result["pushed"] = True
            break
        if "rejected" not in pushed.stderr and "fetch first" not in pushed.stderr:
            raise VaultmemError(f"git push failed: {_last_line(pushed)}")
    else:
        raise VaultmemError("git push was rejected 5 times (other devices kept pushing); run `vaultmem sync` again")
    return _finish(store, result)


def _commit(store: MemoryCore, root: Path, env: Mapping[str, str], result: dict[str, Any],
            paths: list[str], message: str | None) -> None:
    added = _run_git(root, "add", "-A", "--", *paths)
    if added.returncode != 0:
        raise VaultmemError(f"git add failed: {_last_line(added)}")
    if _run_git(root, "diff", "--cached", "--quiet", "--", *paths).returncode == 0:
        return
    import socket

    text = message or f"vaultmem sync from {socket.gethostname() or 'this device'}"
    done = _run_git(root, "commit", "-q", "-m", text, "--", *paths, env=env)
    if done.returncode != 0:
        raise VaultmemError(f"git commit failed: {_last_line(done)}")
    result["committed"] = _run_git(root, "rev-parse", "HEAD").stdout.strip()


def _settle_merge(store: MemoryCore, root: Path, env: Mapping[str, str], result: dict[str, Any]) -> None:
    """The merge git stopped: memory notes it could not finish are vaultmem's to settle (a
    memory moved on both devices: both copies are kept for `_settle_duplicates`; touched here,
    moved or removed there: the touched copy is kept); anything else is the person's."""
    listed = _run_git(root, "diff", "--name-only", "--relative", "--diff-filter=U", "-z").stdout
    theirs_notes = []
    unresolved = []
    for rel in [p for p in listed.split("\0") if p]:
        if not store.vault.owns(rel):
            theirs_notes.append(rel)
            continue
        if (store.vault.root / rel).exists():
            try:
                data = (store.vault.root / rel).read_bytes()
            except OSError:
                data = b""
            if b"\n<<<<<<< " in b"\n" + data:
                # a clash the driver kept between markers: the person settles it, nothing is pushed
                result["clashes"].append(rel)
                unresolved.append(rel)
                continue
            _git(root, "add", "--", rel)
        else:
            _git(root, "rm", "-q", "--cached", "--", rel)
        result["resolved"].append(rel)
    if theirs_notes:
        store.sync()
        moved = {other: paths[0] for paths in duplicate_groups(store).values() for other in paths[1:]}
        for rel in theirs_notes:
            if moved and _merge_relinked(store, root, rel, moved):
                result["relinked"].append(rel)
            else:
                unresolved.append(rel)
    result["unresolved"] = unresolved
    if unresolved:
        return
    done = _run_git(root, "commit", "-q", "--no-edit", env=env)
    if done.returncode != 0:
        raise VaultmemError(f"git commit of the merge failed: {_last_line(done)}")
    result["merge"] = "merged"


def _link_forms(rel: str) -> list[str]:
    from urllib.parse import quote

    stem = rel[:-3] if rel.endswith(".md") else rel
    return list(dict.fromkeys(form for path in (rel, stem) for form in (path, path.replace(" ", "%20"), quote(path))))


def _merge_relinked(store: MemoryCore, root: Path, rel: str, moved: Mapping[str, str]) -> bool:
    """A note of the person's that git could not merge because each device re-pointed its
    links at its own copy of one memory (`[[memory/ltm/x]]` here, `[[memory/archive/x]]`
    there): with every link to a merged-away copy pointed at the surviving one, the two
    sides merge cleanly; then that merge is written and staged. Any other difference stays
    a conflict for the person (False)."""
    stages = [_git_show(root, f":{stage}:./{rel}") for stage in (1, 2, 3)]
    if None in stages:
        return False
    pairs = [(old_form, new_form) for old, new in sorted(moved.items(), key=lambda kv: -len(kv[0]))
             for old_form, new_form in zip(_link_forms(old), _link_forms(new), strict=True)]

    def relinked(text: str) -> str:
        for old_form, new_form in pairs:
            text = text.replace(old_form, new_form)
        return text

    base, ours, theirs = (text or "" for text in stages)
    ours, theirs = relinked(ours), relinked(theirs)
    if ours == stages[1] and theirs == stages[2]:
        return False
    merged, clean = merge_file_text(base, ours, theirs)
    if not clean:
        return False
    path = store.vault.abs(rel)
    try:
        conflicted, stamp = store.vault.read_stamped(path)
    except (FileNotFoundError, UnicodeDecodeError):
        return False
    # compare-and-swap: the person editing git's conflict markers meanwhile keeps their edit
    if not store.vault.replace_if_unchanged(path, conflicted, stamp, merged):
        return False
    _git(root, "add", "--", rel)
    return True


def _ancestor_in(root: Path, rev: str) -> Any:
    """id -> the memory note holding that id in commit `rev` (the version both devices started from)."""
    def find(mid: str) -> str | None:
        found = _run_git(root, "grep", "-l", "-F", "-e", f"id: {mid}", rev, "--", ".")
        for line in found.stdout.splitlines():
            rel = line.split(":", 1)[1] if ":" in line else ""
            shown = _git_show(root, f"{rev}:./{rel}") if rel.endswith(".md") else None
            if shown is not None:
                return shown
        return None

    return find


def _settle_duplicates(store: MemoryCore, root: Path, env: Mapping[str, str], base: str) -> list[dict[str, Any]]:
    merged = resolve_duplicates(store, apply=True, ancestor=_ancestor_in(root, base) if base else None,
                                remove="delete")
    if not merged:
        return merged
    paths = sorted({rel for item in merged for rel in (item["kept"], item["merged"])} |
                   {edit["path"] for item in merged for edit in item.get("links_rewritten", [])})
    _run_git(root, "add", "-A", "--", *paths)
    if _run_git(root, "diff", "--cached", "--quiet").returncode != 0:
        copies = f"{len(merged)} {'copy' if len(merged) == 1 else 'copies'}"
        done = _run_git(root, "commit", "-q", "-m", f"vaultmem sync: one note per memory ({copies} merged)", env=env)
        if done.returncode != 0:
            raise VaultmemError(f"git commit failed: {_last_line(done)}")
    return merged


def _stopped(result: dict[str, Any]) -> dict[str, Any]:
    names = ", ".join(result["unresolved"])
    result["success"] = False
    count = len(result["unresolved"])
    whose = "of your notes" if not result["clashes"] else "note" if count == 1 else "notes"
    result["message"] = (f"git could not merge {count} {whose} ({names}); fix the "
                         "conflict markers in them, `git add` them, then run `vaultmem sync` again")
    return result


def _finish(store: MemoryCore, result: dict[str, Any]) -> dict[str, Any]:
    store.sync()
    result.setdefault("message", "in sync")
    return result
