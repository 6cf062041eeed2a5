"""A stdio server never loads uvicorn for sse_starlette (mcp/lean.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LEAN = """
import sys
{hook}
import vaultmem.mcp.server
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
import sse_starlette.sse
print("uvicorn" in sys.modules, sse_starlette.sse.AppStatus.original_handler is None,
      [type(f).__name__ for f in sys.meta_path if "Uvicorn" in type(f).__name__])
import uvicorn.main
print(sys.modules["uvicorn.main"].Server.__name__)
"""


@pytest.mark.parametrize(("hook", "printed"), [
    ("from vaultmem.mcp import lean; lean.stdio_only()", "False True []\nServer\n"),
    ("", "True False []\nServer\n"),
])
def test_a_stdio_server_does_not_load_uvicorn_for_sse_starlette(hook, printed):
    """sse_starlette imports uvicorn only to patch its exit handler, and skips that when
    uvicorn is missing; with `lean.stdio_only()` its import fails, once, for sse_starlette
    alone: the hook leaves sys.meta_path and the next importer gets uvicorn. Without the hook the
    SDK loads uvicorn (if it stops doing so, the hook is obsolete and this case says so)."""
    proc = subprocess.run([sys.executable, "-c", LEAN.format(hook=hook)], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent, timeout=120)
    assert proc.stderr == ""
    assert proc.stdout == printed


def test_the_serving_commands_skip_uvicorn(runner, vault_path, monkeypatch):
    """`vaultmem mcp` and `vaultmem watch` install the hook before anything imports the SDK
    (a no-op in a process that already imported it, as this one may have)."""
    from vaultmem.cli import cli, collector
    from vaultmem.mcp import lean, server

    def ended(store, *, bridge, **options):  # a session that ended at once
        bridge.close()  # closes the store and its change feed

    installed = []
    monkeypatch.setattr(lean, "stdio_only", lambda: installed.append(True))
    monkeypatch.setattr(server, "serve", ended)
    try:
        assert runner.invoke(cli, ["mcp", "--vault", str(vault_path)]).exit_code == 0
        status = runner.invoke(cli, ["watch", "--status", "--vault", str(vault_path)])
        assert status.output.startswith("No watcher has run for "), status.output
    finally:
        collector.for_commands()  # as the CLI's import left it, for the tests after this one
    assert installed == [True, True]
