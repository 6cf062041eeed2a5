"""Mnemosyne's features: recall, forget, blocks, feedback, agent awareness, ingestion, hooks."""
