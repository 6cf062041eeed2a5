"""A gc + promotion preview pass over N memories, using only the index catalog.

Builds N memory notes directly as files (ages, uses and strengths spread over a year),
indexes them once (not timed: `vaultmem index rebuild` does the same), then times the
lifecycle passes, which must not read any note.

    PYTHONPATH=. python bench/bench_lifecycle.py --n 100000
"""

from __future__ import annotations

import argparse
import builtins
import datetime as dt
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vaultmem.base.config import load_settings  # noqa: E402
from vaultmem.features import lifecycle  # noqa: E402
from vaultmem.store import MemoryStore  # noqa: E402

NOW = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc)


def build(root: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    MemoryStore(root, clock=lambda: NOW).init()
    stm = root / "memory/stm"
    for i in range(n):
        age = rng.expovariate(1 / 20) * 86400
        created = NOW - dt.timedelta(seconds=age + rng.uniform(0, 5 * 86400))
        last = NOW - dt.timedelta(seconds=age)
        uses = min(20, int(rng.expovariate(1 / 1.5)))
        (stm / f"memory-{i:07d}.md").write_text(
            f"---\nid: {i:08x}-0000-4000-8000-{i:012x}\ncreated: {created:%Y-%m-%dT%H:%M:%SZ}\n"
            f"last_used: {last:%Y-%m-%dT%H:%M:%SZ}\nuse_count: {uses}\nstrength: {rng.choice((1.0, 1.2, 1.5))}\n"
            f"status: active\ntags:\n  - bench\n---\nBenchmark memory number {i} about topic {i % 97}.\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories to build (default 10,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--model", default="power_law", help="decay model for the pass")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions (best is reported)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        t0 = time.perf_counter()
        build(root, args.n, args.seed)
        t_build = time.perf_counter() - t0
        settings = load_settings(root)
        settings.decay_model = args.model
        store = MemoryStore(root, settings=settings, clock=lambda: NOW)
        t0 = time.perf_counter()
        store.rebuild_index()
        t_index = time.perf_counter() - t0

        opened: list[str] = []
        real_open = builtins.open

        def spy(file, *a, **kw):  # count note reads during the timed pass
            if str(file).endswith(".md"):
                opened.append(str(file))
            return real_open(file, *a, **kw)

        rows = []
        for name, fn in (
            ("gc candidates (catalog)", lambda: lifecycle.gc_candidates(store, NOW)),
            ("promotion candidates (catalog)", lambda: lifecycle.promotion_candidates(store, NOW)),
            ("store.maintenance() preview (sync + gc + promote)", store.maintenance),
        ):
            best = float("inf")
            for _ in range(args.repeat):
                builtins.open = spy
                try:
                    t0 = time.perf_counter()
                    out = fn()
                    best = min(best, time.perf_counter() - t0)
                finally:
                    builtins.open = real_open
            count = (len(out) if isinstance(out, list)
                     else f"gc {out['gc']['total_affected']}, promote {out['promote']['candidates_found']}")
            rows.append((name, best, count))
        store.close()
    print(f"memories: {args.n:,}  model: {args.model}  (build {t_build:.1f} s, index rebuild {t_index:.1f} s, untimed)")
    print(f"{'pass':<52} {'best of ' + str(args.repeat):>10}  result")
    for name, secs, count in rows:
        print(f"{name:<52} {secs:>9.3f}s  {count}")
    print(f"note files opened during the timed passes: {len(opened)}")


if __name__ == "__main__":
    main()
