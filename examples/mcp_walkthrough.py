"""A real MCP session over stdio: an assistant saves, searches, reinforces (docs/mcp.md).

Starts `vaultmem mcp --vault VAULT` as a subprocess with the SDK's own client and prints
each call and its result. Run it on a fresh vault:

    vaultmem init /tmp/demo && VAULTMEM_NOW=2026-11-22T10:15:00Z python examples/mcp_walkthrough.py /tmp/demo
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any


def show(name: str, args: dict[str, Any], result: Any) -> dict[str, Any] | None:
    print(f">>> {name} {json.dumps(args)}")
    text = result.content[0].text
    if result.is_error:
        print(f"isError: {text}\n")
        return None
    data = json.loads(text)
    data.pop("evidence_notice", None)  # the same sentence on every result that carries memory text
    print(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return data


async def main(vault: str) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", vault],
                                   env=dict(os.environ))
    with open(os.devnull, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                print(sorted(t.name for t in (await s.list_tools()).tools), "\n")

                async def call(name: str, args: dict[str, Any]) -> dict[str, Any] | None:
                    return show(name, args, await s.call_tool(name, args))

                await call("analyze_message", {"message": "I prefer PostgreSQL for new services"})
                saved = await call("save_memory", {"content": "The user prefers PostgreSQL for new services",
                                                   "tags": ["preferences", "databases"], "source": "chat"})
                assert saved is not None
                short = saved["memory_id"][:8]
                await call("save_memory", {"content": "The staging DB password is password=Tr0ub4dor&3x"})
                await call("analyze_for_recall", {"message": "What did I tell you about databases?"})
                await call("search_memory", {"query": "postgresql database", "top_k": 3, "preview_length": 80})
                await call("touch_memory", {"memory_id": short})
                await call("observe_memory_usage", {"memory_ids": [short], "context_tags": ["deployment"]})
                await call("search_unified", {"query": "postgresql", "limit": 5})
                await call("promote_memory", {"memory_id": short, "dry_run": True})
                await call("gc", {})
                await call("search_memory", {"top_k": 0})
                await call("touch_memory", {"memory_id": "../../etc/passwd"})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault")
    asyncio.run(main(parser.parse_args().vault))
