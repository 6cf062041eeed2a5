"""Temporal contiguity (episodes.py): a memory found by a search rises toward the relevance of
the memory saved just before or after it from the same origin (agent and source)."""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.base.config import Settings
from vaultmem.base.errors import ConfigError
from vaultmem.core import episodes
from vaultmem.storage.index import _NEIGHBOURS, Index, Record, _connect


def relevance_of(store, query: str, **kw) -> dict[str, float]:
    return {r["id"]: r["relevance"] for r in store.search(query, top_k=10, **kw)["results"]}


def conversation(store, clock, turns: list[str], *, minutes: float = 1, source: str | None = None) -> list[str]:
    ids = []
    for text in turns:
        ids.append(store.save(text, source=source, dedupe=False)["memory_id"])
        clock.advance(minutes=minutes)
    return ids


def test_a_reply_rises_toward_the_turn_it_answers(store, clock):
    # the isolated memory matches "running" exactly as well as the reply does
    isolated = store.save("Running late again this morning", dedupe=False)["memory_id"]
    clock.advance(days=3)
    shoes, reply, _ = conversation(store, clock, [
        "I bought new running shoes, purple ones",
        "Love that purple color! For walking or running?",
        "We should plan the weekend trip",
    ])
    store.settings.contiguity_weight = 0.0
    plain = relevance_of(store, "purple running shoes")
    store.settings.contiguity_weight = 0.5
    lifted = relevance_of(store, "purple running shoes")
    assert plain[shoes] == lifted[shoes] == 1.0
    assert lifted[reply] == pytest.approx(plain[reply] + 0.5 * (1.0 - plain[reply]), abs=1e-4)
    assert lifted[isolated] == plain[isolated]
    ranked = [r["id"] for r in store.search("purple running shoes")["results"]]
    assert ranked == [shoes, reply, isolated]  # the third turn matched nothing: not added


def test_neighbours_further_apart_than_the_window_lend_nothing(store, clock):
    shoes, reply = conversation(store, clock, ["I bought new running shoes", "For walking or running?"], minutes=61)
    store.settings.contiguity_weight = 0.0
    plain = relevance_of(store, "running shoes")
    store.settings.contiguity_weight = 0.5
    assert relevance_of(store, "running shoes") == plain
    store.settings.contiguity_window_minutes = 90
    assert relevance_of(store, "running shoes")[reply] > plain[reply]


def test_an_episode_is_one_origin_the_same_agent_and_source(store, clock):
    shoes = store.save("I bought new running shoes", source="chat-1", context="gear talk")["memory_id"]
    clock.advance(minutes=1)
    other = store.save("Running the quarterly report tonight", source="chat-2")["memory_id"]
    clock.advance(minutes=1)
    agent_b = store.save("Running errands, back soon", source="chat-1", agent="bot-b")["memory_id"]
    clock.advance(minutes=1)
    reply = store.save("For walking or running?", source="chat-1", context="a different note")["memory_id"]
    store.settings.contiguity_weight = 0.0
    plain = relevance_of(store, "running shoes")
    store.settings.contiguity_weight = 0.5
    lifted = relevance_of(store, "running shoes")
    # chat-1's reply skips chat-2's memory and bot-b's to its own previous turn (context is
    # free text and does not split an episode); the other two have no better neighbour
    assert lifted[reply] == pytest.approx(plain[reply] + 0.5 * (1.0 - plain[reply]), abs=1e-4)
    assert lifted[other] == plain[other] and lifted[agent_b] == plain[agent_b] and lifted[shoes] == 1.0


def test_the_two_memories_on_each_side_are_neighbours_while_the_gaps_stay_within_the_window(store, clock):
    shoes = store.save("I bought new running shoes", dedupe=False)["memory_id"]
    clock.advance(minutes=50)
    store.save("Nice, what colour?", dedupe=False)
    clock.advance(minutes=50)  # 100 minutes after the shoes, but each gap is within the hour
    reply = store.save("For walking or running?", dedupe=False)["memory_id"]
    clock.advance(minutes=1)
    store.save("Both, mostly trail days", dedupe=False)
    clock.advance(minutes=1)
    store.save("Trail days are the best days", dedupe=False)
    clock.advance(minutes=1)
    third = store.save("Running club on Sunday", dedupe=False)["memory_id"]  # three steps after the reply
    store.settings.contiguity_weight = 0.0
    plain = relevance_of(store, "running shoes")
    store.settings.contiguity_weight = 0.5
    lifted = relevance_of(store, "running shoes")
    assert lifted[reply] == pytest.approx(plain[reply] + 0.5 * (1.0 - plain[reply]), abs=1e-4)
    assert lifted[third] == plain[third] and lifted[shoes] == 1.0
    store.settings.contiguity_span = 1
    assert relevance_of(store, "running shoes")[reply] == plain[reply]
    store.settings.contiguity_span = 3
    assert relevance_of(store, "running shoes")[third] > plain[third]
    store.settings.contiguity_span, store.settings.contiguity_window_minutes = 2, 45
    assert relevance_of(store, "running shoes") == plain


def test_a_forgotten_memory_leaves_its_episode(store, clock):
    shoes, gone, reply = conversation(store, clock, ["I bought new running shoes", "Shoes are pricey these days",
                                                     "For walking or running?"])
    assert store.forget(gone)["status"] == "deleted"
    store.settings.contiguity_weight, store.settings.contiguity_span = 0.0, 1
    plain = relevance_of(store, "running shoes")
    store.settings.contiguity_weight = 0.5
    lifted = relevance_of(store, "running shoes")
    assert gone not in lifted
    assert lifted[reply] == pytest.approx(plain[reply] + 0.5 * (1.0 - plain[reply]), abs=1e-4)


def test_memories_saved_at_the_same_instant_are_not_neighbours(store, clock):
    """They have no order between them (a bulk import, a fixed clock): nothing to go by."""
    shoes = store.save("I bought new running shoes", dedupe=False)["memory_id"]
    reply = store.save("For walking or running?", dedupe=False)["memory_id"]
    store.settings.contiguity_weight = 0.0
    plain = relevance_of(store, "running shoes")
    store.settings.contiguity_weight = 0.5
    assert relevance_of(store, "running shoes") == plain and plain[shoes] == 1.0 and plain[reply] < 1.0


def test_equal_matches_side_by_side_lend_each_other_nothing(store, clock):
    ids = conversation(store, clock, [f"kafka partition note {n}" for n in range(4)])
    assert set(relevance_of(store, "kafka partition").values()) == {1.0}
    assert len(ids) == 4


def test_contiguity_settings_are_validated():
    with pytest.raises(ConfigError, match=r"^contiguity_weight must be between 0 and 1, got 1.5$"):
        Settings(contiguity_weight=1.5).validate()
    with pytest.raises(ConfigError, match=r"^contiguity_window_minutes must be greater than 0, got 0$"):
        Settings(contiguity_window_minutes=0).validate()
    with pytest.raises(ConfigError, match=r"^contiguity_span must be greater than 0, got 0$"):
        Settings(contiguity_span=0).validate()


# -- the neighbour query against a plain-Python reference ----------------------------------------

notes = st.lists(
    st.tuples(st.sampled_from([None, "a", "b"]), st.sampled_from([None, "x"]),
              st.one_of(st.none(), st.integers(0, 6).map(float)), st.sampled_from(["memory", "memory", "note"]),
              st.sampled_from([None, "active", "deleted"])),
    min_size=1, max_size=12)


def reference(rows: list[tuple[str, str | None, str | None, float | None, str, str | None]], path: str,
              span: int) -> tuple:
    """(path, created, before, after) by sorting in Python; soft-deleted memories are no neighbours."""
    mine = {r[0]: r for r in rows}[path]
    if mine[4] != "memory" or mine[3] is None:
        return ()
    same = sorted(((r[0], r[3]) for r in rows if r[4] == "memory" and r[1:3] == mine[1:3] and r[3] is not None
                   and r[5] != "deleted"), key=lambda x: (x[1], x[0]))
    before = [x for x in same if x[1] < mine[3]][::-1][:span]
    after = [x for x in same if x[1] > mine[3]][:span]
    return (path, mine[3], before, after)


@settings(max_examples=examples(150, 50), deadline=None)
@given(notes, st.integers(1, 3))
def test_neighbours_query_matches_created_order_within_an_origin(tmp_path_factory, spec, span):
    """50 catalogs in the test command (150 thorough): each holds up to a dozen notes over a
    few origins and instants, so every example checks many neighbour pairs at once."""
    db = _connect(tmp_path_factory.mktemp("db") / "catalog.sqlite")
    rows = [(f"m/{n:02d}.md", *note) for n, note in enumerate(spec)]
    db.executemany("INSERT INTO notes (path, source, agent, created, kind, status) VALUES (?, ?, ?, ?, ?, ?)", rows)
    paths = [r[0] for r in rows]
    got = {r[0]: r for r in Index.neighbours(SimpleNamespace(db=db), paths, span)}  # type: ignore[arg-type]
    for path in paths:
        assert got.get(path, ()) == reference(rows, path, span)
    db.close()


def test_neighbours_use_the_origin_index(tmp_path):
    db = _connect(tmp_path / "catalog.sqlite")
    plan = " ".join(r[-1] for r in db.execute("EXPLAIN QUERY PLAN " + _NEIGHBOURS, {"paths": "[]", "span": 2}))
    assert plan.count("USING COVERING INDEX notes_episodes") == 2 and plan.startswith("SCAN c VIRTUAL TABLE")
    db.close()


# -- spread: exact for the top_k, never lowers, never adds ---------------------------------------


class FakeIndex:
    """Index.neighbours over an in-memory list of one origin, created at the given minutes."""

    def __init__(self, minutes: list[float]) -> None:
        self.paths = [f"m{i:03d}" for i in range(len(minutes))]
        self.created = [60.0 * m for m in minutes]

    def neighbours(self, paths, span):
        at = {p: i for i, p in enumerate(self.paths)}
        side = lambda idx: [(self.paths[j], self.created[j]) for j in idx]  # noqa: E731
        return [(p, self.created[at[p]], side(range(at[p] - 1, max(-1, at[p] - 1 - span), -1)),
                 side(range(at[p] + 1, min(len(self.paths), at[p] + 1 + span)))) for p in paths]


def rank(relevance: float, score: float) -> float:
    return relevance * (0.7 + 0.3 * score / (score + 0.3))


cases = st.lists(st.tuples(st.one_of(st.just(0.0), st.floats(0.01, 1.0)), st.floats(0.0, 1.0),
                           st.sampled_from([1.0, 30.0, 59.0, 61.0, 120.0])),  # minutes after the one before
                 min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(cases, st.integers(1, 15), st.floats(0.05, 1.0), st.integers(1, 3))
def test_spread_is_exact_for_the_top_k_and_only_lifts(spec, top_k, weight, span):
    minutes = [sum(gap for _r, _s, gap in spec[:i + 1]) for i in range(len(spec))]
    index = FakeIndex(minutes)
    score = {p: s for p, (_r, s, _g) in zip(index.paths, spec, strict=True)}
    rel = {p: r for p, (r, _s, _g) in zip(index.paths, spec, strict=True)}
    ranked = [(Record(path=p, mtime_ns=0, size=0, kind="memory", created=at), score[p], rel[p], rank(rel[p], score[p]))
              for p, at in zip(index.paths, index.created, strict=True)]
    got = episodes.spread(index, ranked, weight=weight, window_minutes=60, depth=1000, top_k=top_k, rank=rank,
                          span=span)
    # brute force: every memory pulls, through at most `span` steps of at most 60 minutes each
    want = {}
    for i, p in enumerate(index.paths):
        near = []
        for step in (-1, 1):
            j = i
            while abs(j + step - i) <= span and 0 <= j + step < len(spec) and abs(minutes[j + step] - minutes[j]) <= 60:
                j += step
                near.append(index.paths[j])
        best = max([rel[q] for q in near] or [0.0])
        want[p] = min(best, rel[p] + weight * (best - rel[p])) if rel[p] > 0 and best > rel[p] else rel[p]
    order = sorted(index.paths, key=lambda p: (-rank(want[p], score[p]), p))
    got_sorted = sorted(got, key=lambda r: (-r[3], r[0].path))
    assert [r[0].path for r in got_sorted][:top_k] == order[:top_k]
    assert all(r[2] == pytest.approx(want[r[0].path]) for r in got_sorted[:top_k])
    assert {r[0].path for r in got} == set(index.paths)
    assert all(r[2] >= rel[r[0].path] for r in got)
    assert max(r[2] for r in got) == max(rel.values())


def test_spread_with_weight_zero_changes_nothing():
    index = FakeIndex([0, 1, 2])
    ranked = [(Record(path=p, mtime_ns=0, size=0, kind="memory"), 0.5, r, r)
              for p, r in zip(index.paths, (1.0, 0.1, 0.0), strict=True)]
    assert episodes.spread(index, ranked, weight=0.0, window_minutes=60, depth=100, top_k=3, rank=rank, span=2) == ranked


def test_the_catalog_has_the_origin_index(store):
    names = {r[0] for r in store.index.db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "notes_episodes" in names and "notes_episode" not in names
    assert isinstance(store.index.db, sqlite3.Connection)


# -- reachable: a source that can lift nothing is not asked for its neighbours ------------------

origin_notes = st.lists(
    st.tuples(st.sampled_from([None, "a", "b"]), st.sampled_from([None, "x"]),
              st.one_of(st.none(), st.sampled_from([0.0, 1.0, 30.0, 61.0, 119.0, 121.0, 300.0])),  # minutes
              st.sampled_from([None, "active", "deleted"]),
              st.one_of(st.just(0.0), st.floats(0.01, 1.0))),  # relevance
    min_size=1, max_size=14)


@settings(max_examples=examples(300, 75), deadline=None)
@given(origin_notes, st.integers(1, 10), st.floats(0.05, 1.0), st.integers(1, 3))
def test_leaving_out_sources_that_reach_nothing_changes_no_result(tmp_path_factory, spec, top_k, weight, span):
    """spread over a real catalog (several origins, same instants, notes without a created
    time, soft-deleted ones between) gives exactly what it gives when every source is asked.
    75 catalogs in the test command (300 thorough), each with every note a possible source."""
    db = _connect(tmp_path_factory.mktemp("db") / "catalog.sqlite")
    rows = [(f"m/{n:02d}.md", source, agent, None if minute is None else 60.0 * minute, "memory", status)
            for n, (source, agent, minute, status, _rel) in enumerate(spec)]
    db.executemany("INSERT INTO notes (path, source, agent, created, kind, status) VALUES (?, ?, ?, ?, ?, ?)", rows)
    index = SimpleNamespace(db=db, neighbours=lambda paths, span: Index.neighbours(index, paths, span))
    ranked = [(Record(path=path, mtime_ns=0, size=0, kind="memory", created=created, source=source, agent=agent),
               0.5, rel, rank(rel, 0.5))
              for (path, source, agent, created, _kind, status), (*_, rel) in zip(rows, spec, strict=True)
              if status != "deleted"]  # a search never finds a soft-deleted memory
    if not ranked:
        return
    kwargs = dict(weight=weight, window_minutes=60, depth=1000, top_k=top_k, rank=rank, span=span)
    got = episodes.spread(index, ranked, **kwargs)  # type: ignore[arg-type]
    every = episodes.reachable
    try:
        episodes.reachable = lambda sources, ranked, reach_s: list(sources)  # type: ignore[assignment]
        want = episodes.spread(index, ranked, **kwargs)  # type: ignore[arg-type]
    finally:
        episodes.reachable = every
    assert got == want
    db.close()
