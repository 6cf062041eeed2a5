"""Reading posting lists: SegmentTerms (os.pread of the term table and whole lists, bm25.py)
against Whoosh's own reader, on an indexed vault, in one process, alternating.

    python bench/postings_read.py --vault /tmp/vmb/v100k
    python bench/postings_read.py --vault /tmp/vmb/v10k --queries 200 --rounds 5

Two figures, each the median of `--rounds` alternating rounds:
- every term of the searched fields of every segment, read once (the term-table lookup and the
  whole list): µs per term;
- plain two-word searches (bench_core's topics) as a process meets words for the first time:
  no posting list kept between searches (`PostingsCache(0)`), so each search reads its lists;
  median ms per search. A long-lived server keeps recently read lists (bm25.PostingsCache), so
  repeated words cost less there; a new word costs this.
Build a vault with `bench/mcp_latency.py --keep DIR --n N` (or bench_core's build_vault) first.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import TOPICS  # noqa: E402

from vaultmem.storage import bm25  # noqa: E402
from vaultmem.storage.index import SEARCH_FIELDS  # noqa: E402
from vaultmem.store import MemoryStore, Policy  # noqa: E402


def read_all(lexicon: Any, terms: list[tuple[Any, str, str]], fast: bool) -> float:
    """Seconds to read each term's list once (lookup included)."""
    start = time.perf_counter()
    for reader, field, text in terms:
        bm25.read_postings(reader, field, text, lexicon.segment_terms(reader) if fast else None)
    return time.perf_counter() - start


def searches(store: MemoryStore, queries: list[str], fast: bool) -> list[float]:
    """Seconds per search, reading every list afresh, by SegmentTerms or (no-pread) Whoosh."""
    os.environ["VAULTMEM_PLATFORM_RULES"] = "" if fast else "no-pread"
    store.index.close()  # a new lexicon, built under the rule
    store.search("deploy")
    out = []
    for text in queries:
        store.index._postings = bm25.PostingsCache(0)
        t = time.perf_counter()
        store.search(text, top_k=10)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vault", required=True, type=Path, help="an indexed vault")
    ap.add_argument("--queries", type=int, default=100, help="searches per round (default 100)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of each reader (default 3)")
    args = ap.parse_args()
    os.environ["VAULTMEM_EMBEDDINGS"] = "off"
    store = MemoryStore(args.vault, policy=Policy(long_lived=True))
    store.search("deploy")
    store.sync = lambda *a, **k: None  # type: ignore[method-assign]  (the vault does not change here)
    lexicon = store.index._lexicon()
    terms = [(reader, field, raw.decode()) for reader, _offset in lexicon.reader().leaf_readers()
             for field in SEARCH_FIELDS for raw in reader.lexicon(field)]
    assert all(lexicon.segment_terms(r) is not None for r, _ in lexicon.reader().leaf_readers()), "no SegmentTerms"
    load = os.getloadavg()[0]
    rng = random.Random(3)
    queries = [" ".join(rng.sample(list(TOPICS), 2)) for _ in range(args.queries)]
    per_term: dict[bool, list[float]] = {True: [], False: []}
    per_search: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for fast in (True, False):
            per_term[fast].append(read_all(lexicon, terms, fast) / len(terms))
    for _ in range(args.rounds):
        for fast in (True, False):
            per_search[fast].append(statistics.median(searches(store, queries, fast)))
    print(f"{args.vault}: {len(terms):,} terms in {len(lexicon.reader().leaf_readers())} segments, "
          f"load average {load:.2f}")
    for fast, name in ((True, "SegmentTerms"), (False, "Whoosh")):
        print(f"{name:>13}: read a term {1e6 * statistics.median(per_term[fast]):7.1f} µs   "
              f"search, lists read afresh, median {1e3 * statistics.median(per_search[fast]):6.2f} ms")
    store.close()


if __name__ == "__main__":
    main()
