"""The knowledge graph: relations between notes, read from the catalog's `links` table.

Links are stored as written and resolved here, at query time, against the notes the catalog
holds now (`links.Resolver`): a rename or deletion is reflected as soon as the next sync has
updated the notes table, without re-reading or re-resolving any file.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vaultmem.base.errors import InvalidInput, MalformedNote, NotFound, NotOwned
from vaultmem.base.timeutil import format_time, parse_time
from vaultmem.core.model import MAX_PAGE_SIZE, paginate
from vaultmem.core.port import MemoryCore
from vaultmem.storage import canvas
from vaultmem.storage import links as linkmod
from vaultmem.storage import note as notes
from vaultmem.storage.record import Record

MAX_IDS = 100
GRAPH_STATUSES = ("active", "promoted", "archived", "all")
_LINK_COLUMNS = ("l.src, l.pos, l.target, l.target_key, l.subpath, l.alias, l.embed, l.type, l.strength, l.meta,"
                 " l.line, l.dst")


@dataclasses.dataclass
class Edge:
    """One stored link, with the note its target resolves to (`dst` None: unresolved)."""

    src: str
    pos: int
    target: str
    key: str
    subpath: str
    alias: str
    embed: bool
    type: str
    strength: float
    metadata: dict[str, str]
    line: int
    dst: str | None
    src_kind: str | None
    src_id: str | None
    dst_kind: str | None
    dst_id: str | None
    src_status: str | None = None
    dst_status: str | None = None


class Catalog:
    """Read access to the catalog's links (resolved at sync time) and notes."""

    def __init__(self, store: MemoryCore) -> None:
        self.db = store.index.db

    @functools.cached_property
    def notes(self) -> dict[str, tuple[str, str | None, str | None]]:
        """path -> (kind, id, status) of every note."""
        return {path: (kind, nid, status)
                for path, kind, nid, status in self.db.execute("SELECT path, kind, id, status FROM notes")}

    def edges(self, where: str = "1", params: Sequence[Any] = ()) -> list[Edge]:
        sql = (f"SELECT {_LINK_COLUMNS}, a.kind, a.id, b.kind, b.id, a.status, b.status FROM links l"
               " LEFT JOIN notes a ON a.path = l.src LEFT JOIN notes b ON b.path = l.dst"
               f" WHERE {where} ORDER BY l.src, l.pos")
        result = []
        for row in self.db.execute(sql, params):
            (src, pos, target, key, subpath, alias, embed, typ, strength, meta, line, dst,
             src_kind, src_id, dst_kind, dst_id, src_status, dst_status) = row
            result.append(Edge(src, pos, target, key, subpath, alias, bool(embed), typ, strength,
                               json.loads(meta) if meta else {}, line, dst,
                               src_kind, src_id if src_kind == "memory" else None,
                               dst_kind, dst_id if dst_kind == "memory" else None, src_status, dst_status))
        return result

    def incoming(self, path: str) -> list[Edge]:
        """Links from other notes that resolve to `path`."""
        found = self.edges("l.dst = ? AND l.src != ?", (path, path))
        found.sort(key=lambda e: (e.src, e.line, e.pos))
        return found


def relation_id(from_key: str, relation_type: str, to_key: str) -> str:
    """A stable relation id: the same source, type and target always give the same id."""
    return "rel-" + hashlib.sha1(f"{from_key}|{relation_type}|{to_key}".encode()).hexdigest()[:16]


def edge_dict(edge: Edge) -> dict[str, Any]:
    """A relation in the seed's shape (`id, from, to, type, strength, created_at`) plus paths."""
    from_id, to_id = edge.src_id, edge.dst_id
    return {
        "id": relation_id(from_id or edge.src, edge.type, to_id or edge.dst or edge.key),
        "from": from_id,
        "to": to_id,
        "type": edge.type,
        "strength": edge.strength,
        "created_at": None,
        "metadata": edge.metadata,
        "from_path": edge.src,
        "to_path": edge.dst,
        "target": edge.target,
        "line": edge.line,
    }


# -- create_relation --------------------------------------------------------------------------


def relate(store: MemoryCore, from_ref: str, to_ref: str, relation_type: str,
           strength: float = 1.0, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write `- type:: [[to]] (strength:: s) (k:: v)` into FROM's `## Relations` section."""
    meta = linkmod.validate_relation(relation_type, strength, metadata)
    # Relation metadata is written into the note like content: refuse credentials the same way.
    from vaultmem.base import secrets

    secrets.check("\n".join(f"{k}: {v}" for k, v in meta.items()))
    strength = float(strength)
    store.sync()
    src = store.resolve(from_ref)
    dst = store.resolve(to_ref)
    if src.path == dst.path:
        raise InvalidInput(f"cannot relate memory {src.id} to itself; pass two different memories")
    target_name = dst.path.rsplit("/", 1)[-1][:-3]
    line = linkmod.render_relation(relation_type, target_name, strength, meta)
    if not store.vault.owns(src.path):
        raise NotOwned(f"{src.path} is outside vaultmem's folders, so it is yours: vaultmem reads it but never "
                       "writes it; relate from a memory under memory/, or write the link in Obsidian")
    with store.vault.lock():
        try:
            path = store.vault.abs(src.path)
            raw = path.read_bytes()
        except FileNotFoundError:  # moved since the sync: follow it
            store.index.sync()
            src = store.resolve(src.id or src.path)
            path = store.vault.abs(src.path)
            raw = path.read_bytes()
        text = raw.decode("utf-8")  # not read_text: it would turn CRLF into LF
        try:
            split = notes.split_note(text)
            if split.frontmatter is not None:
                notes.load_yaml(split.frontmatter)
        except MalformedNote as exc:
            raise MalformedNote(src.path, f"{exc.reason}; fix it in Obsidian, vaultmem will not rewrite it") from None
        keys = linkmod.keys_for(dst.path, linkmod.aliases_of(dst.props))
        existed = any(link.type == relation_type and link.key in keys for link in linkmod.parse_links(split.body))
        try:
            body = linkmod.set_relation(split.body, line, relation_type, keys, split.newline)
        except ValueError as exc:
            raise InvalidInput(f"{src.path}: {exc}") from None
        changed = body != split.body
        if changed:
            store.vault.write_text(path, split.head + body)
        store.index.refresh([src.path])
    verb = "updated" if existed and changed else "already exists" if existed else "created"
    return {
        "success": True,
        "relation_id": relation_id(src.id or src.path, relation_type, dst.id or dst.path),
        "from": src.id,
        "to": dst.id,
        "type": relation_type,
        "strength": strength,
        "metadata": meta,
        "path": src.path,
        "existed": existed,
        "message": f"Relation {verb}: {src.id} --[{relation_type}]--> {dst.id}",
    }


# -- open_memories ----------------------------------------------------------------------------


def relations_of(cat: Catalog, path: str) -> dict[str, list[dict[str, Any]]]:
    """Outgoing and incoming links of one note, typed relations and `links_to` alike."""
    outgoing = []
    for edge in cat.edges("l.src = ?", (path,)):
        if edge.dst == path or edge.key == "" or linkmod.is_attachment(edge.target):
            continue
        outgoing.append({"to": edge.dst_id, "to_path": edge.dst, "target": edge.target,
                         "type": edge.type, "strength": edge.strength, "metadata": edge.metadata,
                         "resolved": edge.dst is not None})
    incoming = [{"from": e.src_id, "from_path": e.src, "kind": e.src_kind, "type": e.type,
                 "strength": e.strength, "metadata": e.metadata} for e in cat.incoming(path)]
    incoming.sort(key=lambda r: (r["from_path"], r["type"]))
    return {"outgoing": outgoing, "incoming": incoming}


def open_memories(store: MemoryCore, refs: Sequence[str] | str, *, include_relations: bool = True,
                  include_scores: bool = True, page: int | None = None,
                  page_size: int | None = None) -> dict[str, Any]:
    """The seed's open_memories: memories by id, with relations, `not_found`, pagination."""
    if isinstance(refs, str):
        refs = [refs]
    if len(refs) > MAX_IDS:
        raise InvalidInput(f"{len(refs)} ids given; open at most {MAX_IDS} at a time")
    store.sync()
    now = store.now()
    found: list[Record] = []
    not_found: list[str] = []
    for ref in refs:
        try:
            rec = store.resolve(ref)
        except NotFound:
            not_found.append(ref)
            continue
        if not store.visible(rec):  # another agent's private memory: as if it did not exist
            not_found.append(ref)
            continue
        if all(r.path != rec.path for r in found):
            found.append(rec)
    shown, pagination = paginate(found, page, page_size, default_size=MAX_PAGE_SIZE if page is None else 10)
    cat = Catalog(store) if include_relations else None
    memories = []
    for rec in shown:
        item = store.memory_dict(rec, now)
        for key in ("promoted_at", "promoted_to"):
            value = rec.props.get(key)
            when = parse_time(value, store.settings.naive_zone) if key == "promoted_at" else None
            item.setdefault(key, format_time(when) if when else value)
        if not include_scores:
            item.pop("score", None)
            item.pop("age_days", None)
        if cat is not None:
            item["relations"] = relations_of(cat, rec.path)
        memories.append(item)
    return {"success": bool(memories) or not refs, "count": len(memories), "memories": memories,
            "not_found": not_found, "pagination": pagination}


# -- read_graph ---------------------------------------------------------------------------------


def _statuses(status: str) -> tuple[str, ...] | None:
    if status not in GRAPH_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(GRAPH_STATUSES)}, got {status!r}")
    return None if status == "all" else (status,)


def _scored_memories(store: MemoryCore, statuses: tuple[str, ...] | None,
                     now: dt.datetime) -> list[tuple[str, float, int]]:
    """(path, score, use_count) of every memory in the filter (Memories.scored_memories)."""
    return [(path, score, uses) for path, _status, score, uses in store.scored_memories(statuses, now)]


def _count_relations(db: Any, statuses: tuple[str, ...] | None) -> int:
    """Links between two memories in the filter: all resolved links minus those touching a
    note outside it (few, and both lookups use an index; a join per link is far slower)."""
    outside = "SELECT path FROM notes WHERE NOT (kind = 'memory'"
    params: list[Any] = list(statuses or ())
    outside += f" AND status IN ({','.join('?' * len(statuses))}))" if statuses else ")"
    total = db.execute("SELECT count(*) FROM links WHERE dst IS NOT NULL AND src != dst").fetchone()[0]
    touching = db.execute("SELECT count(*) FROM links WHERE dst IS NOT NULL AND src != dst"
                          f" AND (src IN ({outside}) OR dst IN ({outside}))", params + params).fetchone()[0]
    return total - touching


def read_graph(store: MemoryCore, status: str = "active", *, include_scores: bool = True,
               limit: int | None = None, page: int | None = None, page_size: int | None = None,
               all_relations: bool = False) -> dict[str, Any]:
    """The seed's read_graph: a page of memories (best score first), the relations between
    memories in the filter, and stats over the whole filtered graph.

    `relations` holds the relations that touch a memory on this page (both ends in the
    filter), which keeps the result bounded; `all_relations=True` returns every one, as the
    seed does. `stats.total_relations` always counts them all.
    """
    statuses = _statuses(status)
    if limit is not None and not 1 <= limit <= 10_000:
        raise InvalidInput(f"limit must be between 1 and 10000, got {limit}")
    store.sync()
    now = store.now()
    scored = _scored_memories(store, statuses, now)
    scored.sort(key=lambda r: (-r[1], r[0]))
    if limit is not None:
        scored = scored[:limit]
    shown, pagination = paginate(scored, page, page_size)
    cat = Catalog(store)
    members = {path for path, _s, _u in scored}
    if limit is None:
        total_relations = _count_relations(cat.db, statuses)
    else:
        total_relations = sum(1 for src, dst in cat.db.execute("SELECT src, dst FROM links WHERE dst IS NOT NULL")
                              if src != dst and src in members and dst in members)
    if all_relations:
        edges = cat.edges("l.dst IS NOT NULL")
    elif shown:
        page_paths = [p for p, _s, _u in shown]
        listed = json.dumps(page_paths)
        edges = cat.edges(f"l.rowid IN (SELECT rowid FROM links WHERE src IN ({linkmod.JSON_VALUES})"
                          f" UNION SELECT rowid FROM links WHERE dst IN ({linkmod.JSON_VALUES}))", [listed, listed])
    else:
        edges = []
    edges = [e for e in edges if e.src != e.dst and e.src in members and e.dst in members]
    relations = [edge_dict(e) for e in edges]
    relations.sort(key=lambda r: (r["from_path"], r["line"], r["to_path"]))
    records = store.index.by_paths([p for p, _s, _u in shown])
    memories = []
    for path, _s, _u in shown:
        item = store.memory_dict(records[path], now)
        if not include_scores:
            item.pop("score", None)
            item.pop("age_days", None)
        memories.append(item)
    stats = {
        "total_memories": len(scored),
        "total_relations": total_relations,
        "avg_score": round(sum(s for _p, s, _u in scored) / len(scored), 4) if scored else 0.0,
        "avg_use_count": round(sum(u for _p, _s, u in scored) / len(scored), 2) if scored else 0.0,
        "status_filter": status,
        "relations_shown": "all" if all_relations else "page",
    }
    return {"success": True, "memories": memories, "relations": relations, "stats": stats,
            "pagination": pagination}


# -- backlinks ------------------------------------------------------------------------------------


def backlinks(store: MemoryCore, ref: str) -> dict[str, Any]:
    """Which memories and which of the person's notes link to a memory (or note)."""
    store.sync()
    rec = store.resolve(ref, kinds=("memory", "note"))
    cat = Catalog(store)
    memories: list[dict[str, Any]] = []
    person_notes: list[dict[str, Any]] = []
    for edge in cat.incoming(rec.path):
        kind = edge.src_kind
        item = {"path": edge.src, "id": edge.src_id, "type": edge.type, "strength": edge.strength,
                "line": edge.line, "embed": edge.embed, "subpath": edge.subpath or None}
        (memories if kind == "memory" else person_notes).append(item)
    for items in (memories, person_notes):
        items.sort(key=lambda r: (r["path"], r["line"]))
    count = len(memories) + len(person_notes)
    return {"success": True, "memory_id": rec.id, "path": rec.path, "count": count,
            "memories": memories, "notes": person_notes,
            "message": f"{count} link{'s' if count != 1 else ''} to {rec.path}"}


# -- canvas ---------------------------------------------------------------------------------------

NODE_WIDTH, NODE_HEIGHT = 400, 240
# JSON Canvas preset colours: 1 red, 2 orange, 3 yellow, 4 green, 5 cyan, 6 purple. A
# memory's colour says its status; one due for review (score in the danger zone) is yellow;
# the person's own notes keep the default colour.
STATUS_COLORS = {"active": "5", "promoted": "4", "archived": "2"}
REVIEW_COLOR = "3"


def export_canvas(store: MemoryCore, out: Path | str, *, status: str = "all", around: str | None = None,
                  depth: int = 2) -> dict[str, Any]:
    """Write a JSON Canvas 1.0 file: one file node per note, one labelled edge per relation."""
    statuses = _statuses(status)
    if depth < 0 or depth > 10:
        raise InvalidInput(f"depth must be between 0 and 10, got {depth}")
    out = Path(out)
    if out.suffix != ".canvas":
        raise InvalidInput(f"{out} does not end in .canvas; Obsidian opens only .canvas files as canvases")
    rel = _canvas_rel(store, out)
    store.sync()
    cat = Catalog(store)
    all_edges = [e for e in cat.edges() if e.dst is not None and e.dst != e.src and e.key]
    if around is None:
        nodes = sorted(p for p, (kind, _i, st) in cat.notes.items()
                       if kind == "memory" and (statuses is None or st in statuses))
        members = set(nodes)
        rings = [nodes]
    else:
        center = store.resolve(around, kinds=("memory", "note")).path
        neighbours: dict[str, set[str]] = {}
        for e in all_edges:
            neighbours.setdefault(e.src, set()).add(e.dst)  # type: ignore[arg-type]
            neighbours.setdefault(e.dst, set()).add(e.src)  # type: ignore[arg-type]
        members, rings, frontier = {center}, [[center]], [center]
        for _ in range(depth):
            nxt = sorted({n for p in frontier for n in neighbours.get(p, ()) if n not in members
                          and (cat.notes.get(n, ("",))[0] != "memory" or statuses is None or cat.notes[n][2] in statuses)})
            if not nxt:
                break
            members.update(nxt)
            rings.append(nxt)
            frontier = nxt
    nodes_json = []
    node_id = {}
    records = store.index.by_paths(sorted(members))
    now = store.now()
    zone = (store.settings.review_danger_zone_min, store.settings.review_danger_zone_max)
    for r, ring in enumerate(rings):
        for i, path in enumerate(ring):
            if around is None:  # a grid
                cols = max(1, math.ceil(math.sqrt(len(ring))))
                x, y = (i % cols) * (NODE_WIDTH + 100), (i // cols) * (NODE_HEIGHT + 100)
            else:  # rings around the centre
                radius = r * (NODE_WIDTH + 250)
                angle = 2 * math.pi * i / len(ring)
                x, y = round(radius * math.cos(angle)), round(radius * math.sin(angle))
            node_id[path] = canvas.node_id("node", path)
            node: dict[str, Any] = {"id": node_id[path], "type": "file", "file": path, "x": int(x), "y": int(y),
                                    "width": NODE_WIDTH, "height": NODE_HEIGHT}
            rec = records.get(path)
            if rec is not None and rec.kind == "memory":
                # a bigger card for a memory used more and held stronger: up to 1.5x at 10 uses, strength 2
                grow = 1 + 0.25 * min(rec.use_count, 10) / 10 + 0.25 * (min(max(rec.strength, 1.0), 2.0) - 1)
                node["width"], node["height"] = round(NODE_WIDTH * grow), round(NODE_HEIGHT * grow)
                score = store.score_of(rec, now)
                due = rec.status == "active" and zone[0] <= score <= zone[1]
                node["color"] = REVIEW_COLOR if due else STATUS_COLORS.get(rec.status or "", "5")
            nodes_json.append(node)
    edges_json, seen = [], set()
    for e in all_edges:
        if e.src in members and e.dst in members:
            key = (e.src, e.dst, e.type or "")
            if key in seen:  # a note linking twice to one note (body and relation, two mentions): one edge
                continue
            seen.add(key)
            edge = {"id": canvas.node_id("edge", *key), "fromNode": node_id[e.src], "toNode": node_id[e.dst],
                    "toEnd": "arrow"}
            if e.type and e.type != "links_to":  # a typed relation is labelled; a plain link is not
                edge["label"] = e.type
            edges_json.append(edge)
    document = {"nodes": nodes_json, "edges": edges_json}
    target = store.vault.abs(rel)
    with store.vault.lock():
        _check_replaceable(target, rel)
        store.vault.write_text(target, json.dumps(document, indent="\t", ensure_ascii=False) + "\n")
    return {"success": True, "path": rel, "nodes": len(nodes_json), "edges": len(edges_json),
            "message": f"Wrote {rel} ({len(nodes_json)} notes, {len(edges_json)} links)"}


def _canvas_rel(store: MemoryCore, out: Path) -> str:
    """The vault-relative path of the canvas to write: a relative path is read from the vault's
    root (wherever the command runs), an absolute one must lie inside the vault."""
    if out.is_absolute():
        root = store.vault.root.resolve()
        target = out.parent.resolve() / out.name if out.parent.exists() else out
        if not target.is_relative_to(root):
            raise InvalidInput(f"canvas {out} is outside the vault; pass a path inside it, "
                               "e.g. memory/graph.canvas (read from the vault's folder)")
        return target.relative_to(root).as_posix()
    rel = out.as_posix()
    store.vault.abs(rel)  # refuses `..` and a symlink out of the vault
    return rel


def _check_replaceable(path: Path, rel: str) -> None:
    """Replace an existing canvas only when vaultmem wrote it as it stands: every node a file
    node carrying the id vaultmem gives that file. A canvas the person made or edited stays."""
    if not path.exists():
        return
    try:
        data = json.loads(path.read_bytes())
        nodes = data.get("nodes", []) if isinstance(data, dict) else None
        ours = isinstance(nodes, list) and all(
            isinstance(n, dict) and n.get("type") == "file" and n.get("id") == canvas.node_id("node", str(n.get("file")))
            for n in nodes)
    except (ValueError, OSError):
        ours = False
    if not ours:
        raise InvalidInput(f"{rel} exists and is not a canvas vaultmem wrote (or you edited it); "
                           "pass another file name, or delete it first")


def validate_canvas(data: Any) -> list[str]:
    """Problems with a JSON Canvas 1.0 document (empty list: valid)."""
    problems: list[str] = []
    if not isinstance(data, dict):
        return ["top level is not an object"]
    nodes, edges = data.get("nodes", []), data.get("edges", [])
    if not isinstance(nodes, list) or not isinstance(edges, list):
        return ["nodes and edges must be arrays"]
    ids: set[str] = set()
    required_by_type = {"text": ("text",), "file": ("file",), "link": ("url",), "group": ()}
    for n in nodes:
        for key, kind in (("id", str), ("type", str), ("x", int), ("y", int), ("width", int), ("height", int)):
            if not isinstance(n.get(key), kind) or isinstance(n.get(key), bool):
                problems.append(f"node {n.get('id')!r}: {key} missing or not {kind.__name__}")
        if n.get("type") not in required_by_type:
            problems.append(f"node {n.get('id')!r}: unknown type {n.get('type')!r}")
        for key in required_by_type.get(n.get("type"), ()):
            if not isinstance(n.get(key), str):
                problems.append(f"node {n.get('id')!r}: {key} missing")
        if n.get("id") in ids:
            problems.append(f"duplicate id {n.get('id')!r}")
        ids.add(n.get("id"))
    node_ids = set(ids)
    for e in edges:
        for key in ("id", "fromNode", "toNode"):
            if not isinstance(e.get(key), str):
                problems.append(f"edge {e.get('id')!r}: {key} missing")
        if e.get("id") in ids:
            problems.append(f"duplicate id {e.get('id')!r}")
        ids.add(e.get("id"))
        for key in ("fromNode", "toNode"):
            if e.get(key) not in node_ids:
                problems.append(f"edge {e.get('id')!r}: {key} {e.get(key)!r} names no node")
        for key in ("fromSide", "toSide"):
            if key in e and e[key] not in ("top", "right", "bottom", "left"):
                problems.append(f"edge {e.get('id')!r}: bad {key}")
        for key in ("fromEnd", "toEnd"):
            if key in e and e[key] not in ("none", "arrow"):
                problems.append(f"edge {e.get('id')!r}: bad {key}")
        if "label" in e and not isinstance(e["label"], str):
            problems.append(f"edge {e.get('id')!r}: label is not text")
    for item in [*nodes, *edges]:
        color = item.get("color")
        if color is not None and not (color in ("1", "2", "3", "4", "5", "6")
                                      or (isinstance(color, str) and re.fullmatch(r"#[0-9A-Fa-f]{6}", color))):
            problems.append(f"{item.get('id')!r}: color {color!r} is neither a preset (1-6) nor #RRGGBB")
    return problems


def unresolved(cat: Catalog) -> Iterable[Edge]:
    """Links to notes that do not exist (attachments and `[[#heading]]` links left out)."""
    for edge in cat.edges("l.dst IS NULL AND l.target_key != ''"):
        if not linkmod.is_attachment(edge.target):
            yield edge
