"""Benchmark the watcher: edit-to-searchable latency and memory over many events.

Builds a vault of N notes, indexes it, starts `vaultmem watch` in a subprocess, then
1. edits one note at a time (a unique word each time) and measures how long until a search
   in this process finds it (p50/p95/max over --edits edits);
2. fires --events more edits (a bounded vocabulary, so the index does not grow) in rounds
   and reads the watcher's RSS (VmRSS, and its anonymous and file-backed parts) after each round.

    python bench/bench_watcher.py --notes 10000 --edits 200 --events 20000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vaultmem.store import MemoryStore  # noqa: E402

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def note(i: int, extra: str = "") -> str:
    rng = random.Random(i)
    body = " ".join(rng.choice(WORDS) for _ in range(40))
    return (f"---\nid: {i:08x}-0000-4000-8000-000000000000\ntags:\n  - bench\nuse_count: 0\n---\n"
            f"{body} {extra}\n")


def rss_mib(pid: int, key: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_parts(pid: int) -> str:
    """Anonymous (heap) and file-backed (mmapped index files) resident MiB."""
    return f"{rss_mib(pid, 'RssAnon'):9.1f} {rss_mib(pid, 'RssFile'):9.1f}"


def wait_searchable(store: MemoryStore, word: str, rel: str, timeout: float = 60.0) -> float:
    start = time.perf_counter()
    while True:
        found, _ = store.index.search(word, kinds=("memory",), statuses=None, limit=5)
        if any(path == rel for path, _ in found):
            return time.perf_counter() - start
        if time.perf_counter() - start > timeout:
            raise SystemExit(f"{word} not searchable after {timeout} s")
        time.sleep(0.002)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--keep", action="store_true", help="Keep the temporary vault.")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="vaultmem-bench-watch-"))
    vault = tmp / "vault"
    store = MemoryStore(vault)
    store.init()
    stm = vault / "memory/stm"
    t0 = time.perf_counter()
    for i in range(args.notes):
        (stm / f"note-{i:06d}.md").write_text(note(i), encoding="utf-8")
    store.index.rebuild()
    print(f"vault: {args.notes:,} notes written and indexed in {time.perf_counter() - t0:.1f} s")

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    env.pop("VAULTMEM_NOW", None)
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "watch", "--vault", str(vault)], env=env,
                            stderr=subprocess.DEVNULL)
    try:
        status = vault / ".vaultmem/state/watcher.json"
        deadline = time.monotonic() + 60
        while not (status.exists() and json.loads(status.read_text()).get("pid") == proc.pid):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the watcher did not start")
            time.sleep(0.05)
        rss_start = rss_mib(proc.pid)

        rng = random.Random(7)
        latencies = []
        for e in range(args.edits):
            i = rng.randrange(args.notes)
            word = f"lat{e}x"
            rel = f"memory/stm/note-{i:06d}.md"
            (vault / rel).write_text(note(i, word), encoding="utf-8")
            latencies.append(wait_searchable(store, word, rel))
        print()
        print(f"edit-to-searchable over {args.edits} edits at {args.notes:,} notes (debounce 0.1 s):")
        print(f"  {'p50':>8} {'p95':>8} {'max':>8}")
        print(f"  {statistics.median(latencies):8.3f} {percentile(latencies, 95):8.3f} {max(latencies):8.3f}  s")

        print()
        print(f"watcher RSS over {args.events:,} more events ({args.rounds} rounds):")
        print(f"  {'events':>8} {'RSS MiB':>9} {'anon':>9} {'file':>9}")
        print(f"  {0:>8} {rss_start:9.1f} {rss_parts(proc.pid)}   (after start-up)")
        per_round = args.events // args.rounds
        rss = []
        done = 0
        for r in range(args.rounds):
            last = ("", "")
            for k in range(per_round):
                i = rng.randrange(args.notes)
                # a bounded vocabulary, so the index itself does not grow with the events;
                # the round's last edit carries a unique word to know when the watcher caught up
                word = f"ev{r}r{k}x" if k == per_round - 1 else f"common{k % 200}"
                rel = f"memory/stm/note-{i:06d}.md"
                (vault / rel).write_text(note(i, word), encoding="utf-8")
                last = (word, rel)
            done += per_round
            wait_searchable(store, *last, timeout=300)
            rss.append(rss_mib(proc.pid))
            print(f"  {done:>8} {rss[-1]:9.1f} {rss_parts(proc.pid)}", flush=True)
        print(f"  growth from the first round to the last: {rss[-1] - rss[0]:+.1f} MiB")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        store.close()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
