"""Benchmark graph queries (read_graph, backlinks, open --relations) on a generated vault.

    PYTHONPATH=. python bench/bench_graph.py --memories 10000 --links 3

Builds a vault of N memory notes, each with `--links` typed relations to random other
memories and a plain wikilink in its text, plus N/10 person notes linking to memories;
indexes it once, then times each query (median of --repeat runs, after one warm-up).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from vaultmem.storage.links import RELATION_TYPES
from vaultmem.store import MemoryStore

NOW = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc)


def build(root: Path, n: int, links: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    store = MemoryStore(root, clock=lambda: NOW)
    store.init()
    names = [f"memory-{i:06d}-{uuid.UUID(int=rng.getrandbits(128)).hex[:8]}" for i in range(n)]
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(n)]
    stm = root / "memory/stm"
    for i, name in enumerate(names):
        rels = "\n".join(f"- {rng.choice(RELATION_TYPES)}:: [[{names[rng.randrange(n)]}]] (strength:: 0.{rng.randrange(1, 10)})"
                         for _ in range(links))
        created = NOW - dt.timedelta(days=rng.uniform(0, 60))
        (stm / f"{name}.md").write_text(
            f"---\nid: {ids[i]}\ncreated: {created:%Y-%m-%dT%H:%M:%SZ}\nlast_used: {created:%Y-%m-%dT%H:%M:%SZ}\n"
            f"use_count: {rng.randrange(10)}\nstrength: 1.0\nstatus: active\ntags:\n  - bench\n---\n"
            f"Memory {i} mentions [[{names[rng.randrange(n)]}]] in passing.\n\n## Relations\n{rels}\n")
    notes = root / "Notes"
    notes.mkdir()
    for j in range(n // 10):
        (notes / f"note {j}.md").write_text(f"# Note {j}\n\nSee [[{names[rng.randrange(n)]}]].\n")
    store.close()
    return ids


def timed(fn, repeat: int) -> tuple[float, float]:
    """Median wall-clock and CPU milliseconds (CPU time is steadier on a shared machine)."""
    fn()  # warm-up (first query also syncs)
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--links", type=int, default=3, help="typed relations per memory")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        start = time.perf_counter()
        ids = build(root, args.memories, args.links, args.seed)
        built = time.perf_counter() - start
        store = MemoryStore(root, clock=lambda: NOW)
        start = time.perf_counter()
        store.sync()
        indexed = time.perf_counter() - start
        links = store.index.db.execute("SELECT count(*) FROM links").fetchone()[0]
        rng = random.Random(args.seed)
        probe = [rng.choice(ids) for _ in range(args.repeat + 1)]
        it = iter(probe * 4)
        queries = [
            ("graph (read_graph, page 1 of 10)", lambda: store.read_graph("active")),
            ("graph --status all --page-size 100", lambda: store.read_graph("all", page_size=100)),
            ("graph --all-relations", lambda: store.read_graph("all", all_relations=True)),
            ("backlinks ID", lambda: store.backlinks(next(it))),
            ("open ID --relations", lambda: store.open([next(it)], include_relations=True)),
        ]
        rows = [(name, timed(fn, args.repeat)) for name, fn in queries]
        sync_ms = timed(store.sync, args.repeat)
        real_sync = store.sync
        store.sync = lambda *a, **k: None  # the query alone, without the freshness check
        alone = [timed(fn, args.repeat) for _name, fn in queries]
        store.sync = real_sync
        target = root / "memory/stm" / sorted(p.name for p in (root / "memory/stm").iterdir())[0]

        def edit_and_sync() -> None:
            target.write_text(target.read_text() + "x")
            store.sync()

        edit_ms = timed(edit_and_sync, args.repeat)
        print(f"vault: {args.memories:,} memories, {args.memories // 10:,} person notes, {links:,} links "
              f"(generated in {built:.1f} s, indexed in {indexed:.1f} s)")
        print(f"{'median of ' + str(args.repeat) + ' runs':<38} {'total ms':>9} {'(cpu)':>7} {'query alone ms':>15} {'(cpu)':>7}")
        for (name, (ms, cpu)), (only, only_cpu) in zip(rows, alone, strict=True):
            print(f"{name:<38} {ms:>9.1f} {cpu:>7.1f} {only:>15.1f} {only_cpu:>7.1f}")
        print(f"{'sync, nothing changed':<38} {sync_ms[0]:>9.1f} {sync_ms[1]:>7.1f}")
        print(f"{'sync after editing one linked memory':<38} {edit_ms[0]:>9.1f} {edit_ms[1]:>7.1f}")
        store.close()


if __name__ == "__main__":
    main()
