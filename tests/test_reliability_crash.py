"""SIGKILL at every write step (and at random moments): every note fully old or fully new.

Two kinds of kill:
- deterministic: a forked child runs one operation with `os.replace/rename/link/unlink/fsync`
  wrapped so that it SIGKILLs itself just before the k-th such call, for k = 1..N (every
  step between two file-system changes, including Whoosh's commit renames);
- random: a `python -m vaultmem`-like worker loops over mixed operations and is SIGKILLed
  at a random offset (the parent never times anything, it only picks the moment).
After each kill the next command must find: every memory note parses, every id in exactly
one file, no temp file left, no half-built index, `index status` clean.

VAULTMEM_SOAK=1 runs every kill point of every operation and 60 random kills.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import (
    SOAK,
    check_after_next_command,
    ids_by_file,
    mid,
    open_store,
    report,
    run_killed,
    seed,
    snapshot,
    temp_files,
)

import vaultmem

# kills a forked child at every write step: needs fork (POSIX); Windows has none
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
HOOKED = ("replace", "rename", "link", "unlink", "fsync")
FIGURES: dict[str, int] = {"kills": 0, "temp_files_left_by_kills": 0, "stale_index_after_kill": 0}


def _prepare(vault: Path) -> None:
    store = open_store(vault)
    store.init()
    seed(vault)
    store.sync()
    for i in range(3):  # promotion fodder: used once, fresh
        store.touch(mid(200 + i))
    store.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("crash") / "template"
    _prepare(path)
    return path


def _edit_then_sync(store: Any) -> Any:
    path = store.vault.root / "memory" / "stm" / f"fresh-fact-5-{mid(205)[:8]}.md"
    path.write_text(path.read_text(encoding="utf-8").replace("option 5", "option five"), encoding="utf-8")
    return store.sync()


OPERATIONS: dict[str, Callable[[Any], Any]] = {
    "save": lambda s: s.save("A new memory written while the process may die.", tags=["crash"]),
    "touch": lambda s: s.touch(mid(206), boost_strength=True),
    "relate": lambda s: s.relate(mid(200), mid(201), "supports", 0.8),
    "gc apply": lambda s: s.gc(apply=True),
    "gc delete": lambda s: s.gc(apply=True, delete=True, limit=2),
    "promote apply": lambda s: s.promote(auto=True),
    "consolidate apply": lambda s: s.consolidate(auto_detect=True, mode="apply", cohesion_threshold=0.5),
    "pipeline run": lambda s: s.pipeline_run(),
    "index rebuild": lambda s: s.rebuild_index(),
    "index commit": _edit_then_sync,
}


def _run_child(vault: Path, op: str, kill_at: int | None) -> tuple[int, int]:
    """Fork; the child runs `op` on a fresh index (only its own steps are counted) and
    SIGKILLs itself before hooked call `kill_at`; see `run_killed`."""
    def action(store: Any) -> int:
        OPERATIONS[op](store)
        return 0

    return run_killed(vault, action, kill_at, HOOKED, prepare=lambda store: store.sync())


def _check(vault: Path, before: dict[str, bytes], op: str) -> None:
    """Fully old or fully new, each id once, nothing lost; then the next command cleans up."""
    after_ids = ids_by_file(vault)  # every note parses and ends with its final newline
    duplicated = {i: n for i, n in after_ids.items() if n > 1}
    assert not duplicated, f"{op}: ids in two files: {duplicated}"
    before_ids = {str(i) for i in ids_by_file_from(before)}
    lost = before_ids - set(after_ids)
    assert not lost, f"{op}: memories lost: {lost}"
    FIGURES["temp_files_left_by_kills"] += len(temp_files(vault))
    store = open_store(vault)
    FIGURES["stale_index_after_kill"] += not store.index_status()["clean"]
    store.close()
    person = "Projects/Apollo.md"
    assert (vault / person).read_bytes() == before[person]
    check_after_next_command(vault)


def ids_by_file_from(files: dict[str, bytes]) -> set[str]:
    from reliability_helpers import parse

    return {str(parse(b.decode())["id"]) for rel, b in files.items()
            if rel.endswith(".md") and (rel.startswith("memory/") or rel.startswith(".trash/"))}


@pytest.mark.parametrize("op", list(OPERATIONS))
def test_sigkill_before_every_file_system_step(template, tmp_path, op):
    work = tmp_path / "vault"
    shutil.copytree(template, work)
    code, total = _run_child(work, op, None)
    assert code == 0 and total >= 1, f"{op} did not run cleanly in the child (exit {code})"
    points = list(range(1, total + 1))
    if not SOAK and len(points) > 10:  # short: the first and last steps and an even spread between
        step = len(points) / 10
        points = sorted({1, total, *(points[int(i * step)] for i in range(10))})
    for k in points:
        shutil.rmtree(work)
        shutil.copytree(template, work)
        before = snapshot(work)
        code, _ = _run_child(work, op, k)
        assert code == -signal.SIGKILL, f"{op}: child was not killed at step {k} (exit {code})"
        FIGURES["kills"] += 1
        _check(work, before, f"{op} killed before step {k}/{total}")
    report(f"crash: {op}", steps=total, files_lost=0, **FIGURES)
    FIGURES.update(dict.fromkeys(FIGURES, 0))


WORKER = r"""
import random, sys
sys.path.insert(0, sys.argv[3])
from reliability_helpers import open_store, mid
rng = random.Random(int(sys.argv[2]))
store = open_store(sys.argv[1])
store.sync()
print("ready", flush=True)
n = 0
while True:
    op = rng.choice(["save", "touch", "gc", "promote", "rebuild", "consolidate", "relate"])
    try:
        if op == "save":
            store.save(f"Crash loop memory {rng.random()}", tags=["loop"])
        elif op == "touch":
            store.touch(mid(rng.choice([200, 201, 202, 203, 204, 205, 206, 207])))
        elif op == "gc":
            store.gc(apply=True, limit=1)
        elif op == "promote":
            store.promote(auto=True)
        elif op == "relate":
            store.relate(mid(rng.choice([203, 204])), mid(rng.choice([205, 206])), "related")
        elif op == "rebuild":
            store.rebuild_index()
        else:
            store.consolidate(auto_detect=True, mode="apply", cohesion_threshold=0.5)
    except Exception as exc:
        if type(exc).__name__ not in ("NotFound",):
            raise
    n += 1
"""


def test_sigkill_at_random_moments_of_a_busy_process(template, tmp_path):
    work = tmp_path / "vault"
    shutil.copytree(template, work)
    rng = random.Random(20261122)
    kills = 60 if SOAK else 6
    tests_dir = str(Path(__file__).parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(vaultmem.__file__).parent.parent), tests_dir]))
    for i in range(kills):
        before = snapshot(work)
        proc = subprocess.Popen([sys.executable, "-c", WORKER, str(work), str(i), tests_dir],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        try:
            proc.wait(timeout=rng.uniform(0.02, 0.8))  # the kill's offset into the work
        except subprocess.TimeoutExpired:
            pass
        assert proc.poll() is None, f"worker died on its own: {proc.stderr.read() if proc.stderr else ''}"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()  # type: ignore[union-attr]
        FIGURES["kills"] += 1
        _check(work, before, f"random kill {i}")
    assert temp_files(work) == []
    memories = sum(ids_by_file(work).values())
    report("crash: random", memories_at_end=memories, files_lost=0, **FIGURES)
    FIGURES.update(dict.fromkeys(FIGURES, 0))


def _damage_catalog_garbage(index: Path) -> None:
    (index / "catalog.sqlite").write_bytes(b"this is not a database" * 100)


def _damage_catalog_truncated(index: Path) -> None:
    path = index / "catalog.sqlite"
    path.write_bytes(path.read_bytes()[:1000])


def _damage_catalog_empty(index: Path) -> None:
    (index / "catalog.sqlite").write_bytes(b"")


def _damage_whoosh_toc(index: Path) -> None:
    for toc in (index / "whoosh").glob("*.toc"):
        toc.write_bytes(b"\x00garbage")


def _damage_whoosh_schema_of_a_later_version(index: Path) -> None:
    """The schema names a field class this version does not have, as a later vaultmem's may."""
    for toc in (index / "whoosh").glob("*.toc"):
        data = toc.read_bytes()
        assert b"vaultmem.storage.fulltext.analysis\nText\n" in data
        toc.write_bytes(data.replace(b"vaultmem.storage.fulltext.analysis\nText\n",
                                     b"vaultmem.storage.fulltext.analysis\nTxet\n"))


def _damage_whoosh_segments_gone(index: Path) -> None:
    for seg in (index / "whoosh").glob("*.seg"):
        seg.unlink()


def _damage_whoosh_dir_gone(index: Path) -> None:
    shutil.rmtree(index / "whoosh")


def _damage_index_is_a_file(index: Path) -> None:
    shutil.rmtree(index)
    index.write_text("not a folder")


DAMAGE = {f.__name__[len("_damage_"):]: f for f in (
    _damage_catalog_garbage, _damage_catalog_truncated, _damage_catalog_empty, _damage_whoosh_toc,
    _damage_whoosh_schema_of_a_later_version, _damage_whoosh_segments_gone, _damage_whoosh_dir_gone, _damage_index_is_a_file)}


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("command", [["search", "fact"], ["touch", mid(201)], ["stats"], ["gc", "--apply"]])
def test_a_damaged_index_is_rebuilt_by_the_next_command(template, tmp_path, damage, command):
    """A sync client or a disk hiccup mangled .vaultmem/index/: the next command repairs it."""
    from click.testing import CliRunner

    from vaultmem.cli import cli

    work = tmp_path / "vault"
    shutil.copytree(template, work)
    notes_before = ids_by_file(work)
    DAMAGE[damage](work / ".vaultmem" / "index")
    result = CliRunner().invoke(cli, [*command, "--vault", str(work)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert ids_by_file(work) == notes_before
    check_after_next_command(work)


def test_sigkill_the_watcher_while_a_writer_works(template, tmp_path):
    """The watch daemon killed mid-batch (with a busy writer beside it) leaves nothing behind."""
    work = tmp_path / "vault"
    shutil.copytree(template, work)
    rng = random.Random(4242)
    kills = 20 if SOAK else 3
    tests_dir = str(Path(__file__).parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(vaultmem.__file__).parent.parent), tests_dir]))
    for i in range(kills):
        before = snapshot(work)
        watcher = subprocess.Popen([sys.executable, "-m", "vaultmem", "watch", "--vault", str(work)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
        writer = subprocess.Popen([sys.executable, "-c", WORKER, str(work), str(100 + i), tests_dir],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        try:
            watcher.wait(timeout=rng.uniform(0.3, 1.5))
        except subprocess.TimeoutExpired:
            pass
        assert watcher.poll() is None, watcher.communicate()[1][-2000:]
        for proc in (watcher, writer):
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        FIGURES["kills"] += 2
        _check(work, before, f"watcher kill {i}")
    report("crash: watcher + writer", files_lost=0, **FIGURES)
    FIGURES.update(dict.fromkeys(FIGURES, 0))
