"""The memory record and its markdown codec.

Reading is YAML 1.2 as Obsidian reads properties (yamlcore's core schema, on libyaml when
PyYAML has it): `12:30`, `NO`, `on` stay text, dates stay text for `parse_time`. Writing never
re-serialises the whole frontmatter: `update_frontmatter` replaces only the lines of the
keys it changes, so comments, quoting, key order, flow lists and keys vaultmem does not own
survive byte for byte, and a one-key change is a one-line diff.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from vaultmem.base.errors import MalformedNote
from vaultmem.base.timeutil import format_time, parse_time

# Properties vaultmem owns; everything else in a note belongs to the person.
OWNED_KEYS = (
    "id", "created", "last_used", "use_count", "strength", "status", "memory_type",
    "tags", "entities", "source", "context", "agent", "vaultmem",
)
# Written into every memory vaultmem creates: a memory the person moves out of the memory
# folders stays a memory (searched, never moved back), while a person's note with an `id:`
# of its own (a Zettel) is never mistaken for one.
MARKER_KEY, MARKER_VALUE = "vaultmem", "memory"
STATUSES = ("active", "promoted", "archived")

_FENCE = re.compile(r"^(---|\.\.\.)[ \t]*$")
_KEY_LINE = re.compile(r"""^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^\s#'"\-?:,\[\]{}&*!|>%@`][^:]*?))[ \t]*:(?:[ \t]|$)""")


@dataclasses.dataclass
class SplitNote:
    """A note's text cut into its parts, with enough detail to write it back exactly."""

    bom: str
    newline: str
    frontmatter: str | None  # the YAML between the fences, None when the note has none
    head: str  # everything up to and including the closing fence line
    body: str


def split_note(text: str) -> SplitNote:
    """Cut a note into BOM, frontmatter text and body. Raises MalformedNote(reason)."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    rest = text[len(bom):]
    newline = "\r\n" if "\r\n" in rest[:4096] else "\n"
    lines = rest.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return SplitNote(bom, newline, None, bom, rest)
    for i in range(1, len(lines)):
        if _FENCE.match(lines[i].rstrip("\r\n")):
            head = bom + "".join(lines[: i + 1])
            return SplitNote(bom, newline, "".join(lines[1:i]), head, "".join(lines[i + 1:]))
    raise MalformedNote("", "frontmatter starts with --- but has no closing --- line")


@functools.cache
def _loader() -> Any:
    """YAML 1.2's core schema, as Obsidian reads properties: `12:30`, `NO`, `on` and `y` are
    text, `0o17` is a number, a date or time is text (parse_time reads it). libyaml's C
    parser when PyYAML has it."""
    import yamlcore

    return getattr(yamlcore, "CCoreLoader", None) or yamlcore.CoreLoader


# The frontmatter vaultmem writes (and most a person writes): `key: value` lines and block
# lists of plain, quoted or numeric scalars. `_plain_properties` reads that shape in one pass
# over the lines; anything else (comments, nesting, flow lists, anchors, multi-line or
# escaped strings, keys YAML would read as numbers or booleans, duplicates) goes to the YAML
# loader. A rebuild spent half its parse time in PyYAML's constructors on these.
_SIMPLE_KEY = re.compile(r"[^\W\d][\w.-]*")  # a word, in any script, before `:` and a space or the line's end
_KEYS: dict[str, bool] = {}  # key -> whether _SIMPLE_KEY matches it: a vault repeats a few dozen keys
_SIMPLE_ITEM = re.compile(r"( *)- +(.*)")
# starts with a letter or digit; none of # & * ! | > % ` " [ ] { } ? ~ =
_PLAIN_TEXT = re.compile(r"[^\W_][\w .,/+@:()'-]*")
# An int, a float with digits both sides of the point, or another of YAML 1.2 core schema's int
# and float forms (yamlcore's resolvers: text of that shape is a number): one match tells which.
_NUMBER = re.compile(r"(-?[0-9]+)|(-?[0-9]+\.[0-9]+)|([-+]?(?:0o[0-7]+|0x[0-9a-fA-F]+"
                     r"|(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)))")
_NUMBER_START = frozenset("-+.0123456789")  # what _NUMBER can begin with
_CORE_WORDS = {"null": None, "Null": None, "NULL": None, "~": None, "true": True, "True": True, "TRUE": True,
               "false": False, "False": False, "FALSE": False}
_NOT_SIMPLE = object()


def _plain_scalar(text: str) -> Any:
    """A scalar as YAML 1.2's core schema reads it, or _NOT_SIMPLE when it is not one of the
    shapes read here (the YAML loader decides those)."""
    if not text:
        return None
    if text[-1] == " ":
        return _NOT_SIMPLE  # trailing spaces: YAML drops them from plain text, keeps them after a quote
    first = text[0]
    if first in "\"'":  # one line, no escapes (a backslash in double quotes, '' in single ones)
        inner = text[1:-1]
        if len(text) >= 2 and text[-1] == first and first not in inner and inner.isprintable() \
                and (first == "'" or "\\" not in inner):
            return inner
        return _NOT_SIMPLE
    if first == "[":
        return [] if text == "[]" else _flow_list(text)
    if text in _CORE_WORDS:
        return _CORE_WORDS[text]
    if first in _NUMBER_START:  # else none of the number forms can match: a word, a name
        number = _NUMBER.fullmatch(text)
        if number is not None:
            form = number.lastindex
            return int(text) if form == 1 else float(text) if form == 2 else _NOT_SIMPLE  # 0x1F, 1e3, .5
    if not _PLAIN_TEXT.fullmatch(text) or ": " in text or text.endswith(":"):
        return _NOT_SIMPLE  # text YAML reads otherwise
    return text  # dates and times stay text (parse_time reads them), as in the core schema


def _flow_list(text: str) -> Any:
    """A one-line flow list, `[a, b c, 3]`, as YAML reads it, when every item is a scalar
    `_plain_scalar` reads (a background enrichment writes `entities: [Kafka, Flink]`);
    _NOT_SIMPLE when an item is quoted, empty, nested or holds a flow indicator or a colon."""
    inner = text[1:-1]
    if text[-1] != "]" or any(c in inner for c in "[]{}:\"'?"):
        return _NOT_SIMPLE
    values = []
    for item in inner.split(","):
        value = _plain_scalar(item.strip(" ")) if item.strip(" ") else _NOT_SIMPLE
        if value is _NOT_SIMPLE:
            return _NOT_SIMPLE
        values.append(value)
    return values


def _plain_properties(frontmatter: str) -> dict[str, Any] | None:
    """`load_yaml`'s result for frontmatter of the simple shape above, else None."""
    if "\t" in frontmatter or "#" in frontmatter or "\r" in frontmatter.replace("\r\n", ""):
        return None
    lines = frontmatter.split("\n")
    if lines and not lines[-1]:
        lines.pop()  # the newline that ends the last line
    data: dict[str, Any] = {}
    key, indent, count = "", -1, 0
    items: list[Any] | None = None  # the block list being read under `key`
    for line in lines:
        if line.endswith("\r"):
            line = line[:-1]
        if items is not None:
            item = _SIMPLE_ITEM.fullmatch(line)
            if item is not None:
                if indent < 0:
                    indent = len(item.group(1))
                value = _plain_scalar(item.group(2))
                if len(item.group(1)) != indent or value is _NOT_SIMPLE or isinstance(value, list):
                    return None
                items.append(value)
                count += 1
                continue
            if not items:
                data[key] = None  # `key:` and nothing under it
        key, colon, rest = line.partition(":")
        simple = _KEYS.get(key)
        if simple is None:
            if len(_KEYS) >= 4096:
                _KEYS.clear()
            simple = _KEYS[key] = _SIMPLE_KEY.fullmatch(key) is not None
        if not colon or not simple or (rest and rest[0] != " "):
            return None  # blank lines, nesting, continuation lines, odd keys: the loader decides
        if key in data or key.lower() in ("true", "false", "null"):
            return None
        text = rest.lstrip(" ") if rest else None
        if text is None:
            items, indent = [], -1
            data[key] = items
            continue
        value = _plain_scalar(text)
        if value is _NOT_SIMPLE:
            return None
        data[key], items = value, None
        count += 1
    if items is not None and not items:
        data[key] = None
    return data if data and count <= MAX_YAML_VALUES else None


def load_yaml(frontmatter: str) -> dict[str, Any]:
    """Parse frontmatter YAML (1.2) into a dict. Raises MalformedNote(reason)."""
    simple = _plain_properties(frontmatter)
    return simple if simple is not None else _load_yaml(frontmatter)


def _load_yaml(frontmatter: str) -> dict[str, Any]:
    """`load_yaml` through the YAML loader, whatever the shape."""
    import yaml

    if "\t" in frontmatter and re.search(r"^\t", frontmatter, re.M):
        raise MalformedNote("", "frontmatter indents with a tab; YAML needs spaces")
    try:
        data = yaml.load(frontmatter, Loader=_loader())  # noqa: S506 - a safe (core schema) loader
    except yaml.YAMLError as exc:
        duplicate = _duplicate_key(frontmatter) if "duplicate key" in str(exc) else None
        if duplicate:
            raise MalformedNote("", f"property {duplicate!r} appears twice in the frontmatter") from None
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise MalformedNote("", f"invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise MalformedNote("", "invalid YAML: nested too deeply") from None
    except (ValueError, TypeError, AttributeError, OverflowError, IndexError, KeyError) as exc:
        # PyYAML's constructors raise these for a well-formed node with an impossible value:
        # `2026-02-30`, `!!float 'abc'`, `!!timestamp 'x'`, an unhashable key.
        problem = "a !!timestamp value that is no date or time" if isinstance(exc, AttributeError) else first_line(exc)
        raise MalformedNote("", f"invalid YAML value: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MalformedNote("", f"frontmatter is a {type(data).__name__}, not a mapping of properties")
    _check_shape(data)
    duplicate = _duplicate_key(frontmatter)
    if duplicate:
        raise MalformedNote("", f"property {duplicate!r} appears twice in the frontmatter")
    if not all(type(k) is str for k in data):
        # `2026-01-01: x` or `1: x`: Obsidian shows the key as text; so does every reader here.
        data = {property_name(k): v for k, v in data.items()}
    return data


def property_name(key: Any) -> str:
    """A property key as the text Obsidian shows: `2026-01-01`, `1`, `true`, `null`."""
    if isinstance(key, str):
        return key
    if isinstance(key, (dt.date, dt.datetime)):
        return key.isoformat()
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    return str(key)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


MAX_YAML_DEPTH = 64
MAX_YAML_VALUES = 100_000


def _check_shape(data: Any) -> None:
    """Refuse frontmatter that nests absurdly deep or expands (through YAML aliases) into a
    huge structure: both would exhaust the stack or memory of whatever reads it next."""
    budget = MAX_YAML_VALUES
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise MalformedNote("", f"frontmatter expands to more than {MAX_YAML_VALUES:,} values (YAML aliases?)")
        if depth > MAX_YAML_DEPTH:
            raise MalformedNote("", f"frontmatter nests more than {MAX_YAML_DEPTH} levels deep")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
            stack.extend((k, depth + 1) for k in value if isinstance(k, (tuple, frozenset)))
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend((v, depth + 1) for v in value)


def _duplicate_key(frontmatter: str) -> str | None:
    seen: set[str] = set()
    for line in frontmatter.splitlines():
        key = _top_key(line)
        if key is None:
            continue
        if key in seen:
            return key
        seen.add(key)
    return None


def _top_key(line: str) -> str | None:
    """The key a top-level `key: value` line defines, or None."""
    if not line or line[0] in " \t#-[{?":
        return None
    match = _KEY_LINE.match(line)
    if not match:
        return None
    if match.group(1) is not None:
        try:
            return json.loads('"' + match.group(1) + '"')
        except ValueError:  # a YAML escape JSON lacks (`\x41`, `\e`): the raw text names it
            return match.group(1)
    if match.group(2) is not None:
        return match.group(2).replace("''", "'")
    return match.group(3).rstrip()


# ---------------------------------------------------------------------------------------
# Writing: surgical edits of the frontmatter text


# A value that may be written unquoted: it starts with [A-Za-z0-9_\u00c0-\uffff] and goes on with
# [\w .,/@+()\u00c0-\uffff-]. \u00c0-\uffff is spelt as "not below \u00c0 and not above \uffff":
# the same characters, compiled far faster (a range that wide costs the regex compiler a
# table of every character in it, a negated one does not).
_BEYOND_LATIN1 = r"[^\x00-\xbf\U00010000-\U0010ffff]"
_PLAIN_SAFE_PATTERN = rf"^(?:[A-Za-z0-9_]|{_BEYOND_LATIN1})(?:[\w .,/@+()-]|{_BEYOND_LATIN1})*$"
_YAML_SPECIAL = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def yaml_scalar(value: Any) -> str:
    """One YAML scalar that reads back as exactly `value`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot store {value!r} in a note")
        text = repr(round(value, 6))
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"  # YAML 1.1 reads 1e-05 as text, 1.0e-05 as a float
        return text
    if isinstance(value, dt.datetime):
        return format_time(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value)
    if (
        _compiled("plain", _PLAIN_SAFE_PATTERN).match(text)
        and text.lower() not in _YAML_SPECIAL
        and not text.endswith((" ", ":"))
        and ": " not in text
        and " #" not in text
        and _reads_back_as_text(text)
    ):
        return text
    escaped = json.dumps(text, ensure_ascii=False)
    return _compiled("nonprint", _NON_PRINTABLE_PATTERN).sub(lambda m: f"\\u{ord(m.group()):04x}", escaped)


# Characters YAML forbids even inside quotes (plus ones readers treat specially): escape them.
_NON_PRINTABLE_PATTERN = ("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029]")


# Values every YAML schema reads as text (words of ASCII letters that are not a YAML word for
# true, false or null; an id): a note vaultmem writes is mostly these, checked without PyYAML.
_TEXT_ANYWHERE_PATTERN = r"[A-Za-z]+(?:[ _-][A-Za-z]+)*|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"


def _reads_back_as_text(text: str) -> bool:
    """True when YAML reads `text` unquoted as that same string (not a number, date, bool)
    under 1.2 (Obsidian, vaultmem) and 1.1 (older tools): a value is quoted if either differs.
    The common values are known without asking PyYAML, whose import would slow a cold save."""
    if _compiled("text", _TEXT_ANYWHERE_PATTERN).fullmatch(text) and text.lower() not in _YAML_SPECIAL:
        return True
    import yaml

    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|0[xo][0-9a-fA-F]+", text):
        return False  # YAML 1.2 (Obsidian) reads these as numbers even where PyYAML does not
    try:
        return all(yaml.load(f"k: {text}\n", Loader=loader) == {"k": text}  # noqa: S506 - safe loaders
                   for loader in (_loader(), getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError:
        return False


@functools.cache
def _compiled(_name: str, pattern: str) -> re.Pattern[str]:
    """Compile the big Unicode classes on first write, not on every start-up."""
    return re.compile(pattern)


def yaml_key(key: str) -> str:
    plain = re.fullmatch(r"[A-Za-z_][\w.-]*", key) and key.lower() not in _YAML_SPECIAL
    return key if plain else json.dumps(key, ensure_ascii=False)


def render_property(key: str, value: Any, newline: str = "\n", flow: bool = False) -> str:
    """Obsidian's style: block lists indented two spaces, `key: []` when empty."""
    head = yaml_key(key) + ":"
    if isinstance(value, (list, tuple)):
        if not value:
            return f"{head} []{newline}"
        if flow:
            return f"{head} [{', '.join(yaml_scalar(v) for v in value)}]{newline}"
        return head + newline + "".join(f"  - {yaml_scalar(v)}{newline}" for v in value)
    if isinstance(value, Mapping):
        raise ValueError(f"property {key!r} must be flat (Obsidian cannot edit nested maps)")
    return f"{head} {yaml_scalar(value)}{newline}"


def _key_spans(lines: list[str]) -> dict[str, tuple[int, int]]:
    """For each top-level key, the [start, end) line range its value occupies."""
    spans: dict[str, tuple[int, int]] = {}
    current: str | None = None
    start = 0
    last_content = 0
    for i, line in enumerate(lines):
        bare = line.rstrip("\r\n")
        key = _top_key(bare)
        is_continuation = bare == "" or bare[0] in " \t" or bare == "-" or bare.startswith(("- ", "-\t"))
        if key is not None or (not is_continuation):
            if current is not None:
                spans[current] = (start, last_content + 1)
            current, start = key, i
            last_content = i
        elif bare.strip():
            last_content = i
    if current is not None:
        spans[current] = (start, last_content + 1)
    return spans


def update_frontmatter(text: str, changes: Mapping[str, Any], remove: Iterable[str] = ()) -> str:
    """Set `changes` and drop `remove` in a note's frontmatter, touching no other byte."""
    split = split_note(text)
    nl = split.newline
    if split.frontmatter is None:
        block = "".join(render_property(k, v, nl) for k, v in changes.items())
        return f"{split.bom}---{nl}{block}---{nl}{split.body}"
    lines = split.frontmatter.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += nl
    spans = _key_spans(lines)
    replacements: dict[int, tuple[int, str]] = {}
    appended: list[str] = []
    for key, value in changes.items():
        if key in spans:
            start, end = spans[key]
            old = "".join(lines[start:end])
            flow = isinstance(value, (list, tuple)) and bool(re.search(r":[ \t]*\[", lines[start]))
            replacements[start] = (end, render_property(key, value, nl, flow=flow))
            if old == replacements[start][1]:
                del replacements[start]
        else:
            appended.append(render_property(key, value, nl))
    for key in remove:
        if key in spans:
            start, end = spans[key]
            replacements[start] = (end, "")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in replacements:
            end, new = replacements[i]
            out.append(new)
            i = end
        else:
            out.append(lines[i])
            i += 1
    out.extend(appended)
    fence_open = split.head[len(split.bom):].splitlines(keepends=True)[0]
    fence_close = split.head.splitlines(keepends=True)[-1]
    return split.bom + fence_open + "".join(out) + fence_close + split.body


# ---------------------------------------------------------------------------------------
# The record


@dataclasses.dataclass
class Memory:
    """One memory as vaultmem sees it; `meta` holds every property it does not own."""

    id: str
    content: str
    created: dt.datetime
    last_used: dt.datetime
    use_count: int = 0
    strength: float = 1.0
    status: str = "active"
    tags: list[str] = dataclasses.field(default_factory=list)
    entities: list[str] = dataclasses.field(default_factory=list)
    source: str | None = None
    context: str | None = None
    memory_type: str | None = None
    agent: str | None = None
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    path: str = ""

    @property
    def short_id(self) -> str:
        return self.id[:8]

    def frontmatter(self) -> dict[str, Any]:
        """Properties in DESIGN.md order; empty optional ones are left out."""
        props: dict[str, Any] = {
            "id": self.id,
            "created": self.created,
            "last_used": self.last_used,
            "use_count": self.use_count,
            "strength": self.strength,
            "status": self.status,
        }
        if self.memory_type:
            props["memory_type"] = self.memory_type
        props["tags"] = list(self.tags)
        props["entities"] = list(self.entities)
        if self.source:
            props["source"] = self.source
        if self.context:
            props["context"] = self.context
        if self.agent:
            props["agent"] = self.agent
        props[MARKER_KEY] = MARKER_VALUE
        props.update(self.meta)
        return props


# An inline tag as Obsidian reads one (the pattern in its app.js): `#` at a line start, after
# whitespace or an emphasis mark that follows one (`**#tag**`, `==#tag==`), then characters that
# are not whitespace, ASCII punctuation other than `_` `-` `/`, nor Unicode punctuation
# (U+2000-U+206F, U+2E00-U+2E7F): letters of any script, digits, emoji; not all digits.
_INLINE_TAG = re.compile(r"(?:^|(?<=\s))[*_~=]*#([^\s!-,.:-@\[-\^`{-~\u2000-\u206f\u2e00-\u2e7f]+)", re.M)
# What Obsidian does not read tags in: code spans (any backtick run), math blocks, wikilinks and
# embeds, markdown link targets, autolinks and bare URLs. Fenced code blocks: `_unfenced`.
_NOT_PROSE = re.compile(r"(`+)[^`\n](?:[^\n]*?[^`\n])?\1(?!`)|\$\$.*?\$\$|!?\[\[[^\]\n]*\]\]|\]\([^)\n]*\)"
                        r"|<[A-Za-z][A-Za-z0-9+.-]*:[^>\s]*>|\b[A-Za-z][A-Za-z0-9+.-]*://\S+", re.S)
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")


def _unfenced(body: str) -> str:
    """`body` with its fenced code blocks blanked (an unclosed fence runs to the end)."""
    lines = body.split("\n")
    fence = ""
    for i, line in enumerate(lines):
        if fence:
            closing = line.strip()
            if (len(line) - len(line.lstrip(" ")) <= 3 and len(closing) >= len(fence)
                    and closing == fence[0] * len(closing)):
                fence = ""
            lines[i] = ""
            continue
        match = _FENCE_OPEN.match(line)
        if match and not (match.group(1)[0] == "`" and "`" in line[match.end():]):
            fence = match.group(1)
            lines[i] = ""
    return "\n".join(lines)


def inline_tags(body: str) -> list[str]:
    """The `#tags` in a note's text as Obsidian finds them (outside code, math, links and
    URLs), in order, without repeats (tags are case-insensitive)."""
    if "#" not in body:
        return []
    text = _unfenced(body) if ("```" in body or "~~~" in body) else body
    text = _NOT_PROSE.sub(" ", text)
    found: list[str] = []
    seen: set[str] = set()
    for match in _INLINE_TAG.finditer(text):
        tag = match.group(1).strip("/")
        if tag and not tag.isdigit() and tag.lower() not in seen:
            seen.add(tag.lower())
            found.append(tag)
    return found


def tag_matches(wanted: Iterable[str], tags: Iterable[str]) -> bool:
    """Obsidian's tag search: `infra` finds `infra` and `infra/db`, not `infrastructure`."""
    have = [t.lower() for t in tags]
    return any(t == w or t.startswith(w + "/") for w in (w.lower().strip("#/") for w in wanted) for t in have)


def with_parents(tags: Iterable[str]) -> list[str]:
    """`infra/db` -> `infra/db`, `infra`: what a tag index holds so a parent finds its children."""
    out: list[str] = []
    for tag in tags:
        parts = tag.split("/")
        for i in range(len(parts), 0, -1):
            item = "/".join(parts[:i])
            if item and item not in out:
                out.append(item)
    return out


def same_value(written: Any, new: Any) -> bool:
    """True when a property as read (YAML 1.2: times are text) already holds `new`."""
    if isinstance(new, dt.datetime):
        return parse_time(written) == new
    return bool(written == new)


def understood(key: str, value: Any) -> bool:
    """True when `value` is one vaultmem can replace: its own kind of value for a key it owns.
    `status: draft`, `use_count: many` or `created: someday` are the person's, and stay."""
    if key == "status":
        return value in STATUSES
    if key in ("created", "last_used"):
        return value is None or parse_time(value) is not None
    if key in ("use_count", "strength"):
        return value is None or (not isinstance(value, bool) and as_number(value, math.nan) == as_number(value, 0.0))
    if key in ("tags", "entities"):
        return value is None or isinstance(value, (list, str))
    return True


def as_list(value: Any) -> list[str]:
    """A list property as strings; Obsidian also accepts a single value or comma text. A map
    (`tags: {a: 1}`), or a map or list inside the list, is not a value Obsidian lists: left
    out, never written as Python's repr ("{'a': 1}")."""
    if isinstance(value, (list, tuple)):
        return [text for text in map(scalar_text, value) if text]
    text = scalar_text(value)
    if not text:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


def scalar_text(value: Any) -> str:
    """One property value as the text Obsidian shows; "" for none, and for a map or list
    (not one value: never Python's repr)."""
    if value is None or isinstance(value, (Mapping, list, tuple, set, frozenset)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"  # as YAML and Obsidian write it, not Python's True
    return str(value).strip()


def normalise_tag(tag: str) -> str:
    """Obsidian tags: no leading #, no spaces (a space ends a tag), case kept."""
    tag = tag.strip().lstrip("#").strip()
    return re.sub(r"\s+", "-", tag)


MAX_COUNT = 2**63 - 1  # the index stores counts as SQLite integers


def as_number(value: Any, default: float) -> float:
    if isinstance(value, bool) or value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return number if math.isfinite(number) else default


# A memory's properties that hold one value: a list or map there is reported, never read as
# Python's repr ("['a', 'b']"), which would make an unknown status, or a private memory of an
# agent nobody is.
ONE_VALUE_KEYS = ("id", "status", "memory_type", "source", "context", "agent")


def memory_from_properties(props: Mapping[str, Any], body: str, path: str,
                           default_time: dt.datetime, naive_zone: dt.tzinfo | None = dt.timezone.utc) -> Memory:
    """Build a Memory from parsed properties, tolerant of what a person may have typed. A
    time without a zone (Obsidian's Date & time property) is in `naive_zone` (None: this
    machine's zone). Raises MalformedNote for a list or map in a one-value property."""
    for key in ONE_VALUE_KEYS:
        value = props.get(key)
        if isinstance(value, (Mapping, list, tuple, set, frozenset)):
            shape = "a mapping" if isinstance(value, Mapping) else "a list"
            raise MalformedNote("", f"property {key!r} is {shape}; give it one value (text) or remove the property")
    created = parse_time(props.get("created"), naive_zone) or default_time
    last_used = parse_time(props.get("last_used"), naive_zone) or created
    meta = {k: v for k, v in props.items() if k not in OWNED_KEYS}
    status = str(props.get("status") or "active")
    return Memory(
        id=str(props["id"]),
        content=strip_relations(body).strip(),
        created=created,
        last_used=last_used,
        use_count=min(MAX_COUNT, max(0, int(as_number(props.get("use_count"), 0)))),
        strength=as_number(props.get("strength"), 1.0),
        status=status,
        tags=[normalise_tag(t) for t in as_list(props.get("tags"))],
        entities=as_list(props.get("entities")),
        source=_opt_str(props.get("source")),
        context=_opt_str(props.get("context")),
        memory_type=_opt_str(props.get("memory_type")),
        agent=_opt_str(props.get("agent")),
        meta=meta,
        path=path,
    )


def _opt_str(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


_RELATIONS_HEADING = re.compile(r"^##[ \t]+Relations[ \t]*$", re.M)


def strip_relations(body: str) -> str:
    """The memory's text without its trailing `## Relations` section."""
    match = _RELATIONS_HEADING.search(body)
    return body[: match.start()] if match else body


def render_note(template: str, memory: Memory, relations: str = "") -> str:
    """A new note from the template: `{{frontmatter}}`, `{{content}}`, `{{relations}}`."""
    props = "".join(render_property(k, v) for k, v in memory.frontmatter().items())
    # One pass over the template only: a value that contains `{{content}}` or a memory
    # that mentions `{{relations}}` is text, never a placeholder. Blank-line runs are
    # tidied in the template's text, never inside the memory's own content.
    sentinel = "\x00content\x00"  # content never holds a NUL (validate_content)
    values = {"frontmatter": props.rstrip("\n"), "content": sentinel, "relations": relations.strip()}
    text = re.sub(r"\{\{(frontmatter|content|relations)\}\}", lambda m: values[m.group(1)], template)
    text = re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"
    content = memory.content.strip()
    return text.replace(sentinel, content)


_SLUG_LINK = re.compile(r"\[\[([^\]|#]*)(?:[^\]]*)\]\]")
_SLUG_WORDS = re.compile(r"[^\W_]+").findall


# A long text is slugged from its opening: up to the first ASCII white space followed by an
# ASCII character after _SLUG_HEAD characters. NFKC normalizes text in pieces split before
# such a character (ccc 0, quick check yes: nothing composes across it), lower() looks no
# further than a space for a final sigma, and a word ends at the space: the opening's words
# are the whole text's first words. Used only when the opening holds every word the slug may
# take and no wikilink starts in it (one may end after the cut). A rebuild indexes every
# memory's title by comparing the file name with this slug, so a long text's must be cheap.
_SLUG_HEAD = 256
_SLUG_CUT = re.compile(r"[ \t\n\r\f\v](?=[\x00-\x7f])")


def _slug_words(text: str, opening: bool = False) -> list[str] | None:
    """The words a slug is made of, in order: NFKC, wikilinks as their target, lowercase.
    None for an `opening` in which a wikilink starts (it may end after the cut)."""
    text = unicodedata.normalize("NFKC", text)
    if "[[" in text:
        if opening:
            return None
        text = _SLUG_LINK.sub(r"\1", text)  # wikilinks -> their target
    return _SLUG_WORDS(text.lower())


def slugify(text: str, max_words: int = 6, max_chars: int = 48) -> str:
    """File-name slug of the first words: lowercase, hyphens, letters of any script."""
    words = None
    cut = _SLUG_CUT.search(text, _SLUG_HEAD) if len(text) > 2 * _SLUG_HEAD else None
    if cut is not None:
        words = _slug_words(text[: cut.end()], opening=True)
        if words is not None and len(words) < max_words:
            words = None  # the slug may need a word after the cut
    if words is None:
        words = _slug_words(text) or []
    return slug_from_words(words, max_words, max_chars)


def slug_from_words(words: list[str], max_words: int = 6, max_chars: int = 48) -> str:
    """The first `max_words` of `words` joined by hyphens, up to `max_chars` (the first word
    cut to fit when it alone is longer); "memory" when there are none."""
    slug = ""
    for word in words[:max_words]:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_chars:
            break
        slug = candidate
    return slug or (words[0][:max_chars] if words else "memory")
