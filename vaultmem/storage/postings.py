"""A rebuild's Whoosh segment writers: the posting pool's spilled runs written and read in
blocks, the field lengths kept in memory for the segment's flush, each document added
without Whoosh's per-document generality (`DocumentAdder`) and the flush's postings written
a term at a time (`TermWriter`). Each writes what Whoosh writes, byte for byte.

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

import functools
import hashlib
import itertools
import marshal
import operator
import pickle
import re
import struct
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from whoosh.analysis import IDTokenizer, LowercaseFilter, RegexTokenizer, StripFilter
from whoosh.analysis.analyzers import CompositeAnalyzer
from whoosh.codec.base import OutOfOrderError
from whoosh.codec.whoosh3 import COMPRESSION_MIN_SIZE, WHOOSH3_HEADER_MAGIC, W3Codec, W3FieldWriter, W3TermInfo
from whoosh.fields import ID, KEYWORD
from whoosh.filedb import filetables
from whoosh.filedb.filetables import OrderedHashWriter
from whoosh.formats import Existence, Frequency
from whoosh.system import pack_int, pack_long, pack_ushort
from whoosh.util.numeric import byte_to_length, length_to_byte
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
    `FieldLengths`, `DocumentAdder` and `TermWriter`."""
    block_pool(writer, limitmb)
    FieldLengths(writer)
    DocumentAdder.install(writer)
    TermWriter.install(writer)


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

    def __init__(self, writer: Any, plan: list[tuple[str, Any, bool, bool, bool, Callable[[str], Any] | None]]) -> None:
        self.writer = writer
        self.plan = plan
        self.names = frozenset(name for name, *_ in plan)
        self.whoosh = writer.add_document

    @classmethod
    def install(cls, writer: Any) -> None:
        """Make `writer.add_document` this one's, when its schema allows (else leave Whoosh's)."""
        schema = writer.schema
        plan: list[tuple[str, Any, bool, bool, bool, Callable[[str], Any] | None]] = []
        for name in sorted(schema.names()):
            field = schema[name]
            if field.vector or field.separate_spelling() or field.column_type:
                return
            direct: Callable[[str], Any] | None = None
            if type(field) is ID and type(field.analyzer) is IDTokenizer and type(field.format) is Existence:
                # An ID field (path, id, kind, status) indexes a text as its one term: Whoosh
                # yields (the text's UTF-8, 1, the field's boost, b"") through a tokenizer, a
                # set and two generators.
                direct = functools.partial(_whole, field.format.field_boost)
            elif type(field) is KEYWORD and _is_comma_keywords(field):
                direct = functools.partial(_comma_keywords, field.format.field_boost)  # type: ignore[union-attr]
            plan.append((name, field, bool(field.indexed), bool(field.scorable), bool(field.stored), direct))
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
            for name, field, indexed, scorable, stored, direct in self.plan:
                value = fields.get(name)
                if value is None:  # absent or None: nothing, as Whoosh does
                    continue
                length = 0
                if indexed:
                    fixed = _POSTING_BYTES + len(name)
                    terms = direct(value) if direct is not None and type(value) is str else field.index(value)
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


def _whole(boost: float, value: str) -> tuple[tuple[bytes, int, float, bytes]]:
    """An ID field's one posting for `value`, as Whoosh's `ID.index` gives it."""
    return ((value.encode("utf-8"), 1, boost, b""),)


_COMMA_PARTS = re.compile(r"[^,]+").findall  # whoosh's CommaSeparatedTokenizer's expression
_FREQUENCY = struct.Struct("!I").pack  # formats.Frequency's value: the term's count


def _is_comma_keywords(field: Any) -> bool:
    """Whether `field` is `KEYWORD(lowercase=True, commas=True)` with Whoosh's own analyzer
    (comma-separated parts, stripped, lowercased) and its Frequency format, which
    `_comma_keywords` indexes the same way."""

    ana = field.analyzer
    if type(ana) is not CompositeAnalyzer or [type(item) for item in ana.items] != [
            RegexTokenizer, StripFilter, LowercaseFilter]:
        return False
    tokenizer: Any = ana.items[0]
    return (tokenizer.expression.pattern == r"[^,]+" and not tokenizer.gaps
            and type(field.format) is Frequency and not field.format.options)


def _comma_keywords(boost: float, value: str) -> list[tuple[bytes, int, float, bytes]]:
    """A comma-separated keyword field's postings for `value`, as Whoosh's `KEYWORD.index`
    gives them (a tokenizer, two filters, a format and four generators a document): each
    distinct stripped, lowercased part in order of first appearance, its count, the count
    times the field's boost, and the count packed."""
    counts: dict[str, int] = {}
    for part in _COMMA_PARTS(value):
        word = part.strip().lower()
        counts[word] = counts.get(word, 0) + 1
    return [(word.encode("utf-8"), n, float(n) * boost, _FREQUENCY(n)) for word, n in counts.items()]


class FieldLengths:
    """Each document's field lengths as the writer's `PerDocumentWriter.add_field` is given
    them, kept as the length column keeps them (a byte per document, 0 for none: 50,000
    documents hold 50 KB a field) and served to `FieldWriter.add_postings` at the segment's
    flush from lists (see the module's docstring): the per-document reader the flush asks the
    writer for is wrapped."""

    def __init__(self, writer: Any) -> None:

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
        table = self.length_table(fieldname)
        if table is None:  # no document has this field: no length column (Whoosh's default)
            return lambda docnum: default
        return table.__getitem__

    def length_table(self, fieldname: str) -> list[int | None] | None:
        """Each document's length of `fieldname` as the column's reader gives it: the byte's
        length, None for byte 0 (also past the end); None when no document has the field."""

        column = self._lengths.by_field.get(fieldname)
        if column is None:
            return None
        as_length: list[int | None] = [None] + [byte_to_length(b) for b in range(1, 256)]
        table = [as_length[b] for b in column]
        table += [None] * (self._lengths.docs - len(table))
        return table

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


class TermWriter:
    """whoosh3's `FieldWriter.add_postings` for a rebuild's segment: the same files, byte for
    byte (tests/test_postings_pool.py), a term at a time. Whoosh hands each posting through
    three calls (the loop, `add`, `W3PostingsWriter.add_posting` with its four type checks)
    and builds each block's statistics posting by posting; here the merged postings are
    grouped by term (`itertools.groupby`, in C) and each block is made from lists. Installed
    only on whoosh3's own field writer with its own block settings, for a schema with no
    spelling postings (document -1), which this loop does not write."""

    def __init__(self, fieldwriter: Any) -> None:
        self.fw = fieldwriter

    @classmethod
    def install(cls, writer: Any) -> None:
        """Make the writer's field writer's `add_postings` this one's, when it is whoosh3's own
        with its own settings (else leave Whoosh's)."""
        fw, codec, schema = writer.fieldwriter, writer.codec, writer.schema
        if (type(fw) is not W3FieldWriter or type(codec) is not W3Codec or codec._inlinelimit != 1
                or type(fw._tindex) is not OrderedHashWriter or fw._tindex.hashtype != 0
                or any(schema[name].separate_spelling() for name in schema.names())):
            return
        fw.add_postings = cls(fw).add_postings  # type: ignore[method-assign]

    def add_postings(self, schema: Any, lengths: Any, items: Iterable[Any]) -> None:
        fw = self.fw
        postfile, tindex, fieldmap = fw._postfile, fw._tindex, fw._fieldmap
        termfile, positions, buckets = tindex.dbfile, tindex.index.append, tindex.buckets
        pack_lengths = filetables._lengths.pack
        tinfo = W3TermInfo._struct.pack
        dumps, md5 = pickle.dumps, hashlib.md5
        f32: dict[float, float] = {}  # a weight as the block's float32 array holds it
        lastfn: str | None = None
        lasttext = b""
        fieldid = 0
        fixedsize: int | None = None
        length_of: Any = None
        for (fieldname, btext), group in itertools.groupby(items, key=operator.itemgetter(0, 1)):
            if fieldname != lastfn:
                if lastfn is not None and fieldname < lastfn:
                    raise OutOfOrderError(f"Field {lastfn!r} .. {fieldname!r}")
                if lastfn is not None:
                    fw.finish_field()
                fw.start_field(fieldname, schema[fieldname])
                fieldid = fieldmap[fieldname]
                fixedsize = fw._format.fixed_value_size()
                length_of = _length_reader(lengths, fieldname)
                lastfn, lasttext = fieldname, b""
            elif btext < lasttext:
                raise OutOfOrderError(f"Term {lastfn}:{lasttext!r} .. {fieldname}:{btext!r}")
            lasttext = btext
            postings = list(group)
            if len(postings) == 1:  # most terms (every path and id): the block below, for one posting
                _field, _text, doc, weight, value = postings[0]
                length = length_of(doc)
                w32 = f32.get(weight)
                if w32 is None:
                    w32 = f32[weight] = array("f", (weight,))[0]
                top = weight if weight > 0 else 0
                mini_weights = None if w32 == 1.0 else w32 if w32 == w32 else (w32,)  # NaN: not all equal
                mini_values = _mini_values([value] if value else [], fixedsize)
                comp, data = self._compressed(dumps(((doc,), mini_weights, mini_values), 2))
                low, high = length_to_byte(length or None), length_to_byte(length or 0)
                info = dumps((1, doc, top, comp, low, high), 2)
                start = postfile.tell()
                postfile.write(WHOOSH3_HEADER_MAGIC + pack_int(-(len(info) + len(data))) + info + data)
                value = (tinfo(False, 0 + w32, 1, low if length else 0, high, top, doc, doc)
                         + pack_long(start) + pack_int(postfile.tell() - start))
            else:
                value = self._term(postings, fixedsize, length_of)
            # OrderedHashWriter.add, inline: the key's position, the record, the key's hash
            key = pack_ushort(fieldid) + btext
            if key <= tindex.lastkey:
                raise ValueError(f"Keys must increase: {tindex.lastkey!r}..{key!r}")
            pos = termfile.tell()
            positions(pos)
            termfile.write(pack_lengths(len(key), len(value)) + key + value)
            h = int.from_bytes(md5(key, usedforsecurity=False).digest()[12:], "big")  # filetables.md5_hash
            buckets[h & 255].append((h, pos))
            tindex.lastkey = key
        if lastfn is not None:
            fw.finish_field()

    def _compressed(self, data: bytes) -> tuple[int, bytes]:
        """A block's pickled data as W3PostingsWriter._write_block stores it: compressed at the
        codec's level unless it is too short to gain, with the level used (0: not)."""
        level = self.fw._codec._compression if len(data) >= COMPRESSION_MIN_SIZE else 0
        return level, zlib.compress(data, level) if level else data

    def _term(self, postings: list[Any], fixedsize: int | None, length_of: Callable[[int], Any]) -> bytes:
        """A term's postings written in blocks; its term info."""
        blocklimit = self.fw._codec._blocklimit
        postfile = self.fw._postfile
        dumps = pickle.dumps
        docs = [p[2] for p in postings]
        weights = [p[3] for p in postings]
        values = [p[4] for p in postings]
        lens = list(map(length_of, docs))
        # the term's statistics, summed over its blocks as W3TermInfo.add_block does
        t_weight: float = 0
        t_minlength: int | None = None
        t_maxlength = 0
        t_maxweight: float = 0
        start = postfile.tell()
        out = [WHOOSH3_HEADER_MAGIC]  # the term's postings, written with one call
        n = len(docs)
        for at in range(0, n, blocklimit):
            ids = docs[at:at + blocklimit]
            ws = array("f", weights[at:at + blocklimit])
            top = max(weights[at:at + blocklimit])
            b_maxweight = top if top > 0 else 0
            truthy = [x for x in lens[at:at + blocklimit] if x]
            b_minlength = min(truthy) if truthy else None
            b_maxlength = max(truthy) if truthy else 0
            t_weight += sum(ws)
            if t_minlength is None:
                t_minlength = b_minlength
            else:
                t_minlength = min(t_minlength, b_minlength)  # type: ignore[type-var]
            t_maxlength = max(t_maxlength, b_maxlength)
            t_maxweight = max(t_maxweight, b_maxweight)
            # the block, as W3PostingsWriter._write_block makes it
            first = ws[0]
            mini_weights = (None if first == 1.0 else first) if ws.count(first) == len(ws) else tuple(ws)
            mini_values = _mini_values([v for v in values[at:at + blocklimit] if v], fixedsize)
            deltas = tuple([ids[0]] + [b - a for a, b in zip(ids, ids[1:], strict=False)])
            comp, data = self._compressed(dumps((deltas, mini_weights, mini_values), 2))
            info = dumps((len(ids), ids[-1], b_maxweight, comp, length_to_byte(b_minlength),
                          length_to_byte(b_maxlength)), 2)
            blocklength = len(info) + len(data)
            out += (pack_int(-blocklength if at + blocklimit >= n else blocklength), info, data)
        postfile.write(b"".join(out))
        minlength = 0 if t_minlength is None else length_to_byte(t_minlength)
        return (W3TermInfo._struct.pack(False, t_weight, n, minlength, length_to_byte(t_maxlength), t_maxweight,
                                        docs[0], docs[-1])
                + pack_long(start) + pack_int(postfile.tell() - start))


def _mini_values(kept: list[bytes], fixedsize: int | None) -> Any:
    """A block's values (the non-empty ones) as W3PostingsWriter._mini_values stores them: a
    tuple for a format of varying value sizes, nothing for one without values, else joined."""
    if fixedsize is None or fixedsize < 0:
        return tuple(kept)
    return None if fixedsize == 0 else b"".join(kept)


def _length_reader(lengths: Any, fieldname: str) -> Callable[[int], Any]:
    """A document's field length, as add_postings reads it."""
    if not lengths:
        return lambda doc: 0
    table = lengths.length_table(fieldname) if isinstance(lengths, _Lengths) else None
    if table is not None:
        return table.__getitem__
    return lengths.doc_field_length_reader(fieldname)
