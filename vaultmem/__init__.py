"""vaultmem: memory for AI assistants that lives in an Obsidian vault."""

__version__ = "0.1.0"
