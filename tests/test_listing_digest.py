"""The digest a long-lived process keeps of the catalog's listing (Index.diff): any change to
a note's path or fingerprint changes it, and a process holding it still sees every edit."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.storage.index import listing_digest
from vaultmem.store import MemoryStore

paths = st.from_regex(r"memory/(stm|ltm)/[a-z0-9-]{1,12}\.md", fullmatch=True)
fingerprint = st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**31))
listings = st.dictionaries(paths, fingerprint, min_size=2, max_size=40)


@settings(max_examples=300, deadline=None)
@given(listings, st.data())
def test_every_kind_of_change_changes_the_digest(listing, data):
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
