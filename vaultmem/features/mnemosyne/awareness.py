"""Agent awareness (Mnemosyne's ToMA): what one agent knows, gaps between two, fleet synthesis.

Every memory note names its `agent`. Knowledge queries are recalls restricted to one agent
(read-only: they do not count as access and do not change the feedback target). Two memories
"say the same thing" when their word-set cosine (`recall.term_cosine`) is >= 0.7, the seed's
auto-link threshold. A fact held independently by >= 3 agents is a Mesh Fact: `synthesize`
marks each note of it `mesh_fact: true` and raises its `confidence` to at least 0.9.
"""

from __future__ import annotations

import collections
import json
import re
from typing import TYPE_CHECKING, Any

from vaultmem.base.errors import InvalidInput
from vaultmem.core.model import visible_to
from vaultmem.core.port import MemoryCore
from vaultmem.features.mnemosyne import recall as R
from vaultmem.storage.index import iso
from vaultmem.storage.links import JSON_VALUES
from vaultmem.storage.record import private_flag

if TYPE_CHECKING:
    from vaultmem.storage.record import Record

AGREE_SIMILARITY = 0.7
MESH_AGENTS = 3
MESH_CONFIDENCE = 0.9
TOP_N = 3
POOL = 100
_STEP = re.compile(r"(?:^|\s)\(?\d{1,2}[.)]\s|^\s*[-*]\s", re.M)


def _check_agent(agent: str, what: str = "agent") -> str:
    agent = (agent or "").strip()
    if not agent or len(agent) > 200:
        raise InvalidInput(f"{what} is empty; pass the agent id, e.g. devops-agent")
    return agent


def _live(store: MemoryCore, viewer: str | None) -> list[Record]:
    rows = store.index.records("kind = 'memory' AND status IN ('active', 'promoted', 'archived')")
    return [r for r in rows if visible_to(r, viewer)]


def _knowledge(store: MemoryCore, agent: str, topic: str, limit: int, viewer: str | None) -> list[dict[str, Any]]:
    found = R.recall(store, topic, limit=limit, min_score=0.0, agent=viewer, only_agent=agent,
                     record_access=False, remember=False)
    return [{"id": r["id"], "text": r["text"], "confidenceTag": r["confidenceTag"], "memoryType": r["memoryType"],
             "eventTime": r["eventTime"], "score": r["score"]} for r in found["results"]]


def _prop(name: str) -> str:
    """SQL for one property from the catalog's JSON, NULL where a catalog written before
    non-finite numbers were stored as text holds `Infinity` (json_extract would stop the query)."""
    return f"CASE WHEN json_valid(props) THEN json_extract(props, '$.{name}') END"


def profile(store: MemoryCore, agent: str, viewer: str | None = None) -> dict[str, Any]:
    """The seed's knowledgeProfile plus per-domain/type counts and shares (one catalog query)."""
    agent = _check_agent(agent)
    store.sync()
    rows = store.index.db.execute(
        f"SELECT memory_type, {_prop('domain')}, {_prop('confidence')}, {_prop('private')}, created, last_used"
        " FROM notes WHERE kind = 'memory' AND agent = ? AND status IN ('active', 'promoted', 'archived')",
        (agent,)).fetchall()
    # private: its own agent's (and the person's, viewer None) only
    mine = [r for r in rows if not (private_flag(r[3])[0] and viewer is not None and viewer != agent)]
    domains = collections.Counter(str(r[1] or "general") for r in mine)
    types = collections.Counter(r[0] or "semantic" for r in mine)
    total = len(mine)

    def shares(counter: collections.Counter[str]) -> list[dict[str, Any]]:
        return [{"name": k, "count": v, "share": round(v / total, 4)} for k, v in
                sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))]

    confidences = [R.confidence_of({"confidence": r[2]}) for r in mine]
    avg = round(sum(confidences) / total, 4) if total else 0.0
    last = max((max(r[4] or 0, r[5] or 0) for r in mine), default=None)
    return {
        "agentId": agent,
        "totalMemories": total,
        "topDomains": [d["name"] for d in shares(domains)[:TOP_N]],
        "topTypes": [t["name"] for t in shares(types)[:TOP_N]],
        "avgConfidence": avg,
        "avgConfidenceTag": R.confidence_tag(avg) if total else None,
        "lastActiveAt": iso(last) if last else None,
        "domains": shares(domains),
        "types": shares(types),
    }


def toma(store: MemoryCore, agent: str, topic: str, limit: int = 5, viewer: str | None = None) -> dict[str, Any]:
    """The seed's TomaResult: what `agent` knows about `topic`, and its knowledge profile."""
    agent = _check_agent(agent, "agentId")
    if not 1 <= limit <= R.MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {R.MAX_LIMIT}, got {limit}")
    memories = _knowledge(store, agent, topic, limit, viewer)
    prof = profile(store, agent, viewer)
    keep = ("totalMemories", "topDomains", "topTypes", "avgConfidence", "lastActiveAt")
    return {"agentId": agent, "topic": topic, "memories": memories,
            "knowledgeProfile": {k: prof[k] for k in keep}}


def knowledge_gap(store: MemoryCore, agent_a: str, agent_b: str, topic: str,
                  viewer: str | None = None) -> dict[str, Any]:
    """What A knows about a topic that B does not, the reverse, and what both hold."""
    agent_a, agent_b = _check_agent(agent_a), _check_agent(agent_b)
    a = _knowledge(store, agent_a, topic, 20, viewer)
    b = _knowledge(store, agent_b, topic, 20, viewer)

    def held(item: dict[str, Any], others: list[dict[str, Any]]) -> bool:
        return any(R.term_cosine(item["text"], o["text"]) >= AGREE_SIMILARITY for o in others)

    return {
        "agentA": agent_a, "agentB": agent_b, "topic": topic,
        "onlyA": [m for m in a if not held(m, b)],
        "onlyB": [m for m in b if not held(m, a)],
        "shared": [m for m in a if held(m, b)],
    }


def synthesize(store: MemoryCore, topic: str) -> dict[str, Any]:
    """Cluster public memories on a topic by meaning; facts held by >= 3 agents become Mesh Facts."""
    found = R.recall(store, topic, limit=R.MAX_LIMIT, min_score=0.0, agent=None,
                     record_access=False, remember=False)
    ids = [r["id"] for r in found["results"]]
    recs = {r.id: r for r in store.index.records(f"kind = 'memory' AND id IN ({JSON_VALUES})", [json.dumps(ids)])}
    clusters: list[list[dict[str, Any]]] = []
    for item in found["results"]:
        if not recs.get(item["id"]) or not item.get("botId"):
            continue
        for cluster in clusters:
            if R.term_cosine(item["text"], cluster[0]["text"]) >= AGREE_SIMILARITY:
                cluster.append(item)
                break
        else:
            clusters.append([item])
    contributors = sorted({i["botId"] for c in clusters for i in c})
    insights = []
    now = store.now()
    for cluster in clusters:
        agents = sorted({i["botId"] for i in cluster})
        if len(agents) < 2:
            continue
        mesh = len(agents) >= MESH_AGENTS
        if mesh:
            for item in cluster:
                def mark(cur: Record, agents: list[str] = agents) -> dict[str, Any]:
                    return {"mesh_fact": True, "mesh_agents": agents, "mesh_at": now,
                            "confidence": max(R.confidence_of(cur.props), MESH_CONFIDENCE)}

                if store.vault.owns(recs[item["id"]].path):  # a memory the person moved out stays theirs
                    store.modify(recs[item["id"]], mark)
        best = max(cluster, key=lambda i: (i["score"], i["confidenceScore"]))
        insights.append({"text": best["text"], "confidenceTag": "Mesh Fact" if mesh else best["confidenceTag"],
                         "agents": agents, "ids": [i["id"] for i in cluster]})
    insights.sort(key=lambda i: (-len(i["agents"]), i["text"]))
    enough = len(contributors) >= MESH_AGENTS
    return {
        "topic": topic, "sources": len(contributors), "contributingAgents": contributors,
        "insights": insights, "meshFacts": sum(1 for i in insights if i["confidenceTag"] == "Mesh Fact"),
        "message": "" if enough else f"Only {len(contributors)} agents hold memories on this topic; "
                                     f"a Mesh Fact needs {MESH_AGENTS}",
    }


def count(store: MemoryCore) -> dict[str, Any]:
    """Memories by folder and by type, plus shared/private, skills and forgotten ones."""
    store.sync()
    s = store.settings
    folders = {"stm": s.stm_dir, "ltm": s.ltm_dir, "archive": s.archive_dir}
    by_folder = {name: 0 for name in (*folders, "blocks", "sessions")}
    by_type: collections.Counter[str] = collections.Counter()
    private = shared = skills = deleted = 0
    rows = store.index.db.execute(
        f"SELECT kind, path, status, memory_type, {_prop('private')} FROM notes"
        " WHERE kind IN ('memory', 'block', 'session')")
    for kind, path, status, memory_type, is_private in rows:
        if kind != "memory":
            by_folder["blocks" if kind == "block" else "sessions"] += 1
            continue
        if status == "deleted":
            deleted += 1
            continue
        for name, folder in folders.items():
            if path.startswith(folder.strip("/") + "/"):
                by_folder[name] += 1
        mtype = memory_type or "untyped"
        by_type[mtype] += 1
        skills += mtype == "procedural"
        if private_flag(is_private)[0]:
            private += 1
        else:
            shared += 1
    return {"total": shared + private, "shared": shared, "private": private, "skills": skills,
            "deleted": deleted, "byFolder": by_folder, "byType": dict(sorted(by_type.items()))}


def steps_in(text: str) -> int:
    """Numbered or bulleted steps in a procedure (1 when it has none)."""
    return max(1, len(_STEP.findall(text)))


def skills(store: MemoryCore, query: str | None = None, limit: int = 20,
           viewer: str | None = None) -> dict[str, Any]:
    """Procedural memories: the newest, or the best matches for a query."""
    if not 1 <= limit <= R.MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {R.MAX_LIMIT}, got {limit}")
    if query and query.strip():
        found = R.recall(store, query, limit=limit, min_score=0.0, agent=viewer, types=["procedural"],
                         record_access=False, remember=False)
        items = [{"id": r["id"], "text": r["text"], "score": r["score"], "confidenceTag": r["confidenceTag"],
                  "steps": steps_in(r["text"]), "botId": r["botId"]} for r in found["results"]]
        total = len(items)
    else:
        store.sync()
        recs = [r for r in _live(store, viewer) if r.memory_type == "procedural" and r.status != "archived"]
        recs.sort(key=lambda r: (-(r.created or 0), r.path))
        total = len(recs)
        items = [{"id": r.id, "text": r.content, "score": None,
                  "confidenceTag": R.confidence_tag(R.confidence_of(r.props)), "steps": steps_in(r.content),
                  "botId": r.agent} for r in recs[:limit]]
    return {"query": query or None, "total": total, "skills": items}
