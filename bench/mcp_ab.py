"""MCP `search_memory` round trips of this checkout against another commit, call by call: two
`vaultmem mcp` servers on the same vault, the same queries, each query sent to one and then the
other (which goes first alternates). A machine whose speed drifts by a third from one minute to
the next (docs/performance.md) moves both servers' figures together, so the per-query ratio
shows a 5 % change that separate runs of `mcp_latency.py` cannot.

    python bench/mcp_ab.py --against 0f43a91 --vault V10K --searches 400
    python bench/mcp_ab.py --vault V10K        # this checkout twice: the noise floor
    python bench/mcp_ab.py --against 76d81ad --against-vault OLD --vault V10K

A commit whose index format differs from this checkout's serves its own copy of the vault's
notes (`--against-vault`, indexed by that commit's `vaultmem index rebuild`): two servers on one
vault would rebuild each other's index. For example:

    mkdir OLD && (cd V10K && tar cf - --exclude=./.vaultmem/index .) | (cd OLD && tar xf -)
    git worktree add /tmp/old-tree 76d81ad
    PYTHONPATH=/tmp/old-tree python -m vaultmem index rebuild --vault OLD --quiet
    git worktree remove /tmp/old-tree

A client that writes and reads JSON-RPC lines itself (no SDK on the client's side), or with
`--client sdk` two of the Python SDK's `ClientSession`s (the client `mcp_latency.py`'s headline
figure and the issue's were measured with), the queries of `mcp_latency.py` (two topics of
bench_core's corpus, top_k 10). Prints each server's median and p95, the median of new/old per
query, how many replies were identical (structuredContent; a change meant to be speed only must
keep them all, but for the odd one whose decay score or age moved in its last digit between
the two calls: 399 of 400 in a run of this checkout against itself), and the load average and
`calibrate.py`'s figure before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import calibration_ms  # noqa: E402
from checkouts import checkouts  # noqa: E402
from corpus import TOPICS  # noqa: E402
from mcp_latency import PlainClient  # noqa: E402
from mcp_latency import server_env as latency_env  # noqa: E402


def server_env(tree: Path, cache: Path) -> dict[str, str]:
    """`mcp_latency.py`'s server environment with the package in `tree`, served by itself
    (never a watcher)."""
    env = latency_env(cache)
    env.update(PYTHONPATH=str(tree), VAULTMEM_MCP_HOST="off")  # an older commit's watcher never serves it
    return env


@contextlib.asynccontextmanager
async def plain_server(tree: Path, vault: Path, cwd: Path, cache: Path) -> Any:
    """`vaultmem mcp --vault VAULT` driven by `PlainClient`: a call is (seconds, structuredContent)."""
    client = PlainClient(vault, server_env(tree, cache), cwd)

    async def call(params: dict[str, Any]) -> tuple[float, Any]:
        took, result = client.call("tools/call", params)
        return took, result.get("structuredContent")

    try:
        yield call
    finally:
        client.close()


@contextlib.asynccontextmanager
async def sdk_server(tree: Path, vault: Path, cwd: Path, cache: Path) -> Any:
    """The same server driven by the Python SDK's `ClientSession` over stdio."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", str(vault)],
                                   env=server_env(tree, cache), cwd=str(cwd))
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("search_memory", {"query": "deploy"})

            async def call(params: dict[str, Any]) -> tuple[float, Any]:
                start = time.perf_counter()
                result = await session.call_tool(params["name"], params["arguments"])
                took = time.perf_counter() - start
                if result.is_error:
                    sys.exit(f"search failed: {result.content}")
                return took, result.structured_content

            yield call


async def compare(args: argparse.Namespace, trees: dict[str, Path], scratch: Path, cache: Path,
                  old_name: str) -> tuple[dict[str, list[float]], int]:
    """Each server's round trips, the same queries to both, and how many replies were identical."""
    start = sdk_server if args.client == "sdk" else plain_server
    rng, topics = random.Random(3), list(TOPICS)
    times: dict[str, list[float]] = {"old": [], "new": []}
    identical = 0
    async with start(trees[old_name], args.against_vault or args.vault, scratch, cache / "old") as old, \
            start(trees["this checkout"], args.vault, scratch, cache / "new") as new:
        for i in range(args.searches):
            params = {"name": "search_memory",
                      "arguments": {"query": " ".join(rng.sample(topics, 2)), "top_k": 10}}
            replies = {}
            for name, call in (("old", old), ("new", new)) if i % 2 else (("new", new), ("old", old)):
                took, replies[name] = await call(params)
                times[name].append(took)
            identical += replies["old"] == replies["new"]
    return times, identical


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vault", type=Path, required=True, help="a built vault (mcp_latency.py --keep DIR)")
    ap.add_argument("--against", help="the commit to compare with (a temporary git worktree); "
                                      "none: this checkout against itself")
    ap.add_argument("--against-vault", type=Path,
                    help="the vault the --against server serves: a copy of --vault's notes indexed by that commit "
                         "(default: --vault)")
    ap.add_argument("--searches", type=int, default=400)
    ap.add_argument("--client", choices=("plain", "sdk"), default="plain",
                    help="plain: JSON-RPC lines written and read here; sdk: the Python SDK's ClientSession")
    args = ap.parse_args()
    with checkouts(args.against) as (trees, scratch), tempfile.TemporaryDirectory() as cache:
        old_name = args.against or "this checkout"
        print(f"load average {os.getloadavg()[0]:.2f}, calibration {calibration_ms():.1f} ms before; "
              f"{args.client} client")
        times, identical = asyncio.run(compare(args, trees, scratch, Path(cache), old_name))
        for name, label in (("old", old_name), ("new", "this checkout")):
            ordered = sorted(times[name])
            print(f"{name} ({label}): median {1000 * statistics.median(ordered):.2f} ms, "
                  f"p95 {1000 * ordered[int(0.95 * (len(ordered) - 1))]:.2f} ms")
        ratios = [n / o for n, o in zip(times["new"], times["old"], strict=True)]
        print(f"new/old per query: median {statistics.median(ratios):.3f}; "
              f"identical replies {identical} of {args.searches}")
        print(f"load average {os.getloadavg()[0]:.2f}, calibration {calibration_ms():.1f} ms after")


if __name__ == "__main__":
    main()
