"""Adapter: the `vaultmem` command. Parses options, calls `MemoryStore`, formats the result.

The group is assembled here, explicitly: `commands.COMMANDS` (core) and
`mnemosyne.COMMANDS` (recall, forget, blocks, awareness, hooks), `service.COMMANDS`
(the watcher as a user service).
"""

from __future__ import annotations

import gc

from vaultmem.cli import collector

collector.for_commands()  # before the imports: see collector.py

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
        # for cycles to collect, a noticeable share of a cold search. Frozen, none is
        # walked; files and databases were closed by the command, and the process ends.
        gc.freeze()
