"""The consolidation pipeline with a person in the loop.

Five stages in the seed's order (decay -> cluster -> merge -> promote -> relations) turn
into proposals. Where CortexGraph files them into an issue tracker, vaultmem writes a review
note, `memory/reviews/<date>.md`, with one task checkbox per proposal and wikilinks to the
notes concerned. A person ticks boxes in Obsidian; `apply_review` carries out the ticked
ones once and marks them done. Each proposal carries a hidden Obsidian comment,
`%%vaultmem:<action>:<ids>%%`, which becomes `%%vaultmem-done:...%%` (or `-failed`) once
handled, so applying a review twice is a no-op.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vaultmem.base.errors import InvalidInput, NotFound, VaultmemError
from vaultmem.base.timeutil import format_time, parse_time
from vaultmem.core.port import MemoryCore
from vaultmem.features import consolidate as C
from vaultmem.features import lifecycle
from vaultmem.storage.record import Record

AGENTS = ("decay", "cluster", "merge", "promote", "relations")
ACTIONS = ("merge", "promote", "touch", "archive", "relate")
SAFE_ACTIONS = ("touch", "relate")
DANGER_ZONE = 0.35
MERGE_COHESION = 0.75
MIN_SHARED_ENTITIES = 2
MIN_CONFIDENCE = 0.5
MAX_ENTITY_POSTINGS = 200
STATE_FILE = "state/pipeline.json"
REVIEW_PREFIX = "vaultmem-review-"

_TASK = re.compile(r"^(?P<head>\s*[-*+] \[(?P<mark>.)\] )(?P<text>.*?)[ \t]*"
                   r"%%vaultmem(?P<state>-done|-failed)?:(?P<action>[a-z]+):(?P<args>[^%\s]+)%%(?P<tail>.*)$")


def _stem(rec: Record) -> str:
    return rec.path.rsplit("/", 1)[-1][:-3]


def _link(rec: Record) -> str:
    return f"[[{_stem(rec)}]]"


# -- the five agents -------------------------------------------------------------------------------


def decay_agent(store: MemoryCore, records: Sequence[Record], now: dt.datetime) -> list[dict[str, Any]]:
    """DecayAnalyzer: memories scoring below 0.35 (the danger zone), most urgent first."""
    results = []
    for rec in records:
        if rec.status != "active" or rec.pinned:
            continue
        score = store.score_of(rec, now)
        if score >= DANGER_ZONE:
            continue
        urgency = "high" if score < 0.15 else "medium" if score < 0.25 else "low"
        if score < store.settings.forget_threshold:
            action = "gc_candidate"
        elif rec.use_count >= 3 or rec.strength >= 1.5:
            action = "reinforce"
        else:
            action = "needs_review"
        results.append({"memory_id": rec.id, "score": round(score, 4), "urgency": urgency, "action": action,
                        "path": rec.path})
    results.sort(key=lambda r: (r["score"], r["memory_id"]))
    return results


def cluster_agent(records: Sequence[Record]) -> tuple[list[dict[str, Any]], list[C.Cluster]]:
    """ClusterDetector: clusters at the default threshold with the seed's action levels."""
    clusters = C.find_clusters(records)
    return [{"cluster_id": c.id, "memory_ids": [r.id for r in c.records], "cohesion": c.cohesion,
             "action": C.cluster_action(c)} for c in clusters], clusters


def merge_agent(clusters: Sequence[C.Cluster]) -> list[dict[str, Any]]:
    """SemanticMerge, as proposals: clusters cohesive enough to merge (>= 0.75).

    A cluster whose members disagree on negation ("prefers" / "does not prefer") is a
    contradiction, not a duplicate: it is reported with status "contradiction", not proposed.
    """
    results = []
    for c in clusters:
        if c.cohesion < MERGE_COHESION:
            continue
        status = "contradiction" if C.has_contradiction(c.records) else "proposed"
        results.append({"cluster_id": c.id, "new_memory_id": None, "source_ids": [r.id for r in c.records],
                        "relation_ids": [], "cohesion": c.cohesion, "success": status == "proposed",
                        "status": status})
    return results


def promote_agent(store: MemoryCore, records: Sequence[Record], now: dt.datetime) -> list[dict[str, Any]]:
    """LTMPromoter: the lifecycle module's criteria (`scoring.promotion_reason`), split by criterion.

    "score": score >= promote_threshold once used at least once (a never-used memory scores
    its strength, >= 1.0, and must not qualify for being new); "use_count": >= 5 uses within
    14 days of its creation.
    """
    s = store.settings
    ltm = store.vault.memory_dirs["promoted"]
    results = []
    for rec in records:
        if rec.status != "active":
            continue
        criteria = []
        if rec.use_count >= 1 and store.score_of(rec, now) >= s.promote_threshold:
            criteria.append("score")
        age_days = (now.timestamp() - (rec.created or 0.0)) / 86400
        if rec.use_count >= s.promote_use_count and age_days <= s.promote_time_window_days:
            criteria.append("use_count")
        if criteria:
            results.append({"memory_id": rec.id, "vault_path": f"{ltm}/{_stem(rec)}.md", "criteria_met": criteria})
    return results


def relations_agent(store: MemoryCore, records: Sequence[Record]) -> list[dict[str, Any]]:
    """RelationshipDiscovery: pairs sharing >= 2 entities, strength = 0.7 Jaccard(entities) + 0.3 Jaccard(tags).

    confidence = shared entities / 4 (+ 0.1 per shared tag), at most 1.0; proposals need 0.5.
    Entities held by more than 200 memories are too common to say anything and are skipped,
    which keeps candidate generation linear. Pairs already linked in the note are left out.
    """
    postings: dict[str, list[int]] = defaultdict(list)
    for i, rec in enumerate(records):
        for entity in {e.strip().lower() for e in rec.entities if e.strip()}:
            postings[entity].append(i)
    shared: dict[tuple[int, int], set[str]] = defaultdict(set)
    for entity, members in postings.items():
        if len(members) > MAX_ENTITY_POSTINGS:
            continue
        for n, a in enumerate(members):
            for b in members[n + 1:]:
                shared[(a, b)].add(entity)
    results = []
    for (a, b), common in sorted(shared.items()):
        if len(common) < MIN_SHARED_ENTITIES:
            continue
        ra, rb = records[a], records[b]
        ea = {e.lower() for e in ra.entities}
        eb = {e.lower() for e in rb.entities}
        ta = {t.lower() for t in ra.tags}
        tb = {t.lower() for t in rb.tags}
        jac_e = len(ea & eb) / len(ea | eb)
        jac_t = len(ta & tb) / len(ta | tb) if ta | tb else 0.0
        confidence = min(1.0, len(common) / 4 + 0.1 * len(ta & tb))
        if confidence < MIN_CONFIDENCE or _linked(store, ra, rb):
            continue
        names = sorted(e for e in ra.entities if e.lower() in common)
        results.append({"from_id": ra.id, "to_id": rb.id, "relation_type": "related",
                        "strength": round(0.7 * jac_e + 0.3 * jac_t, 4), "confidence": round(confidence, 4),
                        "shared_entities": names,
                        "reasoning": f"share {len(common)} entities ({', '.join(names)})"})
    return results


def _linked(store: MemoryCore, a: Record, b: Record) -> bool:
    try:
        text = store.vault.abs(a.path).read_text(encoding="utf-8")
    except OSError:
        return False
    return f"[[{_stem(b)}]]" in text or f"[[{_stem(b)}|" in text


# -- running the pipeline ---------------------------------------------------------------------------


def run(store: MemoryCore, agent: str | None = None, dry_run: bool = False, scheduled: bool = False,
        interval_hours: float = 1.0, force: bool = False) -> dict[str, Any]:
    """Run the five stages (or one) and file their proposals in today's review note."""
    if agent is not None and agent not in AGENTS:
        raise InvalidInput(f"agent must be one of {', '.join(AGENTS)}, got {agent!r}")
    if interval_hours <= 0:
        raise InvalidInput(f"interval_hours must be greater than 0, got {interval_hours}")
    now = store.now()
    if scheduled and not force:
        last = last_run(store)
        if last is not None and now < last + dt.timedelta(hours=interval_hours):
            due = last + dt.timedelta(hours=interval_hours)
            return {"success": True, "skipped": True, "last_run": format_time(last), "next_run": format_time(due),
                    "message": f"Pipeline last ran at {format_time(last)}; next run due at {format_time(due)}"}
    records = C.active_records(store)
    wanted = AGENTS if agent is None else (agent,)
    results: dict[str, Any] = {}
    clusters: list[C.Cluster] = []
    if "decay" in wanted:
        results["decay"] = decay_agent(store, records, now)
    if "cluster" in wanted or "merge" in wanted:
        cluster_results, clusters = cluster_agent(records)
        if "cluster" in wanted:
            results["cluster"] = cluster_results
    if "merge" in wanted:
        results["merge"] = merge_agent(clusters)
    if "promote" in wanted:
        results["promote"] = promote_agent(store, records, now)
    if "relations" in wanted:
        results["relations"] = relations_agent(store, records)
    by_id = {r.id: r for r in records}
    proposals = proposals_from(results, by_id)
    out: dict[str, Any] = {"success": True, "dry_run": dry_run, "skipped": False, "ran_at": format_time(now),
                           **results, "proposals": len(proposals)}
    if dry_run:
        out.update(review_note=None, message=f"Dry run: {len(proposals)} proposals (nothing written)")
        return out
    auto = [p for p in proposals if p["action"] in store.settings.pipeline_auto_apply_actions]
    for_review = [p for p in proposals if p not in auto]
    applied = [apply_action(store, p["action"], p["ids"]) for p in auto]
    review_path, added = write_review(store, for_review, now) if for_review else (None, 0)
    _save_state(store, now)
    out.update(review_note=review_path, added_to_review=added, auto_applied=applied,
               message=(f"{added} new proposals in {review_path}; tick the ones you approve and run "
                        "`vaultmem pipeline apply-review`" if review_path else "Nothing to review")
               + (f" ({len(applied)} safe actions applied)" if applied else ""))
    return out


def proposals_from(results: dict[str, Any], by_id: dict[str | None, Record]) -> list[dict[str, Any]]:
    """One proposal per merge, promotion, reinforce/forget and relation, with its review line."""
    proposals: list[dict[str, Any]] = []

    def add(section: str, action: str, ids: Sequence[str], text: str) -> None:
        proposals.append({"section": section, "action": action, "ids": list(ids), "text": text})

    for m in results.get("merge", []):
        if m["status"] != "proposed":
            continue
        recs = [by_id[i] for i in m["source_ids"]]
        add("Merge", "merge", m["source_ids"],
            f"Merge {' + '.join(_link(r) for r in recs)} (cohesion {m['cohesion']:.2f})")
    for p in results.get("promote", []):
        rec = by_id[p["memory_id"]]
        add("Promote", "promote", [rec.id or ""],
            f"Promote {_link(rec)} to long-term memory ({', '.join(p['criteria_met'])})")
    for d in results.get("decay", []):
        rec = by_id[d["memory_id"]]
        if d["action"] == "gc_candidate":
            add("Forget", "archive", [rec.id or ""], f"Archive {_link(rec)} (score {d['score']:.3f}, {d['urgency']} urgency)")
        else:
            add("Reinforce", "touch", [rec.id or ""],
                f"Reinforce {_link(rec)} (score {d['score']:.3f}, {d['urgency']} urgency, {d['action']})")
    for r in results.get("relations", []):
        a, b = by_id[r["from_id"]], by_id[r["to_id"]]
        add("Relations", "relate", [a.id or "", b.id or ""],
            f"Relate {_link(a)} and {_link(b)}: {r['reasoning']} (strength {r['strength']:.2f})")
    return proposals


def _marker(action: str, ids: Sequence[str]) -> str:
    return f"{action}:{','.join(ids)}"


def pending_markers(store: MemoryCore) -> dict[str, set[str]]:
    """Markers in every review note: path -> set of 'action:ids' (any state)."""
    folder = store.vault.abs(store.settings.reviews_dir.strip("/"))
    found: dict[str, set[str]] = {}
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        found[store.vault.rel(path)] = {
            ("" if m["state"] is None else m["state"]) + _marker(m["action"], m["args"].split(","))
            for line in path.read_text(encoding="utf-8").splitlines() if (m := _TASK.match(line))}
    return found


def write_review(store: MemoryCore, proposals: Sequence[dict[str, Any]], now: dt.datetime) -> tuple[str, int]:
    """Add proposals to today's review note (created if needed); ones still pending anywhere are skipped."""
    # `vaultmem-review-2026-11-23`, never `2026-11-23`: that is the daily note's name.
    rel = f"{store.settings.reviews_dir.strip('/')}/{REVIEW_PREFIX}{now.date().isoformat()}.md"
    with store.vault.lock():
        markers = pending_markers(store)
        pending = {m for ms in markers.values() for m in ms if not m.startswith("-")}
        today = markers.get(rel, set())
        fresh: list[tuple[str, dict[str, Any]]] = []
        sections: defaultdict[str, list[str]] = defaultdict(list)
        for p in proposals:
            key = _marker(p["action"], p["ids"])
            if key in pending or any(m.endswith(key) for m in today) or key in {f[0] for f in fresh}:
                continue
            fresh.append((key, p))
            sections[p["section"]].append(f"- [ ] {p['text']} %%vaultmem:{key}%%")
        path = store.vault.abs(rel)
        if not fresh:
            return rel, 0
        from vaultmem.base import secrets

        body = secrets.redact("".join(f"\n## {name}\n" + "\n".join(lines) + "\n"
                                      for name in ("Merge", "Promote", "Forget", "Reinforce", "Relations")
                                      if (lines := sections.get(name))))  # previews of hand-typed notes
        if path.is_file():
            text = store.vault.read_text(path).rstrip("\n") + "\n\n" \
                + f"# Added {format_time(now)}\n" + body
            store.vault.write_text(path, text)
        else:
            head = (f"---\ntype: vaultmem-review\ngenerated: {format_time(now)}\ntags:\n  - vaultmem/review\n---\n"
                    f"# Memory review {now.date().isoformat()}\n\n"
                    "Tick the proposals you approve, then run `vaultmem pipeline apply-review`. "
                    "Unticked proposals do nothing.\n")
            store.vault.create_exclusive(path, head + body)
        store.index.refresh([rel])
    return rel, len(fresh)


def last_run(store: MemoryCore) -> dt.datetime | None:
    path = store.vault.derived_dir / STATE_FILE
    try:
        return parse_time(json.loads(path.read_text(encoding="utf-8")).get("last_run"))
    except (OSError, ValueError, AttributeError):
        return None


def _save_state(store: MemoryCore, now: dt.datetime) -> None:
    path = store.vault.derived_dir / STATE_FILE
    store.vault.write_text(path, json.dumps({"last_run": format_time(now)}) + "\n")


# -- applying a reviewed note ---------------------------------------------------------------------------


def apply_action(store: MemoryCore, action: str, ids: Sequence[str]) -> dict[str, Any]:
    """Carry out one approved proposal; returns what was done."""
    now = store.now()
    if action == "merge":
        recs = [store.resolve(i) for i in ids]
        records = C.active_records(store)
        vectors = dict(zip([r.id for r in records], C.build_vectors(records), strict=True))
        if any(r.id not in vectors for r in recs):
            raise VaultmemError("a memory of this merge is no longer active; nothing merged")
        sims = [C.similarity(vectors[a.id], vectors[b.id]) for n, a in enumerate(recs) for b in recs[n + 1:]]
        result = C.merge_records(store, recs, round(sum(sims) / len(sims), 4))
        return {"action": action, "memory_ids": list(ids), "new_memory_id": result["new_memory_id"],
                "archived_count": result["archived_count"], "links_rewritten": result["links_rewritten"],
                "renamed": result["renamed"]}
    rec = store.resolve(ids[0])
    if action == "promote":
        if rec.status != "active":
            raise VaultmemError(f"{rec.path} is {rec.status}, not active; nothing promoted")
        # the person approved it: force past the criteria (they may have shifted since the run)
        result = lifecycle.promote(store, rec.id, apply=True, force=True)
        if result["promoted_count"] != 1:
            raise VaultmemError(result["skipped"][0]["reason"] if result["skipped"] else result["message"])
        return {"action": action, "memory_ids": list(ids), "vault_path": store.resolve(rec.id or "").path,
                "links_rewritten": result["links_rewritten"], "renamed": result["renamed"]}
    if action == "touch":
        result = store.touch(rec.id or rec.path)
        return {"action": action, "memory_ids": list(ids), "new_score": result["new_score"]}
    if action == "archive":
        moves: list[dict[str, Any]] = []
        path = C.archive_record(store, rec, now, {"archived_reason": "review"}, moves)
        return {"action": action, "memory_ids": list(ids), "vault_path": path, **lifecycle.move_report(moves)}
    if action == "relate":
        other = store.resolve(ids[1])
        created = C.relate(store, rec, other, "related") + C.relate(store, other, rec, "related")
        return {"action": action, "memory_ids": list(ids), "relations_created": created}
    raise InvalidInput(f"unknown review action {action!r}; expected one of {', '.join(ACTIONS)}")


def apply_review(store: MemoryCore, file: str | None = None) -> dict[str, Any]:
    """Carry out the ticked proposals of one review note (or all) once, and mark them done."""
    store.sync()
    folder = store.settings.reviews_dir.strip("/")
    if file:
        path = Path(file)
        if path.is_absolute() and not path.is_relative_to(store.vault.root):
            raise InvalidInput(f"review note {file!r} is outside the vault; pass a note in "
                               f"{folder}/ (its name or vault-relative path)")
        rel = store.vault.rel(path) if path.is_absolute() else file
        if not rel.endswith(".md"):
            rel += ".md"
        if "/" not in rel:
            rel = f"{folder}/{rel}"
            prefixed = f"{folder}/{REVIEW_PREFIX}{rel.rsplit('/', 1)[-1]}"
            if not store.vault.abs(rel).is_file() and store.vault.abs(prefixed).is_file():
                rel = prefixed  # `apply-review 2026-11-23` names today's `vaultmem-review-2026-11-23`
        if not store.vault.abs(rel).is_file():
            raise NotFound(f"review note {rel} does not exist; run `vaultmem pipeline run` first")
        files = [rel]
    else:
        files = sorted(pending_markers(store))
    applied, failed = [], []
    unticked = done = 0
    for rel in files:
        path = store.vault.abs(rel)
        for line in path.read_text(encoding="utf-8").splitlines():
            m = _TASK.match(line)
            if not m:
                continue
            if m["state"]:
                done += 1
                continue
            if m["mark"] not in "xX":
                unticked += 1
                continue
            key = _marker(m["action"], m["args"].split(","))
            try:
                outcome = apply_action(store, m["action"], m["args"].split(","))
                applied.append(outcome)
                _mark(store, rel, key, "-done", f"✅ {store.now().date().isoformat()}")
            except VaultmemError as exc:
                failed.append({"action": m["action"], "memory_ids": m["args"].split(","), "error": str(exc)})
                _mark(store, rel, key, "-failed", f"⚠️ {exc}")
    return {"success": not failed, "files": files, "applied": applied, "failed": failed,
            "unticked": unticked, "already_done": done,
            "links_rewritten": [e for item in applied for e in item.get("links_rewritten", [])],
            "renamed": [e for item in applied for e in item.get("renamed", [])],
            "message": f"Applied {len(applied)} approved proposals ({len(failed)} failed, {unticked} unticked)"}


def _mark(store: MemoryCore, rel: str, key: str, state: str, note: str) -> None:
    """Mark the line of one proposal done/failed, re-reading the note under the lock."""
    note = note.replace("%", "").replace("\n", " ")
    with store.vault.lock():
        path = store.vault.abs(rel)
        lines = store.vault.read_text(path).splitlines(keepends=True)
        for n, line in enumerate(lines):
            m = _TASK.match(line.rstrip("\r\n"))
            if m and not m["state"] and _marker(m["action"], m["args"].split(",")) == key:
                ending = line[len(line.rstrip("\r\n")):]
                lines[n] = f"{m['head']}{m['text']} {note} %%vaultmem{state}:{key}%%{m['tail']}{ending}"
                break
        store.vault.write_text(path, "".join(lines))
        store.index.refresh([rel])
