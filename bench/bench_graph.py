"""Benchmark graph queries (read_graph, backlinks, open --relations) on a generated vault.

    PYTHONPATH=src python bench/bench_graph.py --memories 10000 --links 3

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

from vaultmem.links import RELATION_TYPES
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


def timed(fn, repeat: int) -> float:
    fn()  # warm-up (first query also syncs)
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs) * 1000


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
        it = iter(probe * 2)
        from vaultmem.graph import Catalog

        rows = [
            ("catalog snapshot + resolver", timed(lambda: Catalog(store), args.repeat)),
            ("graph (read_graph, page 1 of 10)", timed(lambda: store.read_graph("active"), args.repeat)),
            ("graph --status all --page-size 100", timed(lambda: store.read_graph("all", page_size=100), args.repeat)),
            ("backlinks ID", timed(lambda: store.backlinks(next(it)), args.repeat)),
            ("open ID --relations", timed(lambda: store.open([next(it)], include_relations=True), args.repeat)),
            ("sync with nothing changed", timed(store.sync, args.repeat)),
        ]
        print(f"vault: {args.memories:,} memories, {args.memories // 10:,} person notes, {links:,} links "
              f"(generated in {built:.1f} s, indexed in {indexed:.1f} s)")
        print(f"{'query':<40} {'median ms':>10}")
        for name, ms in rows:
            print(f"{name:<40} {ms:>10.1f}")
        store.close()


if __name__ == "__main__":
    main()
