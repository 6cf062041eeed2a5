"""A simulation of one vault on three devices (tests/test_sync_sim.py; bench/sync_soak.py).

Each device is a clone of one vault. In every round one device does a few random things — a
save, touches, "the person" inserting a line into a memory's body, gc, promote — and then,
more often than not, syncs. With git, syncing is `vaultmem sync` (commit, pull with the merge
driver, push) through a bare remote. With a file-sync tool, a simulated Syncthing copies each
changed file between the device and a hub, and a file changed on both sides since they last
met leaves a `.sync-conflict-...` copy, which `vaultmem sync copies --apply` merges.

The ledger records what happened anywhere: every memory saved, every use, every line the
person wrote. `check` compares it with what the devices hold at the end.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultmem.base.config import load_settings
from vaultmem.store import MemoryStore

START = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.timezone.utc)
WORDS = ("deploy release freeze budget garden piano recipe lisbon tuesday invoice backup server "
         "meeting dentist novel python rust sourdough marathon tax visa laptop router").split()
GIT_ENV = {"GIT_AUTHOR_NAME": "sim", "GIT_AUTHOR_EMAIL": "sim@example.test", "GIT_COMMITTER_NAME": "sim",
           "GIT_COMMITTER_EMAIL": "sim@example.test", "GIT_CONFIG_NOSYSTEM": "1"}
# Fast decay and a high forget threshold, so gc has memories to archive within the run.
SETTINGS = "forget_threshold: 0.35\npl_halflife_days: 0.5\n"
_ID = re.compile(r"^id: (\S+)$", re.M)
_USES = re.compile(r"^use_count: (\d+)$", re.M)


class Clock:
    def __init__(self, offset_minutes: int) -> None:
        self.offset = dt.timedelta(minutes=offset_minutes)
        self.current = START

    def __call__(self) -> dt.datetime:
        return self.current + self.offset


@dataclass
class Ledger:
    uses: dict[str, int] = field(default_factory=dict)  # memory id -> uses counted anywhere
    lines: dict[str, list[str]] = field(default_factory=dict)  # memory id -> lines the person wrote
    syncs: int = 0
    duplicates_merged: int = 0  # one memory found in two places, made one note
    copies_merged: int = 0  # file-sync conflict copies merged into their originals
    clashes_settled: int = 0  # notes a git sync stopped on, settled by the person keeping both texts
    actions: dict[str, int] = field(default_factory=dict)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False,
                          env={**os.environ, **GIT_ENV})
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def memory_notes(root: Path) -> dict[str, str]:
    """Vault-relative path -> text of every note in the three lifecycle folders."""
    out = {}
    for folder in ("memory/stm", "memory/ltm", "memory/archive"):
        for path in sorted((root / folder).rglob("*.md")):
            out[path.relative_to(root).as_posix()] = path.read_bytes().decode("utf-8")
    return out


class Simulation:
    def __init__(self, tmp: Path, seed: int, mode: str = "git", executable: str = "vaultmem") -> None:
        self.tmp, self.mode, self.executable = tmp, mode, executable
        self.rng = random.Random(seed)
        self.ledger = Ledger()
        self.clocks = [Clock(i * 7) for i in range(3)]
        self.roots = [tmp / f"device{i}" for i in range(3)]
        self.hub = tmp / "hub"  # file-sync mode: what the sync tool's other side holds
        self.seen: list[dict[str, str]] = [{} for _ in range(3)]  # file-sync: the hub's text each device last met
        self.counter = 0
        self._setup()
        self.stores = [MemoryStore(root, settings=load_settings(root), clock=clock)
                       for root, clock in zip(self.roots, self.clocks, strict=True)]

    # -- set-up ------------------------------------------------------------------------------
    def _setup(self) -> None:
        first = self.roots[0]
        MemoryStore(first).init()
        (first / ".vaultmem" / "config.yaml").write_text(SETTINGS, encoding="utf-8")
        if self.mode == "git":
            bare = self.tmp / "remote.git"
            subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
            _git(first, "init", "-q", "-b", "main")
            _git(first, "remote", "add", "origin", str(bare))
            assert MemoryStore(first).git_sync(self.executable)["pushed"]  # publishes main
            for root in self.roots[1:]:
                _git(self.tmp, "clone", "-q", str(bare), root.name)
        else:
            for root in (*self.roots[1:], self.hub):
                shutil.copytree(first, root, ignore=shutil.ignore_patterns("index", "lock", "state"))
            for i in range(3):
                self.seen[i] = self._files(self.hub)

    # -- what a device does ------------------------------------------------------------------
    def round(self) -> None:
        for clock in self.clocks:
            clock.current += dt.timedelta(hours=3)
        i = self.rng.randrange(3)
        for _ in range(self.rng.randint(1, 4)):
            self.act(i)
        if self.rng.random() < 0.7:
            self.sync(i)

    def act(self, i: int) -> None:
        store = self.stores[i]
        notes = memory_notes(self.roots[i])
        ids = {m.group(1): rel for rel, text in notes.items() if (m := _ID.search(text))}
        roll = self.rng.random()
        action = ("save" if roll < 0.25 or not ids else "touch" if roll < 0.6 else "edit" if roll < 0.8
                  else "promote" if roll < 0.9 else "gc")
        self.ledger.actions[action] = self.ledger.actions.get(action, 0) + 1
        if action == "save":
            self.counter += 1
            words = " ".join(self.rng.sample(WORDS, 4))
            saved = store.save(f"Fact {self.counter} from device {i}: {words}.", dedupe=False)
            self.ledger.uses[saved["memory_id"]] = 0
            self.ledger.lines[saved["memory_id"]] = []
        elif action == "touch":
            mid = self.rng.choice(sorted(ids))
            store.touch(mid)
            self.ledger.uses[mid] += 1
        elif action == "edit":
            mid = self.rng.choice(sorted(ids))
            path = self.roots[i] / ids[mid]
            text = path.read_text(encoding="utf-8")
            head, sep, body = text.partition("\n---\n")
            lines = body.split("\n")
            self.counter += 1
            line = f"The person's line {self.counter} on device {i}."
            lines.insert(self.rng.randint(0, max(0, len(lines) - 1)), line)
            path.write_text(head + sep + "\n".join(lines), encoding="utf-8")
            self.ledger.lines[mid].append(line)
        elif action == "promote":
            short = sorted(mid for mid, rel in ids.items() if rel.startswith("memory/stm/"))
            if short:
                store.promote(self.rng.choice(short), force=True)
        else:
            store.gc(apply=True)

    def sync(self, i: int) -> None:
        self.ledger.syncs += 1
        if self.mode == "git":
            result = self.stores[i].git_sync(self.executable)
            if not result["success"] and result["clashes"] and result["clashes"] == result["unresolved"]:
                # the sync stopped on clashes it kept between markers: the person keeps both texts
                for rel in result["clashes"]:
                    path = self.roots[i] / rel
                    kept = [line for line in path.read_text(encoding="utf-8").split("\n")
                            if not line.startswith(("<<<<<<< ", "=======", ">>>>>>> "))]
                    path.write_text("\n".join(kept), encoding="utf-8")
                    self.ledger.clashes_settled += 1
                result = self.stores[i].git_sync(self.executable)
            if not result["success"]:
                raise AssertionError(f"device{i}: {result['message']}")
            self.ledger.duplicates_merged += len(result["duplicates"])
        else:
            self._file_sync(i)
            result = self.stores[i].merge_copies(apply=True)
            self.ledger.duplicates_merged += len(result["duplicates"])
            self.ledger.copies_merged += result["count"]

    def settle(self, most: int = 6) -> None:
        """Everyone syncs in turn until a whole turn changes nothing (a merge made during one
        device's sync travels on the next turn); at most `most` turns: more would be a loop."""
        self.turns = 0
        while self.turns < most:
            before = [memory_notes(root) for root in self.roots]
            for i in range(3):
                self.sync(i)
            self.turns += 1
            after = [memory_notes(root) for root in self.roots]
            if self.turns >= 2 and after == before and after[0] == after[1] == after[2]:
                return

    # -- a file-sync tool (Syncthing-like) -----------------------------------------------------
    @staticmethod
    def _files(root: Path) -> dict[str, str]:
        return {path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
                for path in sorted(root.rglob("*.md")) if ".trash" not in path.parts}

    def _file_sync(self, i: int) -> None:
        root, seen = self.roots[i], self.seen[i]
        here, hub = self._files(root), self._files(self.hub)
        for rel in sorted(set(here) | set(hub) | set(seen)):
            mine, theirs, last = here.get(rel), hub.get(rel), seen.get(rel)
            if mine == theirs:
                continue
            if mine == last:  # changed (or removed) only on the hub's side
                self._put(root, rel, theirs)
            elif theirs == last:  # changed only here
                self._put(self.hub, rel, mine)
            elif mine is None or theirs is None:  # removed on one side, changed on the other: the change stays
                kept = mine if mine is not None else theirs
                self._put(root, rel, kept)
                self._put(self.hub, rel, kept)
            else:  # both changed: the hub's version wins, this device's becomes a conflict copy
                self.counter += 1
                copy = rel[:-3] + f".sync-conflict-20261125-{self.counter:06d}-DEVICE{i}.md"
                self._put(root, rel, theirs)
                self._put(root, copy, mine)
                self._put(self.hub, copy, mine)
        self.seen[i] = self._files(self.hub)

    @staticmethod
    def _put(root: Path, rel: str, text: str | None) -> None:
        path = root / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

    # -- the verdict -------------------------------------------------------------------------
    def check(self, exact_uses: bool = True) -> dict[str, Any]:
        held = [memory_notes(root) for root in self.roots]
        problems: list[str] = []
        if not (held[0] == held[1] == held[2]):
            problems.append("the devices' memory folders differ")
        by_id: dict[str, list[str]] = {}
        for rel, text in held[0].items():
            found = _ID.search(text)
            if found:
                by_id.setdefault(found.group(1), []).append(rel)
        counted = 0
        for mid, uses in self.ledger.uses.items():
            paths = by_id.get(mid, [])
            if len(paths) != 1:
                problems.append(f"memory {mid} is held {len(paths)} times: {paths}")
                continue
            text = held[0][paths[0]]
            found = _USES.search(text)
            count = int(found.group(1)) if found else 0
            counted += count
            if (count != uses) if exact_uses else (count < 0 or count > uses):
                problems.append(f"memory {mid}: use_count {count}, uses counted anywhere {uses}")
            for line in self.ledger.lines[mid]:
                if line not in text:
                    problems.append(f"memory {mid}: the person's line {line!r} is lost")
        extra = sorted(set(by_id) - set(self.ledger.uses))
        if extra:
            problems.append(f"memories nobody saved: {extra}")
        markers = sum(text.count("\n<<<<<<< ") for text in held[0].values())
        return {"memories": len(self.ledger.uses), "uses": sum(self.ledger.uses.values()),
                "uses_counted": counted,
                "person_lines": sum(len(v) for v in self.ledger.lines.values()), "syncs": self.ledger.syncs,
                "duplicates_merged": self.ledger.duplicates_merged, "copies_merged": self.ledger.copies_merged,
                "actions": dict(sorted(self.ledger.actions.items())),
                "settling_turns": self.turns, "clashes_kept": markers,
                "clashes_settled": self.ledger.clashes_settled, "problems": problems}

    def close(self) -> None:
        for store in self.stores:
            store.close()


def run(tmp: Path, rounds: int, seed: int, mode: str = "git", executable: str = "vaultmem",
        progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    sim = Simulation(tmp, seed, mode, executable)
    try:
        for n in range(rounds):
            sim.round()
            if progress:
                progress(n)
        sim.settle()
        return sim.check(exact_uses=(mode == "git"))
    finally:
        sim.close()
