"""vaultmem reads a note as Obsidian does: YAML 1.2, naive times in the person's zone,
inline and nested tags, and a memory named by alias, title or a pasted [[link]]."""

from __future__ import annotations

import json

import pytest
from conftest import invoke
from hypothesis import given, settings
from hypothesis import strategies as st

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


SCALARS = st.one_of(
    st.sampled_from(["12:30", "1:02:03", "NO", "No", "no", "yes", "Yes", "on", "off", "y", "n", "Y", "true", "True",
                     "FALSE", "null", "~", "0o17", "0x1F", "017", "-5", "+7", "3.25", ".5", "1e3", "-.inf", ".NaN",
                     "word", "two words", "a:b", "1.2.3", "0.1.0"]),
    st.from_regex(r"[0-9]{1,2}:[0-5][0-9]", fullmatch=True),
    st.from_regex(r"[A-Za-z][A-Za-z0-9 ]{0,12}", fullmatch=True),
    st.integers(-10**6, 10**6).map(str),
)


@settings(max_examples=200, deadline=None)
@given(value=SCALARS)
def test_frontmatter_scalars_read_as_an_outside_yaml_1_2_reader_reads_them(value):
    from ruamel.yaml import YAML

    oracle = YAML(typ="safe", pure=True)
    oracle.version = (1, 2)
    theirs = oracle.load(f"k: {value}\n")["k"]
    ours = notes.load_yaml(f"k: {value}\n")["k"]
    if isinstance(theirs, float) and theirs != theirs:  # NaN
        assert ours != ours
    else:
        assert (type(ours), ours) == (type(theirs), theirs)


@pytest.mark.parametrize("zone, expected", [
    ("Europe/Berlin", "2026-11-20T08:30:00Z"), ("America/New_York", "2026-11-20T14:30:00Z"), ("", "2026-11-20T09:30:00Z")])
def test_a_time_without_a_zone_is_in_the_person_s_zone(runner, vault_path, monkeypatch, zone, expected):
    if zone:
        monkeypatch.setenv("VAULTMEM_TIMEZONE", zone)
    write(vault_path, "memory/stm/standup-0c0ffee5.md",
          "---\nid: 0c0ffee5-0000-4000-8000-000000000012\ncreated: 2026-11-20T09:30\n---\nStandup moved\n")
    memory = json.loads(invoke(runner, "open", "0c0ffee5", "--json").output)["memories"][0]
    assert memory["created_at"] == expected


def test_an_unknown_zone_is_a_one_line_error(runner, monkeypatch):
    monkeypatch.setenv("VAULTMEM_TIMEZONE", "Mars/Olympus")
    result = invoke(runner, "stats")
    assert (result.exit_code, result.output) == (
        1, "Error: timezone 'Mars/Olympus' is not an IANA zone name; use one like Europe/Berlin, or leave it empty "
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
