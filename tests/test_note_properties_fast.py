"""The frontmatter fast path (`note._plain_properties`): for every text it accepts, the same
properties, in the same order and of the same types, as the YAML 1.2 loader reads; every
other text goes to the loader."""

from __future__ import annotations

import datetime as dt

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.base.errors import MalformedNote
from vaultmem.storage import note as notes

# Scalars whose reading in YAML 1.2's core schema is easy to get wrong.
TRICKY = [
    "", "~", "null", "Null", "NULL", "nULL", "true", "True", "TRUE", "tRue", "false", "FALSE", "yes", "no", "on",
    "off", "y", "n", "1", "-1", "+1", "01", "0", "-0", "00", "0o17", "0o8", "0x1F", "0xZ", "1e3", "1E-3", "1.",
    "1.5", "-1.5", "+1.5", ".5", "+.5", "-.5", ".inf", "-.inf", ".Inf", ".nan", ".NaN", ".nAn", "1_000", "12:30",
    "12:30:45", "2026-10-05", "2026-10-05T16:24:35Z", "2026-10-05 16:24", "2026-02-30", "2026-10-05T16:24:35+02:00",
    "5c11be7b-5c76-4577-87ce-60de65f03d15", "1172f2ce", "1e3x", "a: b", "a:b", "a:", "a :b", "a #c", "a#c", "[]",
    "[a]", "[ ]", "{}", "{a: 1}", "'q'", '"q"', '"a\\nb"', '"a\\"b"', "'it''s'", "''", '""', "'a", '"a', "&a x",
    "*a", "!!str 1", "!!int 1", "|", ">", "-", "- a", "-a", "? a", "?a", "@x", "`x`", "%x", "a  b", "a ", " a",
    "Bob's", "ü", "Ünïcødé", "日本語", "a\u2028b", "a\x85b", "a\u00a0b", "1.0e+3", "project/p1", "a, b", "a,b",
    "(a)", "a=b", "a|b", "a>b", "a!b", "a~b", "http://x.y/z", "a:/b", "٣", "Ⅻ", "x\u0301",
]
KEYS = ["id", "tags", "a", "b", "due-date", "x_1", "True", "null", "NULL", "Yes", "2026", "1", "a b", "ключ",
        "-a", "_", "a.b"]

PLAIN = st.from_regex(r"[A-Za-zÀ-ÿ0-9][A-Za-zÀ-ÿ0-9 .,/+@:()'_-]{0,10}", fullmatch=True)
NUMBER = st.from_regex(r"[-+]?[0-9]{1,4}(\.[0-9]{0,3})?([eE][-+]?[0-9])?", fullmatch=True)
FLOW = ["[a, b]", "[a,b]", "[ a , b ]", "[B3]", "[a, [b]]", "[a, 'b, c']", "['a', 'b']", "[a,]", "[,a]", "[a,,b]",
        "[a:b]", "[a: b]", "[1, 2.5, true, null]", "[~, -1, 0x1F, 1e3]", "[a b, c  d]", "[Bob's]", "[a, b", "[a]]",
        "[a, {b: 1}]", "[a ,b]", "[yes, no]", "[., -]", "[a # b]", "[ ]", "[ , ]", "[\"a\"]"]
_ITEM = st.one_of(st.sampled_from(TRICKY), PLAIN, NUMBER,
                  st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=5))
scalar = st.one_of(st.sampled_from(TRICKY + FLOW), PLAIN, NUMBER,
                   st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8),
                   st.builds(lambda items, sep, pad: f"[{pad}{sep.join(items)}{pad}]",
                             st.lists(_ITEM, min_size=1, max_size=3), st.sampled_from([", ", ",", " , ", "  ,"]),
                             st.sampled_from(["", " "])))
WORD_KEY = st.from_regex(r"[a-zA-Zа-яё_][a-zA-Zа-яё0-9_.-]{0,6}", fullmatch=True)
KEY_NAMES = st.one_of(st.sampled_from(KEYS), WORD_KEY, WORD_KEY, WORD_KEY, WORD_KEY)


def entries(values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """A property's lines after its key: `: value`, or `:` with a block list under it (any
    indent, maybe empty)."""
    return st.one_of(
        st.builds(lambda v: [f": {v}"], values),
        st.builds(lambda v: [f":   {v}"], values),
        st.builds(lambda indent, vs: [":", *(f"{indent}- {v}" for v in vs)], st.sampled_from(["", " ", "  ", "    "]),
                  st.lists(values, max_size=3)),
    )


odd_line = st.sampled_from(["", "# a comment", "  continued", "---", "...", "  - stray", "- x", "a:b", "a:", "a :b", ":b"])


@st.composite
def documents(draw: st.DrawFn, values: st.SearchStrategy[str] = scalar, odd: bool = True) -> list[str]:
    keys = draw(st.lists(KEY_NAMES if odd else WORD_KEY, min_size=1, max_size=6, unique=True))
    if odd and draw(st.integers(0, 9)) == 0:
        keys.append(keys[0])  # now and then a duplicate
    lines = []
    for key in keys:
        first, *rest = draw(entries(values))
        lines += [key + first, *rest]
    if odd and draw(st.integers(0, 4)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(odd_line))
    return lines


def same(fast: object, slow: object) -> bool:
    """Equal, with the same types all the way down (1, 1.0 and True are not the same here)."""
    return repr(fast) == repr(slow)


@settings(max_examples=examples(1000, 200), deadline=None)
@given(documents(), st.sampled_from(["\n", "\r\n"]))
def test_what_the_fast_path_reads_is_what_yaml_reads(lines, newline):
    """1,000 documents under `make test-thorough`, 200 in the test command: every tricky
    scalar and key is checked alone and in a list every time (the test below), so what the
    random documents add is how lines mix, which hypothesis still varies in 200."""
    frontmatter = "".join(f"{text}{newline}" for text in lines)
    fast = notes._plain_properties(frontmatter)
    if fast is None:
        return  # the loader reads it
    try:
        slow = notes._load_yaml(frontmatter)
    except MalformedNote as exc:
        pytest.fail(f"fast path read {frontmatter!r} as {fast!r}; the loader says {exc.reason}")
    assert same(fast, slow), (frontmatter, fast, slow)


@settings(max_examples=examples(600, 100), deadline=None)
@given(documents(st.one_of(PLAIN, NUMBER), odd=False), st.sampled_from(["\n", "\r\n"]))
def test_documents_of_plain_values(lines, newline):
    """Mostly the shape vaultmem and people write: most of these take the fast path. 100
    documents in the test command (600 thorough): their words and numbers come from two
    small patterns, and the scalars that are hard to read are checked one by one below."""
    frontmatter = "".join(f"{text}{newline}" for text in lines)
    fast = notes._plain_properties(frontmatter)
    if fast is not None:
        assert same(fast, notes._load_yaml(frontmatter)), (frontmatter, fast)


def test_every_tricky_scalar_and_key_alone_and_in_a_list():
    """Each of TRICKY, FLOW and KEYS, every time (the property tests draw from them)."""
    cases = [("a", value) for value in TRICKY + FLOW] + [(key, value) for key in KEYS for value in ("x", "1", "")]
    taken = 0
    for key, value in cases:
        for frontmatter in (f"{key}: {value}\n", f"{key}:\n  - {value}\n  - x\n"):
            fast = notes._plain_properties(frontmatter)
            if fast is not None:
                taken += 1
                assert same(fast, notes._load_yaml(frontmatter)), (frontmatter, fast)
    assert taken > len(cases) // 2  # many take the fast path: the comparison is not vacuous


@settings(max_examples=examples(600, 100), deadline=None)
@given(st.sampled_from(KEYS), scalar)
def test_every_scalar_alone_and_in_a_list(key, value):
    """100 pairs in the test command (600 thorough): the fixed lists are checked whole by
    the test above; these add generated words, numbers and flow lists."""
    for frontmatter in (f"{key}: {value}\n", f"{key}:\n  - {value}\n  - x\n"):
        fast = notes._plain_properties(frontmatter)
        if fast is not None:
            assert same(fast, notes._load_yaml(frontmatter)), (frontmatter, fast)


def test_the_frontmatter_vaultmem_writes_takes_the_fast_path():
    memory = notes.Memory(
        id="5c11be7b-5c76-4577-87ce-60de65f03d15", content="", created=dt.datetime(2026, 11, 1, 9, tzinfo=dt.timezone.utc),
        last_used=dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.timezone.utc), use_count=3, strength=1.35,
        tags=["auth", "project/p1"], entities=["JWT", "Ünïcødé Person"], source="claude-code",
        context="a session about login", memory_type="decision", meta={"urgency": "important", "t": "12:30"},
    )
    frontmatter = "".join(notes.render_property(k, v) for k, v in memory.frontmatter().items())
    fast = notes._plain_properties(frontmatter)
    assert fast == {
        "id": "5c11be7b-5c76-4577-87ce-60de65f03d15", "created": "2026-11-01T09:00:00Z",
        "last_used": "2026-11-02T09:30:00Z", "use_count": 3, "strength": 1.35, "status": "active",
        "memory_type": "decision", "tags": ["auth", "project/p1"], "entities": ["JWT", "Ünïcødé Person"],
        "source": "claude-code", "context": "a session about login", "vaultmem": "memory", "urgency": "important",
        "t": "12:30",
    }
    assert same(fast, notes._load_yaml(frontmatter))
    assert notes.load_yaml(frontmatter.replace("\n", "\r\n")) == fast


def test_one_line_flow_lists_of_plain_items_are_read_here():
    """A background enrichment writes `entities: [Kafka, Flink]`: read without the loader, as it reads it."""
    frontmatter = "tags: [a, b c]\nentities: [Kafka, Flink]\nmixed: [ 1, 2.5 , true, null, x ]\n"
    fast = notes._plain_properties(frontmatter)
    assert fast == {"tags": ["a", "b c"], "entities": ["Kafka", "Flink"], "mixed": [1, 2.5, True, None, "x"]}
    assert same(fast, notes._load_yaml(frontmatter))


@pytest.mark.parametrize("frontmatter", [
    "a: 1\na: 2\n",  # a duplicate: the loader names it
    "a: 1 # why\n",  # a comment
    "tags: ['a, b', c]\n",  # a flow list with a quoted item
    "tags: [a, [b]]\n",  # a nested flow list
    "a:\n  b: 1\n",  # nesting
    "a: b\n  c\n",  # a continuation line
    "a: 0x1F\n",  # a number in another base
    "True: x\n",  # a key YAML reads as a boolean
    "a: &x 1\nb: *x\n",  # anchors
    "a: \"tab\\tinside\"\n",  # an escape
    "\n",  # nothing
    "tags:\n  - a\n\n  - b\n",  # a blank line in a list
    "id: 1\nurl:http://x\n",  # no space after the colon: one scalar, no property (the loader refuses it)
    "a:b\n",
    ":b\n",  # no key
    "1a: b\n",  # a key starting with a digit
])
def test_everything_else_goes_to_the_loader(frontmatter):
    assert notes._plain_properties(frontmatter) is None


def test_a_duplicate_key_is_still_reported():
    with pytest.raises(MalformedNote, match="property 'a' appears twice in the frontmatter"):
        notes.load_yaml("a: 1\nb: 2\na: 3\n")
