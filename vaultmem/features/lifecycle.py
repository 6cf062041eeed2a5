"""The memory lifecycle on vault files: reinforcement, review, gc, promotion, unified search.

Selection always runs on the index catalog (no file is read to find candidates); every
change re-reads its note under the vault lock right before acting, so an edit a person
made in Obsidian between a preview and an apply is re-evaluated and never clobbered.
Notes move through `Memories.move_memory`: subfolder and file name kept (a free name on a
clash), links written as paths to them rewritten and listed in the result (`links_rewritten`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from vaultmem.base.errors import InvalidInput, MalformedNote, NotFound, VaultmemError
from vaultmem.base.timeutil import days_between
from vaultmem.core import decay
from vaultmem.core.model import UnifiedQuery, paginate
from vaultmem.core.port import MemoryCore
from vaultmem.core.scoring import (
    _access_list,
    _urgency,
    access_changes,
    is_cross_domain,
    promotion_reason,
    rank_score,
    record_score,
)
from vaultmem.storage import note as notes
from vaultmem.storage.index import iso, record_from_text
from vaultmem.storage.links import JSON_VALUES
from vaultmem.storage.record import Record

GC_LIMIT_MAX = 10_000
SAMPLE_IDS = 10  # gc's memory_ids is a sample, as in the seed
MAX_CANDIDATES_SHOWN = 20
PREVIEW_CHARS = 100


# -- catalog scans (no file reads) -------------------------------------------------------------


@dataclasses.dataclass
class Candidate:
    """A memory selected from the catalog for gc or promotion."""

    path: str
    id: str
    score: float
    use_count: int
    created: dt.datetime
    reason: str = ""


def scan_catalog(store: MemoryCore, status: str, now: dt.datetime) -> Iterable[tuple[Any, ...]]:
    """(path, id, score, use_count, created_ts) of every memory with `status`, from the catalog only."""
    s = store.settings
    folder = store.vault.memory_dirs[status]
    # Only memories inside the status's folder: one the person moved elsewhere stays theirs.
    # The path range is `folder/` up to `folder0` ('0' follows '/'), at any depth.
    rows = store.index.db.execute(
        "SELECT path, id, created, last_used, use_count, strength, memory_type, pinned, props"
        " FROM notes WHERE kind = 'memory' AND status = ? AND path >= ? AND path < ?",
        (status, folder + "/", folder + "0"))
    now_ts = now.timestamp()
    beta = s.decay_beta
    actr = s.decay_model == "actr"
    for path, mid, created, last_used, use_count, strength, memory_type, pinned, props in rows:
        use_count = use_count or 0
        last = last_used if last_used is not None else now_ts
        if pinned or (memory_type or "").lower() in decay.IMMUNE_TYPES:
            score = (use_count + 1) ** beta * strength
        elif actr:
            meta = json.loads(props or "{}")
            score = decay.score(
                use_count=use_count, last_used=_dt(last), strength=strength, now=now, settings=s,
                created=_dt(created if created is not None else last),
                access_times=_access_list(meta), urgency=_urgency(meta))
        else:
            score = (use_count + 1) ** beta * decay.decay_factor(now_ts - last, s) * strength
        yield path, mid, score, use_count, created if created is not None else last


def _dt(ts: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc)


def gc_candidates(store: MemoryCore, now: dt.datetime) -> list[Candidate]:
    """Short-term memories under the forget threshold, most forgotten first."""
    threshold = store.settings.forget_threshold
    found = [Candidate(p, i, sc, u, _dt(c)) for p, i, sc, u, c in scan_catalog(store, "active", now)
             if sc < threshold]
    found.sort(key=lambda c: (c.score, c.path))
    return found


def promotion_candidates(store: MemoryCore, now: dt.datetime) -> list[Candidate]:
    """Short-term memories meeting the promotion criteria, best first."""
    s = store.settings
    found = []
    min_uses = min(1, s.promote_use_count)
    for p, i, sc, u, c in scan_catalog(store, "active", now):
        if u < min_uses:
            continue
        reason = promotion_reason(sc, u, _dt(c), now, s)
        if reason:
            found.append(Candidate(p, i, sc, u, _dt(c), reason))
    found.sort(key=lambda c: (-c.score, c.path))
    return found


# -- the re-check under the lock ---------------------------------------------------------------


def _read_current(store: MemoryCore, cand: Candidate) -> tuple[Record | None, str]:
    """The note as it is on disk now, or None and why it can no longer be acted on."""
    path = store.vault.abs(cand.path)
    try:
        text = path.read_text(encoding="utf-8")
        st = path.stat()
    except FileNotFoundError:
        return None, "moved or deleted since it was selected"
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read it: {exc}"
    try:
        rec = record_from_text(store.vault, cand.path, text, (st.st_mtime_ns, st.st_size))
    except MalformedNote as exc:
        return None, f"malformed: {exc.reason}"
    if rec.kind != "memory" or rec.id != cand.id:
        return None, "the file no longer holds this memory"
    return rec, ""


def _move_and_mark(store: MemoryCore, rel: str, status: str, changes: dict[str, Any],
                   moves: list[dict[str, Any]]) -> str:
    """Move a memory into the folder of `status` (subfolder kept, links to it rewritten), then
    set `changes` on it; the move (with its link edits) is added to `moves`."""
    moved = store.move_memory(rel, status, changes)
    moves.append(moved)
    return str(moved["path"])


def move_report(moves: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The keys every command that moves memories adds to its result: each link it rewrote
    in another note and each memory that took a free name because its own was taken."""
    return {
        "links_rewritten": [edit for m in moves for edit in m["links_rewritten"]],
        "renamed": [{"from": m["from"], "path": m["path"]} for m in moves if m.get("renamed_to")],
    }


# -- gc ------------------------------------------------------------------------------------------


def gc(store: MemoryCore, apply: bool = False, delete: bool = False, limit: int | None = None) -> dict[str, Any]:
    """Archive (or move to .trash/) short-term memories under the forget threshold."""
    if limit is not None and not 1 <= limit <= GC_LIMIT_MAX:
        raise InvalidInput(f"limit must be between 1 and {GC_LIMIT_MAX:,}, got {limit}")
    store.sync()
    now = store.now()
    threshold = store.settings.forget_threshold
    candidates = gc_candidates(store, now)
    if limit is not None:
        candidates = candidates[:limit]
    done: list[Candidate] = []
    skipped: list[dict[str, Any]] = []
    moves: list[dict[str, Any]] = []
    if not apply:
        done = candidates
    else:
        for cand in candidates:
            with store.vault.lock():
                rec, why = _read_current(store, cand)
                if rec is not None:
                    if rec.status != "active":
                        why = f"now {rec.status}, no longer in short-term memory"
                        rec = None
                    else:
                        cand.score = record_score(rec, now, store.settings)
                        if cand.score >= threshold:
                            rec, why = None, f"score is now {cand.score:.4f} (>= {threshold:g}): edited since selected"
                if rec is None:
                    skipped.append({"id": cand.id, "path": cand.path, "reason": why})
                    continue
                try:
                    if delete:
                        store.vault.trash(cand.path)
                        store.index.refresh([], removed=[cand.path])
                    else:
                        _move_and_mark(store, cand.path, "archived", {"status": "archived", "archived_at": now}, moves)
                except VaultmemError as exc:
                    skipped.append({"id": cand.id, "path": cand.path, "reason": str(exc)})
                    continue
            done.append(cand)
    n = len(done)
    freed = round(float(sum(c.score for c in done)), 4)
    target = ".trash/" if delete else f"{store.settings.archive_dir.strip('/')}/"
    verb = ("Would remove" if delete else "Would archive") if not apply else ("Removed" if delete else "Archived")
    message = f"{verb} {n} low-scoring memor{'y' if n == 1 else 'ies'} (threshold: {threshold:g})"
    if n:
        message += f", moved to {target}" if apply else f"; run with --apply to move them to {target}"
    if skipped:
        message += f"; skipped {len(skipped)} changed since selection"
    return {
        "success": True,
        "dry_run": not apply,
        "removed_count": n if delete else 0,
        "archived_count": 0 if delete else n,
        "freed_score_sum": freed,
        "memory_ids": [c.id for c in done[:SAMPLE_IDS]],
        "total_affected": n,
        "candidates": [{"id": c.id, "title": _title(c.path), "path": c.path, "score": round(c.score, 4)}
                       for c in done[:SAMPLE_IDS]],
        "skipped": skipped,
        **move_report(moves),
        "message": message,
    }


def _title(path: str) -> str:
    """What Obsidian shows as a note's title: its file name without `.md`."""
    return path.rsplit("/", 1)[-1][:-3]


# -- promotion -------------------------------------------------------------------------------------


def promote(store: MemoryCore, ref: str | None = None, auto: bool = False, apply: bool = True,
            force: bool = False) -> dict[str, Any]:
    """Move memories that earned it from memory/stm/ to memory/ltm/ (`status: promoted`)."""
    if not ref and not auto:
        raise InvalidInput("pass a memory id to promote, or --auto to find the candidates")
    store.sync()
    now = store.now()
    s = store.settings
    ltm = s.ltm_dir.strip("/")
    if ref:
        asked = store.resolve(ref)
        if not store.vault.owns(asked.path):
            return _promote_result(apply, [], [], [], f"Memory {asked.id} is in {asked.path}, outside vaultmem's "
                                                      "folders: it is yours, vaultmem never moves it")
        score = record_score(asked, now, s)
        if asked.status == "promoted":
            return _promote_result(apply, [], [], [], f"Memory {asked.id} is already promoted ({asked.path})")
        created = asked.created_dt or now
        reason = promotion_reason(score, asked.use_count, created, now, s)
        if reason is None and force:
            reason = "Forced"
        if reason is None:
            why = (f"score {score:.2f} needs >= {s.promote_threshold:g} with at least one use, or "
                   f"{s.promote_use_count} uses within {s.promote_time_window_days:g} days "
                   f"(has {asked.use_count}); use --force to promote anyway")
            return _promote_result(apply, [], [], [], f"Memory {asked.id} does not meet the promotion criteria: {why}")
        candidates = [Candidate(asked.path, asked.id or "", score, asked.use_count, created, reason)]
    else:
        candidates = promotion_candidates(store, now)
    promoted: list[Candidate] = []
    skipped: list[dict[str, Any]] = []
    moves: list[dict[str, Any]] = []
    if apply:
        for cand in candidates:
            with store.vault.lock():
                rec, why = _read_current(store, cand)
                if rec is not None:
                    if rec.status == "promoted":
                        rec, why = None, "already promoted"
                    else:
                        cand.score = record_score(rec, now, s)
                        if cand.reason != "Forced":
                            reason = promotion_reason(cand.score, rec.use_count, rec.created_dt or now, now, s)
                            if reason is None:
                                why = f"no longer meets the criteria (score {cand.score:.4f}, used {rec.use_count}×)"
                                rec = None
                            else:
                                cand.reason = reason
                if rec is None:
                    skipped.append({"id": cand.id, "path": cand.path, "reason": why})
                    continue
                try:
                    _move_and_mark(store, cand.path, "promoted", {"status": "promoted", "promoted_at": now}, moves)
                except VaultmemError as exc:
                    skipped.append({"id": cand.id, "path": cand.path, "reason": str(exc)})
                    continue
            promoted.append(cand)
    shown = promoted if apply else candidates
    n = len(promoted) if apply else len(candidates)
    noun = f"memor{'y' if n == 1 else 'ies'}"
    message = (f"Promoted {n} {noun} to {ltm}/" if apply else f"Would promote {n} {noun} to {ltm}/")
    if skipped:
        message += f"; skipped {len(skipped)} changed since selection"
    result = _promote_result(apply, candidates, promoted, shown, message, skipped, store, now)
    result.update(move_report(moves))
    paths = {m["from"]: m["path"] for m in moves}
    for detail in result["candidates"]:
        detail["new_path"] = paths.get(detail["path"])
    return result


def _promote_result(apply: bool, candidates: list[Candidate], promoted: list[Candidate],
                    shown: list[Candidate], message: str, skipped: list[dict[str, Any]] | None = None,
                    store: MemoryCore | None = None, now: dt.datetime | None = None) -> dict[str, Any]:
    details = []
    if shown and store is not None and now is not None:
        top = shown[:MAX_CANDIDATES_SHOWN]
        by_id = {r.id: r for r in store.index.records(
            f"kind = 'memory' AND id IN ({JSON_VALUES})", [json.dumps([c.id for c in top])])}
        for c in shown[:MAX_CANDIDATES_SHOWN]:
            rec = by_id.get(c.id)
            content = rec.content if rec else ""
            details.append({
                "id": c.id,
                "title": _title(c.path),
                "path": c.path,
                "content_preview": preview(content, PREVIEW_CHARS),
                "reason": c.reason,
                "score": round(c.score, 4),
                "use_count": c.use_count,
                "age_days": round(days_between(c.created, now), 2),
            })
    return {
        "success": True,
        "dry_run": not apply,
        "candidates_found": len(candidates),
        "promoted_count": len(promoted),
        "promoted_ids": [c.id for c in promoted],
        "candidates": details,
        "skipped": skipped or [],
        "message": message,
    }


def preview(content: str, length: int) -> str:
    """The first `length` characters (0 = everything), with ... when cut."""
    if length <= 0 or len(content) <= length:
        return content
    return content[:length].rstrip() + "..."


# -- maintenance ---------------------------------------------------------------------------------------


def maintenance(store: MemoryCore) -> dict[str, Any]:
    """One gc + promotion pass; applies only what `auto_gc` / `auto_promote` allow."""
    s = store.settings
    gc_result = gc(store, apply=s.auto_gc)
    promote_result = promote(store, auto=True, apply=s.auto_promote)
    parts = [gc_result["message"], promote_result["message"]]
    return {
        "success": True,
        "applied": {"gc": s.auto_gc, "promote": s.auto_promote},
        "gc": gc_result,
        "promote": promote_result,
        "next_run_in_s": s.maintenance_interval,
        "message": "; ".join(parts),
    }


# -- observe (natural spaced repetition) -----------------------------------------------------------


def observe(store: MemoryCore, refs: Sequence[str], context_tags: Sequence[str] = ()) -> dict[str, Any]:
    """Memories used in a response: reinforce them, count reviews, boost cross-domain use."""
    from vaultmem.core.model import validate_tags

    if not refs:
        raise InvalidInput("no memory ids given; pass the ids of the memories you used")
    if len(refs) > 100:
        raise InvalidInput(f"{len(refs)} memory ids given; the limit is 100")
    context = validate_tags(context_tags)
    s = store.settings
    if not s.auto_reinforce:
        return {"reinforced": False, "reason": "auto_reinforce is disabled in config", "count": 0}
    store.sync()
    now = store.now()
    results: list[dict[str, Any]] = []
    cross_count = 0
    for ref in refs:
        try:
            rec = store.resolve(ref)
        except NotFound:
            results.append({"id": ref, "status": "not_found"})
            continue
        if not store.vault.owns(rec.path):  # moved out by the person: searched, never written
            results.append({"id": rec.id, "status": "not_owned", "path": rec.path})
            continue
        flags: dict[str, bool] = {}

        def change(current: Record, flags: dict[str, bool] = flags) -> dict[str, Any]:
            cross = is_cross_domain(current.tags, context, s)
            flags["cross"] = cross
            review_count = int(notes.as_number(current.props.get("review_count"), 0)) + 1
            changes: dict[str, Any] = {
                "use_count": current.use_count + 1,
                "last_used": now,
                **access_changes(current, now, s),
                "review_count": review_count,
                "last_review": now,
            }
            if cross:
                changes["strength"] = round(min(2.0, current.strength + s.cross_domain_boost), 3)
                changes["cross_domain_count"] = int(notes.as_number(current.props.get("cross_domain_count"), 0)) + 1
            return changes

        updated = store.modify(rec, change)
        cross_count += flags.get("cross", False)
        results.append({
            "id": updated.id,
            "status": "reinforced",
            "cross_domain": flags.get("cross", False),
            "new_use_count": updated.use_count,
            "new_review_count": int(notes.as_number(updated.props.get("review_count"), 0)),
            "strength": updated.strength,
        })
    count = sum(1 for r in results if r["status"] == "reinforced")
    return {
        "success": count > 0,
        "reinforced": count > 0,
        "count": count,
        "cross_domain_count": cross_count,
        "results": results,
        "message": f"Reinforced {count} memor{'y' if count == 1 else 'ies'}"
                   f" ({cross_count} cross-domain)",
    }


# -- unified search ----------------------------------------------------------------------------------


def _content_key(text: str) -> str:
    return hashlib.sha1(re.sub(r"\s+", " ", text).strip().lower().encode("utf-8")).hexdigest()


def search_unified(store: MemoryCore, q: UnifiedQuery) -> dict[str, Any]:
    """STM memories, LTM memories and the person's own notes in one ranking.

    rank = weight * base, where base is rank_score(relevance, decay score) for memories
    and relevance for vault notes (they do not decay); weight is stm_weight for active
    memories, ltm_weight for promoted memories and vault notes. window_days and min_score
    filter STM only, as in the seed. Duplicates (same id, or same text) keep their best.
    """
    q = q.validated()
    text, tags, limit, window_days, min_score = q.query or "", q.tags, q.limit, q.window_days, q.min_score
    stm_weight, ltm_weight, page, page_size, preview_length = q.stm_weight, q.ltm_weight, q.page, q.page_size, q.preview_length
    store.sync()
    now = store.now()
    s = store.settings
    since = now - dt.timedelta(days=window_days) if window_days else None
    scored: list[tuple[float, Record, float | None, float | None, str]] = []

    def keep_stm(rec: Record, score: float) -> bool:
        if since is not None and (rec.last_used or 0) < since.timestamp():
            return False
        return min_score is None or score >= min_score

    note = None
    if text and q.literal_fallback:
        from vaultmem.storage.index import literal_query

        text, note = literal_query(text)
    if text:
        fetch = max(s.search_candidates, limit * 5)
        hits, _total = store.index.search(text, kinds=("memory", "note"), statuses=None, tags=tags, limit=fetch)
        best = hits[0][1] if hits and hits[0][1] > 0 else 1.0
        records = store.index.by_paths([p for p, _ in hits])
        for path, bm25 in hits:
            rec = records.get(path)
            if rec is None:
                continue
            relevance = bm25 / best
            if rec.kind == "note":
                scored.append((ltm_weight * relevance, rec, None, relevance, "vault"))
                continue
            if rec.status not in ("active", "promoted"):
                continue
            score = record_score(rec, now, s)
            if rec.status == "active":
                if keep_stm(rec, score):
                    scored.append((stm_weight * rank_score(relevance, score, s.decay_weight), rec, score, relevance, "stm"))
            else:
                scored.append((ltm_weight * rank_score(relevance, score, s.decay_weight), rec, score, relevance, "ltm"))
    else:
        for rec in store.index.records("kind = 'memory' AND status IN ('active', 'promoted')"):
            if tags and not notes.tag_matches(tags, [*rec.tags, *notes.inline_tags(rec.content)]):
                continue
            score = record_score(rec, now, s)
            if rec.status == "active":
                if keep_stm(rec, score):
                    scored.append((stm_weight * score, rec, score, None, "stm"))
            else:
                scored.append((ltm_weight * score, rec, score, None, "ltm"))
    # another agent's private memories stay private here too (a person's own notes are never private)
    scored = [item for item in scored if item[1].kind == "note" or store.visible(item[1])]
    scored.sort(key=lambda x: (-x[0], x[1].path))
    seen_ids: set[str] = set()
    seen_text: set[str] = set()
    unique = []
    for item in scored:
        rec = item[1]
        key = _content_key(rec.content)
        if (rec.id and rec.id in seen_ids) or key in seen_text:
            continue
        if rec.id:
            seen_ids.add(rec.id)
        seen_text.add(key)
        unique.append(item)
        if len(unique) >= limit:
            break
    window, pagination = paginate(unique, page, page_size)
    results: list[dict[str, Any]] = []
    for rank, rec, decay_score, match, source in window:
        results.append({
            "id": rec.id,
            "source": source,
            "title": rec.title,
            "content": preview(rec.content, preview_length),
            "tags": rec.tags,
            "status": rec.status if rec.kind == "memory" else None,
            "score": round(rank, 4),
            "decay_score": None if decay_score is None else round(decay_score, 4),
            "relevance": None if match is None else round(match, 4),
            "last_used": iso(rec.last_used),
            "path": rec.path,
        })
    out = {
        "success": True,
        "count": len(results),
        "results": results,
        "pagination": pagination,
    }
    if note:
        out["message"] = note[0].upper() + note[1:]
    return out
