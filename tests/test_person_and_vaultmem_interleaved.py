"""A person and vaultmem take turns on the same memory notes (hypothesis state machine).

The person rewrites a note's text, adds properties of their own, renames a note or moves it
out of the memory folders, with LF or CRLF, the way Obsidian does; vaultmem saves, touches,
promotes, relates, archives faded memories (gc), forgets and restores in between. After
every step: each memory is exactly one file, holding the person's latest text and every
property they added, byte for byte, and a search for the person's words finds it unless it
was forgotten (the index followed every edit). DESIGN principle 6: the person owns
the vault.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from conftest import Clock
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from reliability_helpers import SOAK

from vaultmem.base.errors import VaultmemError
from vaultmem.store import MemoryStore

EOLS = st.sampled_from(["\n", "\r\n"])
PERSON_KEYS = st.sampled_from(["project", "mood", "reviewed", "source_url", "related_people"])
PERSON_VALUES = st.sampled_from(["apollo", "[a, b]", "2026-11-20", "'quoted: text'", "true", "42", "\"x # y\""])


def word(n: int) -> str:
    """A unique word the analyzer keeps whole (letters only)."""
    letters = "".join(chr(97 + (n // 26 ** i) % 26) for i in range(3))
    return f"zq{letters}"


class PersonAndVaultmem(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self._tmp = tempfile.TemporaryDirectory(prefix="vaultmem-interleaved-")
        self.root = Path(self._tmp.name) / "vault"
        self.clock = Clock(dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc))
        self.store = MemoryStore(self.root, clock=self.clock)
        self.store.init()
        self.n = 0
        self.words: dict[str, str] = {}  # memory id -> the latest text's unique word
        self.props: dict[str, list[str]] = {}  # memory id -> property lines the person added
        self.forgotten: set[str] = set()  # soft-deleted: the note stays, search leaves it out

    def teardown(self) -> None:
        self.store.close()
        self._tmp.cleanup()

    # -- where a memory is, read from the disk alone ------------------------------------------
    def file_of(self, mid: str) -> list[Path]:
        found = []
        for path in self.root.rglob("*.md"):
            parts = path.relative_to(self.root).parts
            if parts[0] in (".vaultmem", ".trash"):
                continue
            if re.search(rf"^id: {re.escape(mid)}\r?$", path.read_text(encoding="utf-8"), re.M):
                found.append(path)
        return found

    def next_word(self) -> str:
        self.n += 1
        return word(self.n)

    # -- vaultmem's turns ---------------------------------------------------------------------
    @rule()
    def save(self) -> None:
        w = self.next_word()
        mid = self.store.save(f"The {w} runbook lives in the ops wiki", dedupe=False)["memory_id"]
        self.words[mid], self.props[mid] = w, []

    def attempt(self, operation: Any, *args: Any) -> bool:
        """Run one vaultmem operation; False when it refuses (one line, nothing written): a
        note the person moved out is theirs to change, a memory promoted already."""
        try:
            operation(*args)
        except VaultmemError:
            return False
        return True

    def pick(self, data: st.DataObject, among: set[str] | dict[str, str]) -> str:
        return data.draw(st.sampled_from(sorted(among)))

    @precondition(lambda self: self.words)
    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        self.attempt(self.store.touch, self.pick(data, self.words))

    @precondition(lambda self: self.words)
    @rule(data=st.data())
    def promote(self, data: st.DataObject) -> None:
        self.attempt(self.store.promote, self.pick(data, self.words))

    @precondition(lambda self: len(self.words) >= 2)
    @rule(data=st.data())
    def relate(self, data: st.DataObject) -> None:
        a, b = data.draw(st.lists(st.sampled_from(sorted(self.words)), min_size=2, max_size=2, unique=True))
        self.attempt(self.store.relate, a, b, "related")

    @rule()
    def time_passes(self) -> None:
        self.clock.advance(days=9)

    @rule()
    def gc_archives(self) -> None:
        self.store.gc(apply=True)  # faded short-term memories move to memory/archive/

    @precondition(lambda self: self.words)
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        mid = self.pick(data, self.words)
        if self.attempt(self.store.forget, mid):
            self.forgotten.add(mid)

    @precondition(lambda self: self.forgotten)
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        mid = self.pick(data, self.forgotten)
        if self.attempt(self.store.restore, mid):  # moved out since: `deleted: true` stays, theirs to change
            self.forgotten.discard(mid)

    # -- the person's turns -------------------------------------------------------------------
    @precondition(lambda self: self.words)
    @rule(data=st.data(), eol=EOLS)
    def person_rewrites_the_text(self, data: st.DataObject, eol: str) -> None:
        mid = self.pick(data, self.words)
        (path,) = self.file_of(mid)
        text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
        head, _sep, _body = text.partition("\n---\n")
        w = self.next_word()
        new = f"{head}\n---\nRewritten by hand: the {w} checklist.\n"
        path.write_bytes(new.replace("\n", eol).encode())
        self.words[mid] = w

    @precondition(lambda self: self.words)
    @rule(data=st.data(), key=PERSON_KEYS, value=PERSON_VALUES)
    def person_adds_a_property(self, data: st.DataObject, key: str, value: str) -> None:
        mid = self.pick(data, self.words)
        if any(line.startswith(f"{key}:") for line in self.props[mid]):
            return  # one line per key, as Obsidian's property editor keeps it
        (path,) = self.file_of(mid)
        raw = path.read_bytes().decode()
        eol = "\r\n" if "\r\n" in raw else "\n"
        line = f"{key}: {value}"
        head, sep, rest = raw.partition(f"{eol}---{eol}")
        path.write_bytes(f"{head}{eol}{line}{sep}{rest}".encode())
        self.props[mid].append(line)

    @precondition(lambda self: self.words)
    @rule(data=st.data())
    def person_renames_the_note(self, data: st.DataObject) -> None:
        mid = self.pick(data, self.words)
        (path,) = self.file_of(mid)
        path.rename(path.with_name(f"Renamed {self.next_word()}.md"))

    @precondition(lambda self: self.words)
    @rule(data=st.data())
    def person_moves_it_to_a_project(self, data: st.DataObject) -> None:
        mid = self.pick(data, self.words)
        (path,) = self.file_of(mid)
        folder = self.root / "Projects"
        folder.mkdir(exist_ok=True)
        if path.parent != folder:
            path.rename(folder / path.name)

    # -- what must always hold ----------------------------------------------------------------
    @invariant()
    def each_memory_is_one_file_with_the_person_s_text_and_properties(self) -> None:
        for mid, w in self.words.items():
            files = self.file_of(mid)
            assert len(files) == 1, (mid, files)
            raw = files[0].read_bytes().decode()
            assert w in raw, (mid, w, raw)
            for line in self.props[mid]:
                eol = "\r\n" if "\r\n" in raw else "\n"
                assert f"{eol}{line}{eol}" in raw, (line, raw)

    @invariant()
    def a_search_for_the_person_s_words_finds_each_memory_not_forgotten(self) -> None:
        for mid, w in self.words.items():
            found = [r["id"] for r in self.store.search(w, top_k=5, status="all")["results"]]
            assert (mid in found) == (mid not in self.forgotten), (mid, w, found)


TestPersonAndVaultmem = PersonAndVaultmem.TestCase
TestPersonAndVaultmem.settings = settings(
    max_examples=300 if SOAK else 12, stateful_step_count=30 if SOAK else 14, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
