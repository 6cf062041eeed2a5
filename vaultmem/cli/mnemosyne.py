"""CLI commands for the Mnemosyne capabilities: recall, store, forget, blocks, feedback,
agent awareness and the lifecycle hooks. Parsing and printing only; logic is in the library.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from vaultmem.cli.common import (
    _store,
    content_argument,
    emit_json,
    handle_errors,
    output_options,
    vault_option,
)
from vaultmem.core.model import MEMORY_TYPES


def agent_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--agent", envvar="VAULTMEM_AGENT",
                        help="Agent id of the assistant (default: $VAULTMEM_AGENT).")(fn)


def _agent_store(vault: str | None, agent: str | None) -> Any:
    store = _store(vault)
    store.agent = agent or None
    return store


def _line(text: str, width: int = 100) -> str:
    first = " ".join((text or "").split())
    return first if len(first) <= width else first[: width - 1] + "…"


# -- recall ----------------------------------------------------------------------------------------


@click.command()
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 100), default=5, show_default=True, help="Results to return.")
@click.option("--min-score", type=click.FloatRange(0.0, 1.0), default=0.3, show_default=True,
              help="Leave out results scoring below this (0.0-1.0).")
@agent_option
@vault_option
@output_options
@handle_errors
def recall(query: str, limit: int, min_score: float, agent: str | None, vault: str | None, as_json: bool) -> None:
    """Recall memories by meaning of the question: intent-aware, multi-signal ranking.

    Counts as access (use_count + 1) and becomes the target of `vaultmem feedback`.

    \b
    Example:
      vaultmem recall "how do I restart the auth service" --limit 3
      vaultmem recall "what port does Redis use" --json
    """
    store = _agent_store(vault, agent)
    result = store.recall(query, limit=limit, min_score=min_score)
    if as_json:
        emit_json(result)
        return
    weights = ", ".join(f"{k} {v:.2f}" for k, v in result["weights"].items())
    click.echo(f"Intent: {result['intent']} ({weights})")
    if not result["results"]:
        click.echo(f"No memory matches {query!r} with a score of {min_score} or more.")
    for i, r in enumerate(result["results"], 1):
        click.echo(f"{i}. [{r['confidenceTag']}] ({r['score']:.2f}) {_line(r['text'])}")
        extra = f"   {r['shortId']} · {r['memoryType']} · {r['decayStatus']}"
        if r.get("botId"):
            extra += f" · by {r['botId']}"
        click.echo(extra)
        if r.get("reasoningChain"):
            click.echo(f"   Reasoning: {r['reasoningChain']}")
        if r.get("graphContext"):
            click.echo(f"   Graph context: {', '.join(r['graphContext'])}")


# -- forget / restore ----------------------------------------------------------------------------


@click.command()
@click.argument("memory_id", required=False)
@click.option("--query", "-q", help="Find the memory to forget by its words instead of its id.")
@agent_option
@vault_option
@output_options
@handle_errors
def forget(memory_id: str | None, query: str | None, agent: str | None, vault: str | None, as_json: bool) -> None:
    """Forget a memory (soft delete: the note stays, marked `deleted: true`).

    By query, a single match above 0.9 is forgotten; otherwise candidates are listed.

    \b
    Example:
      vaultmem forget 7f3c2a1e
      vaultmem forget --query "old staging server address"
      vaultmem restore 7f3c2a1e
    """
    if memory_id and query:
        raise click.UsageError("pass a memory id or --query, not both")
    store = _agent_store(vault, agent)
    result = store.forget(memory_id, query)
    if as_json:
        emit_json(result)
        return
    if result["status"] == "deleted":
        click.echo(f"Forgot {result['id'][:8]}: {_line(result['text'])}")
        click.echo(f"  (the note is kept; `vaultmem restore {result['id'][:8]}` brings it back)")
        return
    click.echo(result["message"])
    for m in result["matches"]:
        click.echo(f"  {m['id'][:8]} ({m['score']:.2f}) {_line(m['text'])}")


@click.command()
@click.argument("memory_id")
@vault_option
@output_options
@handle_errors
def restore(memory_id: str, vault: str | None, as_json: bool) -> None:
    """Bring back a forgotten memory.

    \b
    Example:
      vaultmem restore 7f3c2a1e
    """
    result = _store(vault).restore(memory_id)
    if as_json:
        emit_json(result)
        return
    click.echo(f"Restored {result['id'][:8]}: {_line(result['text'])}")


# -- feedback --------------------------------------------------------------------------------------


@click.command()
@click.argument("signal", type=click.Choice(["positive", "negative"]))
@click.option("--id", "memory_id", help="The memory (default: every result of the last recall).")
@agent_option
@vault_option
@output_options
@handle_errors
def feedback(signal: str, memory_id: str | None, agent: str | None, vault: str | None, as_json: bool) -> None:
    """Tell vaultmem whether recalled memories helped (hit_count, useful_count).

    Useful ones become `core` (ratio > 0.7 after 3+ hits); poor ones are flagged for review.

    \b
    Example:
      vaultmem recall "database connection settings"
      vaultmem feedback positive
      vaultmem feedback negative --id 7f3c2a1e
    """
    store = _agent_store(vault, agent)
    result = store.feedback(signal, memory_id)
    if as_json:
        emit_json(result)
        return
    click.echo(f"Feedback {signal}: {result['updated']} updated, {result['promoted']} promoted to core, "
               f"{result['flagged']} flagged for review")


# -- blocks --------------------------------------------------------------------------------------


@click.group()
def block() -> None:
    """Named shared blocks (memory/blocks/NAME.md), versioned, for several agents.

    \b
    Example:
      vaultmem block set project_status "Sprint 14: payments module"
      vaultmem block get project_status
    """


@block.command(name="get")
@click.argument("name")
@vault_option
@output_options
@handle_errors
def block_get(name: str, vault: str | None, as_json: bool) -> None:
    """Print a block's content (and its version with --json).

    \b
    Example:
      vaultmem block get project_status --json
    """
    result = _store(vault).block_get(name)
    if as_json:
        emit_json(result)
        return
    if result is None:
        raise click.ClickException(f"no block named {name!r}; create it with `vaultmem block set {name} TEXT`")
    click.echo(result["content"])
    click.echo(f"(version {result['version']}, by {result['lastWriter']}, {result['updatedAt']})", err=True)


@block.command(name="set")
@click.argument("name")
@click.argument("content")
@click.option("--expect-version", type=click.IntRange(min=0),
              help="Fail instead of retrying if the block is no longer at this version (0 = must not exist).")
@agent_option
@vault_option
@output_options
@handle_errors
def block_set(name: str, content: str, expect_version: int | None, agent: str | None, vault: str | None,
              as_json: bool) -> None:
    """Write a block (content replaces content; the version goes up by one).

    Pass `-` as CONTENT to read it from stdin.

    \b
    Example:
      vaultmem block set deploy_freeze true --agent release-bot
      vaultmem block set project_status "Sprint 15" --expect-version 3
    """
    if content == "-":
        content = sys.stdin.read()
    result = _agent_store(vault, agent).block_set(name, content, expected_version=expect_version)
    if as_json:
        emit_json(result)
        return
    click.echo(f"Block {result['name']} is at version {result['version']}")


@block.command(name="list")
@vault_option
@output_options
@handle_errors
def block_list(vault: str | None, as_json: bool) -> None:
    """List every block with its version and last writer.

    \b
    Example:
      vaultmem block list
    """
    result = _store(vault).block_list()
    if as_json:
        emit_json({"count": len(result), "blocks": result})
        return
    if not result:
        click.echo("No blocks yet.")
    for b in result:
        click.echo(f"{b['name']}  v{b['version']}  {b['lastWriter']}  {b['updatedAt']}")


# -- agent awareness -------------------------------------------------------------------------------


def _pct(items: list[dict[str, Any]]) -> str:
    return ", ".join(f"{i['name']} ({i['share'] * 100:.0f}%)" for i in items[:3]) or "-"


@click.command()
@click.argument("agent_id")
@click.argument("topic")
@click.option("--limit", type=click.IntRange(1, 100), default=5, show_default=True, help="Memories to show.")
@agent_option
@vault_option
@output_options
@handle_errors
def toma(agent_id: str, topic: str, limit: int, agent: str | None, vault: str | None, as_json: bool) -> None:
    """What one agent knows about a topic (theory of mind for agents).

    \b
    Example:
      vaultmem toma devops-agent "production database"
    """
    result = _agent_store(vault, agent).toma(agent_id, topic, limit)
    if as_json:
        emit_json(result)
        return
    p = result["knowledgeProfile"]
    click.echo(f"{agent_id} on {topic!r}: {len(result['memories'])} memories "
               f"(of {p['totalMemories']}; avg confidence {p['avgConfidence']:.2f}; last active {p['lastActiveAt']})")
    for i, m in enumerate(result["memories"], 1):
        click.echo(f"  {i}. [{m['confidenceTag']}] ({m['score']:.2f}) {_line(m['text'])}")


@click.command(name="bot-profile")
@click.argument("agent_id")
@agent_option
@vault_option
@output_options
@handle_errors
def bot_profile(agent_id: str, agent: str | None, vault: str | None, as_json: bool) -> None:
    """An agent's knowledge profile: totals, top domains and types, confidence, last active.

    \b
    Example:
      vaultmem bot-profile devops-agent
    """
    p = _agent_store(vault, agent).bot_profile(agent_id)
    if as_json:
        emit_json(p)
        return
    click.echo(f"Agent:           {p['agentId']}")
    click.echo(f"Total Memories:  {p['totalMemories']}")
    click.echo(f"Top Domains:     {_pct(p['domains'])}")
    click.echo(f"Top Types:       {_pct(p['types'])}")
    tag = f" ({p['avgConfidenceTag']})" if p["avgConfidenceTag"] else ""
    click.echo(f"Avg Confidence:  {p['avgConfidence']:.2f}{tag}")
    click.echo(f"Last Active:     {p['lastActiveAt'] or '-'}")


@click.command(name="knowledge-gap")
@click.argument("agent_a")
@click.argument("agent_b")
@click.argument("topic")
@agent_option
@vault_option
@output_options
@handle_errors
def knowledge_gap(agent_a: str, agent_b: str, topic: str, agent: str | None, vault: str | None,
                  as_json: bool) -> None:
    """What AGENT_A knows about TOPIC that AGENT_B does not, and the reverse.

    \b
    Example:
      vaultmem knowledge-gap devops-agent backend-agent "Redis"
    """
    r = _agent_store(vault, agent).knowledge_gap(agent_a, agent_b, topic)
    if as_json:
        emit_json(r)
        return
    click.echo(f'Knowledge Gap: {agent_a} vs {agent_b} on "{topic}"')
    for title, items in ((f"{agent_a} knows (that {agent_b} does not):", r["onlyA"]),
                         (f"{agent_b} knows (that {agent_a} does not):", r["onlyB"]),
                         ("Shared knowledge (both agree):", r["shared"])):
        click.echo("")
        click.echo(title)
        if not items:
            click.echo("  (none)")
        for i, m in enumerate(items, 1):
            click.echo(f"  {i}. [{m['confidenceTag']}] {_line(m['text'])}")


@click.command()
@click.argument("topic")
@vault_option
@output_options
@handle_errors
def synthesize(topic: str, vault: str | None, as_json: bool) -> None:
    """Fleet synthesis: facts held independently by 3+ agents become Mesh Facts.

    \b
    Example:
      vaultmem synthesize "production architecture"
    """
    r = _store(vault).synthesize(topic)
    if as_json:
        emit_json(r)
        return
    click.echo(f'Fleet Synthesis: "{topic}"')
    click.echo(f"Sources: {r['sources']} agents contributed")
    if r["message"]:
        click.echo(r["message"])
    click.echo("")
    click.echo("Synthesized Insights:" if r["insights"] else "No fact is held by two or more agents yet.")
    for i, item in enumerate(r["insights"], 1):
        click.echo(f"  {i}. [{item['confidenceTag']}] {_line(item['text'])}  ({', '.join(item['agents'])})")
    if r["contributingAgents"]:
        click.echo("")
        click.echo(f"Contributing agents: {', '.join(r['contributingAgents'])}")


@click.command()
@vault_option
@output_options
@handle_errors
def count(vault: str | None, as_json: bool) -> None:
    """Memory counts by folder and by type.

    \b
    Example:
      vaultmem count
    """
    r = _store(vault).count()
    if as_json:
        emit_json(r)
        return
    rows = [("Shared Memories:", r["shared"]), ("Private Memories:", r["private"]),
            ("Skill Library:", r["skills"]), ("Forgotten:", r["deleted"]), ("Total:", r["total"])]
    for label, value in rows:
        click.echo(f"{label:<18}{value:>7,}")
    click.echo("By folder:  " + ", ".join(f"{k} {v}" for k, v in r["byFolder"].items()))
    click.echo("By type:    " + (", ".join(f"{k} {v}" for k, v in r["byType"].items()) or "-"))


@click.command()
@click.argument("query", required=False)
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True, help="Skills to show.")
@agent_option
@vault_option
@output_options
@handle_errors
def skills(query: str | None, limit: int, agent: str | None, vault: str | None, as_json: bool) -> None:
    """The skill library: procedural memories, newest first or matching QUERY.

    \b
    Example:
      vaultmem skills
      vaultmem skills deploy
    """
    r = _agent_store(vault, agent).skills(query, limit)
    if as_json:
        emit_json(r)
        return
    if query:
        click.echo(f'Skill Library: {r["total"]} matches for "{query}"')
    else:
        click.echo(f"Skill Library: {r['total']} procedures")
    click.echo("")
    for i, s in enumerate(r["skills"], 1):
        score = f" ({s['score']:.2f})" if s["score"] is not None else ""
        click.echo(f"  {i}. [{s['confidenceTag']}]{score} {_line(s['text'], 80)} ({s['steps']} steps)")


# -- store -------------------------------------------------------------------------------------------


@click.command(name="store")
@click.argument("text", required=False)
@click.option("--importance", type=click.FloatRange(0.0, 1.0), help="Importance 0.0-1.0 (default: from urgency x domain).")
@click.option("--category", type=click.Choice(MEMORY_TYPES), help="Memory type (default: classified).")
@click.option("--event-time", help="When it happened, ISO 8601 (default: now).")
@click.option("--private", is_flag=True, help="Visible to this agent only (needs --agent).")
@agent_option
@vault_option
@output_options
@handle_errors
def store_(text: str | None, importance: float | None, category: str | None, event_time: str | None, private: bool,
           agent: str | None, vault: str | None, as_json: bool) -> None:
    """Store a memory through the full pipeline: dedup, classification, confidence, auto-links.

    TEXT `-` (or none, with a pipe) reads the memory from stdin.

    \b
    Example:
      vaultmem store "Redis cluster migrated to port 6380" --importance 0.8 --event-time 2024-01-15T10:00:00Z
      vaultmem store "My deploy key lives in 1Password" --agent ops-bot --private
      echo "Zoë prefers morning meetings" | vaultmem store -
    """
    text = content_argument(text, "text")
    r = _agent_store(vault, agent).store_memory(text, importance=importance, category=category,
                                               event_time=event_time, private=private)
    if as_json:
        emit_json(r)
        return
    if r["status"] == "created":
        click.echo(f"Stored {r['id'][:8]} as {r['memoryType']} [{r['confidenceTag']}] "
                   f"priority {r['priorityScore']:.2f}, {r['classification']}, {r['linkedCount']} linked")
    else:
        click.echo(f"Not stored ({r['status']}): {r.get('message', '')}")


# -- lifecycle hooks -----------------------------------------------------------------------------------


def _stdin_prompt(raw: str) -> str:
    """A hook's stdin: Claude Code JSON (`prompt` on UserPromptSubmit, none on SessionStart) or text."""
    import json

    stripped = raw.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError:
            return raw
        if isinstance(data, dict) and ("hook_event_name" in data or "prompt" in data):
            return str(data.get("prompt") or "")
    return raw


@click.command()
@click.option("--prompt", help="The incoming user message; `-` reads stdin (text or Claude Code hook JSON).")
@agent_option
@vault_option
@output_options
@handle_errors
def context(prompt: str | None, agent: str | None, vault: str | None, as_json: bool) -> None:
    """Print the memory context for a new agent turn (the before_agent_start hook).

    Last session snapshot + memories recalled for the prompt + proactive recalls for its
    entities, framed as evidence (not instructions). Prints nothing when there is nothing.

    \b
    Example:
      vaultmem context --prompt "Why is the Redis cache slow on staging?" --agent claude-code
      echo '{"hook_event_name": "SessionStart"}' | vaultmem context --prompt - --agent claude-code
    """
    if prompt == "-":
        prompt = _stdin_prompt(sys.stdin.read())
    r = _agent_store(vault, agent).context(prompt)
    if as_json:
        emit_json(r)
        return
    if r["context"]:
        click.echo(r["context"])


@click.command()
@click.option("--transcript", required=True,
              help="Transcript file, or `-` for stdin (text, JSONL, or Claude Code hook JSON with transcript_path).")
@agent_option
@vault_option
@output_options
@handle_errors
def capture(transcript: str, agent: str | None, vault: str | None, as_json: bool) -> None:
    """Capture a finished session (the agent_end hook): snapshot, up to 3 memories, feedback.

    \b
    Example:
      vaultmem capture --transcript session.jsonl --agent claude-code
      vaultmem capture --transcript - --agent claude-code < hook-input.json
    """
    if transcript == "-":
        raw = sys.stdin.read()
    else:
        try:
            with open(transcript, encoding="utf-8") as handle:
                raw = handle.read()
        except OSError as exc:
            raise click.BadParameter(f"cannot read {transcript}: {exc.strerror}", param_hint="--transcript") from None
    r = _agent_store(vault, agent).capture(raw, follow_path=True)
    if as_json:
        emit_json(r)
        return
    click.echo(f"Session snapshot: {r['snapshot']['path']} ({r['turns']} messages)")
    for c in r["captured"]:
        if c["status"] == "created":
            click.echo(f"  captured {c['id'][:8]} [{c['confidenceTag']}] {c['memoryType']}")
        else:
            click.echo(f"  skipped ({c['status']})")
    if r["feedback"]:
        click.echo(f"Implicit feedback {r['feedbackSignal']}: {r['feedback']['updated']} memories updated, "
                   f"{r['feedback']['promoted']} promoted")


COMMANDS = (
    recall, forget, restore, feedback, block, toma, bot_profile, knowledge_gap, synthesize, count, skills, store_, context,
    capture,
)
