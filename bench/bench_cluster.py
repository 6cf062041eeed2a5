"""Clustering time at N memories (candidate generation must not be quadratic).

    PYTHONPATH=. python bench/bench_cluster.py --n 10000

Builds a temporary vault of N synthetic memories (Zipf-distributed words, 5% near-duplicates
of earlier memories), indexes it, then times `MemoryStore.cluster` and duplicate detection.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import tempfile
import time
import uuid
from pathlib import Path

from vaultmem.storage import note as notes
from vaultmem.store import MemoryStore

NOW = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc)


def make_vault(root: Path, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qui", "dor", "ben", "fal"]
    vocab = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(8000)})
    weights = [1 / (i + 1) for i in range(len(vocab))]
    tags = [f"topic{i}" for i in range(60)]
    entities = [f"Entity{i}" for i in range(400)]
    store = MemoryStore(root, clock=lambda: NOW)
    store.init()
    template = store.template("memory")
    contents: list[str] = []
    folder = root / "memory/stm"
    for _ in range(n):
        if contents and rng.random() < 0.05:
            words = rng.choice(contents).split()
            words[rng.randrange(len(words))] = rng.choice(vocab)
            content = " ".join(words)
        else:
            sentences = []
            for _ in range(rng.randint(1, 3)):
                sentences.append(" ".join(rng.choices(vocab, weights, k=rng.randint(6, 14))).capitalize() + ".")
            content = " ".join(sentences)
        contents.append(content)
        mem = notes.Memory(id=str(uuid.UUID(int=rng.getrandbits(128))), content=content, created=NOW,
                           last_used=NOW, tags=rng.sample(tags, rng.randint(0, 2)),
                           entities=rng.sample(entities, rng.randint(0, 2)))
        (folder / f"{notes.slugify(content)}-{mem.short_id}.md").write_text(notes.render_note(template, mem))
    store.rebuild_index()
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--threshold", type=float, default=0.83)
    parser.add_argument("--pipeline", action="store_true",
                        help="also time `pipeline run --dry-run` and `consolidate --deep --batch 1000`")
    args = parser.parse_args()
    head = f"{'memories':>9} {'build+index s':>14} {'cluster s':>10} {'clusters':>9} {'duplicates s':>13} {'pairs':>6}"
    print(head + (f" {'pipeline s':>11} {'deep s':>7}" if args.pipeline else ""))
    for n in args.n:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "vault"
            t0 = time.perf_counter()
            make_vault(root, n)
            built = time.perf_counter() - t0
            store = MemoryStore(root, clock=lambda: NOW)
            t0 = time.perf_counter()
            result = store.cluster(threshold=args.threshold)
            took = time.perf_counter() - t0
            t0 = time.perf_counter()
            dups = store.cluster(find_duplicates=True)
            dup_took = time.perf_counter() - t0
            extra = ""
            if args.pipeline:
                t0 = time.perf_counter()
                store.pipeline_run(dry_run=True)
                extra = f" {time.perf_counter() - t0:>11.2f}"
                t0 = time.perf_counter()
                store.deep_consolidate(batch=1000)
                extra += f" {time.perf_counter() - t0:>7.2f}"
            store.close()
        print(f"{n:>9} {built:>14.1f} {took:>10.2f} {result['clusters_found']:>9} {dup_took:>13.2f} "
              f"{dups['duplicates_found']:>6}" + extra)


if __name__ == "__main__":
    main()
