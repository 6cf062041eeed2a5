"""vaultmem reads a note as Obsidian does: YAML 1.2, naive times in the person's zone,
inline and nested tags, and a memory named by alias, title or a pasted [[link]]."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from typing import Any

import pytest
from conftest import invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem.base.timeutil import parse_time
from vaultmem.storage import note as notes

POOL = "4d5e6f70-0000-4000-8000-0000000000bb"


def write(vault, rel: str, text: str) -> None:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_yaml_1_2_keeps_what_obsidian_shows_as_text(runner, vault_path):
    write(vault_path, "memory/stm/lunch-0c0ffee4.md",
          "---\nid: 0c0ffee4-0000-4000-8000-000000000011\nt: 12:30\nanswer: NO\nswitch: on\nmode: 0o17\n---\n"
          "Team lunch moved\n")
    meta = json.loads(invoke(runner, "open", "0c0ffee4", "--json").output)["memories"][0]["meta"]
    assert (meta["t"], meta["answer"], meta["switch"], meta["mode"]) == ("12:30", "NO", "on", 15)


def yaml_1_2() -> Any:
    """ruamel.yaml reading YAML 1.2: the outside reader vaultmem's reading is checked against."""
    from ruamel.yaml import YAML

    oracle = YAML(typ="safe", pure=True)
    oracle.version = (1, 2)
    return oracle


TIMES = st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2100, 1, 1)).map(
    lambda d: d.replace(microsecond=0))
SCALARS = st.one_of(
    st.sampled_from(["12:30", "1:02:03", "NO", "No", "no", "yes", "Yes", "on", "off", "y", "n", "Y", "true", "True",
                     "FALSE", "null", "~", "0o17", "0x1F", "017", "-5", "+7", "3.25", ".5", "1e3", "-.inf", ".NaN",
                     "word", "two words", "a:b", "1.2.3", "0.1.0", "1_000", "0b101", "+0x1F", "-0o17"]),
    st.from_regex(r"[0-9]{1,2}:[0-5][0-9]", fullmatch=True),
    st.from_regex(r"[A-Za-z][A-Za-z0-9 ]{0,12}", fullmatch=True),
    st.integers(-10**6, 10**6).map(str),
    st.from_regex(r"[-+]?0[xob][0-9a-fA-F]{1,4}", fullmatch=True),
    st.from_regex(r"[-+]?[0-9]{1,3}(_[0-9]{3}){1,2}", fullmatch=True),
    st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 12, 31)).map(dt.date.isoformat),
    TIMES.map(lambda d: d.strftime("%Y-%m-%dT%H:%M")),  # Obsidian's Date & time property
    TIMES.map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")),  # what vaultmem writes
    TIMES.map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S")),
    TIMES.map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S+02:00")),
)
# The integers of YAML 1.2's core schema; ruamel.yaml also reads 1.1's `1_000`, `0b101`, `+0x1F` as
# numbers in 1.2 mode, where the core schema (and Obsidian) read text.
CORE_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")


@settings(max_examples=300, deadline=None)
@given(value=SCALARS)
def test_frontmatter_scalars_read_as_an_outside_yaml_1_2_reader_reads_them(value):
    theirs = yaml_1_2().load(f"k: {value}\n")["k"]
    ours = notes.load_yaml(f"k: {value}\n")["k"]
    if isinstance(theirs, (dt.date, dt.datetime)):
        # ruamel.yaml keeps 1.1's timestamp type; the core schema reads the text, which vaultmem
        # reads as the same instant
        assert ours == value and parse_time(ours) == parse_time(theirs)
    elif isinstance(theirs, int) and not isinstance(theirs, bool) and not CORE_INT.fullmatch(value):
        assert ours == value  # a 1.1-only number form: text in YAML 1.2's core schema
    elif isinstance(theirs, float) and theirs != theirs:  # NaN
        assert ours != ours
    else:
        assert (type(ours), ours) == (type(theirs), theirs)


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.text(max_size=30), SCALARS))
def test_what_vaultmem_writes_reads_back_as_the_same_text_under_yaml_1_2(value):
    line = notes.render_property("k", value)
    assert notes.load_yaml(line) == {"k": value} == yaml_1_2().load(line)


def test_yaml_1_1_only_forms_stay_text_and_the_guards_still_hold():
    assert notes.load_yaml("a: 1_000\nb: 0b101\nc: 2026-11-20\nd: 2026-11-20T09:30:00Z\ne: y\nf: ~\ng: 0x1F\n") == {
        "a": "1_000", "b": "0b101", "c": "2026-11-20", "d": "2026-11-20T09:30:00Z", "e": "y", "f": None, "g": 31}
    for text, reason in [
        ("a: 1\na: 2\n", "property 'a' appears twice in the frontmatter"),
        ("a: [\n", "invalid YAML at line 3: did not find expected node content"),
        ("- 1\n", "frontmatter is a list, not a mapping of properties"),
        ("a: !!float abc\n", "invalid YAML value: could not convert string to float: 'abc'"),
        ("a: !!python/object:os.system x\n",
         "invalid YAML at line 2: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"),
        ("\ta: 1\n", "frontmatter indents with a tab; YAML needs spaces"),
    ]:
        with pytest.raises(notes.MalformedNote) as caught:
            notes.load_yaml(text)
        assert caught.value.reason == reason
    assert notes.load_yaml("2026-01-01: x\n1: y\n") == {"2026-01-01": "x", "1": "y"}


@pytest.mark.parametrize("zone, expected", [
    ("Europe/Berlin", "2026-11-20T08:30:00Z"), ("America/New_York", "2026-11-20T14:30:00Z"), ("", "2026-11-20T09:30:00Z")])
def test_a_time_without_a_zone_is_in_the_person_s_zone(runner, vault_path, monkeypatch, zone, expected):
    if zone:
        monkeypatch.setenv("VAULTMEM_TIMEZONE", zone)
    write(vault_path, "memory/stm/standup-0c0ffee5.md",
          "---\nid: 0c0ffee5-0000-4000-8000-000000000012\ncreated: 2026-11-20T09:30\n---\nStandup moved\n")
    memory = json.loads(invoke(runner, "open", "0c0ffee5", "--json").output)["memories"][0]
    assert memory["created_at"] == expected


@pytest.mark.parametrize("zone", ["Mars/Olympus", "Europe", "../etc"])
def test_an_unknown_zone_is_a_one_line_error(runner, monkeypatch, zone):
    monkeypatch.setenv("VAULTMEM_TIMEZONE", zone)
    result = invoke(runner, "stats")
    assert (result.exit_code, result.output) == (
        1, f"Error: timezone {zone!r} is not an IANA zone name; use one like Europe/Berlin, or leave it empty "
           "for this machine's zone\n")


def test_inline_and_nested_tags_filter_as_obsidian_s_tag_search(runner, vault_path):
    write(vault_path, "memory/stm/lunch-0c0ffee6.md",
          "---\nid: 0c0ffee6-0000-4000-8000-000000000013\n---\nLunch with the team #team/social on Friday\n"
          "```\n#not-a-tag in code\n```\n")
    write(vault_path, "memory/stm/db-0c0ffee7.md",
          "---\nid: 0c0ffee7-0000-4000-8000-000000000014\ntags: [infra/db]\n---\nPostgres pool of 20 on Friday\n")
    write(vault_path, "memory/stm/iac-0c0ffee8.md",
          "---\nid: 0c0ffee8-0000-4000-8000-000000000015\ntags: [infrastructure]\n---\nTerraform plans on Friday\n")

    def found(*args: str) -> list[str]:
        return sorted(r["id"][:8] for r in json.loads(invoke(runner, "search", *args, "--json").output)["results"])

    assert found("friday", "--tag", "team") == ["0c0ffee6"]
    assert found("friday", "--tag", "team/social") == ["0c0ffee6"]
    assert found("friday", "--tag", "infra") == ["0c0ffee7"]
    assert found("--tag", "infra") == ["0c0ffee7"]  # the catalog filter (no words) agrees
    assert found("friday", "--tag", "not-a-tag") == []
    assert notes.inline_tags("a #x and #1984 and [[n#h]] `#c` http://x.y/#z #y1984/sub\n") == ["x", "y1984/sub"]


def test_a_memory_is_named_as_a_person_names_it(runner, vault_path):
    write(vault_path, "memory/stm/postgres-pool-settings-4d5e6f70.md",
          f"---\nid: {POOL}\naliases:\n  - pool settings\n---\nPostgres pool: max 20 connections\n")
    for ref in ("[[pool settings]]", "pool settings", "\"pool settings\"", "[[postgres-pool-settings-4d5e6f70|the pool]]",
                "[[memory/stm/postgres-pool-settings-4d5e6f70#Why]]", "postgres pool settings", "Postgres Pool Settings"):
        result = invoke(runner, "open", ref, "--json")
        assert result.exit_code == 0, (ref, result.output)
        assert json.loads(result.output)["memories"][0]["id"] == POOL, ref
    assert invoke(runner, "touch", "[[pool settings]]").exit_code == 0


# -- times without a zone -------------------------------------------------------------------------


@pytest.mark.parametrize("created, last_used, expected", [
    ("2026-07-01T09:30", "2026-07-01T09:30", ("2026-07-01T07:30:00Z", "2026-07-01T07:30:00Z")),  # summer time
    ("2026-11-20", "2026-11-20 18:05:00", ("2026-11-19T23:00:00Z", "2026-11-20T17:05:00Z")),  # a bare date: midnight there
    ("2026-11-20T09:30:00Z", "2026-11-20T09:30:00+05:30", ("2026-11-20T09:30:00Z", "2026-11-20T04:00:00Z")),  # zones kept
])
def test_only_times_without_a_zone_are_in_the_person_s_zone(runner, vault_path, monkeypatch, created, last_used,
                                                           expected):
    monkeypatch.setenv("VAULTMEM_TIMEZONE", "Europe/Berlin")
    write(vault_path, "memory/stm/standup-0c0ffee5.md",
          f"---\nid: 0c0ffee5-0000-4000-8000-000000000012\ncreated: {created}\nlast_used: {last_used}\n---\nStandup\n")
    memory = json.loads(invoke(runner, "open", "0c0ffee5", "--json").output)["memories"][0]
    assert (memory["created_at"], memory["last_used"]) == expected


def test_changing_the_zone_reads_the_indexed_times_again_and_writes_stay_utc(runner, vault_path, monkeypatch):
    note = vault_path / "memory/stm/standup-0c0ffee5.md"
    write(vault_path, "memory/stm/standup-0c0ffee5.md",
          "---\nid: 0c0ffee5-0000-4000-8000-000000000012\ncreated: 2026-11-20T09:30\nlast_used: 2026-11-20T09:30\n"
          "use_count: 0\n---\nStandup moved\n")

    def created() -> str:
        return json.loads(invoke(runner, "open", "0c0ffee5", "--json").output)["memories"][0]["created_at"]

    assert created() == "2026-11-20T09:30:00Z"  # indexed in this machine's zone (UTC in the tests)
    monkeypatch.setenv("VAULTMEM_TIMEZONE", "America/New_York")
    assert created() == "2026-11-20T14:30:00Z"  # the catalog was read again, not left in the old zone
    assert invoke(runner, "touch", "0c0ffee5").exit_code == 0
    assert note.read_text() == ("---\nid: 0c0ffee5-0000-4000-8000-000000000012\ncreated: 2026-11-20T09:30\n"
                                "last_used: 2026-11-22T10:15:00Z\nuse_count: 1\n---\nStandup moved\n")
    assert created() == "2026-11-20T14:30:00Z"


# -- tags ---------------------------------------------------------------------------------------------


def test_inline_tags_as_obsidian_finds_them():
    text = ("#Team/social and **#bold** ==#lit== and #日本語 #emoji🎉 #1984 #2026/q4 a_#no color=#fff\n"
            "# A heading #in-heading\n"
            "`#code` ``a `#code2` b`` [[note#Heading]] [[x|see #alias]] [t](http://a.b/#frag) <https://a.b/#x>"
            " https://c.d/e#f [#text](y) #a.b #c,d #e—f\n"
            "```python\n#comment\n```\n~~~~\n#fenced\n~~~\n#still-fenced\n~~~~\n$$\n#math\n$$\n#TEAM/social #end\n")
    assert notes.inline_tags(text) == ["Team/social", "bold", "lit", "日本語", "emoji🎉", "2026/q4", "in-heading",
                                       "a", "c", "e", "end"]
    assert notes.inline_tags("```\nunclosed #fence\n") == []
    assert notes.inline_tags("crlf #one\r\n```\r\n#no\r\n```\r\n#two\r\n") == ["one", "two"]


def test_nested_tags_filter_every_search_as_obsidian_s_tag_search(runner, vault_path):
    write(vault_path, "memory/stm/db-0c0ffee7.md",
          "---\nid: 0c0ffee7-0000-4000-8000-000000000014\ntags: [Infra/DB]\n---\nPostgres pool of 20 on Friday\n")
    write(vault_path, "memory/ltm/iac-0c0ffee8.md",
          "---\nid: 0c0ffee8-0000-4000-8000-000000000015\ntags: [infrastructure]\n---\nTerraform plans on Friday\n")
    write(vault_path, "memory/ltm/net-0c0ffee9.md",
          "---\nid: 0c0ffee9-0000-4000-8000-000000000016\n---\nFirewall rules change on Friday #infra/net\n")
    # a person's long note: the tag sits past the 4,000 characters the catalog keeps as its preview
    write(vault_path, "Projects/Platform.md", "Platform notes. " + "filler words here " * 300 + "\nFriday review #infra\n")

    def found(*args: str) -> list[str]:
        out = json.loads(invoke(runner, "search", *args, "--json").output)
        return sorted(r["path"] for r in out["results"])

    expected = ["memory/ltm/net-0c0ffee9.md", "memory/stm/db-0c0ffee7.md"]
    assert found("friday", "--tag", "infra") == expected  # full-text search's filter
    assert found("--tag", "INFRA") == expected  # the catalog's filter, no words
    assert found("--tag", "#infra/") == expected
    assert found("friday", "--tag", "infra/db") == ["memory/stm/db-0c0ffee7.md"]
    assert found("friday", "--unified", "--tag", "infra") == ["Projects/Platform.md", *expected]
    assert found("--unified", "--tag", "infra") == expected  # with no words unified lists memories only
    assert found("friday", "--tag", "infrastructure") == ["memory/ltm/iac-0c0ffee8.md"]


def test_inline_tags_are_read_never_written_into_tags(runner, vault_path):
    text = "---\nid: 0c0ffee6-0000-4000-8000-000000000013\ntags: [food]\n---\nLunch with the team #team/social\n"
    write(vault_path, "memory/stm/lunch-0c0ffee6.md", text)
    assert invoke(runner, "touch", "0c0ffee6").exit_code == 0
    after = (vault_path / "memory/stm/lunch-0c0ffee6.md").read_text()
    assert "tags: [food]\n" in after and "social" not in after.split("---")[1]
    assert json.loads(invoke(runner, "open", "0c0ffee6", "--json").output)["memories"][0]["tags"] == ["food"]


def test_mcp_search_memory_filters_by_a_parent_tag(store, vault_path):
    write(vault_path, "memory/stm/db-0c0ffee7.md",
          "---\nid: 0c0ffee7-0000-4000-8000-000000000014\ntags: [infra/db]\n---\nPostgres pool of 20\n")
    write(vault_path, "memory/stm/iac-0c0ffee8.md",
          "---\nid: 0c0ffee8-0000-4000-8000-000000000015\ntags: [infrastructure]\n---\nTerraform pool plans\n")
    for query in ("pool", None):
        data = mcp_call(store, "search_memory", {"query": query, "tags": ["infra"]} if query else {"tags": ["infra"]})
        assert [r["id"][:8] for r in data["results"]] == ["0c0ffee7"]


# -- naming a memory ------------------------------------------------------------------------------


def mcp_call(store: Any, name: str, args: dict[str, Any]) -> Any:
    from mcp import Client

    from vaultmem.mcp.server import build_server

    server = build_server(store)

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, args)

    try:
        result = asyncio.run(main())
    finally:
        server.bridge.close()
    return result.content[0].text if result.is_error else result.structured_content


def pool_vault(vault) -> None:
    write(vault, "memory/stm/postgres-pool-settings-4d5e6f70.md",
          f"---\nid: {POOL}\naliases:\n  - pool settings\n---\nPostgres pool: max 20 connections\n")
    write(vault, "Projects/Infra.md", "Our database: [[pool settings]], see also [[Standup]].\n")


def test_a_pasted_link_opens_the_memory_backlinks_resolves_it_to(runner, vault_path):
    from vaultmem.storage.links import Resolver, target_key
    from vaultmem.store import MemoryStore

    pool_vault(vault_path)
    out = json.loads(invoke(runner, "backlinks", "[[pool settings]]", "--json").output)
    assert (out["path"], [n["path"] for n in out["notes"]]) == (
        "memory/stm/postgres-pool-settings-4d5e6f70.md", ["Projects/Infra.md"])
    store = MemoryStore(vault_path)
    db = store.index.db
    resolver = Resolver([p for (p,) in db.execute("SELECT path FROM notes")], db.execute("SELECT path, alias FROM aliases"))
    for ref in ("[[pool settings]]", "pool settings", "[[Postgres-Pool-Settings-4D5E6F70]]",
                "[[stm/postgres-pool-settings-4d5e6f70]]", "memory/stm/postgres-pool-settings-4d5e6f70.md"):
        name = ref.strip("[]")
        assert store.resolve(ref).path == resolver.resolve(target_key(name)) == out["path"], ref
    store.close()


def test_a_link_means_what_it_means_in_obsidian_a_typed_name_finds_the_memory(runner, vault_path):
    # Obsidian resolves [[Standup]] to the person's Standup.md (a file name before an alias)
    pool_vault(vault_path)
    write(vault_path, "Standup.md", "Daily at 9:30.\n")
    write(vault_path, "memory/stm/daily-sync-0c0ffeea.md",
          "---\nid: 0c0ffeea-0000-4000-8000-000000000017\naliases: [standup]\n---\nThe daily sync moved to 9:45\n")
    result = invoke(runner, "touch", "[[Standup]]")
    assert (result.exit_code, result.output) == (
        1, "Error: [[Standup]] links to Standup.md, which is not a memory; check the name with `vaultmem search`\n")
    assert json.loads(invoke(runner, "open", "standup", "--json").output)["memories"][0]["id"][:8] == "0c0ffeea"
    assert json.loads(invoke(runner, "backlinks", "[[Standup]]", "--json").output)["path"] == "Standup.md"


def test_names_fold_case_and_unicode_as_obsidian_does(runner, vault_path):
    write(vault_path, "memory/stm/ÉTÉ Plans.md", "---\nid: 0c0ffeeb-0000-4000-8000-000000000018\n---\nSummer plans\n")
    write(vault_path, "memory/stm/Zoe\u0308 notes.md", "---\nid: 0c0ffeec-0000-4000-8000-000000000019\n---\nZoë's notes\n")
    for ref, short in (("été plans", "0c0ffeeb"), ("[[ÉTÉ PLANS]]", "0c0ffeeb"), ("Zo\u00eb Notes", "0c0ffeec")):
        result = invoke(runner, "open", ref, "--json")
        assert result.exit_code == 0, (ref, result.output)
        assert json.loads(result.output)["memories"][0]["id"][:8] == short, ref


def test_an_ambiguous_name_lists_its_candidates(runner, vault_path):
    for folder, short in (("stm", "0c0ffeed"), ("ltm", "0c0ffeee")):
        write(vault_path, f"memory/{folder}/pool-{short}.md",
              f"---\nid: {short}-0000-4000-8000-00000000001a\naliases: [the pool]\n---\nPool {folder}\n")
    result = invoke(runner, "touch", "[[the pool]]")
    assert (result.exit_code, result.output) == (
        1, "Error: 'the pool' matches 2 notes (memory/ltm/pool-0c0ffeee.md, memory/stm/pool-0c0ffeed.md); "
           "use the full id or path\n")


def test_relations_and_mcp_tools_take_the_names_a_person_uses(runner, vault_path, store):
    pool_vault(vault_path)
    write(vault_path, "memory/stm/db-outage-0c0ffee7.md",
          "---\nid: 0c0ffee7-0000-4000-8000-000000000014\naliases: [the outage]\n---\nThe outage came from the pool\n")
    result = invoke(runner, "relate", "[[the outage]]", "pool settings", "--type", "supports")
    assert result.exit_code == 0, result.output
    assert "- supports:: [[postgres-pool-settings-4d5e6f70]]" in (
        vault_path / "memory/stm/db-outage-0c0ffee7.md").read_text()
    touched = mcp_call(store, "touch_memory", {"memory_id": "[[memory/stm/postgres-pool-settings-4d5e6f70|the pool]]"})
    assert (touched["memory_id"], touched["use_count"]) == (POOL, 1)
    opened = mcp_call(store, "open_memories", {"memory_ids": ["the outage", "\"pool settings\""]})
    assert [m["id"][:8] for m in opened["memories"]] == ["0c0ffee7", "4d5e6f70"]
    assert mcp_call(store, "touch_memory", {"memory_id": "[[../Projects/Infra]]"}) == (
        "Error: memory_id must be a UUID, an 8-char short id or a note file name, got '[[../Projects/Infra]]'")
