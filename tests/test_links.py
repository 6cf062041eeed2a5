"""Wikilink parsing, relation lines and Obsidian-style resolution (pure functions)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.base.errors import InvalidInput
from vaultmem.storage.links import (
    Link,
    Resolver,
    aliases_of,
    keys_for,
    note_links,
    parse_links,
    render_relation,
    set_relation,
    validate_relation,
)


def test_every_wikilink_form():
    body = "See [[Target]], [[Target|shown]], [[Folder/Target#Heading]], [[Target#^block-1]] and ![[Pic.png]].\n"
    assert parse_links(body) == [
        Link(target="Target", line=1),
        Link(target="Target", alias="shown", line=1),
        Link(target="Folder/Target", subpath="Heading", line=1),
        Link(target="Target", subpath="^block-1", line=1),
        Link(target="Pic.png", embed=True, line=1),
    ]


def test_code_and_escapes_are_skipped():
    body = (
        "real [[a]] and `[[in code span]]` and \\[[escaped]]\n"
        "\n"
        "    [[indented code]]\n"
        "\n"
        "```python\n"
        "x = '[[fenced]]'\n"
        "```\n"
        "~~~\n"
        "[[tilde fenced]]\n"
        "~~~\n"
        "last [[b]]\n"
    )
    assert [(link.target, link.line) for link in parse_links(body)] == [("a", 1), ("b", 11)]


def test_not_links():
    assert parse_links("[[]] [[ ]] [[unclosed and [single] and [[a\nb]]") == []


def test_relations_section_types_strength_and_metadata():
    body = (
        "Text [[plain]].\n"
        "\n"
        "## Relations\n"
        "- supports:: [[s]] (strength:: 0.9) (reason:: same project)\n"
        "- causes:: [[c1]], [[c2]]\n"
        "- author:: [[not-a-relation-type]]\n"
        "- see also [[loose]]\n"
        "- contradicts:: [[x]] (strength:: 7) (note:: compare [[inside-attr]])\n"
        "\n"
        "## Later\n"
        "- supports:: [[after-section]]\n"
    )
    found = [(link.target, link.type, link.strength, link.metadata, link.line) for link in parse_links(body, 5)]
    assert found == [
        ("plain", "links_to", 1.0, {}, 6),
        ("s", "supports", 0.9, {"reason": "same project"}, 9),
        ("c1", "causes", 1.0, {}, 10),
        ("c2", "causes", 1.0, {}, 10),
        ("not-a-relation-type", "links_to", 1.0, {}, 11),
        ("loose", "links_to", 1.0, {}, 12),
        ("x", "contradicts", 1.0, {"note": "compare [[inside-attr]]"}, 13),  # strength clamped to 1
        ("inside-attr", "links_to", 1.0, {}, 13),
        ("after-section", "links_to", 1.0, {}, 16),
    ]


def test_table_cell_alias_escape():
    assert parse_links("| a | [[Target\\|shown]] |\n") == [Link(target="Target", alias="shown", line=1)]


_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzäöü0123456789 _-", min_size=1, max_size=20).map(str.strip).filter(
    lambda t: t and not t.startswith(("-", "_")))
_keys = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(lambda k: k != "strength")


@settings(max_examples=150, deadline=None)
@given(
    relation=st.sampled_from(["related", "causes", "supports", "contradicts", "has_decision", "consolidated_from"]),
    target=st.from_regex(r"[a-z0-9][a-z0-9-]{0,30}", fullmatch=True),
    strength=st.floats(0, 1).map(lambda f: round(f, 4)),
    metadata=st.dictionaries(_keys, _words, max_size=4),
    before=st.text(alphabet="abc \n#-*[]>|", max_size=80),
)
def test_relation_line_round_trips_and_keeps_the_body(relation, target, strength, metadata, before):
    meta = validate_relation(relation, strength, metadata)
    line = render_relation(relation, target, strength, meta)
    body = "Some memory text.\n" + before.replace("#", "x")  # no headings in the free text
    new = set_relation(body, line, relation, {target})
    assert new.startswith(body.rstrip("\n"))
    typed = [link for link in parse_links(new) if link.type != "links_to"]
    assert [(link.target, link.type, link.strength, link.metadata) for link in typed] == [
        (target, relation, strength, meta)]
    # setting the same relation again replaces its line instead of adding one
    again = set_relation(new, render_relation(relation, target, 0.5), relation, {target})
    assert again.count(f"[[{target}]]") == new.count(f"[[{target}]]")


def test_set_relation_appends_to_existing_section_and_keeps_crlf():
    body = "Text.\r\n\r\n## Relations\r\n- supports:: [[a]]\r\n\r\n## Notes\r\nmine\r\n"
    assert set_relation(body, "- causes:: [[b]]", "causes", {"b"}, "\r\n") == (
        "Text.\r\n\r\n## Relations\r\n- supports:: [[a]]\r\n- causes:: [[b]]\r\n\r\n## Notes\r\nmine\r\n")
    assert set_relation("Text.", "- causes:: [[b]]", "causes", {"b"}) == "Text.\n\n## Relations\n- causes:: [[b]]\n"


def test_set_relation_refuses_to_append_after_an_unclosed_fence():
    with pytest.raises(ValueError) as err:
        set_relation("Text\n```\ncode\n", "- related:: [[b]]", "related", {"b"})
    assert str(err.value) == "the note has an unclosed ``` code block; close it so the relation is not hidden in code"


def test_set_relation_ignores_a_relations_heading_inside_code():
    body = "```\n## Relations\n```\n"
    assert set_relation(body, "- related:: [[b]]", "related", {"b"}) == body + "\n## Relations\n- related:: [[b]]\n"


@pytest.mark.parametrize("args, message", [
    (("likes", 1.0, {}), "unknown relation type 'likes'; use one of related, causes, supports, contradicts, "
                         "has_decision, consolidated_from"),
    (("supports", 1.5, {}), "relation strength must be between 0.0 and 1.0, got 1.5"),
    (("supports", 1.0, {"bad key": "x"}), "metadata key 'bad key' must be a word (letters, digits, _ or -)"),
    (("supports", 1.0, {"strength": "x"}), "metadata key 'strength' is reserved; pass it with its own option"),
    (("supports", 1.0, {"why": "see (this)"}),
     "metadata value for 'why' contains brackets, '::' or a line break; remove them"),
    (("supports", 1.0, {"why": None}),
     "metadata value for 'why' is null; give it text or a number, or leave the key out"),
    (("supports", 1.0, {"weight": float("nan")}), "metadata value for 'weight' is nan; pass a finite number or text"),
])
def test_validate_relation_errors(args, message):
    with pytest.raises(InvalidInput) as err:
        validate_relation(*args)
    assert str(err.value) == message


def test_resolution_like_obsidian():
    paths = ["memory/stm/Alpha-1.md", "Projects/Apollo.md", "a/Same.md", "b/Same.md", "Same.md"]
    r = Resolver(paths, [("Projects/Apollo.md", "project apollo")])
    assert r.resolve("alpha-1") == "memory/stm/Alpha-1.md"  # case-insensitive file name
    assert r.resolve("memory/stm/alpha-1") == "memory/stm/Alpha-1.md"  # full path
    assert r.resolve("stm/alpha-1") == "memory/stm/Alpha-1.md"  # path suffix
    assert r.resolve("project apollo") == "Projects/Apollo.md"  # alias
    assert r.resolve("same", "b/Other.md") == "b/Same.md"  # clash: same folder first
    assert r.resolve("same", "c/Other.md") == "Same.md"  # else the shortest path
    assert r.resolve("a/same") == "a/Same.md"
    assert r.resolve("missing") is None
    assert r.resolve("", "Projects/Apollo.md") == "Projects/Apollo.md"  # [[#Heading]]
    assert keys_for("memory/stm/Alpha-1.md", ["A1"]) == {"memory/stm/alpha-1", "stm/alpha-1", "alpha-1", "a1"}


def test_resolution_ignores_unicode_normalisation():
    nfd = "memory/stm/zoe\u0308-prefers-cafe\u0301.md"  # how macOS may store the name
    r = Resolver([nfd], [(nfd, "zoë")])
    assert r.resolve(parse_links("[[Zoë-prefers-café]]")[0].key) == nfd
    assert r.resolve(parse_links("[[ZOË]]")[0].key) == nfd


def test_links_in_frontmatter_properties():
    frontmatter = 'id: x\nrelated: "[[Other note|shown]]"\nsupports:\n  - "[[a]]"\n  - "[[b#Part]]"\nurl: "[not a link]"\n'
    props = {"id": "x", "related": "[[Other note|shown]]", "supports": ["[[a]]", "[[b#Part]]"], "url": "[not a link]"}
    found = note_links(frontmatter, props, "Body [[c]]\n", 8)
    assert [(link.target, link.subpath, link.alias, link.type, link.line) for link in found] == [
        ("Other note", "", "shown", "related", 3),
        ("a", "", "", "supports", 5),
        ("b", "Part", "", "supports", 6),
        ("c", "", "", "links_to", 9),
    ]


def test_in_lists_are_padded_to_a_few_statement_shapes(tmp_path):
    """sqlite3 caches each distinct statement: IN lists come in powers of two, repeating the last value."""
    from vaultmem.storage.links import IN_CHUNK, pad_params
    from vaultmem.store import MemoryStore

    assert pad_params([]) == []
    assert pad_params(["a"]) == ["a"]
    assert pad_params(["a", "b", "c"]) == ["a", "b", "c", "c"]
    assert pad_params(list(range(5))) == [0, 1, 2, 3, 4, 4, 4, 4]
    assert pad_params(list(range(IN_CHUNK))) == list(range(IN_CHUNK))
    store = MemoryStore(tmp_path / "v")
    store.init()
    for i in range(5):
        (tmp_path / "v/memory/stm" / f"n{i}.md").write_text(f"note {i} [[n{(i + 1) % 5}]]\n", encoding="utf-8")
    store.sync()
    wanted = ["memory/stm/n0.md", "memory/stm/n2.md", "memory/stm/missing.md"]
    assert sorted(store.index.by_paths(wanted)) == ["memory/stm/n0.md", "memory/stm/n2.md"]
    # links resolved through the padded `src IN (...)` (5 notes: 8 parameters)
    links = store.index.db.execute("SELECT src, dst FROM links ORDER BY src").fetchall()
    assert links == [(f"memory/stm/n{i}.md", f"memory/stm/n{(i + 1) % 5}.md") for i in range(5)]
    store.close()


def test_every_link_of_a_long_note_reports_its_real_line():
    """Lines are counted on from the previous link (linear), across paragraphs, lists and tables."""
    from vaultmem.storage.links import parse_links

    parts = []
    for i in range(3000):
        parts.append(f"- item [[a{i}]] and [[b{i}]]\n" if i % 3 else f"\nparagraph {i} ![[c{i}.png]]\n\n| [[t{i}]] |\n")
    body = "".join(parts)
    expected = {}
    for n, line in enumerate(body.splitlines(), 1):
        for target in re.findall(r"\[\[([^\]]+)\]\]", line):
            expected[target] = n + 4  # the body starts after a 4-line frontmatter
    found = parse_links(body, 4)
    assert {link.target: link.line for link in found} == expected
    assert len(found) == len(expected) == 6000


def test_aliases_leave_out_maps_and_lists_a_person_typed():
    """`aliases: {a: 1}` or a list inside the list is no name Obsidian resolves: never its repr."""
    assert aliases_of({"aliases": {"a": 1}}) == []
    assert aliases_of({"aliases": [{"a": 1}, ["b"], "Kafka Migration", None], "alias": "KM"}) == [
        "kafka migration", "km"]
