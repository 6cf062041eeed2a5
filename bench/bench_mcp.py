"""MCP server start-up time and per-call round trip over stdio at N memories.

Builds a vault by writing N notes directly (no CLI), indexes it once, then starts
`python -m vaultmem mcp` with the SDK's stdio_client + ClientSession and times:
start-up (spawn -> initialize answered -> tools listed) and each tool call.

    python bench/bench_mcp.py --n 10000 --calls 50
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

WORDS = ("deploy auth token database cache queue latency schema backup review budget design meeting "
         "tuesday postgres redis kafka python rust invoice customer roadmap incident release").split()


def build_vault(root: Path, n: int, seed: int = 7) -> None:
    from vaultmem.store import MemoryStore

    MemoryStore(root).init()
    rng = random.Random(seed)
    folder = root / "memory" / "stm"
    for i in range(n):
        mid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
        day = 1 + i % 28
        tags = "\n".join(f"  - {t}" for t in rng.sample(WORDS, 2))
        (folder / f"note-{i}-{mid[:8]}.md").write_text(
            f"---\nid: {mid}\ncreated: 2026-10-{day:02d}T09:00:00Z\nlast_used: 2026-11-{day:02d}T09:00:00Z\n"
            f"use_count: {i % 7}\nstrength: 1.0\nstatus: active\ntags:\n{tags}\n---\nMemory {i}: {words}\n",
            encoding="utf-8")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered)) - 1))]


async def measure(vault: Path, calls: int) -> list[tuple[str, list[float]]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME", "PATH", "VAULTMEM_NOW")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", str(vault)], env=env)
    rows: list[tuple[str, list[float]]] = []
    with open(os.devnull, "w") as devnull:
        start = time.perf_counter()
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                rows.append(("start-up (spawn, initialize, list_tools)", [time.perf_counter() - start]))
                first = time.perf_counter()
                found = await session.call_tool("search_memory", {"query": "deploy"})
                rows.append(("first search_memory (opens the index)", [time.perf_counter() - first]))
                ids = [r["id"] for r in found.structured_content["results"]]
                rng = random.Random(1)
                heavy = max(1, calls // 10)
                cases = [  # (label, tool, arguments, calls)
                    ("search_memory (1-3 words, top_k 10)", "search_memory",
                     lambda: {"query": " ".join(rng.sample(WORDS, rng.randint(1, 3)))}, calls),
                    ("search_memory (no query: by score)", "search_memory", lambda: {"top_k": 10}, calls),
                    ("search_unified (1-3 words)", "search_unified",
                     lambda: {"query": " ".join(rng.sample(WORDS, rng.randint(1, 3)))}, calls),
                    ("open_memories (3 ids)", "open_memories", lambda: {"memory_ids": ids[:3]}, calls),
                    ("touch_memory", "touch_memory", lambda: {"memory_id": rng.choice(ids)}, calls),
                    ("observe_memory_usage (2 ids)", "observe_memory_usage",
                     lambda: {"memory_ids": rng.sample(ids, 2), "context_tags": ["bench"]}, calls),
                    ("save_memory", "save_memory",
                     lambda: {"content": "bench " + " ".join(rng.sample(WORDS, 6)), "tags": ["bench"]}, calls),
                    ("read_graph (page of 10)", "read_graph", lambda: {"page_size": 10}, calls),
                    ("gc (dry run)", "gc", lambda: {}, heavy),
                    ("promote_memory (auto_detect, dry run)", "promote_memory",
                     lambda: {"auto_detect": True, "dry_run": True}, heavy),
                    ("cluster_memories", "cluster_memories", lambda: {}, heavy),
                    ("get_performance_metrics", "get_performance_metrics", lambda: {}, calls),
                ]
                available = {t.name for t in (await session.list_tools()).tools}
                for label, name, args, n_calls in cases:
                    if name not in available:
                        continue
                    times = []
                    for _ in range(n_calls):
                        t0 = time.perf_counter()
                        result = await session.call_tool(name, args())
                        times.append(time.perf_counter() - t0)
                        assert not result.is_error, result.content[0].text
                    rows.append((label, times))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="memories in the vault (default 10000)")
    parser.add_argument("--calls", type=int, default=50, help="calls per tool (default 50; gc, promote and cluster get a tenth)")
    parser.add_argument("--vault", type=Path, help="reuse/create the vault here instead of a temp folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = args.vault or Path(tmp) / "vault"
        if not (vault / "memory" / "stm").is_dir():
            t0 = time.perf_counter()
            build_vault(vault, args.n)
            print(f"wrote {args.n} notes in {time.perf_counter() - t0:.1f} s")
        from vaultmem.store import MemoryStore

        t0 = time.perf_counter()
        store = MemoryStore(vault)
        store.sync()
        store.close()
        print(f"indexed in {time.perf_counter() - t0:.1f} s (done once, before the server starts)")
        rows = asyncio.run(measure(vault, args.calls))
    print(f"\n{'operation':44} {'calls':>5} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
    for label, times in rows:
        ms = [t * 1000 for t in times]
        print(f"{label:44} {len(ms):>5} {statistics.median(ms):>10.1f} {pct(ms, 95):>8.1f} {max(ms):>8.1f}")


if __name__ == "__main__":
    main()
