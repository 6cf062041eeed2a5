"""The MCP adapter reaches the SDK (and pydantic, anyio) through public names only: no import of
a module or name that starts with `_`, no `_attribute` of an object it did not make itself."""

from __future__ import annotations

import ast

from test_layers import PACKAGE
from test_public_api import _ours as own
from test_public_api import private

ADAPTER = [PACKAGE / "mcp", PACKAGE / "cli" / "commands.py", PACKAGE / "watcher.py"]


def private_names(source: str) -> list[str]:
    """Each private name of another package `source` imports, and each `_attribute` it reads
    (but of `self` and `cls`): `from a._b import c`, `from a import _c`, `import a._b`, `x._y`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and not own(node.module or ""):
            found += [f"line {node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if any(private(p) for p in [*(node.module or "").split("."), a.name])]
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names
                      if not own(a.name) and any(private(p) for p in a.name.split("."))]
        elif (isinstance(node, ast.Attribute) and private(node.attr)
              and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            found.append(f"line {node.lineno}: .{node.attr}")  # vaultmem's own objects do without them too
    return found


def test_the_mcp_adapter_uses_no_private_name():
    files = [p for root in ADAPTER for p in ([root] if root.is_file() else sorted(root.glob("*.py")))]
    assert len(files) >= 8
    found = {str(p.relative_to(PACKAGE)): private_names(p.read_text(encoding="utf-8")) for p in files}
    assert {path: names for path, names in found.items() if names} == {}


def test_a_planted_private_name_is_found():
    planted = ("from mcp.shared._context_streams import create_context_streams\n"
               "from mcp.server import _helper\n"
               "import mcp._private\n"
               "lowlevel = server._lowlevel_server\n"
               "own = self._executor\n"
               "from vaultmem import __version__\n"
               "from vaultmem.cli.common import _store\n")
    assert private_names(planted) == [
        "line 1: from mcp.shared._context_streams import create_context_streams",
        "line 2: from mcp.server import _helper", "line 3: import mcp._private", "line 4: ._lowlevel_server"]
