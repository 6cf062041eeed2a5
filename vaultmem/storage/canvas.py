"""JSON Canvas files (`.canvas`) in the vault: a file card follows the note it shows when
vaultmem moves that note, as it does when Obsidian renames one.

A canvas is the person's file. `retarget` changes only the `"file"` values that named the
old path (and, on a canvas vaultmem exported, the card's id, which vaultmem derives from the
path, with the edges that name it); every other byte stays. The edit is checked by parsing
the result: if it is not exactly the intended change, the canvas is left as it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_FILE_VALUE = re.compile(r'"file"\s*:\s*("(?:[^"\\]|\\.)*")')


def node_id(*parts: str) -> str:
    """The id vaultmem gives a canvas node or edge (`node_id("node", path)`): stable, so an
    exported canvas is recognised as vaultmem's as long as nobody changed it."""
    import hashlib  # here: OpenSSL's start-up would slow every command, and only an export needs it

    return hashlib.sha1("\x00".join(parts).encode()).hexdigest()[:16]


def retarget(text: str, old: str, new: str) -> tuple[str, list[dict[str, Any]]]:
    """(`text` with its file cards showing `old` showing `new`, [{"line", "old", "new"}] per
    card changed). Unchanged, with no changes listed, when no card shows `old` or the canvas
    is not valid JSON (a broken file is the person's to fix, never rewritten)."""
    if (json.dumps(old, ensure_ascii=False)[1:-1] not in text and json.dumps(old)[1:-1] not in text
            and "\\/" not in text and "\\u" not in text):
        return text, []  # the common case (Obsidian escapes neither / nor letters): not mentioned
    data = _canvas(text)
    if data is None:
        return text, []
    nodes = data["nodes"]
    hits = [n for n in nodes if isinstance(n, dict) and n.get("type") == "file" and n.get("file") == old]
    if not hits:
        return text, []
    new_literal = json.dumps(new, ensure_ascii=False)
    pieces, changes, last = [], [], 0
    for start, end, line, value in _file_values(text):
        if value == old:
            pieces += [text[last:start], new_literal]
            last = end
            changes.append({"line": line, "old": old, "new": new})
    edited = "".join(pieces) + text[last:]
    # A card vaultmem exported carries an id made from its path: it moves with the path, and
    # the edges that name it too, so the canvas stays recognisably vaultmem's (graph.py).
    renamed = {}
    ids = {n.get("id") for n in nodes if isinstance(n, dict)}
    if all(n.get("id") == node_id("node", old) for n in hits) and node_id("node", new) not in ids:
        renamed = {node_id("node", old): node_id("node", new)}
        for before, after in renamed.items():
            edited = edited.replace(f'"{before}"', f'"{after}"')
    if _expected(data, old, new, renamed) != _canvas(edited):
        return text, []
    return edited, changes


def file_cards(text: str) -> list[tuple[int, str]] | None:
    """(line, path) of each file card, in the order written; None when the canvas is not
    valid JSON Canvas (no `nodes` list)."""
    data = _canvas(text)
    if data is None:
        return None
    lines: dict[str, list[int]] = {}
    for _start, _end, line, value in _file_values(text):
        lines.setdefault(value, []).append(line)
    return [(lines[n["file"]].pop(0) if lines.get(n["file"]) else 0, n["file"]) for n in data["nodes"]
            if isinstance(n, dict) and n.get("type") == "file" and isinstance(n.get("file"), str)]


def _canvas(text: str) -> dict[str, Any] | None:
    """The parsed canvas, or None when it is not JSON with a `nodes` list."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("nodes"), list) else None


def _file_values(text: str) -> Iterator[tuple[int, int, int, Any]]:
    """(start, end, line, value) of each `"file": "..."` value's JSON string in `text`."""
    line, counted = 1, 0
    for match in _FILE_VALUE.finditer(text):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        line, counted = line + text.count("\n", counted, match.start(1)), match.start(1)
        yield match.start(1), match.end(1), line, value


def _expected(data: dict[str, Any], old: str, new: str, renamed: dict[str, str]) -> Any:
    out = json.loads(json.dumps(data))
    for node in out["nodes"]:
        if isinstance(node, dict):
            if node.get("type") == "file" and node.get("file") == old:
                node["file"] = new
            if node.get("id") in renamed:
                node["id"] = renamed[node["id"]]
    edges = out.get("edges")
    for edge in edges if isinstance(edges, list) else []:
        if isinstance(edge, dict):
            for end in ("fromNode", "toNode"):
                if edge.get(end) in renamed:
                    edge[end] = renamed[edge[end]]
    return out
