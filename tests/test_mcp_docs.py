"""docs/mcp.md lists every tool the server registers, and only those, with the right `writes`."""

from __future__ import annotations

import re
from pathlib import Path

from vaultmem.mcp.server import TOOLS

DOC = Path(__file__).resolve().parent.parent / "docs" / "mcp.md"


def test_docs_mcp_lists_every_registered_tool_with_whether_it_writes():
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z_]+)` \| (yes|no)\b", DOC.read_text(), re.M)}
    assert set(rows) == set(TOOLS)
    assert {name for name, writes in rows.items() if writes == "yes"} == {n for n, s in TOOLS.items() if s.writes_vault}
    assert len(TOOLS) == 28
