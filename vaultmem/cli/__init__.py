"""Adapter: the `vaultmem` command. Parses options, calls `MemoryStore`, formats the result.

The group is assembled here, explicitly: `commands.COMMANDS` (core) and
`mnemosyne.COMMANDS` (recall, forget, blocks, awareness, hooks), `service.COMMANDS`
(the watcher as a user service).
"""

from __future__ import annotations

import gc

# Python's cyclic collector walks its youngest objects every 700 new ones. A command's objects
# (the modules, functions and classes its imports make, a scan's entries) mostly live until
# it ends: a cold `vaultmem search` of 10,000 notes ran ~70 collections (7-10 ms), none
# finding anything. Every 50,000 new objects instead: none in a cold search. Objects without
# cycles are freed at their last reference as ever; the commands that run for hours (`watch`,
# `mcp`) put Python's own thresholds back (common.long_running).
PYTHON_GC = gc.get_threshold()
gc.set_threshold(50_000, *PYTHON_GC[1:])

import click  # noqa: E402

from vaultmem import __version__  # noqa: E402
from vaultmem.cli import commands, mnemosyne, service  # noqa: E402


@click.group()
@click.version_option(__version__, prog_name="vaultmem")
def cli() -> None:
    """Memory for AI assistants, kept as notes in your Obsidian vault.

    \b
    Quick start:
      vaultmem init ~/Documents/vaultmem
      vaultmem save "Use JWT tokens for authentication in all new APIs" --tag auth
      vaultmem search "authentication"
    """


for _command in (*commands.COMMANDS, *mnemosyne.COMMANDS, *service.COMMANDS):
    cli.add_command(_command)


def main() -> None:
    try:
        cli()
    finally:
        # The command is over: the interpreter's exit would walk every object it made looking
        # for cycles to collect (~20 ms of a 0.2 s search at 10,000 notes). Frozen, none is
        # walked; files and databases were closed by the command, and the process ends.
        gc.freeze()
