"""Adapter: the MCP server (`vaultmem mcp`). Parses arguments, calls `MemoryStore`, returns its dicts."""
