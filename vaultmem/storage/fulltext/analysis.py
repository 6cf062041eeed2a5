"""Text analysis for the search index: how notes and queries become terms.

Kept in its own module (it imports Whoosh) so `index.py` stays cheap to import. Every
choice here is measured by `bench/retrieval.py`; docs/retrieval.md has the numbers.
"""

from __future__ import annotations

import re
import unicodedata
import weakref
from collections.abc import Generator, Iterator
from typing import Any

from whoosh.analysis import (
    Filter,
    IDTokenizer,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
    Tokenizer,
)
from whoosh.analysis.analyzers import CompositeAnalyzer
from whoosh.fields import ID, TEXT
from whoosh.formats import Existence, Positions

# Function words that carry no topic: English stop words plus the question words and
# auxiliaries natural-language queries are full of ("what did she ...", "how many ...").
STOP_WORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each else ever few for from further get gets got had hadn't has hasn't have
haven't having he he'd he'll he's her here here's hers herself him himself his how how's however
i i'd i'll i'm i've if in into is isn't it it's its itself just let's like me more most much
mustn't my myself no nor not now of off on once only or other ought our ours ourselves out over
own really same shan't she she'd she'll she's should shouldn't so some such than that that's the
their theirs them themselves then there there's these they they'd they'll they're they've this
those through to too under until up upon us very was wasn't we we'd we'll we're we've were
weren't what what's when when's where where's whether which while who who's whom whose why why's
will with won't would wouldn't yet you you'd you'll you're you've your yours yourself yourselves
""".split())

STEMMING = True
STOPPING = True


# French articles and pronouns written into the next word (`l'équipe`, `d'accord`, `j'ai`).
ELISIONS = frozenset({"l", "d", "j", "qu", "n", "s", "c", "m", "t", "jusqu", "lorsqu", "puisqu"})


def possessive(text: str) -> str:
    """`Caroline's` -> `Caroline`, `James'` -> `James`; a typographic apostrophe reads as `'`;
    a French elision is dropped (`l'équipe` -> `équipe`, `qu'il` -> `il`)."""
    text = text.replace("\u2019", "'")
    if text.endswith(("'s", "'S")):
        text = text[:-2]
    elif text.endswith("'"):
        text = text[:-1]
    head, apostrophe, rest = text.partition("'")
    if apostrophe and head.lower() in ELISIONS and len(rest) > 1:
        text = rest
    return text


WORD = r"\w+(?:['\u2019]\w+)*"


def is_cjk(ch: str) -> bool:
    """Han (CJK ideographs and extensions), kana, Hangul: scripts written without spaces."""
    o = ord(ch)
    return (0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF
            or 0xF900 <= o <= 0xFAFF or 0x31F0 <= o <= 0x31FF or 0x1100 <= o <= 0x11FF or 0x20000 <= o <= 0x3134F)


# the ranges of `is_cjk` as one character class: a token is checked in C, not per character
_CJK_CLASS = ("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\u31f0-\u31ff"
              "\u1100-\u11ff\U00020000-\U0003134f]")


_cjk: re.Pattern[str] | None = None  # compiled on the first text that is not ASCII


def has_cjk(text: str) -> bool:
    # Compiled when first needed: the class is slow to compile, and most commands meet no
    # text that is not ASCII.
    global _cjk
    if text.isascii():
        return False
    if _cjk is None:
        _cjk = re.compile(_CJK_CLASS)
    return _cjk.search(text) is not None


class NormalizingTokenizer(Tokenizer):
    """Words of the NFKC form of the text: full-width `Ｔｏｋｙｏ` reads as `Tokyo`, half-width
    kana as kana, a decomposed `é` (as macOS writes it) as one letter."""

    def __init__(self, expression: str = WORD) -> None:
        self.inner = RegexTokenizer(expression)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NormalizingTokenizer) and self.inner == other.inner

    def __call__(self, value: str, **kwargs: Any) -> Iterator[Any]:
        return self.inner(value if value.isascii() else unicodedata.normalize("NFKC", value), **kwargs)


_LATIN_END = 0x250  # Basic Latin to Latin Extended-B: accents here are folded (é -> e)


def fold(text: str) -> str:
    """Case-folded (`Straße` -> `strasse`) with the accents of Latin letters dropped (`café` ->
    `cafe`, `Ñandú` -> `nandu`), so a word typed without its accents still matches. Other
    scripts keep their marks: the dakuten of `が` makes another sound than `か`."""
    text = text.casefold()
    if text.isascii():
        return text
    out: list[str] = []
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch) and out and ord(out[-1][-1]) < _LATIN_END:
            continue
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


class WordFilter(Filter):
    """Each word in one pass (a rebuild sends every token of the vault through here):
    possessives and French elisions dropped (`possessive`), case and Latin accents folded
    (`fold`), and Chinese and Japanese, written without spaces (so `\\w+` reads a whole clause
    as one word), cut into bigrams and single characters: each run of such characters becomes
    its bigrams and its characters (`咖啡店` -> 咖啡, 咖, 啡店, 啡, 店), so a query matches a note
    by the words they share whatever the clause around them (the bigram first, so a term
    analyses back to itself). Letters and digits in the same token (`iPhone手机`) stay one word
    per run. Positions count words: a bigram shares its first character's."""

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:  # type: ignore[override]  # whoosh: tokens in, tokens out
        pos = 0
        for t in tokens:
            text = word_form(t.text)
            if not has_cjk(text):
                t.text = text
                if t.positions:
                    t.pos = pos
                pos += 1
                yield t
                continue
            for run in _runs(text):
                if not is_cjk(run[0]):
                    t.text = run
                    if t.positions:
                        t.pos = pos
                    pos += 1
                    yield t
                    continue
                for i, ch in enumerate(run):
                    if i + 1 < len(run):
                        t.text = run[i:i + 2]
                        if t.positions:
                            t.pos = pos
                        yield t
                    t.text = ch
                    if t.positions:
                        t.pos = pos
                    pos += 1
                    yield t


def word_form(word: str) -> str:
    """A word as WordFilter indexes it, before stop words and stems: possessive and elision
    dropped, lowered (ASCII) or case- and accent-folded (`fold`). Shared with `Text`."""
    if word.isascii():  # most words: no typographic apostrophe, no accent, no CJK
        return (possessive(word) if "'" in word else word).lower()
    return fold(possessive(word))


def _runs(text: str) -> list[str]:
    """`iPhone手机壳` -> ["iPhone", "手机壳"]: maximal runs of CJK and of other characters."""
    runs: list[str] = []
    for ch in text:
        if runs and is_cjk(ch) == is_cjk(runs[-1][-1]):
            runs[-1] += ch
        else:
            runs.append(ch)
    return runs


class StopStemFilter(Filter):
    """Whoosh's `StopFilter(stoplist, minsize=1)` and `StemFilter()` in one pass, the same
    tokens out (positions renumbered past stop words; a stop word kept and marked `stopped`
    when the caller keeps them), one Python layer fewer per word of the vault."""

    def __init__(self, stoplist: frozenset[str]) -> None:
        self.stops = stoplist
        self.start_cache()

    def start_cache(self) -> None:
        from functools import lru_cache

        from whoosh.lang.porter import stem

        self.stemmer = lru_cache(maxsize=50000)(stem)

    # Whoosh pickles the schema (and so this filter) into the index: the cache stays out
    def __getstate__(self) -> dict[str, Any]:
        return {"stops": self.stops}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.stops = state["stops"]
        self.start_cache()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StopStemFilter) and self.stops == other.stops

    def __call__(self, tokens: Iterator[Any]) -> Iterator[Any]:  # type: ignore[override]  # whoosh: tokens in, tokens out
        stops, stem = self.stops, self.stemmer
        pos = None
        for t in tokens:
            text = t.text
            if text and text not in stops:
                if t.positions:
                    if pos is None:
                        pos = t.pos
                    else:
                        pos += 1
                        t.pos = pos
                t.stopped = False
                t.text = stem(text)
                yield t
            elif not t.removestops:
                t.stopped = True
                yield t


def analyzer(search: bool = True) -> Any:
    """The search analyzer; `search=False` is the original chain (Whoosh's short stop list,
    no possessive filter) that consolidation's similarity thresholds were tuned on."""
    if not search:
        return (RegexTokenizer(r"\w+(?:['\u2019]\w+)*") | LowercaseFilter() | StopFilter(minsize=1)
                | StemFilter(cachesize=50000))
    chain = NormalizingTokenizer() | WordFilter()
    if STOPPING and STEMMING:
        return chain | StopStemFilter(STOP_WORDS)
    if STOPPING:
        chain = chain | StopFilter(stoplist=STOP_WORDS, minsize=1)
    if STEMMING:
        chain = chain | StemFilter(cachesize=50000)
    return chain


_WORD = re.compile(WORD)


class Analyzed:
    """A text field's value as `Text.index` gives it: (term bytes, frequency, weight, encoded
    value) for each word. A rebuild's worker processes analyse the notes they parse, so the
    one process that writes the index only adds the postings (`FieldType.index` is what a
    writer asks a field for; `Text.index` hands these back as they are)."""

    __slots__ = ("postings",)

    def __init__(self, postings: list[tuple[bytes, int, float | int, bytes]]) -> None:
        self.postings = postings

    def __getstate__(self) -> list[tuple[bytes, int, float | int, bytes]]:
        return self.postings

    def __setstate__(self, state: list[tuple[bytes, int, float | int, bytes]]) -> None:
        self.postings = state


def analyzed(schema: Any, document: dict[str, Any]) -> dict[str, Any]:
    """`document` with the value of each `Text` field analysed (`Analyzed`), for a writer of
    an index with this schema."""
    out = dict(document)
    for name, value in document.items():
        field = schema[name]
        if type(field) is Text and isinstance(value, str):
            out[name] = Analyzed(list(field.index(value)))
    return out


class Text(TEXT):
    """Whoosh's TEXT field with a quicker way to index text through the search analyzer
    (`NormalizingTokenizer | WordFilter | StopStemFilter`): the words found in one pass of
    the regular expression over the text (NFKC-normalized unless ASCII), each lowered or
    folded, stopped and stemmed as the chain would, and their positions encoded as
    `Positions` encodes them, without a Token passed through three generators per word.
    Same postings, byte for byte (tests/test_analysis_fast.py compares the two on arbitrary
    text). Text with Chinese, Japanese or Korean in it (cut into bigrams by WordFilter), and
    any other analyzer, go through the chain."""

    def index(self, value: Any, **kwargs: Any) -> Generator[tuple[bytes, int, float | int, bytes], Any, None]:
        if type(value) is Analyzed:  # analysed already, by a rebuild's worker (`Analyzed`)
            yield from value.postings
            return
        stopstem = _search_chain_end(self.analyzer)
        fmt = self.format
        normal = None if kwargs else _one_pass_text(value)
        if stopstem is None or normal is None or type(fmt) is not Positions:
            yield from super().index(value, **kwargs)
            return
        stops, stem = stopstem.stops, stopstem.stemmer
        positions: dict[str, list[int]] = {}
        pos = -1
        for k, word in enumerate(_WORD.findall(normal)):
            # word_form, its ASCII branch inlined: a call per word cost this loop dearly
            text = (possessive(word) if "'" in word else word).lower() if word.isascii() else word_form(word)
            if text and text not in stops:
                pos = k if pos < 0 else pos + 1  # numbered from the first word kept, as StopStemFilter does
                term = stem(text)
                if term in positions:
                    positions[term].append(pos)
                else:
                    positions[term] = [pos]
        boost, encode = fmt.field_boost, fmt.encode
        once, single = 1.0 * boost, _SINGLE
        for term, poslist in positions.items():
            if len(poslist) == 1:  # most words of a note: their encoding made once per process
                value = single.get(poslist[0])
                if value is None:
                    value = encode(poslist)
                    if poslist[0] < _SINGLE_MAX:
                        single[poslist[0]] = value
                yield term.encode("utf-8"), 1, once, value
            else:
                yield term.encode("utf-8"), len(poslist), float(len(poslist)) * boost, encode(poslist)


# `Positions.encode([pos])` by pos, for the first _SINGLE_MAX positions (~60 bytes each): a
# word that occurs once in a field (two thirds of a rebuild's postings) costs a lookup instead
# of a list, a struct and a pickle. The same bytes: `Positions.encode` reads nothing but its list.
_SINGLE: dict[int, bytes] = {}
_SINGLE_MAX = 4096


def _one_pass_text(value: Any) -> str | None:
    """`value` as NormalizingTokenizer reads it, when `Text` can index it in one pass: a string
    without Chinese, Japanese or Korean (WordFilter cuts those into bigrams); else None."""
    if not isinstance(value, str):
        return None
    if value.isascii():
        return value
    normal = unicodedata.normalize("NFKC", value)
    return None if has_cjk(normal) else normal


_CHAIN_ENDS: dict[int, tuple[Any, StopStemFilter | None]] = {}  # id(analyzer) -> (weak ref, its end)


def _search_chain_end(chain: Any) -> StopStemFilter | None:
    """The StopStemFilter ending `analyzer()`'s chain, or None for any other analyzer; worked
    out once per analyzer object and forgotten with it (every read of the index's TOC
    unpickles a new one: a long-lived process must not keep them, nor their stem caches)."""
    known = _CHAIN_ENDS.get(id(chain))
    if known is not None and known[0]() is chain:
        return known[1]
    end = None
    items: list[Any] = chain.items if isinstance(chain, CompositeAnalyzer) else []
    if (len(items) == 3 and type(items[0]) is NormalizingTokenizer
            and items[0].inner == RegexTokenizer(WORD) and type(items[1]) is WordFilter
            and type(items[2]) is StopStemFilter):
        end = items[2]
    key = id(chain)
    try:
        ref = weakref.ref(chain, lambda _ref: _CHAIN_ENDS.pop(key, None))
    except TypeError:  # cannot be weakly referenced: worked out again next time
        return end
    _CHAIN_ENDS[key] = (ref, end)
    return end


class Key(ID):
    """Whoosh's ID field (`path`, `id`, `kind`, `status`), a plain string indexed without its
    tokenizer: the one term IDTokenizer would yield, with Existence's weight and value (four
    such fields a note, each a tokenizer, a set and two generators otherwise)."""

    def index(self, value: Any, **kwargs: Any) -> Generator[tuple[bytes, int, float | int, bytes], Any, None]:
        fmt = self.format
        if kwargs or type(value) is not str or type(self.analyzer) is not IDTokenizer or type(fmt) is not Existence:
            yield from super().index(value, **kwargs)
            return
        yield value.encode("utf-8"), 1, fmt.field_boost, fmt.encode(1)
