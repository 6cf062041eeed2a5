"""A rebuild's Whoosh segment writers: the posting pool's spilled runs written and read in
blocks, and the field lengths kept in memory for the segment's flush.

A rebuild's writer keeps its postings in memory up to its share of `REBUILD_WRITER_MB` and
then writes them, sorted, to a run file; the segment is written from a merge of the runs.
whoosh3 pickles each posting into a run on its own and reads it back with one
`pickle.load` per posting: at 50,000 notes a process spilled two runs of 837,000 postings
and spent about a sixth of its commit in those calls. Here a run is a sequence of blocks,
each a 4-byte length and a `marshal`led list of up to `BLOCK` postings (tuples of str,
bytes, int, float and bytes or None); the merge reads a block at a time. The postings, their
order and the memory bound are Whoosh's own.

When the segment is written, Whoosh looks up each posting's field length (a block's shortest
and longest document) by reading it back from the length column it just wrote: a file read
and an unpack per posting, ~1.7 million times in a rebuild of 100,000 notes. `FieldLengths`
keeps the lengths as they are written (each quantized to its byte, as the column holds it) and
hands them to the flush from lists.
"""

from __future__ import annotations

import marshal
import struct
from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.writing import PostingPool

BLOCK = 4096
_LENGTH = struct.Struct("<I")


# PostingPool.add's estimate of a posting's memory, less its strings' lengths: a 5-tuple (28 +
# 4 * 5), the field name (21), the term (26), the document number (18), the weight (16) and
# the value (21).
_POSTING_BYTES = 28 + 4 * 5 + 21 + 26 + 18 + 16 + 21


class BlockPool(PostingPool):
    """`PostingPool` with runs in marshalled blocks (see the module's docstring)."""

    def add(self, item: Any) -> None:
        """PostingPool.add without its type assertions (the writer hands bytes), with the same
        size estimate, so runs are cut where Whoosh cuts them: 0.26-0.29 us a posting against
        0.39 us, ~0.3 s of CPU in a rebuild of 100,000 notes (~30 postings a note)."""
        self.fieldnames.add(item[0])
        self.currentsize += _POSTING_BYTES + len(item[0]) + 2 * len(item[1]) + len(item[4] or "")
        if self.currentsize > self.limit:
            self.save()
        self.current.append(item)

    def _write_run(self, f: Any, items: Iterable[Any]) -> None:
        block: list[Any] = []
        for item in items:
            block.append(item)
            if len(block) >= BLOCK:
                self._write_block(f, block)
                block = []
        if block:
            self._write_block(f, block)
        f.close()

    @staticmethod
    def _write_block(f: Any, block: list[Any]) -> None:
        data = marshal.dumps(block)
        f.write(_LENGTH.pack(len(data)))
        f.write(data)

    def _read_run(self, path: str) -> Iterator[Any]:
        f = self._open_run(path)
        try:
            while True:
                head = f.read(_LENGTH.size)
                if not head:
                    return
                (length,) = _LENGTH.unpack(head)
                data = f.read(length)
                if len(data) != length:
                    raise OSError(f"posting run {path} is cut short (expected {length} bytes, read {len(data)})")
                yield from marshal.loads(data)
        finally:
            f.close()
            self._remove_run(path)


def block_pool(writer: Any, limitmb: int) -> None:
    """Give a fresh `SegmentWriter` (nothing added yet) a `BlockPool` of the same bound."""
    writer.pool = BlockPool(writer._tempstorage, writer.newsegment, limitmb=limitmb)


def for_rebuild(writer: Any, limitmb: int) -> None:
    """Set up a fresh `SegmentWriter` (nothing added yet) for a rebuild: a `BlockPool`,
    `FieldLengths` and `DocumentAdder`."""
    block_pool(writer, limitmb)
    FieldLengths(writer)
    DocumentAdder.install(writer)


class DocumentAdder:
    """`SegmentWriter.add_document` for a rebuild's writer, for a schema whose fields have no
    term vectors, spelling fields or columns (vaultmem's): the same postings and per-document
    calls, without what serves other schemas on every document (sorting the field names,
    checking them, boost lookups) and with each posting put in the pool inline rather than by
    a call (~17 a note), its runs cut where `BlockPool.add` cuts them. (The cut matters to the
    bytes: a run's postings come back from `marshal` sharing their equal values where the
    same object was written, as `analysis.Text` hands out for a word at one position, and
    the segment's blocks pickle a shared value once.) Anything else (a field not in the
    schema, a `_boost`) goes to Whoosh's own `add_document`. The segment is the same, byte
    for byte (tests/test_postings_pool.py)."""

    def __init__(self, writer: Any, plan: list[tuple[str, Any, bool, bool, bool, float | None]]) -> None:
        self.writer = writer
        self.plan = plan
        self.names = frozenset(name for name, *_ in plan)
        self.whoosh = writer.add_document

    @classmethod
    def install(cls, writer: Any) -> None:
        """Make `writer.add_document` this one's, when its schema allows (else leave Whoosh's)."""
        from whoosh.analysis import IDTokenizer
        from whoosh.fields import ID
        from whoosh.formats import Existence

        schema = writer.schema
        plan: list[tuple[str, Any, bool, bool, bool, float | None]] = []
        for name in sorted(schema.names()):
            field = schema[name]
            if field.vector or field.separate_spelling() or field.column_type:
                return
            # An ID field (path, id, kind, status) indexes a text as its one term: Whoosh
            # yields (the text's UTF-8, 1, the field's boost, b"") through a tokenizer, a set
            # and two generators; the boost here says to make that posting directly.
            whole = (field.format.field_boost if type(field) is ID and type(field.analyzer) is IDTokenizer
                     and type(field.format) is Existence else None)
            plan.append((name, field, bool(field.indexed), bool(field.scorable), bool(field.stored), whole))
        writer.add_document = cls(writer, plan).add

    def add(self, **fields: Any) -> None:
        if not fields.keys() <= self.names:  # a field not in the schema, a `_boost`, a `_stored_` value
            self.whoosh(**fields)
            return
        writer = self.writer
        writer._check_state()
        pool, perdoc, docnum = writer.pool, writer.perdocwriter, writer.docnum
        current, size, limit, fieldnames = pool.current, pool.currentsize, pool.limit, pool.fieldnames
        perdoc.start_doc(docnum)
        try:
            for name, field, indexed, scorable, stored, whole in self.plan:
                value = fields.get(name)
                if value is None:  # absent or None: nothing, as Whoosh does
                    continue
                length = 0
                if indexed:
                    fixed = _POSTING_BYTES + len(name)
                    terms = (((value.encode("utf-8"), 1, whole, b""),) if whole is not None and type(value) is str
                             else field.index(value))
                    for tbytes, freq, weight, vbytes in terms:
                        if scorable:
                            length += freq
                        size += fixed + 2 * len(tbytes) + (len(vbytes) if vbytes else 0)
                        if size > limit:  # a run cut where Whoosh's pool cuts it (see BlockPool.add)
                            pool.save()
                            current, size = pool.current, 0
                        current.append((name, tbytes, docnum, weight * 1.0, vbytes))  # * the document's boost
                        fieldnames.add(name)
                perdoc.add_field(name, field, value if stored else None, length)
        except ValueError:
            pool.currentsize = size
            perdoc.cancel_doc()
            raise
        pool.currentsize = size
        perdoc.finish_doc()
        writer._added = True
        writer.docnum += 1


class FieldLengths:
    """Each document's field lengths as the writer's `PerDocumentWriter.add_field` is given
    them, kept as the length column keeps them (a byte per document, 0 for none: 50,000
    documents hold 50 KB a field) and served to `FieldWriter.add_postings` at the segment's
    flush from lists (see the module's docstring): the per-document reader the flush asks the
    writer for is wrapped."""

    def __init__(self, writer: Any) -> None:
        from whoosh.util.numeric import length_to_byte

        self.by_field: dict[str, bytearray] = {}
        self.docs = 0  # documents started; the one being added is the last
        perdoc = writer.perdocwriter
        start_doc, add_field = perdoc.start_doc, perdoc.add_field

        def starting(docnum: int) -> None:
            start_doc(docnum)
            self.docs = docnum + 1

        def adding(fieldname: str, fieldobj: Any, value: Any, length: int) -> None:
            add_field(fieldname, fieldobj, value, length)
            if length:  # as add_field writes it into the column
                column = self.by_field.get(fieldname)
                if column is None:
                    column = self.by_field[fieldname] = bytearray()
                if len(column) < self.docs:
                    column.extend(bytes(self.docs - len(column)))
                column[self.docs - 1] = length_to_byte(length)

        perdoc.start_doc, perdoc.add_field = starting, adding
        per_document_reader = writer.per_document_reader
        writer.per_document_reader = lambda: _Lengths(per_document_reader(), self)


class _Lengths:
    """A segment's per-document reader whose `doc_field_length_reader` (what add_postings asks
    for each field) reads the lengths from `FieldLengths`' bytes, as a list made per field."""

    def __init__(self, reader: Any, lengths: FieldLengths) -> None:
        self._reader = reader
        self._lengths = lengths

    def doc_field_length_reader(self, fieldname: str, default: int = 0) -> Any:
        from whoosh.util.numeric import byte_to_length

        column = self._lengths.by_field.get(fieldname)
        if column is None:  # no document has this field: no length column (Whoosh's default)
            return lambda docnum: default
        # what the column's reader gives: the byte's length, None for byte 0 (also past the end)
        as_length: list[int | None] = [None] + [byte_to_length(b) for b in range(1, 256)]
        table = [as_length[b] for b in column]
        table += [None] * (self._lengths.docs - len(table))
        return table.__getitem__

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)
