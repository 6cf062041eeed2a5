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
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vaultmem.base.errors import InvalidInput, MalformedNote, VaultmemError
from vaultmem.base.timeutil import parse_time
from vaultmem.core.memories import Memories
from vaultmem.storage import note as notes
from vaultmem.storage.vault import CONFLICT_COPY, FILE_MANAGER_COPY, is_conflict_copy

COUNTERS = ("use_count", "review_count", "hit_count", "useful_count")
UNIONS = ("tags", "entities", "related")
ATTRIBUTES = "memory/**/*.md merge=vaultmem\n"


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
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _union(*lists: Any) -> list[Any]:
    out: list[Any] = []
    for items in lists:
        for item in notes.as_list(items) if not isinstance(items, list) else items:
            if item not in out:
                out.append(item)
    return out


def merge_properties(base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any],
                     history: int = 10) -> tuple[dict[str, Any], list[str]]:
    """The merged properties and the keys that clash (both sides changed them differently)."""
    merged: dict[str, Any] = {}
    clashes: list[str] = []
    ancestor = bool(base)
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
        elif key == "access_times":
            merged[key] = sorted(set(_union(a or [], b or [])), key=str)[-history:]
        elif key in UNIONS:
            merged[key] = _union(a or [], b or [])
        elif a == b or notes.same_value(a, b):
            merged[key] = a if key in ours else b
        elif key not in theirs:  # theirs removed it
            if a == o:
                continue
            merged[key] = a  # ours added or changed it: keep
        elif key not in ours:
            if b == o:
                continue
            merged[key] = b
        elif a == o:
            merged[key] = b
        elif b == o:
            merged[key] = a
        else:
            merged[key] = a
            clashes.append(key)
    return merged, clashes


def merge_file_text(base: str, ours: str, theirs: str, labels: tuple[str, str, str] = ("ours", "base", "theirs"),
                    ) -> tuple[str, bool]:
    """git merge-file -p: the three-way merge of texts; (merged, clean)."""
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
    merged, clashes = merge_properties(p_base, p_ours, p_theirs, history)
    changes = {k: v for k, v in merged.items() if k not in p_ours or not notes.same_value(p_ours[k], v)}
    removed = [k for k in p_ours if k not in merged]
    if base is None and body_ours != body_theirs:
        body, clean = merge_file_text("", body_ours, body_theirs)
    elif body_ours == body_theirs or body_theirs == body_base:
        body, clean = body_ours, True
    elif body_ours == body_base:
        body, clean = body_theirs, True
    else:
        body, clean = merge_file_text(body_base, body_ours, body_theirs)
    head = notes.update_frontmatter(ours, changes, remove=removed) if (changes or removed) else ours
    text = notes.split_note(head).head if split_ours is not None and split_ours.frontmatter is not None else ""
    newline = split_ours.newline if split_ours is not None else "\n"
    if clashes:
        lines = [f"<<<<<<< ours: {k}: {p_ours.get(k)!r}" for k in clashes] + ["======="] + \
                [f"{k}: {p_theirs.get(k)!r}" for k in clashes] + [">>>>>>> theirs (properties)"]
        body = newline.join(lines) + newline + body
        clean = False
    if split_ours is not None and split_ours.bom and not text.startswith("\ufeff"):
        text = "\ufeff" + text
    return text + body, clean


# -- git --------------------------------------------------------------------------------------


def merge_driver(base_path: str, ours_path: str, theirs_path: str, history: int = 10) -> bool:
    """git's merge driver: %O %A %B; the result goes into %A. True when clean."""
    def read(path: str) -> str | None:
        try:
            return Path(path).read_bytes().decode("utf-8")
        except FileNotFoundError:
            return None

    ours, theirs = read(ours_path), read(theirs_path)
    if ours is None or theirs is None:
        raise InvalidInput("the merge driver needs the current and the other version (%A %B)")
    base = read(base_path)
    merged, clean = merge_note(base if base else None, ours, theirs, history)
    tmp = f"{ours_path}.vaultmem-merge"
    Path(tmp).write_bytes(merged.encode("utf-8"))
    os.replace(tmp, ours_path)
    return clean


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise VaultmemError("git is not installed; install git to sync the vault with it") from None
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        raise VaultmemError(f"git {args[0]} failed in {root}: {why}")
    return done.stdout


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


def merge_copies(store: Memories, apply: bool = False) -> dict[str, Any]:
    """Conflict copies of memory notes (Obsidian Sync, Dropbox, Syncthing, iCloud, a file
    manager) merged into their original by the rule above, without an ancestor (counters take
    the larger, times the later, the bodies line by line, a clash kept between markers); with
    apply the merge is written and only then the copy goes to .trash/. A person's own notes
    are left to `vaultmem doctor`."""
    store.sync()
    found: list[dict[str, Any]] = []
    paths = {p for (p,) in store.index.db.execute("SELECT path FROM notes")}
    for rel in sorted(p for p in paths if is_conflict_copy(p)):
        original = original_of(rel)
        if original is None or original not in paths or not store.vault.owns(original):
            continue
        target = store.vault.abs(original)
        try:
            ours, stamp = store.vault.read_stamped(target)
            theirs = store.vault.read_text(store.vault.abs(rel))
        except FileNotFoundError:
            continue
        merged, clean = merge_note(None, ours, theirs, store.settings.access_history_size)
        item: dict[str, Any] = {"copy": rel, "original": original, "clean": clean,
                                "changed": merged != ours, "status": "would merge"}
        if apply:
            with store.vault.lock():
                # compare-and-swap: an edit that lands meanwhile is never overwritten
                if merged != ours and not store.vault.replace_if_unchanged(target, ours, stamp, merged):
                    item["status"] = "skipped: the original changed meanwhile (merged on the next run)"
                    found.append(item)
                    continue
                item["trashed_to"] = store.vault.trash(rel)
            store.index.refresh([original], removed=[rel])
            item["status"] = "merged"
        found.append(item)
    return {"success": True, "applied": apply, "copies": found, "count": len(found)}
