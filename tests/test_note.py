"""The note codec: parse, and surgical frontmatter edits that keep every other byte."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Iterator

import pytest
import yaml
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.base.errors import MalformedNote
from vaultmem.storage import note as notes

HAND_WRITTEN = """---
# written by hand in Obsidian
id: 4d5e6f70-8a9b-4c0d-9e1f-203142536475
use_count: 3   # reinforced three times
strength: 1.10
tags: [databases, "ops"]
zip: 01234
reviewed: yes
aliases:
  - pool settings
---
Body text.
"""


def test_one_key_change_is_a_one_line_diff():
    out = notes.update_frontmatter(HAND_WRITTEN, {"strength": 1.2})
    before, after = HAND_WRITTEN.splitlines(), out.splitlines()
    assert len(before) == len(after)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [("strength: 1.10", "strength: 1.2")]


def test_unowned_values_are_never_reinterpreted():
    when = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc)
    out = notes.update_frontmatter(HAND_WRITTEN, {"use_count": 4, "last_used": when})
    assert "zip: 01234\n" in out
    assert "reviewed: yes\n" in out
    assert "# written by hand in Obsidian\n" in out
    assert "use_count: 4\n" in out
    assert out.endswith("last_used: 2026-11-22T10:15:00Z\n---\nBody text.\n")


def test_flow_list_stays_flow_and_block_list_stays_block():
    out = notes.update_frontmatter(HAND_WRITTEN, {"tags": ["databases", "ops", "pg"], "aliases": ["pool", "pgb"]})
    assert "tags: [databases, ops, pg]\n" in out
    assert "aliases:\n  - pool\n  - pgb\n---" in out


def test_removing_a_key_drops_only_its_lines():
    out = notes.update_frontmatter(HAND_WRITTEN, {}, remove=["aliases"])
    assert "aliases" not in out and "pool settings" not in out
    assert out.count("\n") == HAND_WRITTEN.count("\n") - 2


def test_crlf_and_bom_are_kept():
    text = "\ufeff---\r\nid: x\r\nuse_count: 1\r\n---\r\nbody\r\n"
    out = notes.update_frontmatter(text, {"use_count": 2, "status": "active"})
    assert out == "\ufeff---\r\nid: x\r\nuse_count: 2\r\nstatus: active\r\n---\r\nbody\r\n"


def test_note_without_frontmatter_gets_one():
    assert notes.update_frontmatter("just text\n", {"id": "abc"}) == "---\nid: abc\n---\njust text\n"


def test_unchanged_value_leaves_text_identical():
    assert notes.update_frontmatter(HAND_WRITTEN, {"reviewed": "yes"}) != HAND_WRITTEN  # a string, not YAML's yes
    assert notes.update_frontmatter(HAND_WRITTEN, {"aliases": ["pool settings"]}) == HAND_WRITTEN


@pytest.mark.parametrize(
    "frontmatter, reason",
    [
        ("tags: [unclosed\n", "invalid YAML at line 3: did not find expected ',' or ']'"),
        ("- a\n- b\n", "frontmatter is a list, not a mapping of properties"),
        ("id: 1\nid: 2\n", "property 'id' appears twice in the frontmatter"),
        ("id: 1\n\ttags: x\n", "frontmatter indents with a tab; YAML needs spaces"),
    ],
)
def test_malformed_frontmatter_is_reported_with_a_reason(frontmatter, reason):
    with pytest.raises(MalformedNote) as info:
        notes.load_yaml(frontmatter)
    assert info.value.reason == reason


def test_unclosed_frontmatter_is_malformed():
    with pytest.raises(MalformedNote, match="no closing --- line"):
        notes.split_note("---\nid: 1\nbody\n")


def test_yaml_date_is_read_not_crashed_on():
    split = notes.split_note("---\nid: a\ncreated: 2026-11-22\n---\nx\n")
    props = notes.load_yaml(split.frontmatter)
    memory = notes.memory_from_properties(props, split.body, "p.md", dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    assert memory.created == dt.datetime(2026, 11, 22, tzinfo=dt.timezone.utc)


def test_slugify():
    assert notes.slugify("Use JWT tokens for authentication in all new APIs") == "use-jwt-tokens-for-authentication-in"
    assert notes.slugify("Zoë prefers the café") == "zoë-prefers-the-café"
    assert notes.slugify("!!!") == "memory"
    assert notes.slugify("See [[api-guidelines|the guide]] now") == "see-api-guidelines-now"


def slugify_whole(text: str, max_words: int = 6, max_chars: int = 48) -> str:
    """slugify as it was before it read long texts from their opening: the words of every
    character (NFKC, wikilinks as their target, lowercase)."""
    import unicodedata

    text = unicodedata.normalize("NFKC", text)
    if "[[" in text:
        text = re.sub(r"\[\[([^\]|#]*)(?:[^\]]*)\]\]", r"\1", text)
    return notes.slug_from_words(re.findall(r"[^\W_]+", text.lower()), max_words, max_chars)


# What could make a text's opening slug differently from the whole: characters NFKC composes
# or expands (combining marks, Hangul jamo, halfwidth kana and voiced mark, Kannada and Oriya
# length marks, ligatures, fullwidth brackets that become "[["), a final sigma, Unicode spaces,
# and wikilinks across the cut.
SLUG_PIECES = ["a", "Zoë", "ΟΔΟΣ", "Σ", "İ", " ", "  ", "\n", "\t", "\u00a0", "\u3000", "\u0301", "e\u0301",
               "\u1100", "\u1161", "\u11a8", "ｱ", "ﾞ", "\u0cbf", "\u0cd5", "\u0b47", "\u0b3e", "ﬁ", "Å",
               "[[", "]]", "[", "]", "|", "#", "[[x#", "[[y|", "［", "］", "_", "-", "1", "word", "東京", "!"]


@contextlib.contextmanager
def slug_head(value: int) -> Iterator[None]:
    """note._SLUG_HEAD set to `value` (small: the cut falls anywhere in a short text)."""
    original = notes._SLUG_HEAD
    notes._SLUG_HEAD = value
    try:
        yield
    finally:
        notes._SLUG_HEAD = original


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(st.sampled_from(SLUG_PIECES), max_size=60), head=st.integers(1, 12),
       max_words=st.integers(1, 8), max_chars=st.integers(1, 48))
def test_slugify_from_the_opening_equals_the_whole_text(pieces, head, max_words, max_chars):
    text = "".join(pieces)
    with slug_head(head):
        assert notes.slugify(text, max_words, max_chars) == slugify_whole(text, max_words, max_chars)


def test_slugify_reads_a_long_text_from_its_opening():
    long = "Deploy the Kafka migration on Friday after the review " + "filler words " * 400
    assert notes.slugify(long) == slugify_whole(long) == "deploy-the-kafka-migration-on-friday"
    # a wikilink that starts in the opening and ends after it: the whole text decides
    linked = "Start [[" + "target " * 100 + "|shown]] " + "more " * 200
    assert notes.slugify(linked) == slugify_whole(linked) == "start-target-target-target-target-target"
    sectioned = "Start [[a#" + "section " * 100 + "]] " + "more " * 200  # the link's target only
    assert notes.slugify(sectioned) == slugify_whole(sectioned) == "start-a-more-more-more-more"
    # no white space before an ASCII character after the opening: the whole text
    spaceless = "東京" * 600 + " Kafka"
    assert notes.slugify(spaceless) == slugify_whole(spaceless) == "東京" * 24


scalars = st.one_of(
    st.text(max_size=40),
    st.integers(min_value=-10**12, max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(scalars)
def test_yaml_scalar_reads_back_as_the_same_value(value):
    text = "key: " + notes.yaml_scalar(value) + "\n"
    loaded = yaml.safe_load(text)["key"]
    if isinstance(value, float):
        assert loaded == pytest.approx(round(value, 6), rel=1e-9, abs=1e-9)
    else:
        assert loaded == value


@settings(max_examples=examples(400, 100), deadline=None)
@given(st.one_of(st.from_regex(notes._TEXT_ANYWHERE_PATTERN, fullmatch=True),
                 st.sampled_from(["Yes", "NO", "On", "oFF", "TRUE", "Null", "y", "N", "nan", "inf", "NaN", "Infinity",
                                  "e", "E", "x", "b", "o", "deadbeef-dead-beef-dead-beefdeadbeef",
                                  "12345678-1234-1234-1234-123456789012", "20261127-0000-0000-0000-000000000000"])))
def test_values_known_as_text_without_pyyaml_are_text_to_both_yaml_loaders(text):
    """The quick answer of `_reads_back_as_text` (no PyYAML import) is the loaders' answer.
    100 values in the test command (400 thorough): the words YAML treats specially are a
    fixed list drawn from half the time, the rest come from one pattern."""
    import yamlcore

    quick = notes._compiled("text", notes._TEXT_ANYWHERE_PATTERN).fullmatch(text) and text.lower() not in notes._YAML_SPECIAL
    asked = all(yaml.load(f"k: {text}\n", Loader=loader) == {"k": text}  # noqa: S506 - safe loaders
                for loader in (yamlcore.CoreLoader, yaml.SafeLoader))
    if quick:
        assert asked, text
    assert notes._reads_back_as_text(text) == asked, text


_PLAIN_SAFE_AS_WRITTEN_FIRST = re.compile(r"^[A-Za-z0-9_\u00c0-\uffff][\w .,/@+()\u00c0-\uffff-]*$")


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=12),
                 st.text(alphabet=st.characters(min_codepoint=0xa0, max_codepoint=0x10200), max_size=6),
                 st.sampled_from(["a\n", "\u00bf", "\u00c0", "\uffff", "\U00010000", "a\U0001f600", "\u00aa",
                                  "a-b c", "_x", "-x", "x:", "x\uffff", "x\u00bf"])))
def test_the_plain_value_pattern_takes_the_same_characters_as_its_first_spelling(text):
    assert bool(notes._compiled("plain", notes._PLAIN_SAFE_PATTERN).match(text)) == bool(
        _PLAIN_SAFE_AS_WRITTEN_FIRST.match(text))


keys = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(keys, st.one_of(st.text(max_size=20), st.integers(),
                                       st.lists(st.text(min_size=1, max_size=10), max_size=4)), min_size=1, max_size=6),
       st.dictionaries(keys, st.one_of(st.text(max_size=20), st.integers()), max_size=3))
def test_update_then_parse_gives_the_changes_and_keeps_the_rest(original, changes):
    text = "---\n" + "".join(notes.render_property(k, v) for k, v in original.items()) + "---\nbody\n"
    out = notes.update_frontmatter(text, changes)
    props = notes.load_yaml(notes.split_note(out).frontmatter)
    expected = dict(original, **changes)
    assert props == expected
    assert out.endswith("---\nbody\n")
    for key in original.keys() - changes.keys():
        assert notes.render_property(key, original[key]) in out


@pytest.mark.parametrize(("value", "expected"), [
    ({"a": 1}, []),
    ([{"a": 1}, "b", ["c"], None, "  "], ["b"]),
    ([True, False, 2026, 1.5], ["true", "false", "2026", "1.5"]),
    ("a, b", ["a", "b"]),
    (True, ["true"]),
    (None, []),
])
def test_list_properties_leave_out_maps_and_keep_yaml_words(value, expected):
    """Before: `tags: {a: 1}` became the tag "{'a': 1}", `[true]` the tag "True"."""
    assert notes.as_list(value) == expected
