"""Lexical search latency: p50/p95 of `MemoryStore.search` in-process, and a cold `vaultmem search`.

    PYTHONPATH=. python bench/search_speed.py -n 10000 --queries 200
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

SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "be", "da", "fi", "go", "hu", "ja", "pe", "zo")


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """Pseudo-words; drawn with Zipf weights they behave like real text (few common, many rare)."""
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def zipf_words(vocab: list[str], weights: list[float], k: int, rng: random.Random) -> str:
    return " ".join(rng.choices(vocab, weights=weights, k=k))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=10_000, help="Memories in the vault (default 10000).")
    ap.add_argument("--queries", type=int, default=200, help="Timed queries (default 200).")
    args = ap.parse_args(argv)

    from vaultmem.store import MemoryStore

    rng = random.Random(7)
    vocab = vocabulary(20_000, rng)
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    now = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="vaultmem-speed-") as tmp:
        store = MemoryStore(Path(tmp), clock=lambda: now)
        store.vault.init()
        folder = store.vault.abs(store.settings.stm_dir)
        template = store.template("memory")
        for _ in range(args.n):
            text = zipf_words(vocab, weights, rng.randint(6, 40), rng)
            corpus.write_memory_note(folder, template, text, rng, now)
        store.index.rebuild()
        queries = [zipf_words(vocab, weights, rng.randint(2, 8), rng) + "?" for _ in range(args.queries)]
        store.search(queries[0], mode="lexical")
        times = []
        for q in queries:
            t0 = time.perf_counter()
            store.search(q, top_k=10, mode="lexical")
            times.append(time.perf_counter() - t0)
        times.sort()
        env = dict(os.environ, VAULTMEM_EMBEDDINGS="off")
        cold = []
        for q in queries[:5]:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "vaultmem", "search", q, "--vault", tmp], env=env,
                           capture_output=True, check=False)
            cold.append(time.perf_counter() - t0)
        cold.sort()
        print(f"{'memories':>9} {'p50 ms':>8} {'p95 ms':>8} {'cold CLI s (median of 5)':>26}")
        print(f"{args.n:>9} {1000 * times[len(times) // 2]:>8.2f} {1000 * times[int(len(times) * 0.95)]:>8.2f} "
              f"{cold[2]:>26.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
