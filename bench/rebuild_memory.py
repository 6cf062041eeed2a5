"""`vaultmem index rebuild` of an existing vault, timed, with the resident memory of the main
process and of its rebuild workers sampled every 20 ms (Linux /proc): each process's peak
and the peak of their sum, which is what the machine must hold.

    python bench/rebuild_memory.py VAULT [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def run(vault: Path) -> tuple[float, int, int, int]:
    env = {**os.environ, "VAULTMEM_EMBEDDINGS": "off"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "index", "rebuild", "--quiet", "--vault", str(vault)],
                            env=env, stdout=subprocess.DEVNULL)
    main_peak = worker_peak = sum_peak = 0
    while proc.poll() is None:
        main = rss_kb(proc.pid)
        workers = [rss_kb(c) for c in children(proc.pid)]
        main_peak = max(main_peak, main)
        worker_peak = max([worker_peak, *workers])
        sum_peak = max(sum_peak, main + sum(workers))
        time.sleep(0.02)
    return time.perf_counter() - start, main_peak // 1024, worker_peak // 1024, sum_peak // 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("wall s   main peak MB   worker peak MB   sum peak MB")
    for _ in range(args.runs):
        wall, main_mb, worker_mb, sum_mb = run(args.vault)
        print(f"{wall:6.2f}   {main_mb:12d}   {worker_mb:14d}   {sum_mb:11d}")


if __name__ == "__main__":
    main()
