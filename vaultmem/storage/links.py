"""Wikilinks, markdown links, typed relations and Obsidian-style link resolution.

Parsing uses markdown-it-py with one extra inline rule (`wikilink`), so code spans, fenced
and indented code and escaped `\\[[...]]` are skipped exactly as Obsidian renders them;
markdown links `[text](../Note.md)` come from markdown-it's own link and image rules (see
`vault_path_of` for how their targets are read). When a note moves, `retarget` and
`refolder` rewrite the links to it and its own relative links, byte-exactly.

Typed relations are Dataview inline fields on one line inside a note's `## Relations`
section; the relation's strength and metadata are parenthesised inline fields after the link:

    ## Relations
    - supports:: [[api-guidelines-1a2b3c4d]] (strength:: 0.9) (reason:: same project)

Every other wikilink (and a field whose key is not a relation type) is an untyped
`links_to` edge. Resolution follows Obsidian: a path (`[[folder/note]]`), else the file name
(case-insensitive, nearest folder first when names clash), else a note's `aliases`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from vaultmem.base.errors import InvalidInput
from vaultmem.storage import note as notes

RELATION_TYPES = ("related", "causes", "supports", "contradicts", "has_decision", "consolidated_from")
UNTYPED = "links_to"
RELATIONS_HEADING = "Relations"
# Targets with one of these extensions are attachments (images, PDFs, canvases), not notes.
ATTACHMENT_EXTENSIONS = frozenset(
    "png jpg jpeg gif bmp svg webp avif pdf mp3 mp4 webm wav m4a ogg flac mov mkv canvas excalidraw base".split()
)
_FIELD = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?([A-Za-z_][\w-]*)::[ \t]*")
_ATTR = re.compile(r"\(([A-Za-z_][\w-]*)::[ \t]*([^()\n]*?)[ \t]*\)")
_META_KEY = re.compile(r"^[A-Za-z_][\w-]*$")
_RESERVED_META = {"strength"}


@dataclasses.dataclass
class Link:
    """One wikilink in a note; `type` is a relation type or `links_to`."""

    target: str  # the link target without #subpath and |alias, as written
    subpath: str = ""  # "Heading" or "^block" (without the leading #)
    alias: str = ""
    embed: bool = False
    type: str = UNTYPED
    strength: float = 1.0
    metadata: dict[str, str] = dataclasses.field(default_factory=dict)
    line: int = 0  # 1-based line in the file
    style: str = "wiki"  # "wiki" ([[target]]) or "markdown" ([text](path.md))
    raw: str = ""  # a markdown link's target exactly as written (percent-escapes kept, no <>)

    @property
    def key(self) -> str:
        return target_key(self.target)

    @property
    def is_attachment(self) -> bool:
        return is_attachment(self.target)


def target_key(target: str) -> str:
    """How a link target is looked up: NFC, lowercase, no `.md`, forward slashes, no leading /."""
    key = _fold(target.strip().replace("\\", "/").lstrip("/"))
    return key[:-3] if key.endswith(".md") else key


def _fold(text: str) -> str:
    """Case- and normalisation-insensitive form (macOS file names are often NFD: `zoe\u0308`)."""
    return text.lower() if text.isascii() else unicodedata.normalize("NFC", text).lower()


def is_attachment(target: str) -> bool:
    name = target.rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[-1].lower() in ATTACHMENT_EXTENSIONS


# -- parsing ----------------------------------------------------------------------------------


def _line_of(state: Any, src: str, pos: int) -> int:
    """Newlines in `src` before `pos`, counted on from the previous link of the same text:
    linear in the text, not quadratic in its links."""
    prev_src, prev_pos, prev_n = state.env.get("_vaultmem_nl", (None, 0, 0))
    if prev_src is not src or pos < prev_pos:
        prev_pos, prev_n = 0, 0
    n = prev_n + src.count("\n", prev_pos, pos)
    state.env["_vaultmem_nl"] = (src, pos, n)
    return n


def _wikilink_rule(state: Any, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src.startswith("![[", pos):
        start, embed = pos + 3, True
    elif src.startswith("[[", pos):
        start, embed = pos + 2, False
    else:
        return False
    end = src.find("]]", start)
    if end < 0:
        return False
    inner = src[start:end]
    if not inner.strip() or "\n" in inner or "[" in inner:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.content = inner
        token.meta = {"embed": embed, "nl": _line_of(state, src, pos)}
    state.pos = end + 2
    return True


def _located(rule: Any) -> Any:
    """markdown-it's own link/image rule, noting where in the text the link starts (its
    line) and its source text (for the target exactly as written)."""
    def located(state: Any, silent: bool) -> bool:
        pos, count = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent:  # pending text is flushed first: the link's own token follows it
            token = next((t for t in state.tokens[count:] if t.type in ("link_open", "image")), None)
            if token is not None:
                token.meta = {**(token.meta or {}), "nl": _line_of(state, state.src, pos),
                              "source": state.src[pos:state.pos]}
        return True

    return located


_MD: Any = None


def _markdown() -> Any:
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt
        from markdown_it.rules_inline import image, link

        md = MarkdownIt("commonmark")
        md.inline.ruler.before("link", "wikilink", _wikilink_rule)
        md.inline.ruler.at("link", _located(link))
        md.inline.ruler.at("image", _located(image))
        _MD = md
    return _MD


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_MD_TARGET = re.compile(r"\]\(\s*(?:<([^>\n]*)>|([^\s()]*(?:\([^\s()]*\)[^\s()]*)*))")


def markdown_target(source: str) -> str | None:
    """The target of `[text](target "title")` as written in `source`, or None."""
    found = list(_MD_TARGET.finditer(source))  # the last `](`: the text may hold brackets
    if not found:
        return None
    match = found[-1]
    return match.group(1) if match.group(1) is not None else match.group(2)


def vault_path_of(raw: str, source: str) -> str | None:
    """A markdown link's note path: from the vault root with a leading `/`; relative to the
    source note's folder with `./` or `../`; a plain `Note.md` or `Folder/Note.md` as written,
    as Obsidian's "shortest" and "absolute" link formats write it (the resolver tries it as a
    vault path, then by name nearest the source, which also finds `Note.md` beside the source).
    None for a URL, a `#heading` of the note itself, a path leading out of the vault, or a
    file that is neither a note nor an attachment (`notes.txt`, `script.py`)."""
    import posixpath

    if not raw or _SCHEME.match(raw) or raw.startswith(("#", "//")):
        return None
    target = _decoded(raw)
    if target.startswith("/"):
        joined = target.lstrip("/")
    elif target.startswith(("./", "../")) or target in (".", ".."):
        joined = relative_path_of(raw, source) or ""
    else:
        joined = target
    normal = posixpath.normpath(joined) if joined else ""
    if normal.startswith("../"):  # `a/../../b.md`: written plain, but relative all the same
        normal = relative_path_of(raw, source) or ""
    if normal in (".", "", "..") or normal.startswith("../") or not _linkable(normal):
        return None
    return normal


def relative_path_of(raw: str, source: str) -> str | None:
    """The vault path a markdown link's target names read relative to `source`'s folder (what
    Obsidian's "relative path" format writes), or None when it leads out of the vault."""
    import posixpath

    folder = source.rsplit("/", 1)[0] if "/" in source else ""
    normal = posixpath.normpath(posixpath.join(folder, _decoded(raw).lstrip("/")))
    return None if normal in (".", "", "..") or normal.startswith("../") else normal


def _decoded(raw: str) -> str:
    """A markdown link target's path part: percent-escapes decoded, `\\` as `/`, no `#heading`."""
    from urllib.parse import unquote

    return unquote(raw.partition("#")[0]).replace("\\", "/")


_OTHER_EXTENSION = re.compile(r"[a-z][a-z0-9]{0,7}")


def _linkable(path: str) -> bool:
    """A note (no extension, `.md`, or a dotted name such as `Release v1.2`) or an attachment;
    not another kind of file (`notes.txt`, `page.html`, `example.com`), which is no note."""
    name = path.rsplit("/", 1)[-1]
    if "." not in name:
        return True
    ext = name.rsplit(".", 1)[1].lower()
    return ext == "md" or ext in ATTACHMENT_EXTENSIONS or not _OTHER_EXTENSION.fullmatch(ext)


def split_inner(inner: str) -> tuple[str, str, str]:
    """`Target#Heading|Alias` -> (target, subpath, alias); `\\|` (inside tables) is a `|`."""
    inner = inner.replace("\\|", "|")
    target, _, alias = inner.partition("|")
    target, _, subpath = target.partition("#")
    return target.strip(), subpath.strip(), alias.strip()


def parse_links(body: str, line_offset: int = 0, source: str = "") -> list[Link]:
    """Every wikilink, embed and markdown link to a note or attachment in a note body, with
    relation types from `## Relations`. Markdown links resolve against `source`'s folder."""
    if "[[" not in body and "](" not in body:
        return []
    tokens = _markdown().parse(body)
    links: list[Link] = []
    in_relations = False
    heading_level = 0
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            heading_level = int(token.tag[1])
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            if heading_level <= 2:
                in_relations = heading_level == 2 and title == RELATIONS_HEADING
            continue
        if token.type != "inline" or not token.children:
            continue
        first_line = (token.map[0] if token.map else 0) + 1 + line_offset
        wiki: list[Link] = []
        found = []
        for child in token.children:  # in reading order, wikilinks and markdown links alike
            if child.type == "wikilink":
                target, subpath, alias = split_inner(child.content)
                wiki.append(Link(target=target, subpath=subpath, alias=alias, embed=child.meta["embed"],
                                 line=first_line + child.meta["nl"]))
                found.append(child)
                links.append(wiki[-1])
            elif child.type in ("link_open", "image") and child.meta and "source" in child.meta:
                link = _markdown_link(child, source, first_line)
                if link is not None:
                    links.append(link)
        if wiki and in_relations:
            _apply_fields(wiki, found, token.content.split("\n"))
    return links


def _markdown_link(token: Any, source: str, first_line: int) -> Link | None:
    raw = markdown_target(token.meta["source"])
    if raw is None:
        return None
    path = vault_path_of(raw, source)
    if path is None:
        return None
    from urllib.parse import unquote

    subpath = unquote(raw.partition("#")[2])
    return Link(target=path, subpath=subpath, embed=token.type == "image", line=first_line + token.meta["nl"],
                style="markdown", raw=raw)


_PROPERTY_LINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")


def property_links(props: Mapping[str, Any], frontmatter: str | None) -> list[Link]:
    """Links in frontmatter property values (`related: "[[note]]"`, lists too), which Obsidian
    shows in the graph; a property named like a relation type gives that type."""
    if not frontmatter or "[[" not in frontmatter:
        return []
    lines = frontmatter.splitlines()
    found: list[Link] = []
    for key, value in props.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if not isinstance(item, str):
                continue
            for match in _PROPERTY_LINK.finditer(item):
                target, subpath, alias = split_inner(match.group(1))
                if not target and not subpath:
                    continue
                line = next((i + 2 for i, text in enumerate(lines) if match.group(0) in text), 1)
                found.append(Link(target=target, subpath=subpath, alias=alias, line=line,
                                  type=key if key in RELATION_TYPES else UNTYPED))
    return found


def note_links(frontmatter: str | None, props: Mapping[str, Any], body: str, body_line_offset: int,
               source: str = "") -> list[Link]:
    """Every link of a note: frontmatter properties first, then the body."""
    return property_links(props, frontmatter) + parse_links(body, body_line_offset, source)


def _apply_fields(links: list[Link], tokens: list[Any], lines: list[str]) -> None:
    """Type the links of `key:: [[target]] (strength:: x) (k:: v)` lines."""
    by_line: dict[int, list[Link]] = {}
    for link, tok in zip(links, tokens, strict=True):
        by_line.setdefault(tok.meta["nl"], []).append(link)
    for nl, line_links in by_line.items():
        text = lines[nl] if nl < len(lines) else ""
        field = _FIELD.match(text)
        if not field or field.group(1) not in RELATION_TYPES:
            continue
        attrs_at = text.find("(", field.end())
        strength, metadata = 1.0, {}
        for key, value in _ATTR.findall(text[field.end():]):
            if key == "strength":
                strength = _strength(value)
            else:
                metadata[key] = value
        typed = line_links
        if attrs_at >= 0:  # links inside the (key:: value) attributes stay untyped
            before = text[:attrs_at].count("[[")
            typed = line_links[:before]
        for link in typed:
            link.type, link.strength, link.metadata = field.group(1), strength, dict(metadata)


def _strength(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        return 1.0
    return min(1.0, max(0.0, number)) if math.isfinite(number) else 1.0


# -- writing ----------------------------------------------------------------------------------


def validate_relation(relation_type: str, strength: float, metadata: Mapping[str, Any] | None) -> dict[str, str]:
    """Check a relation's parts; returns the metadata as text values."""
    if relation_type not in RELATION_TYPES:
        raise InvalidInput(f"unknown relation type {relation_type!r}; use one of {', '.join(RELATION_TYPES)}")
    if isinstance(strength, bool) or not isinstance(strength, (int, float)) or not 0.0 <= strength <= 1.0:
        raise InvalidInput(f"relation strength must be between 0.0 and 1.0, got {strength!r}")
    clean: dict[str, str] = {}
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not _META_KEY.match(key):
            raise InvalidInput(f"metadata key {key!r} must be a word (letters, digits, _ or -)")
        if key in _RESERVED_META:
            raise InvalidInput(f"metadata key {key!r} is reserved; pass it with its own option")
        if isinstance(value, (dict, list, tuple)):
            raise InvalidInput(f"metadata value for {key!r} must be text or a number, not a {type(value).__name__}")
        if value is None:  # str() would write "None" into the note
            raise InvalidInput(f"metadata value for {key!r} is null; give it text or a number, or leave the key out")
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(f"metadata value for {key!r} is {value!r}; pass a finite number or text")
        text = json.dumps(value) if isinstance(value, bool) else str(value).strip()
        if re.search(r"[()\[\]\n\r]|::", text):
            raise InvalidInput(f"metadata value for {key!r} contains brackets, '::' or a line break; remove them")
        clean[key] = text
    return clean


def render_relation(relation_type: str, target_name: str, strength: float = 1.0,
                    metadata: Mapping[str, str] | None = None) -> str:
    """`- supports:: [[target]] (strength:: 0.9) (reason:: same project)` (strength 1.0 omitted)."""
    parts = [f"- {relation_type}:: [[{target_name}]]"]
    if strength != 1.0:
        parts.append(f"(strength:: {round(float(strength), 4):g})")
    parts.extend(f"({k}:: {v})" for k, v in (metadata or {}).items())
    return " ".join(parts)


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")


def set_relation(body: str, line: str, relation_type: str, target_keys: Iterable[str], newline: str = "\n") -> str:
    """The body with `line` in its `## Relations` section, replacing an existing line of the
    same type and target (its keys), else appended to the section (created at the end).
    Every other byte of the body is kept."""
    keys = set(target_keys)
    lines = body.splitlines(keepends=True)
    start = end = None
    fence: str | None = None
    for i, raw in enumerate(lines):
        text = raw.rstrip("\r\n")
        stripped = text.lstrip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")) and len(text) - len(stripped) < 4:
            fence = stripped[:3]
            continue
        match = _HEADING.match(text)
        if not match or len(match.group(1)) > 2:
            continue
        if start is not None and end is None:
            end = i
        if start is None and len(match.group(1)) == 2 and match.group(2) == RELATIONS_HEADING:
            start = i
    if fence is not None and start is None:
        raise ValueError(f"the note has an unclosed {fence} code block; close it so the relation is not hidden in code")
    if start is not None:
        end = len(lines) if end is None else end
        for i in range(start + 1, end):
            field = _FIELD.match(lines[i])
            if field and field.group(1) == relation_type:
                found = parse_links(lines[i])
                if found and found[0].key in keys:
                    ending = lines[i][len(lines[i].rstrip("\r\n")):] or newline
                    return "".join(lines[:i] + [line + ending] + lines[i + 1:])
        last = start
        for i in range(start + 1, end):
            if lines[i].strip():
                last = i
        if not lines[last].endswith(("\n", "\r")):
            lines[last] += newline
        lines.insert(last + 1, line + newline)
        return "".join(lines)
    text = body
    if text and not text.endswith(("\n", "\r")):
        text += newline
    if text.strip():
        text += newline if not text.endswith(newline * 2) else ""
    return f"{text}## {RELATIONS_HEADING}{newline}{line}{newline}"


# -- rewriting links when a note moves ---------------------------------------------------------


def _lines(text: str) -> list[str]:
    """Lines as markdown-it counts them (only `\n` ends a line), each with its ending."""
    return re.split(r"(?<=\n)", text)


def _noext(path: str) -> str:
    return path[:-3] if path.lower().endswith(".md") else path


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def _encode_like(path: str, original: str, angle: bool) -> str:
    """`path` percent-encoded as `original` was: the characters it wrote as escapes (and then
    spaces and `%` too) are escaped again, nothing else; a space is always escaped outside
    `<...>` (a link target cannot hold one)."""
    from urllib.parse import quote, unquote

    escaped: set[str] = set()
    for match in _ESCAPES.finditer(original):
        escaped.update(unquote(match.group(0)))
    if escaped:
        escaped.update(" %")
    if not angle:
        escaped.add(" ")
    return "".join(quote(c, safe="") if c in escaped else c for c in path)


def _md_written(raw: str, angle: bool, target: str, form: str, folder: str) -> str:
    """The markdown link target `raw` rewritten to point at the note `target` in the same
    form: `root` (`/x.md`), `relative` (from `folder`, `./` kept), `vault` (`folder/x.md`),
    `suffix` (as many folders as before) or `name` (`x.md`); with or without `.md` as before,
    percent-encoded as before, the same `#heading`."""
    import posixpath

    path_part, hash_, sub = raw.partition("#")
    decoded = _decoded(raw)
    if decoded.lower().endswith(".md") or not target.lower().endswith(".md"):
        path = target
    else:
        path = _noext(target)
    if form == "root":
        written = "/" + path
    elif form == "relative":
        written = posixpath.relpath(path, folder or ".")
        if decoded.startswith("./") and not written.startswith("../"):
            written = "./" + written
    elif form == "vault":
        written = path
    elif form == "name":
        written = path.rsplit("/", 1)[-1]
    else:
        depth = decoded.strip("/").count("/") + 1
        written = "/".join(path.split("/")[-depth:])
    return _encode_like(written, path_part, angle) + hash_ + sub


def _md_form(raw: str, source: str, old_key: str, renamed: bool) -> str | None:
    """How a markdown link in `source` that resolved to the moved note was written (see
    `_md_written`), or None when it needs no change (a bare name, if the name stays)."""
    import posixpath

    decoded = _decoded(raw)
    if decoded.startswith("/"):
        return "root"
    if decoded.startswith(("./", "../")) or _fold(_noext(relative_path_of(raw, source) or "")) == old_key:
        return "relative"
    if "/" not in decoded:
        return "name" if renamed else None
    return "vault" if _fold(_noext(posixpath.normpath(decoded))) == old_key else "suffix"


def _is_angle(lines: list[str], link: Link) -> bool:
    """True when the markdown link's target is written `<in angle brackets>`."""
    return 1 <= link.line <= len(lines) and f"](<{link.raw}>" in lines[link.line - 1]


def _swap_md(lines: list[str], link: Link, written: str) -> int:
    if _is_angle(lines, link):
        return _replace_on_line(lines, link.line, f"](<{link.raw}>", f"](<{written}>")
    return _replace_on_line(lines, link.line, f"]({link.raw}", f"]({written}")


def _replace_on_line(lines: list[str], line: int, old: str, new: str) -> int:
    """Replace the first `old` on `line` (1-based); its column, or -1 when it is not there."""
    at = lines[line - 1].find(old) if 1 <= line <= len(lines) else -1
    if at >= 0:
        lines[line - 1] = lines[line - 1][:at] + new + lines[line - 1][at + len(old):]
    return at


def _in_order(edits: list[tuple[int, int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Edits as they read in the note: by line, then column."""
    return [edit for _line, _col, edit in sorted(edits, key=lambda e: (e[0], e[1]))]


def retarget(text: str, found: Sequence[Link], source: str, old: str, new: str,
             keys: Collection[str]) -> tuple[str, list[dict[str, Any]]]:
    """`text` (the note `source`) with its links to `old` pointing at `new` instead. `keys`
    are the target keys of `source`'s links that resolved to `old` (the index knows; a key
    resolves the same wherever it is written in one note). Only a link's target characters
    change, in the form it was written (alias, heading, `.md`, percent-escapes kept; a path
    stays a path, a relative markdown link stays relative). A link by bare name keeps working
    by name and is left alone, unless the move gave the note a new name.
    Returns the text and the edits ({"line", "old", "new"})."""
    lines = _lines(text)
    old_key = _fold(_noext(old))
    new_noext = _noext(new)
    old_name, new_name = old_key.rsplit("/", 1)[-1], _fold(new_noext.rsplit("/", 1)[-1])
    renamed = old_name != new_name
    folder = _folder(source)
    edits: list[tuple[int, int, dict[str, Any]]] = []
    for link in found:
        key = link.key
        if key not in keys:
            continue
        if link.style == "markdown":
            form = _md_form(link.raw, source, old_key, renamed)
            if form is None:
                continue
            written = _md_written(link.raw, _is_angle(lines, link), new, form, folder)
            col = _swap_md(lines, link, written) if written != link.raw else -1
            if col >= 0:
                edits.append((link.line, col, {"line": link.line, "old": link.raw, "new": written}))
            continue
        target = link.target
        if "/" in key:
            depth = key.count("/") + 1
            written = new_noext if key == old_key else "/".join(new_noext.split("/")[-depth:])
        elif renamed and key == old_name:
            written = new_noext.rsplit("/", 1)[-1]
        else:
            continue  # a bare name or an alias: still the same note's
        if target.lower().endswith(".md"):
            written += ".md"
        if target.startswith("/"):
            written = "/" + written
        pattern = re.compile(r"(\[\[\s*)" + re.escape(target) + r"(?=\s*(?:\\?\||#|\]\]))")
        match = pattern.search(lines[link.line - 1]) if written != target and 1 <= link.line <= len(lines) else None
        if match:
            text_of = lines[link.line - 1]
            lines[link.line - 1] = text_of[:match.end(1)] + written + text_of[match.end():]
            edits.append((link.line, match.start(), {"line": link.line, "old": target, "new": written}))
    return "".join(lines), _in_order(edits)


def refolder(text: str, found: Sequence[Link], old: str, new: str,
             exists: Callable[[str], bool]) -> tuple[str, list[dict[str, Any]]]:
    """The moved note's own relative markdown links (`../x.md`, `./x.md`, and a plain `x.md`
    that named a file beside its old place: `exists`), recomputed from its new folder so
    they point where they did. Links from the root, by name or as vault paths need nothing."""
    lines = _lines(text)
    new_folder = _folder(new)
    edits: list[tuple[int, int, dict[str, Any]]] = []
    for link in found:
        if link.style != "markdown":
            continue
        decoded = _decoded(link.raw)
        if decoded.startswith("/"):
            continue
        target = relative_path_of(link.raw, old)
        if target is None:
            continue
        if not decoded.startswith(("./", "../")) and not (exists(target) or exists(target + ".md")):
            continue  # a name or a vault path: it does not depend on the note's folder
        written = _md_written(link.raw, _is_angle(lines, link), target, "relative", new_folder)
        col = _swap_md(lines, link, written) if written != link.raw else -1
        if col >= 0:
            edits.append((link.line, col, {"line": link.line, "old": link.raw, "new": written}))
    return "".join(lines), _in_order(edits)


# -- resolution -------------------------------------------------------------------------------


class Resolver:
    """Obsidian's link resolution over a set of note paths and their aliases."""

    def __init__(self, paths: Iterable[str], aliases: Iterable[tuple[str, str]] = ()) -> None:
        self.by_path: dict[str, str] = {}
        self.by_name: dict[str, list[str]] = {}
        for path in paths:
            low = _fold(path[:-3] if path.endswith(".md") else path)
            self.by_path[low] = path
            self.by_name.setdefault(low.rsplit("/", 1)[-1], []).append(path)
        self.by_alias: dict[str, list[str]] = {}
        for path, alias in aliases:
            self.by_alias.setdefault(alias, []).append(path)

    def resolve(self, key: str, source: str = "") -> str | None:
        """The path a lowercase target key points to from `source`, or None (unresolved)."""
        if not key:
            return source or None  # [[#Heading]] links to its own note
        if "/" in key:
            hit = self.by_path.get(key)
            if hit:
                return hit
            candidates = [p for p in self.by_name.get(key.rsplit("/", 1)[-1], ())
                          if _fold(p[:-3]).endswith("/" + key)]
            return _nearest(candidates, source)
        named = self.by_name.get(key)
        if named:
            return named[0] if len(named) == 1 else _nearest(named, source)
        return _nearest(self.by_alias.get(key, []), source)


def keys_for(path: str, aliases: Sequence[str] = ()) -> set[str]:
    """The target keys that can point at `path` (name, path, path suffixes, aliases)."""
    low = _fold(path[:-3] if path.endswith(".md") else path)
    parts = low.split("/")
    keys = {"/".join(parts[i:]) for i in range(len(parts))}
    keys.update(_fold(a) for a in aliases)
    return keys


def _nearest(candidates: Sequence[str], source: str) -> str | None:
    """When names clash: same folder as the source first, then the shortest path."""
    if not candidates:
        return None
    folder = source.rsplit("/", 1)[0] if "/" in source else ""
    return sorted(candidates, key=lambda p: ((p.rsplit("/", 1)[0] if "/" in p else "") != folder,
                                             p.count("/"), p))[0]


def insert_link_rows(db: Any, records: Sequence[Any]) -> tuple[int, set[str]]:
    """The `links` and `aliases` rows of these records, unresolved (store_links resolves);
    returns how many links, and the target keys the records answer to (names, aliases)."""
    link_rows: list[tuple[Any, ...]] = []
    alias_rows: list[tuple[Any, ...]] = []
    affected: set[str] = set()
    for rec in records:
        for pos, link in enumerate(rec.note_links):
            link_rows.append((rec.path, pos, link.target, link.key, link.subpath, link.alias, int(link.embed),
                              link.type, link.strength,
                              json.dumps(link.metadata, ensure_ascii=False) if link.metadata else None, link.line))
        aliases = rec.note_aliases
        alias_rows.extend((rec.path, alias) for alias in aliases)
        affected |= keys_for(rec.path, aliases)
    db.executemany("INSERT OR REPLACE INTO main.links (src, pos, target, target_key, subpath, alias, embed, type,"
                   " strength, meta, line) VALUES (?,?,?,?,?,?,?,?,?,?,?)", link_rows)
    db.executemany("INSERT OR IGNORE INTO main.aliases VALUES (?,?)", alias_rows)
    return len(link_rows), affected


def store_links(db: Any, stale: Sequence[str], records: Sequence[Any], full: bool = False) -> None:
    """Replace the `links`/`aliases` rows of re-read (`records`) and removed (`stale`) notes and
    re-resolve every stored link whose target may now point elsewhere: links whose key names a
    removed, added or renamed note or alias. Runs inside the caller's transaction, after the
    notes table is up to date. `full` resolves every link (a rebuild)."""
    affected: set[str] = set()
    for path in stale:
        old_aliases = [a for (a,) in db.execute("SELECT alias FROM main.aliases WHERE path = ?", (path,))]
        affected |= keys_for(path, old_aliases)
    db.executemany("DELETE FROM main.links WHERE src = ?", [(p,) for p in stale])
    db.executemany("DELETE FROM main.aliases WHERE path = ?", [(p,) for p in stale])
    n_links, answered = insert_link_rows(db, records)
    affected |= answered
    if not full and not n_links and not affected:
        return
    if full:
        todo = db.execute("SELECT rowid, src, target, target_key, dst FROM main.links").fetchall()
    else:
        todo = []
        srcs = sorted({rec.path for rec in records})
        keys = sorted(affected)
        for column, values in (("src", srcs), ("target_key", keys)):
            for marks, chunk in in_chunks(values):
                todo += db.execute(f"SELECT rowid, src, target, target_key, dst FROM main.links WHERE {column} IN"
                                   f" ({marks})", chunk).fetchall()
    if not todo:  # the common save: a note nothing links to, with no links of its own
        return
    # Built only now: over every note path, it is most of a one-note commit in a big vault.
    resolver = Resolver([p for (p,) in db.execute("SELECT path FROM main.notes")],
                        db.execute("SELECT path, alias FROM main.aliases").fetchall())
    updates = []
    for rowid, src, target, key, dst in todo:
        new = None if is_attachment(target) else resolver.resolve(key, src)
        if new != dst or full:
            updates.append((new, rowid))
    db.executemany("UPDATE main.links SET dst = ? WHERE rowid = ?", updates)


IN_CHUNK = 512  # parameters per `IN (?, ...)` statement
# `x IN (JSON_VALUES)` with json.dumps(values) as the one parameter: one statement text for
# any number of values, for lists that are short and need no chunking (ids of one result page).
JSON_VALUES = "SELECT value FROM json_each(?)"


def pad_params(chunk: Sequence[Any]) -> list[Any]:
    """`chunk` repeated at its end up to a power of two, for an `IN (?, ...)` list.

    sqlite3 caches every distinct statement text a connection runs (up to 128), each
    compiled with memory for each parameter; one `IN` statement per batch size filled that
    cache batch after batch, and the long-lived watcher's memory grew with it. Ten
    shapes (1, 2, 4 ... 512) stay cached once; a repeated value changes nothing an IN matches.
    """
    chunk = list(chunk)
    if chunk:
        chunk += chunk[-1:] * ((1 << (len(chunk) - 1).bit_length()) - len(chunk))
    return chunk


def in_chunks(values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
    """`values` as (`?,?,...` placeholders, parameters) for `IN (...)` statements: at most
    IN_CHUNK each, padded by `pad_params`."""
    for i in range(0, len(values), IN_CHUNK):
        chunk = pad_params(values[i:i + IN_CHUNK])
        yield ",".join("?" * len(chunk)), chunk


def aliases_of(props: Mapping[str, Any]) -> list[str]:
    """A note's `aliases` (Obsidian also accepts the older `alias`) as lowercase keys."""
    found: list[str] = []
    for name in ("aliases", "alias"):
        value = props.get(name)
        items = value if isinstance(value, (list, tuple)) else ([value] if value else [])
        for item in items:
            text = notes.scalar_text(item)  # `aliases: {a: 1}` is no name: never its Python repr
            if text and _fold(text) not in found:
                found.append(_fold(text))
    return found
