"""The digest a long-lived process keeps of the catalog's listing (Index.diff): any change to
a note's path or fingerprint changes it, and a process holding it still sees every edit."""

from __future__ import annotations

import os

from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.storage.index import LONG_LIVED_CACHE_KIB, listing_digest
from vaultmem.store import MemoryStore, Policy

paths = st.from_regex(r"memory/(stm|ltm)/[a-z0-9-]{1,12}\.md", fullmatch=True)
fingerprint = st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**31))
listings = st.dictionaries(paths, fingerprint, min_size=2, max_size=40)


@settings(max_examples=examples(300, 60), deadline=None)
@given(listings, st.data())
def test_every_kind_of_change_changes_the_digest(listing, data):
    """Every example makes each kind of change (touched, resized, swapped, renamed, added,
    removed), so 60 listings in the test command (300 thorough) still try each kind 60 times."""
    before = listing_digest(listing)
    assert listing_digest(dict(reversed(listing.items()))) == before  # order-free
    a, b = data.draw(st.lists(st.sampled_from(sorted(listing)), min_size=2, max_size=2, unique=True))
    (m, s) = listing[a]
    changes = [
        {**listing, a: (m + 1, s)},  # touched: one nanosecond later
        {**listing, a: (m, s + 1)},  # one byte more
        {**listing, a: listing[b], b: listing[a]} if listing[a] != listing[b] else None,  # two swapped
        {**{k: v for k, v in listing.items() if k != a}, a + ".md": listing[a]},  # renamed
        {k: v for k, v in listing.items() if k != a},  # removed
        {**listing, "memory/stm/new.md" if "memory/stm/new.md" not in listing else "x.md": (m, s)},  # added
    ]
    for changed in changes:
        if changed is not None:
            assert listing_digest(changed) != before


def test_a_long_lived_store_sees_an_edit_after_many_unchanged_scans(tmp_path):
    store = MemoryStore(tmp_path / "vault")
    store.init()
    saved = store.save("The staging database is Postgres 16", dedupe=False)
    for _ in range(3):  # unchanged scans: answered from the digest
        assert store.search("postgres")["count"] == 1
    path = store.vault.root / store.search("postgres")["results"][0]["path"]
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("Postgres 16", "MariaDB 11"), encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    found = store.search("mariadb")["results"]
    assert [(r["id"], r["content"]) for r in found] == [(saved["memory_id"], "The staging database is MariaDB 11")]


def _long_lived(root):
    return MemoryStore(root, policy=Policy(long_lived=True))  # as the MCP server and the watcher build it


def test_a_long_lived_store_never_holds_the_listing_and_keeps_a_small_page_cache(tmp_path):
    first = MemoryStore(tmp_path / "vault")
    first.init()
    first.save("The staging database is Postgres 16", dedupe=False)
    store = _long_lived(tmp_path / "vault")
    assert store.search("postgres")["count"] == 1
    held = store.index._fingerprints[1]
    assert held == listing_digest(store.vault.scan())  # the digest from its first scan on
    assert store.index.db.execute("PRAGMA cache_size").fetchone() == (-LONG_LIVED_CACHE_KIB,)
    assert first.index.db.execute("PRAGMA cache_size").fetchone() == (-2000,)  # SQLite's default


def test_a_long_lived_store_started_after_edits_indexes_them(tmp_path):
    # The catalog's digest differs from the disk's: the listing is read and the edit found.
    first = MemoryStore(tmp_path / "vault")
    first.init()
    saved = first.save("The staging database is Postgres 16", dedupe=False)
    first.save("The build runs on Jenkins", dedupe=False)
    first.close()
    path = first.vault.root / first.search("postgres")["results"][0]["path"]
    path.write_text(path.read_text(encoding="utf-8").replace("Postgres 16", "MariaDB 11"), encoding="utf-8")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))
    store = _long_lived(tmp_path / "vault")
    found = store.search("mariadb")["results"]
    assert [(r["id"], r["content"]) for r in found] == [(saved["memory_id"], "The staging database is MariaDB 11")]
    assert (store.last_sync.updated, store.last_sync.unchanged) == (1, 1)
