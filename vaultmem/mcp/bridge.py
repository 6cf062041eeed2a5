"""Where a tool call meets the store: one worker thread, metrics, and errors as `isError`.

Imports neither the MCP SDK nor pydantic, so `vaultmem mcp` can open the store and warm its
index on the worker thread while the SDK is still importing (`server.serve`).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from vaultmem.base.errors import VaultmemError, one_line, storage_error
from vaultmem.mcp.metrics import MeteredStore, Metrics

if TYPE_CHECKING:
    from vaultmem.mcp.registry import ToolSpec
    from vaultmem.store import MemoryStore

log = logging.getLogger("vaultmem.mcp")

class Bridge:
    """Runs tool handlers one at a time on one worker thread, the store's: the store is never
    used by two threads at once, and the event loop keeps reading the client (a cancellation,
    the next request) while a call runs."""

    def __init__(self, store: MemoryStore, metrics: Metrics | None = None) -> None:
        self.metrics = metrics or Metrics()
        self.store = MeteredStore(store, self.metrics)
        self.raw_store = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vaultmem-store")

    def submit(self, fn: Callable[[], Any]) -> Any:
        """Queue `fn` on the store's thread; its `concurrent.futures.Future`."""
        return self._executor.submit(fn)

    async def run(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.wrap_future(self.submit(fn))

    async def call(self, spec: ToolSpec, arguments: dict[str, Any]) -> Any:
        from mcp.types import CallToolResult, TextContent

        from vaultmem.mcp.registry import model_text, reject_nul  # pydantic: loaded by the server by now

        def work() -> dict[str, Any] | None:
            with self.metrics.timed("tools", spec.name):
                for param, value in arguments.items():
                    reject_nul(param, value)
                return spec.handler(self.store, **arguments)

        try:
            result = await self.run(work)
            if result is None:  # memory_block_get of no block: the seed's null
                return CallToolResult(content=[], structured_content={"result": None})
            # the text a model reads is compact (model_text); structuredContent is the result
            return CallToolResult(content=[TextContent(type="text", text=model_text(result))],
                                  structured_content=result)
        except VaultmemError as exc:
            log.info("tool %s rejected: %s", spec.name, exc)
            return CallToolResult(content=[TextContent(type="text", text=f"Error: {one_line(exc)}")], is_error=True)
        except (OSError, sqlite3.Error) as exc:  # a full disk, a read-only vault
            mapped = storage_error(exc)
            if mapped is None:
                raise
            log.warning("tool %s failed: %s", spec.name, mapped)
            return CallToolResult(content=[TextContent(type="text", text=f"Error: {one_line(mapped)}")], is_error=True)

    def warm(self) -> None:
        """Open the index on the store's thread now, so the first tool call does not
        (`Memories.warm`; its first freshness check starts the store's change feed); a failure
        here is the first call's to report."""
        def work() -> None:
            try:
                self.raw_store.warm()
            except Exception as exc:  # noqa: BLE001  (the same error reaches the first call)
                log.debug("warming the index failed: %s", exc)

        self.submit(work)

    def close(self) -> None:
        self.submit(self.raw_store.close).result()
        self._executor.shutdown(wait=True)


def open_bridge(store: MemoryStore) -> Bridge:
    """A store's bridge (built with `observer.serving_policy()`), its index already opening on
    the store's thread: what `vaultmem mcp` starts before it imports the SDK, so the first
    search finds it warm."""
    bridge = Bridge(store)
    bridge.warm()
    return bridge
