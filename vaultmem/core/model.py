"""The memory model: its types, statuses and limits, and the validation every entry point shares."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vaultmem.base.errors import InvalidInput

if TYPE_CHECKING:
    from vaultmem.storage.record import Record

MAX_CONTENT = 50_000
MAX_TAGS = 50
MAX_TAG_CHARS = 100
MEMORY_TYPES = ("episodic", "semantic", "preference", "relationship", "procedural", "profile", "core")
STATUS_FILTERS = ("active", "promoted", "archived", "all")
DEFAULT_STATUSES = ("active", "promoted")
LIVE_STATUSES = ("active", "promoted", "archived")  # "all" still leaves soft-deleted memories out
SEARCH_MODES = ("lexical", "semantic", "hybrid")
MAX_PAGE_SIZE = 100
# Clustering defaults (cluster_memories / consolidate_memories, the CortexGraph seed's values)
CLUSTER_THRESHOLD = 0.83  # similarity that links two memories into a cluster
MAX_CLUSTER_SIZE = 12
DUPLICATE_PAIR_THRESHOLD = 0.88  # similarity at which cluster(find_duplicates) reports a pair
COHESION_THRESHOLD = 0.75  # consolidate(auto_detect) acts on clusters at least this cohesive


def validate_content(content: str) -> str:
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content is empty; pass the text to remember")
    if len(content) > MAX_CONTENT:
        raise InvalidInput(f"content is {len(content):,} characters; the limit is {MAX_CONTENT:,}")
    if "\x00" in content:
        raise InvalidInput("content contains a NUL byte; pass plain text")
    if content.lstrip().startswith("---"):
        raise InvalidInput("content starts with ---, which would read as frontmatter; rephrase the first line")
    return content.strip()


def validate_window_and_score(window_days: float | None, min_score: float | None) -> None:
    """The `window_days` and `min_score` filters every search takes."""
    if window_days is not None and window_days <= 0:
        raise InvalidInput(f"window_days must be a positive number of days, got {window_days}")
    if min_score is not None and min_score < 0:
        raise InvalidInput(f"min_score must be 0 or more, got {min_score}")


def _meta_scalar_problem(value: Any, in_list: bool = False) -> str | None:
    """Why `value` cannot be one value of a note property (None: it can)."""
    if value is None or isinstance(value, (str, bool, int, dt.date)):  # dt.date: datetimes too
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"is {value!r}; a note cannot keep it, pass a finite number or text"
    if isinstance(value, (Mapping, list, tuple)):
        shape = "a list of " if in_list else "a "
        return f"must be flat (text, number, list), not {shape}{'map' if isinstance(value, Mapping) else 'list'}" + (
            "s" if in_list else "")
    return f"must be text, a number, true/false, a date or a list of those, not {type(value).__name__}"


def validate_meta(meta: Mapping[str, Any] | None, owned: Collection[str]) -> dict[str, Any]:
    """A save's extra properties: property names (not vaultmem's own), each value text, a
    number, true/false, null or a flat list of those (a note keeps nothing else as the
    same value; Python's repr of a map, a nested list or NaN must never reach a note)."""
    out = dict(meta or {})
    clash = sorted(k for k in out if k in owned)
    if clash:
        raise InvalidInput(f"meta key {clash[0]!r} is a vaultmem property; pass it with its own option")
    for key, value in out.items():
        if not key or not isinstance(key, str) or "\n" in key or ":" in key:
            raise InvalidInput(f"meta key {key!r} is not a valid property name")
        if isinstance(value, (list, tuple)):
            problem = next((p for p in (_meta_scalar_problem(v, in_list=True) for v in value) if p), None)
        else:
            problem = _meta_scalar_problem(value)
        if problem is not None:
            raise InvalidInput(f"meta value for {key!r} {problem}")
    return out


def validate_tags(tags: Sequence[str] | None) -> list[str]:
    from vaultmem.storage.note import normalise_tag  # here, not at the top: `vaultmem --help` imports this module

    result: list[str] = []
    for raw in tags or ():
        if not isinstance(raw, str):
            raise InvalidInput(f"tag {raw!r} is not text")
        tag = normalise_tag(raw)
        if not tag:
            raise InvalidInput("a tag is empty; drop it or give it a name")
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInput(f"tag {tag[:20]!r}... is {len(tag)} characters; the limit is {MAX_TAG_CHARS}")
        if re.search(r"[,\[\]{}\x00-\x1f]", tag):
            raise InvalidInput(f"tag {tag!r} contains a comma, bracket or control character; remove it")
        if tag not in result:
            result.append(tag)
    if len(result) > MAX_TAGS:
        raise InvalidInput(f"{len(result)} tags given; the limit is {MAX_TAGS}")
    return result


def parse_meta(pairs: Iterable[str]) -> dict[str, Any]:
    """`k=v` pairs from the command line; values are kept as text."""
    meta: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"--meta {pair!r} is not key=value; write it like --meta project=apollo")
        meta[key.strip()] = value.strip()
    return meta


@dataclasses.dataclass(frozen=True)
class UnifiedQuery:
    """search_unified's parameters with the seed's defaults, declared once: the CLI's
    `search --unified`, the MCP tool and the front door all build one of these."""

    query: str | None = None
    tags: Sequence[str] = ()
    limit: int = 10
    stm_weight: float = 1.0
    ltm_weight: float = 0.7
    window_days: float | None = None
    min_score: float | None = None
    page: int = 1
    page_size: int = 10
    preview_length: int = 300
    literal_fallback: bool = False  # an unbalanced quote or parenthesis: search the words (MCP)

    def validated(self) -> UnifiedQuery:
        """This query with its text stripped and tags normalised; InvalidInput names the first bad value."""
        if not 1 <= self.limit <= 100:
            raise InvalidInput(f"limit must be between 1 and 100, got {self.limit}")
        for name, w in (("stm_weight", self.stm_weight), ("ltm_weight", self.ltm_weight)):
            if not 0.0 <= w <= 2.0:
                raise InvalidInput(f"{name} must be between 0.0 and 2.0, got {w}")
        validate_window_and_score(self.window_days, self.min_score)
        if self.page < 1:
            raise InvalidInput(f"page must be 1 or more, got {self.page}")
        if not 1 <= self.page_size <= 100:
            raise InvalidInput(f"page_size must be between 1 and 100, got {self.page_size}")
        if not 0 <= self.preview_length <= 5000:
            raise InvalidInput(f"preview_length must be between 0 and 5000 (0 = full content), got {self.preview_length}")
        text = (self.query or "").strip()
        if len(text) > 2000:
            raise InvalidInput(f"query is {len(text)} characters; keep it under 2000")
        return dataclasses.replace(self, query=text, tags=validate_tags(self.tags))


def paginate(items: Sequence[Any], page: int | None, page_size: int | None,
             default_size: int = 10) -> tuple[list[Any], dict[str, Any]]:
    """One page of `items` and the seeds' pagination block (`page`, `page_size`, `total_count`,
    `total_pages`, `has_more`); InvalidInput names a page or size out of range."""
    page = 1 if page is None else page
    page_size = default_size if page_size is None else page_size
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise InvalidInput(f"page must be 1 or more, got {page!r}")
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise InvalidInput(f"page_size must be between 1 and {MAX_PAGE_SIZE}, got {page_size!r}")
    total = len(items)
    total_pages = max(1, math.ceil(total / page_size))
    start = (page - 1) * page_size
    return list(items[start:start + page_size]), {
        "page": page, "page_size": page_size, "total_count": total,
        "total_pages": total_pages, "has_more": start + page_size < total,
    }


CONFLICT_MARKS = ("<<<<<<< ", "=======", ">>>>>>> ")


def headline(content: str) -> str:
    """A memory's first line as a result shows it: the first line that is not one of git's
    conflict markers (a clash a sync kept is never shown as a memory's title)."""
    for line in content.splitlines():
        if line.strip() and not line.startswith(CONFLICT_MARKS):
            return line
    return ""


def visible_to(rec: Record, agent: str | None) -> bool:
    """A private memory (`private: true`, or yes/on/1, or any value not clearly no: it fails
    closed, `storage.record.private_flag`) is visible to its own agent only; the rest to all.
    No agent (None): the person, who sees every memory. `storage.index.visible_sql` is this
    rule over the catalog."""
    if agent is None:
        return True
    from vaultmem.storage.record import is_private  # not at import: the CLI's start reads this module

    if not is_private(rec.props.get("private")):
        return True
    return rec.agent == agent
