"""Mnemosyne operations at N memories: recall, store, forget-by-query, context, toma.

    python bench/bench_mnemosyne.py --n 10000 --repeat 20

Memories are written as note files (8 agents, 7 types, a shared vocabulary), the index is
built once, then each operation runs --repeat times on the warm store; prints a table.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

WORDS = ("redis postgres kafka deploy staging production cache port cluster auth token service api "
         "backup restore latency timeout queue worker cron billing invoice user preference editor "
         "theme dark mode release canary rollback metrics alert pager oncall schema migration index").split()
TYPES = ("episodic", "semantic", "preference", "relationship", "procedural", "profile", "core")


def build(root: Path, n: int, seed: int = 7) -> None:
    from vaultmem.store import MemoryStore

    rng = random.Random(seed)
    store = MemoryStore(root)
    store.init()
    folder = root / "memory/stm"
    for i in range(n):
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))) + f" item {i}"
        folder.joinpath(f"m-{i}-{mid[:8]}.md").write_text(
            f"---\nid: {mid}\ncreated: 2026-11-{rng.randint(1, 21):02d}T10:00:00Z\n"
            f"last_used: 2026-11-21T10:00:00Z\nuse_count: {rng.randint(0, 9)}\nstrength: 1.0\nstatus: active\n"
            f"memory_type: {rng.choice(TYPES)}\nagent: agent-{rng.randint(0, 7)}\nconfidence: {rng.uniform(0.4, 0.95):.2f}\n"
            f"---\n{text}\n", encoding="utf-8")
    store.rebuild_index()
    store.close()


def timed(fn, repeat: int) -> tuple[float, float]:
    samples = []
    for i in range(repeat):
        start = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    from vaultmem.store import MemoryStore

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        t0 = time.perf_counter()
        build(root, args.n)
        print(f"built {args.n} memories + index in {time.perf_counter() - t0:.1f} s")
        store = MemoryStore(root)
        store.sync()
        rng = random.Random(1)
        queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.repeat)]
        rows = [
            ("recall (limit 5, counts access)", lambda i: store.recall(queries[i], min_score=0.0)),
            ("recall how-to (procedural intent)", lambda i: store.recall("how do I " + queries[i])),
            ("store (dedup, links, confidence)", lambda i: store.store_memory(f"{queries[i]} fact {i}", agent="bench")),
            ("forget --query (candidates)", lambda i: store.forget(query=queries[i])),
            ("context (prompt + proactive)", lambda i: store.context(f"Why is Redis slow? {queries[i]}", agent="agent-1")),
            ("toma agent-2 TOPIC", lambda i: store.toma("agent-2", queries[i])),
            ("block set", lambda i: store.block_set("bench", f"value {i}")),
        ]
        print(f"\n| operation at {args.n:,} memories | median ms | p95 ms |\n|---|---:|---:|")
        for name, fn in rows:
            med, p95 = timed(fn, args.repeat)
            print(f"| {name} | {med:.1f} | {p95:.1f} |")
        store.close()


if __name__ == "__main__":
    main()
