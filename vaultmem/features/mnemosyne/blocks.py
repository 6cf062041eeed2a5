"""Named shared blocks: one note per block in `memory/blocks/`, versioned.

A block is a whiteboard several agents share ("project_status", "deploy_freeze"). Its note
carries `version` (1, 2, 3, ... one per write), `last_writer` and `updated_at`; the body is
the content. A write reads the version, then takes the vault lock, re-reads the note and
checks the version is still the one it read. If another writer got in between, the write
either retries on top of the newer version (default: content replaces content, but every
write gets its own version number, so no write is silently lost) or, when the caller said
which version it expects (`expected_version`), fails with a ConflictError naming both
versions so the caller can re-read and merge.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from vaultmem.base import portable
from vaultmem.base.errors import (
    ConflictError,
    InvalidInput,
    MalformedNote,
    VaultmemError,
)
from vaultmem.base.timeutil import format_time, parse_time
from vaultmem.core.port import MemoryCore
from vaultmem.storage import note as notes

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
MAX_BLOCK_CHARS = 50_000
MAX_RETRIES = 5
ANONYMOUS = "anonymous"


def check_name(name: str) -> str:
    """The name, or InvalidInput: it must make a file name every platform and Obsidian accept."""
    name = (name or "").strip()
    if not NAME_RE.match(name) or name.endswith(".md"):
        raise InvalidInput(
            f"block name {name!r} is not valid; use 1-100 letters, digits, '_', '-' or '.', starting with a letter or digit"
        )
    problem = portable.name_problem(name)
    if problem:
        plain = name.rstrip(". ")
        stem = plain.split(".")[0]
        raise InvalidInput(f"block name {name!r} {problem}; use another name, such as {stem + '-block' + plain[len(stem):]!r}")
    return name


def _case_clash(store: MemoryCore, rel: str) -> None:
    """A new block whose file differs only in case from an existing one: refused (one file on
    macOS and Windows), naming the existing block."""
    other = portable.case_variant(store.vault.abs(rel))
    if other is not None:
        theirs = other.stem.removeprefix(FILE_PREFIX)
        raise InvalidInput(f"block name {rel.rsplit('/', 1)[-1][:-3].removeprefix(FILE_PREFIX)!r} differs only in "
                           f"case from the block {theirs!r}, which macOS and Windows keep in the same file; use {theirs!r}")


FILE_PREFIX = "block-"  # `block-persona.md`: a name no daily note, template or note of the person takes


def _rel(store: MemoryCore, name: str) -> str:
    """The block's note: `memory/blocks/block-<name>.md`; a block written before the prefix
    (`memory/blocks/<name>.md`) keeps its file."""
    folder = store.settings.blocks_dir.strip("/")
    legacy = f"{folder}/{name}.md"
    if not name.startswith(FILE_PREFIX) and store.vault.abs(legacy).is_file():
        return legacy
    return f"{folder}/{FILE_PREFIX}{name}.md"


def _name_of(rec: Any) -> str:
    stem = rec.path.rsplit("/", 1)[-1][:-3]
    declared = rec.props.get("block")
    if isinstance(declared, str) and declared in (stem, stem.removeprefix(FILE_PREFIX)):
        return declared
    return stem.removeprefix(FILE_PREFIX)


def _read(store: MemoryCore, rel: str) -> tuple[str, dict[str, Any], str] | None:
    """(text, properties, body) of a block note on disk, or None when it does not exist."""
    path = store.vault.abs(rel)
    try:
        text = store.vault.read_text(path)
    except FileNotFoundError:
        return None
    try:
        split = notes.split_note(text)
        props = notes.load_yaml(split.frontmatter) if split.frontmatter is not None else {}
    except MalformedNote as exc:
        raise MalformedNote(rel, f"{exc.reason}; fix it in Obsidian, vaultmem will not rewrite it") from None
    return text, props, split.body


def _version(props: dict[str, Any]) -> int:
    return int(notes.as_number(props.get("version"), 0))


def get(store: MemoryCore, name: str) -> dict[str, Any] | None:
    """The seed's BlockGetResult (content, version, lastWriter, updatedAt), or None."""
    store.vault.require()
    name = check_name(name)
    found = _read(store, _rel(store, name))
    if found is None:
        return None
    _text, props, body = found
    return {
        "name": name,
        "content": notes.strip_relations(body).strip(),
        "version": _version(props),
        "lastWriter": str(props.get("last_writer") or ANONYMOUS),
        "updatedAt": time_text(props.get("updated_at")),
        "id": str(props.get("id") or ""),
        "path": _rel(store, name),
    }


def set_(store: MemoryCore, name: str, content: str, *, agent: str | None = None,
         expected_version: int | None = None, _between: Any = None) -> dict[str, Any]:
    """Write a block; the seed's BlockSetResult (version, id) plus name and path.

    `_between(read_version)` runs after the unlocked read and before the locked write; tests
    use it to let a rival writer in at exactly that moment.
    """
    store.vault.require()
    name = check_name(name)
    if not isinstance(content, str):
        raise InvalidInput("content must be text")
    if len(content) > MAX_BLOCK_CHARS:
        raise InvalidInput(f"content is {len(content):,} characters; the limit is {MAX_BLOCK_CHARS:,}")
    if "\x00" in content:
        raise InvalidInput("content contains a NUL byte; pass plain text")
    if expected_version is not None and expected_version < 0:
        raise InvalidInput(f"expected_version must be 0 (block must not exist yet) or more, got {expected_version}")
    writer = (agent or "").strip() or ANONYMOUS
    rel = _rel(store, name)
    for _attempt in range(MAX_RETRIES):
        found = _read(store, rel)
        seen = _version(found[1]) if found else 0
        if expected_version is not None and seen != expected_version:
            raise _conflict(name, expected_version, seen)
        if _between is not None:
            _between(seen)
        with store.vault.lock():
            current = _read(store, rel)
            now_version = _version(current[1]) if current else 0
            if now_version != seen:
                if expected_version is not None:
                    raise _conflict(name, expected_version, now_version)
                continue  # another writer won: read again and write on top of its version
            version = seen + 1
            now = store.now()
            changes: dict[str, Any] = {"version": version, "last_writer": writer, "updated_at": now}
            if current is None:
                _case_clash(store, rel)
                block_id = str(uuid.uuid4())
                head: dict[str, Any] = {"id": block_id, "created": now, "memory_type": "core", "block": name}
                head.update(changes)
                text = "---\n" + "".join(notes.render_property(k, v) for k, v in head.items()) + "---\n"
            else:
                text = current[0]
                block_id = str(current[1].get("id") or uuid.uuid4())
                if not current[1].get("id"):
                    changes = {"id": block_id, **changes}
                text = notes.update_frontmatter(text, changes)
            split = notes.split_note(text)
            body = content.strip()
            new_text = split.head + (body + "\n" if body else "")
            store.vault.write_text(store.vault.abs(rel), new_text)
            store.index.refresh([rel])
            return {"version": version, "id": block_id, "name": name, "path": rel,
                    "lastWriter": writer, "updatedAt": format_time(now)}
    raise VaultmemError(
        f"block {name!r} changed {MAX_RETRIES} times while writing; another writer is busy, retry later"
    )


def time_text(value: Any) -> str | None:
    parsed = parse_time(value)
    return format_time(parsed) if parsed else None


def _conflict(name: str, expected: int, actual: int) -> ConflictError:
    return ConflictError(
        f"block {name!r} is at version {actual}, not {expected}; another writer changed it. "
        "Read it again (`vaultmem block get`) and retry"
    )


def list_(store: MemoryCore) -> list[dict[str, Any]]:
    """Every block, by name: name, version, lastWriter, updatedAt, size."""
    store.sync()
    result = []
    for rec in store.index.records("kind = 'block'"):
        name = _name_of(rec)
        result.append({
            "name": name,
            "version": int(notes.as_number(rec.props.get("version"), 0)),
            "lastWriter": str(rec.props.get("last_writer") or ANONYMOUS),
            "updatedAt": time_text(rec.props.get("updated_at")),
            "chars": len(rec.content),
            "path": rec.path,
        })
    result.sort(key=lambda b: str(b["name"]))
    return result
