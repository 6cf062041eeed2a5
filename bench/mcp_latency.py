"""MCP `search_memory` as an assistant sees it: client-measured round trips over stdio on
bench_core's corpus (the one `bench_core.py`'s in-process figures use), and the server's RSS
after the searches.

    python bench/mcp_latency.py --n 10000 --searches 200
    python bench/mcp_latency.py --sizes 1000,10000,100000   # each size, and the growth

`--keep DIR` keeps the vault it builds, `--vault DIR` measures one built earlier. After the timed searches, seven
more come 1.2 s apart, as a person's turns do: each first checks the vault for edits (a scan
of every note, or the server's change feed: observer.ChangeFeed). For scale, the figures end
with a `ping` round trip and a tool call that does no work (`memory_block_get` of no block):
what the SDK on both sides and the pipes cost without a search. Last, the same searches from
a client that writes and reads JSON-RPC lines itself (`plain client`): the server's share
without the Python SDK client's (its own parsing and validation, ~0.3 ms a message here).
`bench/calibrate.py`'s figure before and after: this machine runs the same code up to a third
slower from one hour to the next (docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import TOPICS, build_vault  # noqa: E402
from calibrate import calibration_ms  # noqa: E402

SPACED = 7  # searches 1.2 s apart, after the timed ones


def server_rss_mb(vault: Path, command: bytes = b"mcp") -> float | None:
    """VmRSS of the `vaultmem mcp` process serving `vault` (Linux /proc); with command=b"watch",
    of the vault's watcher."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if command in cmd and str(vault).encode() in cmd:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            continue
    return None


def median_p95_ms(seconds: list[float]) -> tuple[float, float]:
    """The median and the 95th percentile (the nearest rank below) of round trips, in ms."""
    ordered = sorted(seconds)
    return 1000 * statistics.median(ordered), 1000 * ordered[int(0.95 * (len(ordered) - 1))]


def server_env(cache: Path) -> dict[str, str]:
    """The server's environment: lexical search, and `cache` as its cache folder (an older
    commit recorded its first answers there)."""
    env = {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME", "PATH")}
    env.update(VAULTMEM_EMBEDDINGS="off", XDG_CACHE_HOME=str(cache))
    return env


async def run(vault: Path, searches: int, cache: Path, idle: float = 0.0) -> dict[str, float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = server_env(cache)
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", str(vault)],
                                   env=env)
    rng = random.Random(3)
    topics = list(TOPICS)
    out: dict[str, float] = {}
    with open(os.devnull, "w") as devnull:
        t0 = time.perf_counter()
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                out["initialize answered s"] = time.perf_counter() - t0
                await session.list_tools()
                out["tools/list answered s"] = time.perf_counter() - t0
                if idle:  # the person is still typing: the first call comes later
                    await asyncio.sleep(idle)
                    t = time.perf_counter()
                    await session.call_tool("search_memory", {"query": "deploy"})
                    return {f"1st search after {idle:g} s idle ms": 1000 * (time.perf_counter() - t)}
                await session.call_tool("search_memory", {"query": "deploy"})
                out["1st search answered s"] = time.perf_counter() - t0
                times = []
                for _ in range(searches):
                    query = " ".join(rng.sample(topics, 2))
                    t = time.perf_counter()
                    result = await session.call_tool("search_memory", {"query": query, "top_k": 10})
                    times.append(time.perf_counter() - t)
                    assert not result.is_error
                out["search median ms"], out["search p95 ms"] = median_p95_ms(times)
                out["server RSS MB"] = server_rss_mb(vault) or float("nan")
                # What a call costs without a search: the protocol's ping (SDK and pipes only),
                # and a tool whose handler does next to nothing (a block that does not exist).
                pings, small = [], []
                for _ in range(100):
                    t = time.perf_counter()
                    await session.send_ping()
                    pings.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    await session.call_tool("memory_block_get", {"name": "no-such-block"})
                    small.append(time.perf_counter() - t)
                out["ping median ms"] = 1000 * statistics.median(pings)
                out["tool call, no work, median ms"] = 1000 * statistics.median(small)
                # A person between turns: each call comes after the server's freshness window
                # (1 s), so it checks the vault for edits first (a scan, or its change feed).
                spaced = []
                for _ in range(SPACED):
                    await asyncio.sleep(1.2)
                    query = " ".join(rng.sample(topics, 2))
                    t = time.perf_counter()
                    await session.call_tool("search_memory", {"query": query, "top_k": 10})
                    spaced.append(time.perf_counter() - t)
                out["search 1.2 s apart median ms"] = 1000 * statistics.median(spaced)
                watcher = server_rss_mb(vault, b"watch")
                if watcher is not None:  # the watcher served the session; `vaultmem mcp` only waited
                    out["watcher RSS MB"] = watcher
    return out


class PlainClient:
    """A `vaultmem mcp --vault VAULT` server driven by JSON-RPC lines written and read here, no
    SDK on the client's side; initialized, its tools listed and one search made."""

    def __init__(self, vault: Path, env: dict[str, str], cwd: Path | None = None) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault)], cwd=cwd,
                                        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.ids = iter(range(1, 1 << 30))
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.call("tools/list")
        self.call("tools/call", {"name": "search_memory", "arguments": {"query": "deploy"}})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def call(self, method: str, params: dict[str, Any] | None = None) -> tuple[float, Any]:
        """(seconds from writing the request to reading the reply, the result)."""
        assert self.process.stdout is not None
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self.ids), "method": method}
        if params is not None:
            message["params"] = params
        start = time.perf_counter()
        self.send(message)
        line = self.process.stdout.readline()
        took = time.perf_counter() - start
        reply = json.loads(line) if line else {}
        if "result" not in reply or reply["result"].get("isError"):
            sys.exit(f"{method} failed: {line[:500]!r}")
        return took, reply["result"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def plain(vault: Path, searches: int, cache: Path) -> dict[str, float]:
    """The timed searches (same queries) and pings from a client without the SDK: one JSON
    line written, one read."""
    client = PlainClient(vault, server_env(cache))
    try:
        rng, topics = random.Random(3), list(TOPICS)
        times = [client.call("tools/call", {"name": "search_memory",
                                            "arguments": {"query": " ".join(rng.sample(topics, 2)), "top_k": 10}})[0]
                 for _ in range(searches)]
        pings = [client.call("ping")[0] for _ in range(100)]
    finally:
        client.close()
    median, p95 = median_p95_ms(times)
    return {"plain client: search median ms": median, "plain client: search p95 ms": p95,
            "plain client: ping median ms": 1000 * statistics.median(pings)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--sizes", help="comma-separated vault sizes, each built and measured, with the growth "
                                    "from one to the next (e.g. 1000,10000,100000)")
    ap.add_argument("--searches", type=int, default=200)
    ap.add_argument("--vault", type=Path, help="measure this already-built vault (built by an earlier run with --keep)")
    ap.add_argument("--keep", type=Path, help="build the vault here and keep it")
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    if args.vault:
        measure(args.vault.resolve(), args.searches)
        return
    if args.keep:
        build(args.keep, args.n)
        print(f"kept {args.keep}")
        return
    sizes = [int(n) for n in args.sizes.split(",")] if args.sizes else [args.n]
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="vaultmem-mcp-lat-") as tmp:
            vault = Path(tmp) / "v"
            build(vault, n)
            print(f"-- {n:,} memories")
            rows.append((n, measure(vault, args.searches)))
    for (n1, a), (n2, b) in zip(rows, rows[1:], strict=False):
        print(f"growth from {n1:,} to {n2:,}: " + ", ".join(
            f"{key} x{b[key] / a[key]:.1f}" for key in a if a[key] and b.get(key)))


def build(vault: Path, n: int) -> None:
    build_vault(vault, n)
    subprocess.run([sys.executable, "-m", "vaultmem", "index", "rebuild", "--quiet", "--vault", str(vault)],
                   check=True, capture_output=True, env={**os.environ, "VAULTMEM_EMBEDDINGS": "off"})


def measure(vault: Path, searches: int) -> dict[str, float]:
    """A first session (start-up), then the session measured, a first search after 2 s idle
    and the plain client's; prints and returns the figures."""
    print(f"calibration before: {calibration_ms():.1f} ms (bench/calibrate.py: this machine's speed now)")
    with tempfile.TemporaryDirectory(prefix="vaultmem-mcp-cache-") as cache:
        first = asyncio.run(run(vault, 1, Path(cache)))
        out = {"first start: " + key: first[key]
               for key in ("initialize answered s", "tools/list answered s", "1st search answered s")}
        out.update(asyncio.run(run(vault, searches, Path(cache))))
        out.update(asyncio.run(run(vault, 0, Path(cache), idle=2.0)))
        out.update(plain(vault, searches, Path(cache)))
    for key, value in out.items():
        print(f"{key:52s} {value:8.2f}")
    print(f"calibration after: {calibration_ms():.1f} ms")
    return out


if __name__ == "__main__":
    main()
