"""The SDK's imports that a stdio server never runs.

`import mcp` loads the SDK's HTTP transports with the rest. One of them uses sse_starlette,
which at its own import loads uvicorn's `Server` for one purpose: to patch uvicorn's exit
handler so that SSE streams close when uvicorn stops. It skips the patch, by design, when
uvicorn cannot be imported. `vaultmem mcp` and `vaultmem watch` serve MCP over stdio and
never run uvicorn. `stdio_only()` makes that one import fail, so uvicorn and the modules it
brings (memory and start-up time the server does not need) are never loaded. The hook fires
once, for sse_starlette only. Any other importer of uvicorn, in this process or another, gets
it as usual.

Only the commands call it, never a library import: a program that embeds vaultmem's server
and also runs sse_starlette under uvicorn keeps the patch.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from types import FrameType
from typing import Any

_IMPORTER = "sse_starlette.sse"  # the module whose `from uvicorn.main import Server` is skipped
_SKIPPED = "uvicorn"


class SkipUvicornForSSE:
    """A meta path finder: `uvicorn` is not found when sse_starlette imports it, and found as
    usual by every other importer. It leaves `sys.meta_path` after it first applies."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        here = inspect.currentframe()
        if name != _SKIPPED or _importer(here.f_back if here is not None else None) != _IMPORTER:
            return None
        with contextlib.suppress(ValueError):  # once: sse_starlette is imported once
            sys.meta_path.remove(self)
        raise ModuleNotFoundError(f"No module named {name!r} (skipped: vaultmem serves MCP over stdio)", name=name)


def _importer(frame: FrameType | None) -> str | None:
    """The module whose code is importing: the first frame outside the import system."""
    while frame is not None:
        module = frame.f_globals.get("__name__")
        if module not in ("importlib._bootstrap", "importlib._bootstrap_external"):
            return module if isinstance(module, str) else None
        frame = frame.f_back
    return None


def stdio_only() -> None:
    """Skip the SDK's uvicorn import in this process (see the module's text): a no-op when
    sse_starlette was already imported or the hook is already in place."""
    if _IMPORTER in sys.modules or any(isinstance(f, SkipUvicornForSSE) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, SkipUvicornForSSE())
