"""Results as text for people, shared by the adapters (the CLI prints it, MCP returns it as `text`)."""

from __future__ import annotations

from typing import Any

LABELS = {"stm": "STM", "ltm": "LTM", "vault": "Vault"}


def format_unified(results: list[dict[str, Any]], pagination: dict[str, Any], verbose: bool) -> str:
    """The seed's formatted text block: one entry per result, best first."""
    if not results:
        return "No results found."
    total = pagination["total_count"]
    lines = [f"Found {total} result{'' if total == 1 else 's'} (page {pagination['page']} of {pagination['total_pages']}):", ""]
    first = (pagination["page"] - 1) * pagination["page_size"]
    for n, item in enumerate(results, first + 1):
        body = item["content"].strip().replace("\n", "\n   ")
        lines.append(f"{n}. [{LABELS[item['source']]}] {body}")
        detail = f"   score: {item['score']:.4f}"
        if item["tags"]:
            detail += f" · tags: {', '.join(item['tags'])}"
        lines.append(detail)
        if verbose:
            ident = f"id: {item['id']} · " if item["id"] else ""
            lines.append(f"   {ident}path: {item['path']}")
        lines.append("")
    return "\n".join(lines).rstrip("\n")
