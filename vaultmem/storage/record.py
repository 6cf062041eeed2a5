"""`Record`: what the index knows of one file, and its catalog row.

Every layer above storage reads notes as records (the catalog's rows); the full-text engine
only ever sees the text fields `Index` makes of one (`storage/fulltext`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from collections.abc import Sequence
from typing import Any

from vaultmem.base.timeutil import UTC
from vaultmem.storage import note as notes

COLUMNS = (
    "path", "mtime_ns", "size", "kind", "id", "status", "title", "content", "created",
    "last_used", "use_count", "strength", "memory_type", "pinned", "tags", "entities",
    "source", "context", "agent", "props", "error",
)


@dataclasses.dataclass
class Record:
    """What the index knows of one file; `error` is set for a malformed note."""

    path: str
    mtime_ns: int
    size: int
    kind: str  # memory | note | block | session | review | conflict | malformed
    id: str | None = None
    status: str | None = None
    title: str = ""
    content: str = ""
    created: float | None = None
    last_used: float | None = None
    use_count: int = 0
    strength: float = 1.0
    memory_type: str | None = None
    pinned: bool = False
    tags: list[str] = dataclasses.field(default_factory=list)
    entities: list[str] = dataclasses.field(default_factory=list)
    source: str | None = None
    context: str | None = None
    agent: str | None = None
    props: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None
    # What a sync parsed from the file for the catalog's other tables and the full-text index,
    # not catalog columns: the note's links and aliases, and a person's note's whole body
    # (`content` holds its preview). Empty on a record read back from the catalog.
    note_links: Sequence[Any] = dataclasses.field(default=(), repr=False, compare=False)
    note_aliases: Sequence[str] = dataclasses.field(default=(), repr=False, compare=False)
    full_text: str | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def created_dt(self) -> dt.datetime | None:
        return None if self.created is None else dt.datetime.fromtimestamp(self.created, UTC)

    @property
    def last_used_dt(self) -> dt.datetime | None:
        return None if self.last_used is None else dt.datetime.fromtimestamp(self.last_used, UTC)

    def row(self) -> tuple[Any, ...]:
        values = {c: getattr(self, c) for c in COLUMNS}  # not dataclasses.asdict: it deep-copies
        values["tags"] = _to_json(self.tags)
        values["entities"] = _to_json(self.entities)
        try:  # allow_nan=False: SQLite's JSON functions refuse NaN/Infinity (`rating: .inf`)
            values["props"] = _props_json(self.props)
        except (TypeError, ValueError):  # a nested key JSON cannot hold (a date, a list), a non-finite number: as text
            values["props"] = _props_json(_json_safe(self.props))
        values["pinned"] = int(self.pinned)
        return tuple(values[c] for c in COLUMNS)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Record:
        # Positional, in COLUMNS order (= field order, checked at import); empty JSON
        # skipped: a search builds up to 100 of these per query.
        (path, mtime_ns, size, kind, id_, status, title, content, created, last_used, use_count,
         strength, memory_type, pinned, tags, entities, source, context, agent, props, error) = row
        return cls(path, mtime_ns, size, kind, id_, status, title, content, created, last_used, use_count,
                   strength, memory_type, bool(pinned),
                   json.loads(tags) if tags and tags != "[]" else [],
                   json.loads(entities) if entities and entities != "[]" else [],
                   source, context, agent, props_of(props), error)


assert tuple(f.name for f in dataclasses.fields(Record))[:len(COLUMNS)] == COLUMNS

# Flat properties (text, numbers, booleans) by their catalog JSON: memories repeat a few
# combinations (vaultmem's own `urgency` and `domain`), and a search reads up to 110 of
# them (`Index.rank_records`, `by_paths`): a copy of a flat dict is far cheaper than json.loads.
_FLAT_PROPS: dict[str, dict[str, Any]] = {}
_FLAT_PROPS_MAX = 1024
_FLAT = (str, int, float, bool, type(None))


def props_of(text: str | None) -> dict[str, Any]:
    """The properties of a catalog row's JSON: a fresh dict each time (a caller may change it)."""
    if not text or text == "{}":
        return {}
    known = _FLAT_PROPS.get(text)
    if known is not None:
        return dict(known)  # flat: a shallow copy shares nothing mutable
    props: dict[str, Any] = json.loads(text)
    if len(_FLAT_PROPS) < _FLAT_PROPS_MAX and all(type(v) in _FLAT for v in props.values()):
        _FLAT_PROPS[text] = dict(props)
    return props


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {notes.property_name(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "inf", "nan": as text, which SQLite's JSON can hold
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return str(value)


# json.dumps given any argument makes a new encoder per call; a rebuild encodes three
# values per note. These are those calls' encoders, made once (the same text).
_to_json = json.JSONEncoder(ensure_ascii=False).encode
_props_json = json.JSONEncoder(ensure_ascii=False, default=_json_default, allow_nan=False).encode


# `private:` as a person may write it. Privacy fails closed: any yes makes a memory private, and
# so does a value that is neither clearly yes nor no (doctor names those notes).
PRIVATE_NO = frozenset({"false", "no", "off", "0", "n", ""})
PRIVATE_YES = frozenset({"true", "yes", "on", "1", "y"})


def private_flag(value: Any) -> tuple[bool, bool]:
    """(private, clear) for a `private` property's value: absent, false, no, off, 0 are not
    private; true, yes, on, 1 (any case) are; anything else is private but not clear."""
    if value is None or value is False:
        return False, True
    if value is True:
        return True, True
    if isinstance(value, (int, float)):
        return value != 0, value in (0, 1)
    if isinstance(value, str):
        word = value.strip().lower()
        return word not in PRIVATE_NO, word in PRIVATE_NO or word in PRIVATE_YES
    return True, False


def is_private(value: Any) -> bool:
    return private_flag(value)[0]


# private_flag over a catalog row's JSON properties, for SQL (the same rule; tests/test_privacy.py).
PRIVATE_SQL = (
    "(CASE WHEN json_type(props, '$.private') IS NULL OR json_type(props, '$.private') IN ('null', 'false') THEN 0"
    " WHEN json_type(props, '$.private') = 'true' THEN 1"
    " WHEN json_type(props, '$.private') IN ('integer', 'real') THEN json_extract(props, '$.private') != 0"
    " WHEN json_type(props, '$.private') = 'text' THEN lower(trim(json_extract(props, '$.private')))"
    " NOT IN ('false', 'no', 'off', '0', 'n', '')"
    " ELSE 1 END)"
)
