"""storage/postings.BlockPool: a rebuild's posting runs in marshalled blocks give the index
Whoosh's own pool gives, to every posting, also when the postings spill to several runs."""

from __future__ import annotations

import random

import pytest

from vaultmem.storage import index as idx
from vaultmem.storage import postings


def build(folder, docs, block: bool):
    from whoosh.writing import SegmentWriter

    folder.mkdir()
    ix = idx.whoosh_storage(folder).create().create_index(idx._schema())
    writer = SegmentWriter(ix, limitmb=1)
    if block:
        postings.block_pool(writer, 1)
    for doc in docs:
        writer.add_document(**doc)
    runs = len(writer.pool.runs)
    writer.commit()
    return ix, runs


def every_posting(ix):
    """(field, term, [(doc, weight, value)]) for every term, and every document's stored fields."""
    with ix.searcher() as searcher:
        reader = searcher.reader()
        terms = [(field, term, walk(reader.postings(field, term))) for field, term in reader.all_terms()]
        return terms, [reader.stored_fields(d) for d in range(reader.doc_count_all())]


def walk(matcher):
    found = []
    while matcher.is_active():
        found.append((matcher.id(), matcher.weight(), matcher.value()))
        matcher.next()
    return found


@pytest.mark.parametrize("block", [postings.BLOCK, 7])
def test_the_same_postings_as_whooshs_pool_across_several_runs(tmp_path, monkeypatch, block):
    monkeypatch.setattr(postings, "BLOCK", block)  # 7: many blocks per run, a short last one
    rng = random.Random(5)
    words = [f"w{i}" for i in range(400)] + ["Zürich", "café", "naïve", "東京", "l'été"]
    docs = [{"path": f"memory/stm/n{i:04d}.md", "id": f"id-{i}", "kind": "memory", "status": "active",
             "content": " ".join(rng.choice(words) for _ in range(rng.randint(5, 60))),
             "tags": ",".join(rng.sample(["infra", "db", "people/bob", "x"], 2)),
             "entities": rng.choice(["Bob", "Alice Smith", ""])} for i in range(2500)]
    theirs, their_runs = build(tmp_path / "whoosh-pool", docs, block=False)
    ours, our_runs = build(tmp_path / "block-pool", docs, block=True)
    assert our_runs == their_runs >= 2  # the postings spilled: the merge of runs is what is compared
    assert every_posting(ours) == every_posting(theirs)
    assert not list((tmp_path / "block-pool").glob("*.run"))  # the runs are removed after the merge


def test_a_cut_short_run_is_an_error_not_missing_postings(tmp_path):
    from whoosh.filedb.filestore import FileStorage

    store = FileStorage(str(tmp_path)).create()
    pool = postings.BlockPool(store, None, limitmb=1)
    path, f = pool._new_run()
    pool._write_run(f, [("content", b"a", i, 1.0, None) for i in range(10)])
    full = (tmp_path / path).read_bytes()
    (tmp_path / path).write_bytes(full[:-3])
    with pytest.raises(OSError, match=r"posting run .*\.run is cut short \(expected \d+ bytes, read \d+\)"):
        list(pool._read_run(path))


def test_a_posting_counts_what_whooshs_pool_counts(tmp_path):
    from whoosh.filedb.filestore import FileStorage
    from whoosh.writing import PostingPool

    store = FileStorage(str(tmp_path)).create()
    rng = random.Random(7)
    ours, theirs = postings.BlockPool(store, None, limitmb=1), PostingPool(store, None, limitmb=1)
    for _ in range(3000):
        item = (rng.choice(["content", "title", "props"]), "wörd".encode() * rng.randint(1, 5), rng.randint(0, 99),
                1.5, rng.choice([None, b"", b"\x00\x01" * rng.randint(1, 9)]))
        ours.add(item)
        theirs.add(item)
        assert ours.currentsize == theirs.currentsize
    assert ours.current == theirs.current and ours.fieldnames == theirs.fieldnames


def segment_files(ix):
    """The files in an index's one segment (its compound file), by name less the segment's
    random id, each with its bytes."""
    (segment,) = ix._segments()
    compound = segment.open_compound_file(ix.storage)
    try:
        return {name.replace(segment.segment_id(), ""): compound.open_file(name).read() for name in compound.list()}
    finally:
        compound.close()


def write_segment(folder, docs, setup, limitmb):
    """One segment of `docs` written by a SegmentWriter that `setup` prepared: its files (as
    `segment_files`), the runs its pool spilled, and whether DocumentAdder added the documents
    and TermWriter wrote the postings."""
    from whoosh.writing import SegmentWriter

    folder.mkdir()
    ix = idx.whoosh_storage(folder).create().create_index(idx._schema())
    writer = SegmentWriter(ix, limitmb=limitmb)
    setup(writer, limitmb)
    adder = (isinstance(getattr(writer.add_document, "__self__", None), postings.DocumentAdder),
             isinstance(getattr(writer.fieldwriter.add_postings, "__self__", None), postings.TermWriter))
    for doc in docs:
        writer.add_document(**doc)
    runs = len(writer.pool.runs)
    writer.commit()
    return segment_files(ix), runs, adder


def test_lengths_from_memory_write_the_segment_byte_for_byte(tmp_path):
    """FieldLengths hands the flush each posting's field length from lists instead of the
    length column: the segment written is the same, byte for byte (the length of a posting's
    field sets its block's shortest and longest), for fields absent from some documents, empty
    ones and lengths long enough to be quantized."""
    rng = random.Random(11)
    words = [f"w{i}" for i in range(300)]
    docs = []
    for i in range(1500):
        doc = {"path": f"memory/stm/n{i:04d}.md", "id": f"id-{i}", "kind": "memory", "status": "active",
               "content": " ".join(rng.choice(words) for _ in range(rng.choice([0, 1, 3, 40, 200, 2000])))}
        if i % 3:
            doc["entities"] = rng.choice(["Bob", "Alice Smith", ""])
        if i > 700:
            doc["props"] = "speaker Caroline"
        docs.append(doc)
    built = {name: write_segment(tmp_path / name, docs, setup, 4)[0]
             for name, setup in (("column", postings.block_pool), ("memory", postings.for_rebuild))}
    assert {".pst", ".trm", "._content_len.col", "._entities_len.col", "._props_len.col"} <= set(built["memory"])
    assert built["memory"] == built["column"]


def test_a_rebuilds_add_document_writes_whooshs_segment_byte_for_byte(tmp_path):
    """postings.DocumentAdder (a rebuild writer's add_document) gives the segment Whoosh's
    add_document gives, byte for byte: every field of vaultmem's schema (the ID fields' one
    term made directly), None and empty values, accents and CJK, absent fields, postings
    spilled to several runs (cut at the same posting: a run's shared values pickle once), and
    a document with a `_boost`, which goes to Whoosh's. postings.TermWriter writes the rebuild's
    postings: terms of one posting and of several blocks, weights all 1 and mixed. Tags (a
    comma-separated KEYWORD field) are split, stripped, lowercased and counted as Whoosh does,
    repeated and empty parts included."""
    rng = random.Random(23)
    words = [f"w{i}" for i in range(500)] + ["Zürich", "café", "東京", "l'été", "the", "running"]
    docs = []
    for i in range(3000):
        doc = {"path": f"memory/stm/n{i:04d}{rng.choice(['', ' Café', '東京', ' '])}.md",
               "id": rng.choice([f"id-{i}", ""]), "kind": rng.choice(["memory", "note"]),
               "status": rng.choice(["active", "promoted", ""]),
               "title": rng.choice(["", "Weekly review", "w1 w2 w1"]),
               "content": " ".join(rng.choice(words) for _ in range(rng.choice([0, 1, 5, 40, 300])))
               + (f" once{i}" if i % 7 == 0 else ""),  # terms of one posting, in every kind of field
               "tags": rng.choice([",", ", "]).join(rng.choices(
                   ["infra", "infra/db", "people/bob", "x", "Infra", " Café ", "", "東京", f"t{i}"], k=rng.randint(0, 4))),
               "entities": rng.choice(["Bob", "Alice Smith", "", None, f"Person{i}"]),
               "props": rng.choice(["speaker Caroline", "", None])}
        if i % 5 == 0:
            del doc["props"]
        docs.append(doc)
    docs[7] = {**docs[7], "_boost": 2.0}
    built, runs, adder = {}, {}, {}
    for name, setup in (("whoosh", postings.block_pool), ("rebuild", postings.for_rebuild)):
        built[name], runs[name], adder[name] = write_segment(tmp_path / name, docs, setup, 1)
    assert adder == {"whoosh": (False, False), "rebuild": (True, True)}
    assert runs["rebuild"] >= 2 and runs["whoosh"] >= 2
    assert {".pst", ".trm", "._content_len.col", "._tags_len.col"} <= set(built["rebuild"]), sorted(built["rebuild"])
    assert built["rebuild"] == built["whoosh"]


def test_index_files_count_their_position_as_the_file_ends(tmp_path):
    """Whoosh asks a file's position per term and per block; the index's files count it instead
    of asking the kernel, through every way Whoosh writes (bytes, varints, pickles, arrays)."""
    import array
    import pickle

    storage = idx.whoosh_storage(tmp_path).create()
    f = storage.create_file("counted.bin")
    f.write(b"abc")
    f.write_varint(300)
    f.write_int(7)
    f.write_pickle({"a": [1, 2, 3]})
    f.write_array(array.array("i", range(10)))
    f.write_string(b"xyz")
    size = 3 + 2 + 4 + len(pickle.dumps({"a": [1, 2, 3]}, -1)) + 40 + 4
    assert f.tell() == f.file.tell() == size
    f.seek(1)
    assert f.tell() == 1
    f.seek(0, 2)
    assert f.tell() == size
    f.close()
    assert (tmp_path / "counted.bin").stat().st_size == size
    back = storage.open_file("counted.bin")
    assert back.read(3) == b"abc"
    assert back.read_varint() == 300
    assert back.read_int() == 7
    assert back.read_pickle() == {"a": [1, 2, 3]}
    assert list(back.read_array("i", 10)) == list(range(10))
    back.close()


def test_an_index_file_written_past_its_count_is_refused_at_close(tmp_path):
    storage = idx.whoosh_storage(tmp_path).create()
    f = storage.create_file("bypassed.bin")
    f.write(b"abc")
    f.file.write(b"de")  # a write that does not go through the counting file
    with pytest.raises(RuntimeError) as info:
        f.close()
    assert str(info.value) == ("index file bypassed.bin ends at byte 5 but vaultmem counted 3: this Whoosh "
                               "writes past vaultmem's count; install the whoosh3 release pyproject.toml allows")
    assert f.is_closed
