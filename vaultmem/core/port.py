"""`MemoryCore`: what a feature may use of the memories, and nothing more.

Features (lifecycle, graph, consolidation, sync, the Mnemosyne set, ...) are handed the core
`Memories` (through the front door, which is one), but are typed against this protocol: the
vault, its settings and index, and the few operations on memories they build on. mypy checks
every feature against it, so a feature that reaches for anything else (the front door's other
methods, the store's policy or caches) fails the test command instead of quietly widening what
a feature depends on. `Memories` satisfies it (checked at the bottom of core/memories.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from vaultmem.base.config import Settings
from vaultmem.storage.index import Index, SyncReport
from vaultmem.storage.record import Record
from vaultmem.storage.vault import Vault

Progress = Callable[..., Any]


class MemoryCore(Protocol):
    """The memories of one vault as a feature sees them."""

    vault: Vault
    settings: Settings
    index: Index

    def now(self) -> dt.datetime: ...

    def sync(self, progress: Any = None) -> SyncReport: ...

    def resolve(self, ref: str, kinds: Sequence[str] = ("memory",)) -> Record: ...

    def visible(self, rec: Record) -> bool: ...

    def file_exists(self, rel: str) -> bool: ...

    def read_note(self, rec: Record) -> tuple[Record, Path, str, tuple[int, int]]: ...

    def template(self, name: str) -> str: ...

    def enricher(self) -> Any: ...

    def score_of(self, rec: Record, now: dt.datetime | None = None) -> float: ...

    def scored_memories(self, statuses: Sequence[str] | None = None,
                        now: dt.datetime | None = None) -> list[tuple[str, str, float, int]]: ...

    def memory_dict(self, rec: Record, now: dt.datetime | None = None, score: float | None = None) -> dict[str, Any]: ...

    def find_duplicate(self, content: str, accept: Callable[[Record], bool] | None = None,
                       pool: int = 5) -> tuple[Record, float] | None: ...

    def search(self, query: str | None = None, *, tags: Sequence[str] = (), top_k: int = 10,
               window_days: float | None = None, min_score: float | None = None, status: str | None = None,
               include_review_candidates: bool = True, mode: str | None = None,
               literal_fallback: bool = False) -> dict[str, Any]: ...

    def save(self, content: str, *, tags: Sequence[str] = (), entities: Sequence[str] | None = None,
             source: str | None = None, context: str | None = None, meta: Mapping[str, Any] | None = None,
             strength: float | None = None, memory_type: str | None = None, agent: str | None = None,
             dedupe: bool = True, defer_entities: bool = False) -> dict[str, Any]: ...

    def touch(self, ref: str, boost_strength: bool = False) -> dict[str, Any]: ...

    def modify(self, rec: Record, change: Callable[[Record], Mapping[str, Any]]) -> Record: ...

    def modify_many(self, recs: Sequence[Record], change: Callable[[Record], Mapping[str, Any]],
                    skip_foreign: bool = False) -> list[Record]: ...

    def move_memory(self, rel: str, status: str, changes: Mapping[str, Any]) -> dict[str, Any]: ...

    def link_sources(self, rel: str) -> dict[str, set[str]]: ...

    def relink(self, old: str, new: str, sources: Mapping[str, Collection[str]]) -> list[dict[str, Any]]: ...
