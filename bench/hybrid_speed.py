"""Semantic search cost at scale: backfill time, model load, hybrid p50/p95 in-process (as the
MCP server runs it) and a cold `vaultmem search` on a vault that has vectors.

Needs vaultmem[embeddings] and the model (`vaultmem models install`). Memories are the varied
synthetic notes of bench/corpus.py; queries are a few words of a random memory.

    PYTHONPATH=. python bench/hybrid_speed.py -n 10000 --queries 200
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402


def pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10_000, help="Memories in the vault (default 10000).")
    ap.add_argument("--queries", type=int, default=200, help="Timed queries per mode (default 200).")
    args = ap.parse_args(argv)

    from vaultmem.storage import embeddings
    from vaultmem.store import MemoryStore, Policy

    rng = random.Random(11)
    now = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="vaultmem-hybrid-") as tmp:
        store = MemoryStore(Path(tmp), clock=lambda: now)
        store.vault.init()
        folder = store.vault.abs(store.settings.stm_dir)
        template = store.template("memory")
        texts = []
        for _ in range(args.n):
            text = corpus.memory(rng)
            texts.append(text)
            corpus.write_memory_note(folder, template, text, rng, now)
        store.index.rebuild()
        t0 = time.perf_counter()
        embeddings.load_model()
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        done = store.backfill_embeddings()["processed"]
        backfill = time.perf_counter() - t0
        store.close()
        # as the MCP server runs it (observer.serving_policy, without its observer)
        store = MemoryStore(Path(tmp), clock=lambda: now, policy=Policy(long_lived=True, freshness_ttl=1.0))
        store.settings.embeddings = "on"
        queries = []
        for _ in range(args.queries):
            words = rng.choice(texts).split()
            start = rng.randrange(max(1, len(words) - 4))
            queries.append(" ".join(words[start:start + rng.randint(2, 5)]))
        rows = []
        for mode in ("lexical", "semantic", "hybrid"):
            store.search(queries[0] + " warm", mode=mode)
            times = []
            for q in queries:
                t0 = time.perf_counter()
                store.search(q, top_k=10, mode=mode)
                times.append(time.perf_counter() - t0)
            rows.append((mode, pct(times, 0.5), pct(times, 0.95)))
        store.close()
        env = dict(os.environ, VAULTMEM_EMBEDDINGS="auto")
        cold = []
        for q in queries[:5]:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "vaultmem", "search", q, "--vault", tmp], env=env,
                           capture_output=True, check=False)
            cold.append(time.perf_counter() - t0)
        cold.sort()
        print(f"memories {args.n}; model {embeddings.MODEL_NAME}: load {load:.2f} s, "
              f"backfill {done} in {backfill:.1f} s ({1000 * backfill / max(done, 1):.2f} ms each)")
        print(f"{'mode':<9} {'p50 ms':>8} {'p95 ms':>8}")
        for mode, p50, p95 in rows:
            print(f"{mode:<9} {p50:>8.2f} {p95:>8.2f}")
        print(f"cold `vaultmem search` (embeddings auto, vault with vectors), median of 5: {cold[2]:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
