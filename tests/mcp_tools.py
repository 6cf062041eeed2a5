"""The MCP tool registry as the tests expect it: which tools write the vault, which only read."""

WRITING = {
    "save_memory", "touch_memory", "observe_memory_usage", "gc", "promote_memory", "consolidate_memories",
    "create_relation", "auto_recall_process_message",
    # Mnemosyne
    "memory_recall", "memory_forget", "memory_block_set", "memory_feedback", "memory_store",
    "before_agent_start", "agent_end", "memory_consolidate",
}
READING = {
    "search_memory", "search_unified", "open_memories", "cluster_memories", "read_graph", "backfill_embeddings",
    "get_performance_metrics", "reset_performance_metrics", "analyze_message", "analyze_for_recall",
    "memory_block_get", "memory_toma",
}
ALL_TOOLS = WRITING | READING


# A raw session's first frames and one tool call that fails (no such memory), for tests that
# drive `vaultmem mcp` over pipes without the SDK's client.
RAW_REQUESTS = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "touch_memory",
                                                                  "arguments": {"memory_id": "deadbeef"}}},
]
