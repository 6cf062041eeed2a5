"""What the MCP server costs a model per turn, in characters: tools/list per tool profile, the
server instructions, and a 10-result search_memory (text block and structuredContent).

    python bench/mcp_budget.py

The vault: 30 memories of ~150 characters with two tags each; the search returns 10 at the
default preview length. tests/test_mcp_budget.py holds the same figures to the budgets of
docs/mcp.md ("Budgets").
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

WORDS = ("deploy auth token database cache queue latency schema backup review budget design meeting "
         "tuesday postgres redis kafka python rust invoice customer roadmap incident release").split()


def compact(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def fill(root: Path, n: int = 30, seed: int = 3) -> None:
    from vaultmem.store import MemoryStore

    store = MemoryStore(root)
    store.init()
    rng = random.Random(seed)
    for _ in range(n):
        text = ("Deploy notes: " + " ".join(rng.choice(WORDS) for _ in range(30)))[:150]
        store.save(text, tags=["ops", "deploy"], dedupe=False)
    store.close()


def measure(root: Path) -> dict[str, Any]:
    """tools/list characters per profile (the tools array as sent, compact JSON), instruction
    characters, and the 10-result search's text and structuredContent characters."""
    from mcp import Client

    from vaultmem.mcp.server import PROFILES, build_server
    from vaultmem.store import MemoryStore

    figures: dict[str, Any] = {"tools_list": {}, "tools": {}, "instructions": {}}
    for profile in PROFILES:
        server = build_server(MemoryStore(root), profile=profile)

        async def main(server: Any, search: bool) -> tuple[list[Any], Any]:
            async with Client(server) as client:
                tools = (await client.list_tools()).tools
                found = await client.call_tool("search_memory", {"query": "deploy"}) if search else None
                return tools, found

        try:
            tools, found = asyncio.run(main(server, profile == "all"))
        finally:
            server.bridge.close()
        figures["tools_list"][profile] = compact([t.model_dump(mode="json", by_alias=True, exclude_none=True)
                                                  for t in tools])
        figures["tools"][profile] = len(tools)
        figures["instructions"][profile] = len(server.instructions or "")
        if found is not None:
            figures["search_count"] = found.structured_content["count"]
            figures["search_text"] = sum(len(c.text) for c in found.content)
            figures["search_structured"] = compact(found.structured_content)
            figures["search_text_sample"] = found.content[0].text
    return figures


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        fill(root)
        f = measure(root)
    print("profile      tools  tools/list chars  instructions chars")
    for profile, size in f["tools_list"].items():
        print(f"{profile:12s} {f['tools'][profile]:5d}  {size:16,d}  {f['instructions'][profile]:18,d}")
    print(f"search_memory, {f['search_count']} results of ~150 characters: text {f['search_text']:,} characters, "
          f"structuredContent {f['search_structured']:,} characters (compact JSON)")
    if "-v" in sys.argv:
        print(f["search_text_sample"])


if __name__ == "__main__":
    main()
