"""The cyclic garbage collector's thresholds for the `vaultmem` command.

Python's collector walks its youngest objects every 700 new ones. A command's objects (the
modules, functions and classes its imports make, a scan's entries) mostly live until it
ends: a cold `vaultmem search` ran dozens of collections, none finding anything.
`for_commands` (called by `vaultmem.cli` before its imports) waits for 50,000 new objects
instead: no collection in a cold search. Objects without cycles are freed at their last
reference as ever. The commands that run for hours (`watch`, `mcp`) call `long_running`,
which puts Python's own thresholds back.
"""

from __future__ import annotations

import gc

PYTHON = gc.get_threshold()  # before anything here changed them
FIRST = 50_000


def for_commands() -> None:
    gc.set_threshold(FIRST, *PYTHON[1:])


def long_running() -> None:
    gc.set_threshold(*PYTHON)
