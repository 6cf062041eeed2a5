"""Every LoCoMo question through MCP `search_memory`, as an assistant sends it: counts the
calls that failed (isError) and the turn-level recall@k of what came back.

The vault is bench/retrieval.py's (one memory note per dialogue turn); the server is the real
one (`build_server`) reached through the SDK's client, in-process.

    python bench/locomo_mcp.py --data ../shared/data/locomo-dev.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval import build_vault, normalise_evidence  # noqa: E402

KS = (5, 10, 25)


def run(data: list[dict[str, Any]]) -> dict[str, Any]:
    from mcp import Client

    from vaultmem.mcp.server import build_server

    calls = errors = 0
    failed: list[str] = []
    recall = {k: 0.0 for k in KS}
    scored = 0
    times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="vaultmem-locomo-mcp-") as tmp:
        for n, sample in enumerate(data):
            store, path_to_dia, _now = build_vault(Path(tmp) / f"v{n}", sample, True)
            store.close()
            server = build_server(store)

            async def ask(server: Any, qa: list[dict[str, Any]], path_to_dia: dict[str, str]) -> None:
                nonlocal calls, errors, scored
                async with Client(server) as client:
                    for item in qa:
                        question = str(item["question"])
                        t0 = time.perf_counter()
                        args = {"query": question, "top_k": max(KS), "page_size": max(KS)}
                        result = await client.call_tool("search_memory", args)
                        times.append(time.perf_counter() - t0)
                        calls += 1
                        if result.is_error:
                            errors += 1
                            failed.append(f"{question!r}: {result.content[0].text}")
                            continue
                        evidence = set(normalise_evidence(item.get("evidence") or []))
                        if not evidence:
                            continue
                        ranked = [path_to_dia.get(r["path"]) for r in result.structured_content["results"]]
                        scored += 1
                        for k in KS:
                            recall[k] += len(evidence & set(ranked[:k])) / len(evidence)

            try:
                asyncio.run(ask(server, sample["qa"], path_to_dia))
            finally:
                server.bridge.close()
    times.sort()
    return {"calls": calls, "errors": errors, "failed": failed[:20],
            "recall": {f"R@{k}": round(100 * v / max(scored, 1), 1) for k, v in recall.items()},
            "p50_ms": round(1000 * times[len(times) // 2], 2) if times else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="LoCoMo-format JSON file (list of conversations).")
    args = ap.parse_args()
    out = run(json.loads(Path(args.data).read_text(encoding="utf-8")))
    print(json.dumps(out, indent=2))
    return 1 if out["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
