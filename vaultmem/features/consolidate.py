"""Similarity, clusters, duplicates, merges and links between memories.

Similarity is a TF-IDF cosine over each memory's words, entities and tags (`similarity`);
candidate pairs come from an exact prefix filter over an inverted index (`similar_pairs`),
so clustering never compares every memory with every other. Memory data comes from the
index catalog (`store.index.records`), never from re-reading the files; only a merge or an
archive touches notes, under the vault lock, after re-reading each one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import math
import re
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from vaultmem.base.errors import ConflictError, InvalidInput, NotFound, SecretBlocked
from vaultmem.core.model import CLUSTER_THRESHOLD, COHESION_THRESHOLD, DUPLICATE_PAIR_THRESHOLD, MAX_CLUSTER_SIZE
from vaultmem.core.port import MemoryCore
from vaultmem.features import graph, lifecycle
from vaultmem.storage import note as notes
from vaultmem.storage.record import Record, is_private

Vector = dict[str, float]
Embedder = Callable[[Sequence[Record]], Sequence[Sequence[float]]]

ENTITY_WEIGHT = 1.5
TAG_WEIGHT = 1.0
PREVIEW_CHARS = 100
ACTIVE_WHERE = "kind = 'memory' AND status IN ('active', 'promoted')"
AUTO_MERGE_COHESION = 0.85
REVIEW_COHESION = 0.65

NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|without|don['’]t|doesn['’]t|didn['’]t|"
    r"isn['’]t|aren['’]t|wasn['’]t|weren['’]t|won['’]t|wouldn['’]t|shouldn['’]t|can['’]t|couldn['’]t|"
    r"mustn['’]t|hasn['’]t|haven['’]t|hadn['’]t|stopped|no longer)\b", re.I)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


# -- vectors and similarity ----------------------------------------------------------------


def _terms(rec: Record, analyzer: Any) -> dict[str, float]:
    """Weighted terms of one memory: stemmed content words, `e:` entities, `t:` tags."""
    counts: defaultdict[str, float] = defaultdict(float, Counter(tok.text for tok in analyzer(rec.content)))
    negations = len(NEGATION.findall(rec.content))
    if negations:  # the analyzer drops "not" as a stop word; a negation must still count
        counts["neg:"] += negations
    for entity in rec.entities:
        counts["e:" + entity.strip().lower()] += ENTITY_WEIGHT
    for tag in rec.tags:
        counts["t:" + tag.strip().lower()] += TAG_WEIGHT
    return counts


def build_vectors(records: Sequence[Record], embed: Embedder | None = None) -> list[Vector]:
    """One unit-length sparse vector per record.

    Without `embed`: TF-IDF, tf = 1 + ln(count), idf = ln((N + 1) / (df + 1)) + 1, over the
    content's stemmed words (Whoosh's analyzer, the same as search) plus entities (x1.5), tags (x1.0)
    and negations ("not", "never", ...: the analyzer drops them as stop words) as their own terms.
    With `embed` (the seam for the embeddings issue): the dense vectors it returns, one per record,
    stored sparsely by dimension ("d0", "d1", ...);
    everything downstream (`similarity`, `similar_pairs`, clusters) works unchanged.
    """
    if embed is not None:
        dense = embed(records)
        return [_normalise({f"d{i}": float(x) for i, x in enumerate(row) if x}) for row in dense]
    from vaultmem.storage.fulltext.analysis import analyzer as make_analyzer

    analyzer = make_analyzer(search=False)  # the chain its thresholds were tuned on
    counts = [_terms(rec, analyzer) for rec in records]
    df: Counter[str] = Counter()
    for c in counts:
        df.update(c.keys())
    n = len(records)
    idf = {term: math.log((n + 1) / (d + 1)) + 1.0 for term, d in df.items()}
    return [_normalise({t: (1.0 + math.log(k) if k >= 1 else k) * idf[t] for t, k in c.items()}) for c in counts]


def _normalise(vec: Vector) -> Vector:
    norm = math.sqrt(sum(w * w for w in vec.values()))
    return {t: w / norm for t, w in vec.items()} if norm else {}


def similarity(a: Vector, b: Vector) -> float:
    """Cosine similarity of two memories' vectors from `build_vectors` (0.0 .. 1.0).

    The one similarity vaultmem uses for clusters, duplicates, merges and contradictions:
    TF-IDF over content words, entities and tags by default, embedding vectors when an
    embedder is plugged into `build_vectors`.
    """
    if len(a) > len(b):
        a, b = b, a
    return min(1.0, sum(w * b[t] for t, w in a.items() if t in b))


def similar_pairs(vectors: Sequence[Vector], threshold: float) -> list[tuple[int, int, float]]:
    """Every pair (i < j) with similarity >= threshold, without comparing all pairs.

    All-pairs prefix filtering (Bayardo et al. 2007): features are ordered rarest first and
    each vector indexes only the shortest prefix whose remaining suffix has norm < threshold.
    Two unit vectors that share no indexed feature have cosine <= that suffix norm, so
    they cannot reach the threshold: the filter is exact, and posting lists hold only the
    rare terms, so the work grows with the number of real candidates, not with N².
    """
    if not 0.0 < threshold <= 1.0:
        raise InvalidInput(f"threshold must be between 0 and 1, got {threshold}")
    df: Counter[str] = Counter()
    for vec in vectors:
        df.update(vec.keys())
    limit = threshold * threshold - 1e-9
    postings: dict[str, list[int]] = defaultdict(list)
    found: list[tuple[int, int, float]] = []
    for j, vec in enumerate(vectors):
        candidates: set[int] = set()
        for term in vec:
            hits = postings.get(term)
            if hits:
                candidates.update(hits)
        for i in candidates:
            s = similarity(vectors[i], vec)
            if s >= threshold - 1e-9:
                found.append((i, j, s))
        remaining = sum(w * w for w in vec.values())
        for term in sorted(vec, key=lambda t: (df[t], t)):
            if remaining < limit:
                break
            postings[term].append(j)
            remaining -= vec[term] ** 2
    found.sort(key=lambda p: (p[0], p[1]))
    return found


# -- clusters --------------------------------------------------------------------------------


@dataclasses.dataclass
class Cluster:
    id: str
    records: list[Record]
    cohesion: float

    @property
    def size(self) -> int:
        return len(self.records)


def cluster_id(member_ids: Iterable[str]) -> str:
    """A stable id from the members: the same memories give the same id in any process."""
    digest = hashlib.sha1("\n".join(sorted(member_ids)).encode("utf-8")).hexdigest()
    return f"cluster-{digest[:12]}"


def suggested_action(cohesion: float) -> str:
    """The seed's ClusterDetector levels: >= 0.85 auto-merge, >= 0.65 llm-review, else keep-separate."""
    if cohesion >= AUTO_MERGE_COHESION:
        return "auto-merge"
    if cohesion >= REVIEW_COHESION:
        return "llm-review"
    return "keep-separate"


def active_records(store: MemoryCore) -> list[Record]:
    """Active and promoted memories from the catalog, in a fixed order (by id). Only those in
    vaultmem's folders: merging archives the originals, and a memory the person moved out of
    the memory folders is never moved or rewritten."""
    store.sync()
    return sorted((r for r in store.index.records(ACTIVE_WHERE) if store.vault.owns(r.path) and store.visible(r)),
                  key=lambda r: r.id or r.path)


def owner(rec: Record) -> str | None:
    """Whose memory this is for merging: a private memory's agent; None for a shared one."""
    return rec.agent if is_private(rec.props.get("private")) else None


def find_clusters(records: Sequence[Record], threshold: float = CLUSTER_THRESHOLD, max_cluster_size: int = MAX_CLUSTER_SIZE,
                  vectors: Sequence[Vector] | None = None) -> list[Cluster]:
    """Greedy single-linkage over pairs >= threshold, strongest first, capped at max_cluster_size.

    cohesion = mean pairwise similarity of the members. Deterministic: ties break by id.
    """
    if not 2 <= max_cluster_size <= 100:
        raise InvalidInput(f"max_cluster_size must be between 2 and 100, got {max_cluster_size}")
    vectors = list(vectors) if vectors is not None else build_vectors(records)
    # memories of different owners never share a cluster: another agent's private memory is
    # never merged into (or with) anyone else's
    pairs = [p for p in similar_pairs(vectors, threshold) if owner(records[p[0]]) == owner(records[p[1]])]
    pairs.sort(key=lambda p: (-round(p[2], 9), records[p[0]].id or "", records[p[1]].id or ""))
    parent = list(range(len(records)))
    size = [1] * len(records)

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j, _s in pairs:
        a, b = root(i), root(j)
        if a == b or size[a] + size[b] > max_cluster_size:
            continue
        if size[a] < size[b]:
            a, b = b, a
        parent[b] = a
        size[a] += size[b]
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(records)):
        groups[root(i)].append(i)
    clusters = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda i: records[i].id or "")
        sims = [similarity(vectors[a], vectors[b]) for n, a in enumerate(members) for b in members[n + 1:]]
        cohesion = sum(sims) / len(sims)
        recs = [records[i] for i in members]
        clusters.append(Cluster(cluster_id(r.id or r.path for r in recs), recs, round(cohesion, 4)))
    clusters.sort(key=lambda c: (-c.cohesion, c.id))
    return clusters


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def cluster_action(c: Cluster) -> str:
    """`suggested_action`, except that members disagreeing on a negation need a person."""
    return "review-contradiction" if has_contradiction(c.records) else suggested_action(c.cohesion)


def cluster_dict(c: Cluster) -> dict[str, Any]:
    return {
        "id": c.id,
        "size": c.size,
        "cohesion": c.cohesion,
        "suggested_action": cluster_action(c),
        "memory_ids": [r.id for r in c.records],
        "content_previews": [preview(r.content) for r in c.records],
    }


CLUSTERS_STATE = "state/clusters.json"  # the last cluster_memories listing: id -> member ids
MAX_REMEMBERED = 500


def _remember_clusters(store: MemoryCore, clusters: Sequence[Cluster]) -> None:
    """Keep the ids a listing showed, so consolidate_memories finds a cluster listed at any
    threshold (a LINK-mode cluster at 0.3 is not a cluster at the default 0.83)."""
    import json

    path = store.vault.derived_dir / CLUSTERS_STATE
    data = {c.id: [r.id or r.path for r in c.records] for c in clusters[:MAX_REMEMBERED]}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        store.vault.write_text(path, json.dumps(data, ensure_ascii=False) + "\n")
    except OSError:
        pass  # a cache: without it, only clusters at the given threshold are found


def _remembered_cluster(store: MemoryCore, cid: str, records: Sequence[Record]) -> list[Cluster]:
    """The listed cluster `cid`, if its members are all still here (same ids: same cluster id)."""
    import json

    try:
        members = json.loads((store.vault.derived_dir / CLUSTERS_STATE).read_text(encoding="utf-8")).get(cid)
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(members, list):
        return []
    by_id = {r.id or r.path: r for r in records}
    recs = sorted((by_id[m] for m in members if m in by_id), key=lambda r: r.id or "")
    if len(recs) != len(members) or len(recs) < 2 or cluster_id(r.id or r.path for r in recs) != cid:
        return []
    position = {id(r): n for n, r in enumerate(records)}
    vectors = build_vectors(records)  # the whole collection's weights, as the listing used
    picked = [vectors[position[id(r)]] for r in recs]
    sims = [similarity(picked[a], picked[b]) for a in range(len(recs)) for b in range(a + 1, len(recs))]
    return [Cluster(cid, list(recs), round(sum(sims) / len(sims), 4))]


def _store_clusters(store: MemoryCore, records: Sequence[Record], threshold: float,
                    max_cluster_size: int) -> list[Cluster]:
    """find_clusters, keeping clusters of at least the `min_cluster_size` setting."""
    return [c for c in find_clusters(records, threshold, max_cluster_size) if c.size >= store.settings.min_cluster_size]


def cluster(store: MemoryCore, threshold: float | None = None, max_cluster_size: int = MAX_CLUSTER_SIZE,
            find_duplicates: bool = False, duplicate_threshold: float = DUPLICATE_PAIR_THRESHOLD) -> dict[str, Any]:
    """The seed's `cluster_memories`: clusters of similar memories, or duplicate pairs.
    `threshold` None: the `cluster_threshold` setting (0.83)."""
    threshold = store.settings.cluster_threshold if threshold is None else threshold
    for name, value in (("threshold", threshold), ("duplicate_threshold", duplicate_threshold)):
        if not 0.0 < value <= 1.0:
            raise InvalidInput(f"{name} must be between 0 and 1, got {value}")
    records = active_records(store)
    if find_duplicates:
        vectors = build_vectors(records)
        pairs = similar_pairs(vectors, duplicate_threshold)
        pairs.sort(key=lambda p: (-p[2], records[p[0]].id or "", records[p[1]].id or ""))
        duplicates = []
        for i, j, s in pairs:
            a, b = sorted((records[i], records[j]), key=lambda r: r.id or "")
            duplicates.append({"id1": a.id, "id2": b.id, "content1_preview": preview(a.content),
                               "content2_preview": preview(b.content), "similarity": round(s, 4)})
        return {"success": True, "mode": "duplicate_detection", "duplicates_found": len(duplicates),
                "duplicate_threshold": duplicate_threshold, "duplicates": duplicates,
                "message": f"Found {len(duplicates)} potential duplicate pairs"}
    clusters = _store_clusters(store, records, threshold, max_cluster_size)
    _remember_clusters(store, clusters)
    return {"success": True, "mode": "clustering", "clusters_found": len(clusters), "strategy": "similarity",
            "threshold": threshold, "max_cluster_size": max_cluster_size,
            "clusters": [cluster_dict(c) for c in clusters],
            "message": f"Found {len(clusters)} clusters using similarity strategy"}


# -- merging -----------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def split_sentences(text: str) -> list[list[str]]:
    """Paragraphs (blank-line separated; list items and lines of a list are kept whole) of sentences."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", text.strip()):
        sentences: list[str] = []
        for line in block.splitlines():
            line = line.strip()
            if not line:
                continue
            if re.match(r"^([-*+]|\d+[.)])\s", line) or line.startswith("#"):
                sentences.append(line)
            else:
                sentences.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
        if sentences:
            paragraphs.append(sentences)
    return paragraphs


def _words(sentence: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(sentence))


def merge_contents(contents: Sequence[str], overlap: float = 0.8) -> str:
    """Merge texts keeping each piece of information once (sentence-level dedup).

    Sentences are compared by their word sets: a sentence whose words are all in a kept
    sentence (or that overlaps one by Jaccard >= `overlap`) adds nothing and is dropped; a
    sentence that strictly contains a kept one replaces it in place. The first text keeps
    its shape; each later text contributes a paragraph of its new sentences.
    """
    out: list[list[str]] = []
    kept: list[tuple[int, int, frozenset[str]]] = []
    for text in contents:
        for paragraph in split_sentences(text):
            p = len(out)
            out.append([])
            for sentence in paragraph:
                words = _words(sentence)
                if not words:
                    continue
                action = "add"
                for n, (kp, ks, seen) in enumerate(kept):
                    jaccard = len(words & seen) / len(words | seen)
                    if words <= seen or (jaccard >= overlap and len(words) <= len(seen)):
                        action = "skip"
                        break
                    if seen < words:
                        action = "replace"
                        out[kp][ks] = sentence
                        kept[n] = (kp, ks, words)
                        break
                if action == "add":
                    out[p].append(sentence)
                    kept.append((p, len(out[p]) - 1, words))
    joined = []
    for para in out:
        if not para:
            continue
        if all(re.match(r"^([-*+]|\d+[.)])\s|^#", s) for s in para):
            joined.append("\n".join(para))
        else:
            joined.append(" ".join(para))
    return "\n\n".join(joined)


def merged_strength(strengths: Sequence[float], cohesion: float) -> float:
    """The seed's "max + cohesion bonus": max(strength) + 0.1 * (n - 1) * cohesion, at most 2.0."""
    n = len(strengths)
    return round(min(2.0, max(strengths) + 0.1 * (n - 1) * cohesion), 3)


def _union(lists: Iterable[Sequence[str]]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for items in lists:
        for item in items:
            key = item.strip().lower()
            if key and key not in seen:
                seen.add(key)
                out.append(item.strip())
    return out


def _ordered(records: Sequence[Record]) -> list[Record]:
    return sorted(records, key=lambda r: (r.created or 0.0, r.id or ""))


def merge_plan(records: Sequence[Record], cohesion: float) -> dict[str, Any]:
    """What a merge would write: content, tags, entities, strength, times, use count."""
    ordered = _ordered(records)
    types = Counter(r.memory_type for r in ordered if r.memory_type)
    return {
        "content": merge_contents([r.content for r in ordered]),
        "tags": _union(r.tags for r in ordered),
        "entities": _union(r.entities for r in ordered),
        "strength": merged_strength([r.strength for r in ordered], cohesion),
        "created": min(r.created or 0.0 for r in ordered),
        "last_used": max(r.last_used or 0.0 for r in ordered),
        "use_count": sum(r.use_count for r in ordered),
        "memory_type": types.most_common(1)[0][0] if types else None,
        # the merged note keeps its sources' owner: private stays private, to the same agent
        "private": any(is_private(r.props.get("private")) for r in ordered),
        "agent": ordered[0].agent if len({r.agent for r in ordered}) == 1 else None,
        "sources": ordered,
    }


def preview_dict(c: Cluster) -> dict[str, Any]:
    plan = merge_plan(c.records, c.cohesion)
    return {
        "cluster_id": c.id,
        "cohesion": c.cohesion,
        "memory_count": c.size,
        "memory_ids": [r.id for r in c.records],
        "merged_content_preview": preview(plan["content"], 300),
        "merged_entities": plan["entities"],
        "merged_tags": plan["tags"],
        "calculated_strength": plan["strength"],
    }


def relation_id(from_id: str, relation_type: str, to_id: str) -> str:
    """A stable id for a relation written as an inline field (notes have no relation rows)."""
    return "rel-" + hashlib.sha1(f"{from_id}|{relation_type}|{to_id}".encode()).hexdigest()[:16]


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1][:-3]


def _current(store: MemoryCore, rec: Record) -> Record:
    """The note as it is on disk now (it may have moved or changed since it was indexed)."""
    from vaultmem.base.errors import MalformedNote
    from vaultmem.storage.index import record_from_text

    rec, _path, text, fingerprint = store.read_note(rec)
    try:
        return record_from_text(store.vault, rec.path, text, fingerprint)
    except MalformedNote as exc:
        raise ConflictError(f"{rec.path} is malformed now ({exc.reason}); fix it and run again") from None


def merge_records(store: MemoryCore, records: Sequence[Record], cohesion: float,
                  cluster_ref: str | None = None) -> dict[str, Any]:
    """Write one merged memory from `records` and archive them (the seed's apply mode).

    Under the vault lock each original is re-read: if one was archived, moved out of the
    memory folders or edited since it was clustered, nothing is written (ConflictError).
    """
    if len(records) < 2:
        raise InvalidInput("a merge needs at least 2 memories")
    now = store.now()
    with store.vault.lock():
        current = []
        for rec in records:
            try:
                cur = _current(store, rec)
            except NotFound:
                raise ConflictError(f"memory {rec.id} is gone since it was clustered; run `vaultmem cluster` again") from None
            if cur.status not in ("active", "promoted"):
                raise ConflictError(f"{cur.path} is {cur.status} now; run `vaultmem cluster` again")
            if " ".join(cur.content.split()) != " ".join(rec.content.split()):
                raise ConflictError(f"{cur.path} changed since it was clustered; run `vaultmem cluster` again")
            current.append(cur)
        plan = merge_plan(current, cohesion)
        ordered: list[Record] = plan["sources"]
        memory = notes.Memory(
            id=str(uuid.uuid4()), content=plan["content"],
            created=dt.datetime.fromtimestamp(plan["created"], dt.timezone.utc),
            last_used=dt.datetime.fromtimestamp(plan["last_used"], dt.timezone.utc),
            use_count=plan["use_count"], strength=plan["strength"], status="active",
            tags=plan["tags"], entities=plan["entities"], source="consolidation",
            memory_type=plan["memory_type"],
            agent=plan["agent"],
            meta={"consolidated_at": now, "cohesion": cohesion, **({"private": True} if plan["private"] else {})},
        )
        relations = "## Relations\n" + "".join(f"- consolidated_from:: [[{_stem(r.path)}]]\n" for r in ordered)
        text = notes.render_note(store.template("memory"), memory, relations)
        rel = f"{store.settings.stm_dir.strip('/')}/{notes.slugify(memory.content)}-{memory.short_id}.md"
        store.vault.create_exclusive(store.vault.abs(rel), text)
        store.index.refresh([rel])
        new_stem = _stem(rel)
        moves: list[dict[str, Any]] = []
        archived = [archive_record(store, r, now, {"consolidated_into": f"[[{new_stem}]]"}, moves) for r in ordered]
    return {
        "success": True,
        "mode": "apply",
        "cluster_id": cluster_ref,
        "new_memory_id": memory.id,
        "new_path": rel,
        "source_ids": [r.id for r in ordered],
        "relation_ids": [relation_id(memory.id, "consolidated_from", r.id or "") for r in ordered],
        "archived_count": len(archived),
        "archived_paths": archived,
        **lifecycle.move_report(moves),
        "message": f"Merged {len(ordered)} memories into {memory.id}",
    }


def archive_record(store: MemoryCore, rec: Record, now: dt.datetime,
                   extra: Mapping[str, Any] | None = None, moves: list[dict[str, Any]] | None = None) -> str:
    """Move a memory to the archive folder and set status archived; returns its new path."""
    return move_record(store, rec, "archived", {"archived_at": now, **dict(extra or {})}, moves)


def move_record(store: MemoryCore, rec: Record, status: str, changes: Mapping[str, Any],
                moves: list[dict[str, Any]] | None = None) -> str:
    """Move a memory to the folder of `status` (its subfolder kept, path links to it
    rewritten), then set status and `changes`; the move is added to `moves`.

    Used for archiving and for demotion back to short-term; promotion goes through
    `MemoryStore.promote` (the lifecycle module).
    """
    with store.vault.lock():
        cur = _current(store, rec)
        moved = store.move_memory(cur.path, status, {"status": status, **dict(changes)})
    if moves is not None:
        moves.append(moved)
    return str(moved["path"])


# -- consolidate -----------------------------------------------------------------------------------

MODES = ("preview", "apply", "link")


def consolidate(store: MemoryCore, cluster_id_: str | None = None, mode: str = "preview",
                auto_detect: bool = False, cohesion_threshold: float = COHESION_THRESHOLD,
                threshold: float | None = None, max_cluster_size: int = MAX_CLUSTER_SIZE) -> dict[str, Any]:
    """The seed's `consolidate_memories`: preview, merge (apply) or link one cluster or all
    clusters with cohesion >= cohesion_threshold (auto). `threshold` None: the
    `cluster_threshold` setting."""
    threshold = store.settings.cluster_threshold if threshold is None else threshold
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not 0.0 <= cohesion_threshold <= 1.0:
        raise InvalidInput(f"cohesion_threshold must be between 0 and 1, got {cohesion_threshold}")
    if bool(cluster_id_) == bool(auto_detect):
        raise InvalidInput("pass either a cluster id (--cluster) or --auto, not both and not neither")
    records = active_records(store)
    clusters = _store_clusters(store, records, threshold, max_cluster_size)
    if cluster_id_:
        chosen = [c for c in clusters if c.id == cluster_id_] or _remembered_cluster(store, cluster_id_, records)
        if not chosen:
            raise NotFound(f"no cluster {cluster_id_!r} at threshold {threshold}; run `vaultmem cluster` "
                           "with the same --threshold and pass an id it lists")
        if mode == "apply" and chosen[0].cohesion < cohesion_threshold:
            raise InvalidInput(f"cluster {cluster_id_} has cohesion {chosen[0].cohesion}, below "
                               f"{cohesion_threshold}; link it with --mode link or lower --cohesion-threshold")
    else:
        chosen = [c for c in clusters if c.cohesion >= cohesion_threshold]
    skipped = []
    if auto_detect and mode == "apply":  # never merge a contradiction unattended
        skipped = [c.id for c in chosen if has_contradiction(c.records)]
        chosen = [c for c in chosen if c.id not in skipped]
    base = {"success": True, "mode": mode, "auto_detect": auto_detect, "candidates_found": len(chosen)}
    if skipped:
        base["skipped_contradictions"] = skipped
    if mode == "preview":
        return {**base, "previews": [preview_dict(c) for c in chosen],
                "message": f"{len(chosen)} clusters would be merged (preview: nothing written)"}
    if mode == "apply":
        results = []
        blocked: list[dict[str, str]] = []
        for c in chosen:
            try:
                results.append(merge_records(store, c.records, c.cohesion, c.id))
            except SecretBlocked as exc:
                if cluster_id_:
                    raise
                # a credential typed into a member: the merged note would copy it; skip this one
                blocked.append({"cluster_id": c.id, "reason": str(exc)})
        if blocked:
            base["skipped_secrets"] = blocked
        if cluster_id_:
            return {**base, **results[0], "consolidated_clusters": 1, "results": results}
        base["links_rewritten"] = [e for r in results for e in r["links_rewritten"]]
        base["renamed"] = [e for r in results for e in r["renamed"]]
        return {**base, "consolidated_clusters": len(results), "results": results,
                "message": f"Merged {len(results)} clusters ({sum(r['archived_count'] for r in results)} memories archived)"}
    results = [link_records(store, c.records, c.id) for c in chosen]
    total = sum(r["relations_created"] for r in results)
    out = {**base, "linked_clusters": len(results), "relations_created": total, "results": results,
           "message": f"Created {total} bidirectional relations in {len(results)} clusters"}
    if cluster_id_:
        out.update(cluster_id=cluster_id_, message=results[0]["message"])
    return out


def link_records(store: MemoryCore, records: Sequence[Record], cluster_ref: str | None = None) -> dict[str, Any]:
    """`related` relations both ways between every pair of members."""
    created = 0
    for n, a in enumerate(records):
        for b in records[n + 1:]:
            created += relate(store, a, b, "related")
            created += relate(store, b, a, "related")
    return {"success": True, "mode": "link", "cluster_id": cluster_ref, "relations_created": created,
            "message": f"Created {created} bidirectional relations linking {len(records)} memories"}


def relate(store: MemoryCore, source: Record, target: Record, relation_type: str,
           strength: float | None = None) -> int:
    """A typed relation from source to target through the graph layer; 1 if new, 0 if present."""
    result = graph.relate(store, source.id or source.path, target.id or target.path, relation_type,
                          strength if strength is not None else 1.0, None)
    return 0 if result.get("existed") else 1


# -- deep consolidation (Mnemosyne's memory_consolidate) ------------------------------------------

CONTRADICTION_BAND = (0.70, 0.92)
NEAR_DUPLICATE = 0.92
POPULAR_USES = 10
STALE_DAYS = 30.0
STALE_IMPORTANCE = 0.3


def negated(text: str) -> bool:
    """True when the text asserts a negation an odd number of times ("not", "never", "don't" ...)."""
    return len(NEGATION.findall(text)) % 2 == 1


def has_contradiction(records: Sequence[Record]) -> bool:
    """True when some members assert a negation and others do not."""
    return len({negated(r.content) for r in records}) > 1


def deep_consolidate(store: MemoryCore, batch: int = 100, dry_run: bool = False) -> dict[str, Any]:
    """Mnemosyne's four phases over the `batch` most recently used active/promoted memories.

    1. contradictions: similarity in [0.70, 0.92) and a negation mismatch; surfaced as
       `contradicts` relations both ways (in the vault, where a person sees them).
    2. near-duplicates (>= 0.92): the version with more uses is kept and takes the other's
       tags, entities, uses and times; the other is archived (`consolidated_from` link).
    3. popular promotion: use_count > 10 -> moved to memory/ltm, status promoted.
    4. stale demotion: 30+ days idle and decay score < 0.3 (importance): a promoted memory
       goes back to memory/stm; an active one loses 0.1 strength (not below 1.0).

    dry_run: the same report (the seed's `consolidate --dry-run`), nothing written or moved.
    """
    import time

    if not 1 <= batch <= 1000:
        raise InvalidInput(f"batch must be between 1 and 1000, got {batch}")
    started = time.perf_counter()
    now = store.now()
    records = active_records(store)
    vectors = build_vectors(records)
    order = sorted(range(len(records)), key=lambda i: (-(records[i].last_used or 0.0), records[i].id or ""))[:batch]
    recs = [records[i] for i in order]
    vecs = [vectors[i] for i in order]
    pairs = similar_pairs(vecs, CONTRADICTION_BAND[0])
    pairs.sort(key=lambda p: (-p[2], recs[p[0]].id or "", recs[p[1]].id or ""))
    contradictions, merged = [], []
    moves: list[dict[str, Any]] = []  # memories archived or demoted, with the links rewritten for them
    promotions: list[dict[str, Any]] = []  # lifecycle.promote's results (their own links_rewritten)
    consumed: set[int] = set()
    for i, j, s in pairs:
        a, b = recs[i], recs[j]
        if negated(a.content) != negated(b.content):
            if s < CONTRADICTION_BAND[1]:
                if not dry_run:
                    relate(store, a, b, "contradicts")
                    relate(store, b, a, "contradicts")
                contradictions.append({"id1": a.id, "id2": b.id, "similarity": round(s, 4),
                                       "content1_preview": preview(a.content), "content2_preview": preview(b.content)})
            continue
        if s >= NEAR_DUPLICATE and i not in consumed and j not in consumed:
            keep, drop = sorted((a, b), key=lambda r: (-r.use_count, r.created or 0.0, r.id or ""))
            merged.append({"kept_id": keep.id, "archived_id": drop.id, "archived_path": drop.path,
                           "similarity": round(s, 4)} if dry_run
                          else absorb(store, keep, drop, now, s, moves))
            consumed.update((i, j))
    promoted, demoted = [], []
    for n, rec in enumerate(recs):
        if n in consumed:
            continue
        cur = store.index.get(rec.path) or rec
        if cur.status == "active" and cur.use_count > POPULAR_USES:
            if dry_run:
                promoted.append({"memory_id": cur.id, "vault_path": cur.path, "use_count": cur.use_count})
                continue
            # Mnemosyne promotes on popularity alone, so the lifecycle criteria are forced
            result = lifecycle.promote(store, cur.id, apply=True, force=True)
            promotions.append(result)
            if result["promoted_count"] == 1:
                moved = store.resolve(cur.id or "")
                store.modify(moved, lambda _c: {"memory_type": "core"})  # the seed: core, immune to decay
                promoted.append({"memory_id": cur.id, "vault_path": moved.path, "use_count": cur.use_count})
            continue
        idle = (now.timestamp() - (cur.last_used or now.timestamp())) / 86400
        critical = str(cur.props.get("urgency") or "").lower() == "critical"  # never stale, however quiet
        if idle >= STALE_DAYS and not cur.pinned and not critical and store.score_of(cur, now) < STALE_IMPORTANCE:
            if cur.status == "promoted":
                path = cur.path if dry_run else move_record(store, cur, "active", {"demoted_at": now}, moves)
                demoted.append({"memory_id": cur.id, "vault_path": path, "action": "moved to short-term"})
            elif cur.strength > 1.0:
                if not dry_run:
                    store.modify(cur, lambda c: {"strength": round(max(1.0, c.strength - 0.1), 3), "demoted_at": now})
                demoted.append({"memory_id": cur.id, "vault_path": cur.path, "action": "strength lowered"})
    report = lifecycle.move_report(moves)
    for result in promotions:
        report["links_rewritten"] += result["links_rewritten"]
        report["renamed"] += result["renamed"]
    return {
        "success": True,
        "dryRun": dry_run,
        "contradictions": len(contradictions),
        "nearDuplicatesMerged": len(merged),
        "popularPromoted": len(promoted),
        "staleDemoted": len(demoted),
        "processedCount": len(recs),
        "durationMs": int((time.perf_counter() - started) * 1000),
        "contradiction_pairs": contradictions,
        "merged": merged,
        "promoted": promoted,
        "demoted": demoted,
        **report,
    }


def absorb(store: MemoryCore, keep: Record, drop: Record, now: dt.datetime, similarity_: float,
           moves: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Near-duplicate merge: `keep` takes `drop`'s metadata, `drop` is archived (its move is
    added to `moves`)."""
    with store.vault.lock():
        other = _current(store, drop)

        def change(cur: Record) -> dict[str, Any]:
            return {
                "use_count": cur.use_count + other.use_count,
                "last_used": dt.datetime.fromtimestamp(max(cur.last_used or 0.0, other.last_used or 0.0),
                                                       dt.timezone.utc),
                "created": dt.datetime.fromtimestamp(min(cur.created or 0.0, other.created or 0.0), dt.timezone.utc),
                "strength": max(cur.strength, other.strength),
                "tags": _union([cur.tags, other.tags]),
                "entities": _union([cur.entities, other.entities]),
            }

        kept = store.modify(_current(store, keep), change)
        relate(store, kept, other, "consolidated_from")
        path = archive_record(store, other, now, {"consolidated_into": f"[[{_stem(kept.path)}]]"}, moves)
    return {"kept_id": keep.id, "archived_id": drop.id, "archived_path": path, "similarity": round(similarity_, 4)}
