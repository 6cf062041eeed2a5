"""Cold CLI freshness with and without a running watcher (storage/fence.py).

For each size: a vault of N memories (`--corpus varied`, the default: bench_core's; `uniform`:
bench_mcp's, where every query word is in most notes, a worst case), indexed once; then cold
`vaultmem search` processes, timed end to end, first with no watcher (each scans the vault:
a stat per note), then with `vaultmem watch` running (each drops a fence and waits for the
watcher's answer). Also cold `vaultmem save` (background enrichment) and `vaultmem stats`.
A save is timed after the earlier saves' background enrichment finished, as a person's saves
come seconds apart; "back to back" times saves that compete with it for the cores.
The RSS columns are each command's peak (`/usr/bin/time`), the save's without the background
process that fills in its entities afterwards.

    python bench/bench_fence.py --sizes 1000,10000,100000 --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import build_vault as build_varied  # noqa: E402
from bench_core import settle_enrichment  # noqa: E402
from bench_mcp import build_vault as build_uniform  # noqa: E402

VAULTMEM = [sys.executable, "-m", "vaultmem"]


def timed(args: list[str], env: dict[str, str], runs: int, root: Path | None = None) -> tuple[float, int]:
    """(median seconds, max RSS KB) of `runs` cold processes; with `root`, each starts after the
    earlier ones' background enrichment finished (bench_core.settle_enrichment)."""
    times, rss = [], 0
    for _ in range(runs):
        if root is not None:
            settle_enrichment(root)
        t0 = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-f", "%M", *VAULTMEM, *args], env=env, capture_output=True,
                             text=True, check=True)
        times.append(time.perf_counter() - t0)
        rss = max(rss, int(out.stderr.strip().splitlines()[-1]))
    return statistics.median(times), rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--corpus", choices=("varied", "uniform"), default="varied",
                    help="bench_core's memories (bench/corpus.py; the corpus of the issue's figures), or "
                         "bench_mcp's 8-40 words from one small pool, where every query word is in most notes")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}; corpus: {args.corpus}")
    print(f"{'notes':>8} {'search, scan':>14} {'search, watcher':>16} {'stats, scan':>12} {'stats, watcher':>15} "
          f"{'save':>8} {'save, back to back':>19} {'RSS search MB':>14} {'RSS stats MB':>13} {'RSS save MB':>12}")
    rows: list[tuple[int, list[float]]] = []
    for n in (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="vaultmem-fence-", ignore_cleanup_errors=True) as tmp:
            root = Path(tmp) / "v"
            (build_varied if args.corpus == "varied" else build_uniform)(root, n)
            env = {**os.environ, "VAULTMEM_VAULT": str(root), "VAULTMEM_EMBEDDINGS": "off"}
            subprocess.run([*VAULTMEM, "index", "rebuild", "--quiet"], env=env, check=True, capture_output=True)
            scan, rss = timed(["search", "deploy token"], env, args.runs)
            stats_scan, rss_stats = timed(["stats"], env, args.runs)
            watcher = subprocess.Popen([*VAULTMEM, "watch"], env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            try:
                status = root / ".vaultmem/state/watcher.json"
                deadline = time.monotonic() + 600
                while time.monotonic() < deadline and '"running"' not in (status.read_text() if status.exists() else ""):
                    time.sleep(0.1)
                time.sleep(1.0)
                fenced, rss_w = timed(["search", "deploy token"], env, args.runs)
                stats_fenced, rss_stats_w = timed(["stats"], env, args.runs)
                note = ["save", f"Bench note about the {n} deploy token rotation", "--allow-duplicate"]
                save, rss_save = timed(note, env, args.runs, root=root)
                back_to_back, _ = timed(note, env, args.runs)
            finally:
                watcher.terminate()
                watcher.wait(60)
                jobs = root / ".vaultmem/enrich"  # let the saves' background enrichment finish
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline and jobs.is_dir() and any(jobs.glob("*.json")):
                    time.sleep(0.2)
            print(f"{n:>8,} {scan:>13.3f}s {fenced:>15.3f}s {stats_scan:>11.3f}s {stats_fenced:>14.3f}s "
                  f"{save:>7.3f}s {back_to_back:>18.3f}s {max(rss, rss_w) / 1024:>14.0f}"
                  f" {max(rss_stats, rss_stats_w) / 1024:>13.0f} {rss_save / 1024:>12.0f}", flush=True)
            rows.append((n, [scan, fenced, stats_scan, stats_fenced, save]))
    labels = ["search, scan", "search, watcher", "stats, scan", "stats, watcher", "save"]
    for (n1, a), (n2, b) in zip(rows, rows[1:], strict=False):
        print(f"growth from {n1:,} to {n2:,}: " + ", ".join(f"{label} x{y / x:.1f}"
                                                          for label, x, y in zip(labels, a, b, strict=True)))


if __name__ == "__main__":
    main()
