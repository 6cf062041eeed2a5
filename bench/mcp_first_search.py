"""From spawning `vaultmem mcp` to the first `search_memory` result, this checkout against
another commit, alternating: the wait a person sees when an assistant starts the server and
searches at once (`initialize` alone does not count).

    python bench/mcp_first_search.py --vault V10K --against 4c1f1fa --rounds 20

Each round starts one server of each tree (which goes first alternates) on the same vault and
drives it with JSON-RPC lines written and read here, as a client does: `initialize`, the
`initialized` notification, `tools/list`, then `search_memory` at once. Two commits that share
the index format can serve one vault; one with another format serves its own copy of the
notes (`--against-vault`, indexed by that commit's `vaultmem index rebuild`; see mcp_ab.py).
A first, unmeasured start of each tree lets the older one record the answers it gives early
(its later starts use them). Prints each tree's medians (initialize answered, first search
answered), the ratio of the medians, and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkouts import checkouts  # noqa: E402


def start_to_first_search(tree: Path, vault: Path, cache: Path) -> tuple[float, float]:
    """(seconds to the `initialize` answer, seconds to the first search's answer) from spawning."""
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH")}
    env.update(PYTHONPATH=str(tree), VAULTMEM_EMBEDDINGS="off", VAULTMEM_MCP_HOST="off", XDG_CACHE_HOME=str(cache))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault)], env=env, cwd=tree,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def answer() -> dict[str, Any]:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        reply = json.loads(line) if line else {}
        if "result" not in reply or reply["result"].get("isError"):
            sys.exit(f"{tree}: no answer: {line[:300]!r}")
        return reply

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
        answer()
        initialized = time.perf_counter() - start
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "search_memory", "arguments": {"query": "deploy rollback", "top_k": 10}}})
        answer()
        found = answer()
        searched = time.perf_counter() - start
        assert found["id"] == 3 and found["result"]["structuredContent"]["success"] is True
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return initialized, searched


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vault", type=Path, required=True, help="a built vault (mcp_latency.py --keep DIR)")
    ap.add_argument("--against", help="the commit to compare with (a temporary git worktree); "
                                      "none: this checkout against itself")
    ap.add_argument("--against-vault", type=Path,
                    help="the other commit's own copy of the vault (another index format); default: --vault")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    with checkouts(args.against) as (trees, _scratch), tempfile.TemporaryDirectory() as cache:
        old_name = args.against or "this checkout"
        pair = {"old": trees[old_name], "new": trees["this checkout"]}
        caches = {name: Path(cache) / name for name in pair}
        vaults = {"old": args.against_vault or args.vault, "new": args.vault}
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} before")
        for name in pair:  # unmeasured: the older server records its early answers
            start_to_first_search(pair[name], vaults[name], caches[name])
        times: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
        for i in range(args.rounds):
            for name in ("new", "old") if i % 2 else ("old", "new"):
                times[name].append(start_to_first_search(pair[name], vaults[name], caches[name]))
        medians = {}
        for name, label in (("old", old_name), ("new", "this checkout")):
            init = statistics.median(t[0] for t in times[name])
            first = statistics.median(t[1] for t in times[name])
            medians[name] = first
            print(f"{name} ({label}): initialize answered {1000 * init:.0f} ms, "
                  f"first search answered {1000 * first:.0f} ms (median of {args.rounds})")
        print(f"first search new/old: {medians['new'] / medians['old']:.3f}")
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} after")


if __name__ == "__main__":
    main()
