"""Hostile references and broken notes: nothing escapes the vault, nothing crashes, nothing is rewritten.

References (ids, file names, paths) go through every CLI command and MCP tool that takes
one: `../`, absolute paths, symlinks pointing out of the vault, NUL bytes, reserved
Windows names, very long names. Each is refused or not found with a one-line error, and
no file outside or inside the vault changes.

Broken notes of every kind seen in the wild sit in a memory folder and in the person's own
folder while every command runs: each is reported, no command crashes, and the bytes of
every broken note are the same afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from reliability_helpers import NOW, mid, report, snapshot, write_memory

from vaultmem.base.errors import InvalidInput
from vaultmem.cli import cli
from vaultmem.mcp.server import build_server
from vaultmem.storage.vault import safe_file_name

OUTSIDE_NOTE = (f"---\nid: {mid(900)}\ncreated: 2026-11-01T00:00:00Z\nlast_used: 2026-11-01T00:00:00Z\n"
                "use_count: 0\nstrength: 1.0\nstatus: active\ntags: []\n---\nA note outside the vault.\n")

HOSTILE_REFS = [
    "../outside/secret",
    "../outside/secret.md",
    "../../../../etc/passwd",
    "memory/stm/../../../outside/secret.md",
    "memory/../../outside/secret",
    "/etc/passwd",
    "{outside}/secret.md",
    "~/secret",
    "link-out",  # a symlink in memory/stm pointing at the outside note
    "memory/stm/link-out.md",
    "linked-dir/secret",  # a symlinked folder pointing out
    "memory/linked-dir/secret.md",
    "a\x00b",
    "secret\x00.md",
    "CON", "NUL", "aux.md", "COM1", "LPT1.md",
    ".obsidian/app", ".vaultmem/lock", ".vaultmem/config.yaml", ".trash/x",
    "x" * 300,
    "y" * 5000,
    "memory/stm/" + "z" * 255 + ".md",
    " ", "\t", "\n", "-x",
    "*", "%", "_", "' OR 1=1 --", "\" OR \"\"=\"",
]


@pytest.fixture
def hostile(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A vault with one memory, and outside it a note and folder that symlinks point at."""
    vault = tmp_path / "vault"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(OUTSIDE_NOTE, encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(cli, ["init", str(vault)]).exit_code == 0
    write_memory(vault, "stm", "inside", 1, "A memory inside the vault.", age_days=1, use_count=1)
    (vault / "memory" / "stm" / "link-out.md").symlink_to(outside / "secret.md")
    (vault / "memory" / "linked-dir").symlink_to(outside, target_is_directory=True)
    (vault / "Projects").symlink_to(outside, target_is_directory=True)
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault))
    return vault, outside


def _refs(outside: Path) -> list[str]:
    return [r.replace("{outside}", str(outside)) for r in HOSTILE_REFS]


def _outside_bytes(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in outside.iterdir()}


CLI_FORMS = [
    ("open", lambda r: ["open", r]),
    ("touch", lambda r: ["touch", r]),
    ("touch --boost-strength", lambda r: ["touch", "--boost-strength", r]),
    ("observe", lambda r: ["observe", r]),
    ("promote", lambda r: ["promote", r, "--force"]),
    ("pipeline apply-review --file", lambda r: ["pipeline", "apply-review", "--file", r]),
    ("consolidate --cluster-id", lambda r: ["consolidate", "--cluster-id", r, "--mode", "apply"]),
    ("relate FROM", lambda r: ["relate", r, "inside-00000001", "--type", "related"]),
    ("relate TO", lambda r: ["relate", "inside-00000001", r, "--type", "supports"]),
    ("backlinks", lambda r: ["backlinks", r]),
]


def test_cli_references_cannot_reach_outside_the_vault(hostile):
    vault, outside = hostile
    outside_before = _outside_bytes(outside)
    runner = CliRunner()
    runner.invoke(cli, ["index", "rebuild"], catch_exceptions=False)
    before = snapshot(vault)
    tried = 0
    for name, form in CLI_FORMS:
        for ref in _refs(outside):
            result = runner.invoke(cli, form(ref), catch_exceptions=False)
            tried += 1
            where = f"{name} {ref[:40]!r}"
            if name == "observe":  # observe reports unknown ids in its result instead of failing
                assert result.exit_code in (0, 1, 2), where
            else:
                assert result.exit_code in (1, 2), f"{where}: exit {result.exit_code}\n{result.output}"
            if result.exit_code == 1 and name != "observe":
                lines = result.output.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith("Error: "), f"{where}: {result.output!r}"
            assert "Traceback" not in result.output
    assert _outside_bytes(outside) == outside_before
    assert snapshot(vault) == before
    report("hostile refs: CLI", commands=len(CLI_FORMS), refs=len(HOSTILE_REFS), calls=tried, escapes=0)


def test_symlinks_out_of_the_vault_are_never_indexed_or_written(hostile):
    vault, outside = hostile
    runner = CliRunner()
    out = runner.invoke(cli, ["index", "rebuild", "--json"], catch_exceptions=False)
    assert json.loads(out.output)["indexed"] == 1  # only memory/stm/inside-....md
    search = json.loads(runner.invoke(cli, ["search", "outside", "--json"], catch_exceptions=False).output)
    assert search["results"] == []
    for command in (["gc", "--apply"], ["promote", "--auto"], ["maintain"], ["stats"]):
        assert runner.invoke(cli, command, catch_exceptions=False).exit_code == 0
    assert (outside / "secret.md").read_text(encoding="utf-8") == OUTSIDE_NOTE


def test_a_memory_folder_that_is_a_symlink_out_is_refused(tmp_path, monkeypatch):
    vault, outside = tmp_path / "vault", tmp_path / "elsewhere"
    outside.mkdir()
    runner = CliRunner()
    runner.invoke(cli, ["init", str(vault)])
    (vault / "memory" / "stm").rmdir()
    (vault / "memory" / "stm").symlink_to(outside, target_is_directory=True)
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault))
    result = runner.invoke(cli, ["save", "hello there"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output == "Error: path 'memory/stm/hello-there-" + result.output.split("hello-there-")[1]
    assert "leads outside the vault (symlink?); refusing it" in result.output
    assert list(outside.iterdir()) == []


def test_mcp_references_cannot_reach_outside_the_vault(hostile):
    from mcp import Client
    from reliability_helpers import open_store

    vault, outside = hostile
    outside_before = _outside_bytes(outside)
    warm = open_store(vault)
    warm.sync()
    warm.close()
    before = snapshot(vault)
    store = open_store(vault)  # used only on the bridge's thread from here on
    server = build_server(store)
    refs = _refs(outside)
    calls = 0

    async def main() -> int:
        n = 0
        async with Client(server) as client:
            for ref in refs:
                for name, args in (("touch_memory", {"memory_id": ref}),
                                   ("touch_memory", {"memory_id": ref, "boost_strength": True}),
                                   ("open_memories", {"memory_ids": ref}),
                                   ("open_memories", {"memory_ids": [ref, ref]}),
                                   ("create_relation", {"from_memory_id": ref, "to_memory_id": "inside-00000001",
                                                        "relation_type": "related"}),
                                   ("create_relation", {"from_memory_id": "inside-00000001", "to_memory_id": ref,
                                                        "relation_type": "related"})):
                    result = await client.call_tool(name, args)
                    n += 1
                    if name in ("touch_memory", "create_relation"):
                        assert result.is_error, (name, ref)
                        assert result.content[0].text.startswith("Error: ") and "\n" not in result.content[0].text, ref
                    else:
                        data = result.structured_content if not result.is_error else {"memories": []}
                        assert data["memories"] == [], ref
                try:
                    await client.read_resource(f"vaultmem://memory/{ref}")
                except Exception:  # noqa: BLE001 - a refusal is an error response
                    pass
                else:
                    raise AssertionError(f"resource {ref!r} was served")
                n += 1
        return n

    try:
        calls = asyncio.run(main())
    finally:
        server.bridge.close()
        store.close()
    assert _outside_bytes(outside) == outside_before
    assert snapshot(vault) == before
    report("hostile refs: MCP", refs=len(refs), calls=calls, escapes=0)


@pytest.mark.parametrize("rel", ["../x.md", "/etc/x.md", "a/../../x.md", "a\x00.md", "memory/linked-dir/x.md"])
def test_vault_abs_refuses_escapes_with_one_line_errors(hostile, rel):
    from reliability_helpers import open_store

    vault, _ = hostile
    with pytest.raises(InvalidInput) as info:
        open_store(vault).vault.abs(rel)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["../../x", "/abs", "a\x00b", "CON", "con.txt", "x" * 400, "...", "", "nul"])
def test_safe_file_name_stays_one_plain_name(name):
    safe = safe_file_name(name)
    assert "/" not in safe and "\x00" not in safe and safe not in ("", ".", "..")
    assert len(safe.encode()) <= 200
    assert safe.split(".")[0].upper() not in {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                                             *(f"LPT{i}" for i in range(1, 10))}


def test_saved_memories_get_plain_short_file_names(hostile):
    from reliability_helpers import open_store

    vault, _ = hostile
    store = open_store(vault)
    for content in ("../../etc/passwd is a file", "CON", "aux", "/" * 20 + "slashes", "é" * 5000, "COM1: port",
                    ".hidden start", "名前" * 300):
        rel = store.save(content)["path"]
        name = rel.rsplit("/", 1)[1]
        assert rel.startswith("memory/stm/") and "/" not in name and not name.startswith(".")
        assert len(name.encode()) <= 255
        assert name.split("-")[0].upper() not in {"CON", "AUX"} or "-" in name
    store.close()


# -- broken notes ---------------------------------------------------------------------------------

GOOD_HEAD = f"---\nid: {mid(500)}\ncreated: 2026-11-20T00:00:00Z\nuse_count: 0\n"
BROKEN: dict[str, bytes] = {
    "invalid-yaml": b"---\nid: [unclosed\ntags: {\n---\nBody.\n",
    "list-frontmatter": b"---\n- one\n- two\n---\nBody.\n",
    "scalar-frontmatter": b"---\njust a sentence\n---\nBody.\n",
    "duplicate-keys": b"---\nid: a\nstatus: active\nid: b\n---\nBody.\n",
    "tab-indent": b"---\ntags:\n\t- one\n---\nBody.\n",
    "no-closing-fence": b"---\nid: x\nBody without a closing fence.\n",
    "binary": bytes(range(256)) * 4,
    "invalid-utf8": b"---\nid: x\n---\n\xff\xfe\xfd broken\n",
    "nul-in-text": b"---\nid: x\n---\nBody\x00with NUL\n",
    "alias-bomb": (b"---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                   b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                   b"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                   b"g: [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n---\nBody.\n"),
    "deep-nesting": b"---\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n---\nBody.\n",
    "python-tag": b"---\nid: !!python/object/apply:os.system ['echo pwned']\n---\nBody.\n",
    "huge": b"---\nid: huge\n---\n" + b"word " * 1_100_000,
}
# Odd but valid: indexed like any note, and never rewritten by a read.
ODD: dict[str, bytes] = {
    "bom": b"\xef\xbb\xbf" + GOOD_HEAD.encode() + b"---\nWith a BOM.\n",
    "crlf": GOOD_HEAD.replace("500", "501").replace("\n", "\r\n").encode() + b"---\r\nWindows line ends.\r\n",
    "no-trailing-newline": GOOD_HEAD.replace("500", "502").encode() + b"---\nNo newline at the end",
    "yaml-date": f"---\nid: {mid(503)}\ncreated: 2026-11-20\nlast_used: 2026-11-21\n---\nBare dates.\n".encode(),
    "empty": b"",
    "only-fences": b"---\n---\n",
    "whitespace": b"  \n\n\t\n",
    "nested-map": b"---\nmeta:\n  deep:\n    deeper: [1, 2]\n---\nA person's note may nest properties.\n",
}

COMMANDS = [
    ["index", "status"], ["index", "rebuild"], ["search", "body"], ["search", ""], ["stats"],
    ["open", "invalid-yaml"], ["touch", "invalid-yaml"], ["touch", "duplicate-keys"], ["touch", "huge"],
    ["gc", "--apply"], ["gc", "--apply", "--delete"], ["promote", "--auto"], ["maintain"],
    ["cluster"], ["consolidate", "--auto", "--mode", "apply"], ["consolidate", "--deep"],
    ["pipeline", "run"], ["pipeline", "apply-review"], ["observe", "invalid-yaml", "list-frontmatter"],
    ["decay-curve"], ["config"],
]


def test_broken_notes_are_reported_never_crash_and_never_rewritten(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    runner = CliRunner()
    runner.invoke(cli, ["init", str(vault)], catch_exceptions=False)
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault))
    (vault / "Notes").mkdir()
    paths = {}
    for folder in ("memory/stm", "memory/ltm", "Notes"):
        for name, data in BROKEN.items():
            path = vault / folder / f"{name}.md"
            path.write_bytes(data)
            paths[path] = data
    for name, data in ODD.items():
        path = vault / "Notes" / f"{name}.md"
        path.write_bytes(data)
        paths[path] = data
    write_memory(vault, "stm", "healthy", 1, "A healthy memory next to the broken ones.", age_days=400)
    ran = 0
    for command in COMMANDS:
        result = runner.invoke(cli, [*command], catch_exceptions=False)
        ran += 1
        assert result.exit_code in (0, 1), f"{command}: {result.output}"
        assert "Traceback" not in result.output
        if result.exit_code == 1 and command[0] not in ("index", "observe"):  # both exit 1 by design
            lines = result.output.strip().splitlines()
            assert lines[-1].startswith("Error: ") and len(lines[-1]) < 400, (command, result.output)
    for path, data in paths.items():
        assert path.read_bytes() == data, f"{path.relative_to(vault)} was rewritten"
    status = json.loads(runner.invoke(cli, ["index", "status", "--json"], catch_exceptions=False).output)
    reported = {item["path"] for item in status["malformed"]}
    expected = {f"{folder}/{name}.md" for folder in ("memory/stm", "memory/ltm", "Notes") for name in BROKEN}
    assert expected <= reported, sorted(expected - reported)
    assert not {f"Notes/{name}.md" for name in ODD} & reported
    for item in status["malformed"]:
        assert item["reason"] and "\n" not in item["reason"] and len(item["reason"]) < 300, item
    # the healthy memory was archived by gc, the broken ones stayed where they were
    assert (vault / "memory" / "archive" / f"healthy-{mid(1)[:8]}.md").exists()
    report("broken notes", kinds=len(BROKEN) + len(ODD), files=len(paths), commands=ran, crashes=0, rewritten=0)


# -- sync-client conflict copies ---------------------------------------------------------------------

CONFLICT_NAMES = [
    "inside-00000001 (conflict 2026-11-22 10-15-00).md",  # Obsidian Sync / Nextcloud
    "inside-00000001 (conflicted copy 2026-11-22).md",  # Dropbox
    "inside-00000001.sync-conflict-20261122-101500-ABCDEFG.md",  # Syncthing
]


def test_sync_conflict_copies_are_reported_by_doctor_and_merged_by_the_next_write(hostile):
    vault, _ = hostile
    original = vault / "memory" / "stm" / "inside-00000001.md"
    copies = {}
    for name in CONFLICT_NAMES:
        copies[name] = original.read_bytes().replace(b"inside the vault", b"inside the vault, edited elsewhere")
        (vault / "memory" / "stm" / name).write_bytes(copies[name])
    runner = CliRunner()
    result = runner.invoke(cli, ["doctor", "--json"], catch_exceptions=False)
    assert result.exit_code == 1
    data = json.loads(result.output)
    conflicts = sorted(p["path"] for p in data["problems"] if p["check"] == "conflict_copy")
    assert conflicts == sorted(f"memory/stm/{n}" for n in CONFLICT_NAMES)
    assert {p["original"] for p in data["problems"] if p["check"] == "conflict_copy"} == {"inside-00000001.md"}
    # indexed as conflict copies, not as three more copies of the memory
    assert [p for p in data["problems"] if p["check"] == "duplicate_id"] == []
    found = json.loads(runner.invoke(cli, ["search", "inside the vault", "--json"], catch_exceptions=False).output)
    assert [r["path"] for r in found["results"]] == ["memory/stm/inside-00000001.md"]
    for name, data_ in copies.items():  # reads leave them alone
        assert (vault / "memory" / "stm" / name).read_bytes() == data_
    # the first write merges them into the original (docs/sync.md), then moves them to .trash/ intact
    assert runner.invoke(cli, ["touch", mid(1)], catch_exceptions=False).exit_code == 0  # not ambiguous
    for command in (["gc", "--apply"], ["promote", "--auto"], ["maintain"]):
        assert runner.invoke(cli, command, catch_exceptions=False).exit_code == 0
    for name, data_ in copies.items():
        assert not (vault / "memory" / "stm" / name).exists()
        assert (vault / ".trash" / name).read_bytes() == data_
    body = original.read_text(encoding="utf-8")
    assert "inside the vault, edited elsewhere" in body and body.count("<<<<<<< ours") == 1


# -- values that try to become structure ------------------------------------------------------------

INJECTED_VALUES = [
    "{{content}}", "{{frontmatter}}", "{{relations}}", "x\nid: evil\n---", "---\nstatus: promoted",
    "]] [[elsewhere", "key: value", "- list item", "# heading", "'quoted", '"double', "&anchor *alias",
    "!!python/object:os.system", "null", "true", "1e5", "2026-11-22", "\u2028line separator", "tab\there",
]


@pytest.mark.parametrize("value", INJECTED_VALUES)
def test_values_never_become_frontmatter_or_placeholders(vault_path, value):
    from reliability_helpers import open_store, parse

    store = open_store(vault_path)
    content = f"Body mentions {value} and keeps\n\n\n\nits own blank lines."
    if content.lstrip().startswith("---"):
        content = "Note: " + content
    saved = store.save(content, source=value, context=value, meta={"note": value, "other": [value, "x"]},
                       tags=["plain"])
    text = (vault_path / saved["path"]).read_text(encoding="utf-8")
    props = parse(text)
    assert props["id"] == saved["memory_id"] and props["status"] == "active"
    assert props["source"] == value and props["context"] == value and props["note"] == value
    assert props["other"] == [value, "x"]
    body = text.split("\n---\n", 1)[1]
    assert body == content + "\n"
    rec = store.resolve(saved["memory_id"])
    assert rec.content == content and rec.source == value
    store.close()


# -- block names (once blocks exist) -----------------------------------------------------------------

BLOCK_NAMES = ["../escape", "../../outside/secret", "/etc/passwd", "a/../../b", "sub/dir", "a\x00b", "CON", "nul.md",
               ".hidden", "..", ".", "", " ", "x" * 300, "linked-dir/secret", "\\windows\\path", "名前" * 100]


@pytest.mark.parametrize("name", BLOCK_NAMES)
def test_block_names_cannot_reach_outside_the_vault(hostile, name):
    from reliability_helpers import open_store

    from vaultmem.base.errors import VaultmemError

    vault, outside = hostile
    store = open_store(vault)
    if not hasattr(store, "block_set"):
        pytest.skip("blocks (mnemosyne issue) are not merged yet")
    outside_before = _outside_bytes(outside)
    before = snapshot(vault)
    try:
        result = store.block_set(name, "Block content.")
    except VaultmemError as exc:
        assert "\n" not in str(exc)  # one line (the CLI and MCP also cap its length)
        assert snapshot(vault) == before
    else:
        added = set(snapshot(vault)) - set(before)
        assert added and all(p.startswith("memory/blocks/") and p.count("/") == 2 for p in added), added
        assert result["path"] in added
    finally:
        store.close()
    assert _outside_bytes(outside) == outside_before


@pytest.mark.parametrize("line, reason", [
    ("created: 2026-02-30", None),  # YAML 1.2, as Obsidian: text, not a date; the note indexes
    ("x: !!float 'abc'", "invalid YAML value: could not convert string to float: 'abc'"),
    ("x: !!timestamp 'x'", "invalid YAML at line 2: could not determine a constructor for the tag "
                           "'tag:yaml.org,2002:timestamp'"),
    ("use_count: 9223372036854775808", None),
    ("2026-01-01: x", None),
])
def test_one_bad_note_is_one_bad_note(sample_vault, monkeypatch, line, reason):
    """The repro of "Security and reliability, round two" item 2: every command still runs."""
    monkeypatch.setenv("VAULTMEM_VAULT", str(sample_vault))
    daily = sample_vault / "Daily.md"
    daily.write_text(f"---\n{line}\n---\nDaily planning notes\n")
    before = daily.read_bytes()
    runner = CliRunner()
    first = runner.invoke(cli, ["search", "planning"])
    assert first.exit_code == 0
    for args in (["stats"], ["gc"], ["promote", "--auto", "--dry-run"], ["doctor"], ["count"],
                 ["cluster"], ["consolidate", "--auto-detect"], ["graph"], ["index", "rebuild"]):
        r = runner.invoke(cli, args)
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.output)
        assert "Traceback" not in r.output, args
    doctor = runner.invoke(cli, ["doctor", "--json"])
    found = [m for m in json.loads(doctor.output)["problems"] if m["path"] == "Daily.md"]
    if reason:
        assert [m["message"] for m in found] == [f"Daily.md: {reason}"]
        assert first.output.startswith(f"warning: skipped malformed note Daily.md: {reason}\n")
    else:
        assert "Daily planning notes" in runner.invoke(cli, ["search", "planning", "--unified"]).output
    assert daily.read_bytes() == before


def test_a_property_holding_infinity_stops_no_command(sample_vault, monkeypatch):
    """`rating: .inf` in a memory was stored as JSON `Infinity`, which SQLite's JSON functions
    refuse: `vaultmem count` and `bot-profile` stopped with "malformed JSON"."""
    monkeypatch.setenv("VAULTMEM_VAULT", str(sample_vault))
    note = sample_vault / "memory/stm/rated-0f0f0f0f.md"
    note.write_text("---\nid: 0f0f0f0f-0000-4000-8000-000000000000\nstatus: active\nrating: .inf\n"
                    "score: [1, .nan]\nagent: devops-agent\n---\nThe deploy runbook is rated highly\n")
    before = note.read_bytes()
    runner = CliRunner()
    for args in (["count", "--json"], ["bot-profile", "devops-agent", "--json"], ["stats"], ["search", "runbook"]):
        r = runner.invoke(cli, args)
        assert r.exit_code == 0 and r.exception is None, (args, r.output)
    assert "runbook" in runner.invoke(cli, ["search", "runbook"]).output
    from vaultmem.store import MemoryStore

    store = MemoryStore(sample_vault)
    (props,) = store.index.db.execute("SELECT props FROM notes WHERE path = ?", ("memory/stm/rated-0f0f0f0f.md",)).fetchone()
    assert json.loads(props) == {"rating": "inf", "score": [1, "nan"]}
    # A catalog written before this fix holds JSON Infinity: the queries read past it.
    with store.index.db:
        store.index.db.execute("UPDATE notes SET props = '{\"rating\": Infinity}' WHERE path = ?",
                               ("memory/stm/rated-0f0f0f0f.md",))
    store.close()
    for args in (["count", "--json"], ["bot-profile", "devops-agent", "--json"]):
        r = runner.invoke(cli, args)
        assert r.exit_code == 0 and r.exception is None, (args, r.output)
    assert json.loads(runner.invoke(cli, ["count", "--json"]).output)["total"] >= 1
    assert note.read_bytes() == before


def test_an_event_time_before_year_one_in_utc_is_a_clear_error(store):
    with pytest.raises(InvalidInput) as err:
        store.store_memory("Redis moved to port 6380", event_time="0001-01-01T00:00:00+23:59")
    assert str(err.value) == "eventTime '0001-01-01T00:00:00+23:59' is not ISO 8601; write it like 2024-01-15T10:00:00Z"


@pytest.mark.parametrize("shape", ["symlink out", "a file", "another filesystem"])
def test_gc_delete_never_moves_a_note_out_through_a_strange_trash(tmp_path, monkeypatch, shape):
    """Round two, item 5: `.trash` as a symlink out of the vault, a regular file, or a mount point."""
    from vaultmem.store import MemoryStore

    vault = tmp_path / "vault"
    MemoryStore(vault).init()
    old = write_memory(vault, "stm", "stale", 1, "an old fact nobody used", age_days=400)
    outside = tmp_path / "outside"
    outside.mkdir()
    if shape == "symlink out":
        (vault / ".trash").symlink_to(outside)
        reason = (".trash is a symbolic link out of the vault's own folders; make it a plain folder, "
                  "or archive instead of deleting (gc --apply without --delete)")
    elif shape == "a file":
        (vault / ".trash").write_text("not a folder")
        reason = (".trash is a file, not a folder; rename or remove it, "
                  "or archive instead of deleting (gc --apply without --delete)")
    else:
        real_rename = os.rename

        def cross_device(src, dst, *args, **kwargs):
            if "/.trash/" in str(dst):
                raise OSError(18, "Invalid cross-device link")  # EXDEV
            return real_rename(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, "rename", cross_device)
        reason = (".trash is on another filesystem (a mount point); make it a plain folder of the vault, "
                  "or archive instead of deleting (gc --apply without --delete)")
    before = old.read_bytes()
    result = MemoryStore(vault, clock=lambda: NOW).gc(apply=True, delete=True)
    assert result["removed_count"] == 0
    assert result["skipped"] == [{"id": mid(1), "path": f"memory/stm/{old.name}", "reason": reason}]
    assert old.read_bytes() == before and list(outside.iterdir()) == []


def test_apply_review_of_a_path_outside_the_vault_is_a_one_line_error(runner, vault_path):
    r = runner.invoke(cli, ["pipeline", "apply-review", "/etc/passwd"])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit)
    assert r.output == ("Error: review note '/etc/passwd' is outside the vault; pass a note in "
                        "memory/reviews/ (its name or vault-relative path)\n")
