"""The CLI through click's CliRunner: exact output, exact errors, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from conftest import invoke

from vaultmem.base import portable
from vaultmem.cli import cli


def test_save_prints_the_new_id_and_search_finds_it(runner, vault_path):
    result = invoke(runner, "save", "Use JWT tokens for authentication in all new APIs", "--tag", "auth", "--source", "chat")
    assert result.exit_code == 0
    mid = result.output.strip()
    assert len(mid) == 36
    assert (vault_path / f"memory/stm/use-jwt-tokens-for-authentication-in-{mid[:8]}.md").is_file()
    out = invoke(runner, "search", "authentication", "--top-k", "5")
    assert out.output == (
        " 1. [1.00] Use JWT tokens for authentication in all new APIs\n"
        f"    {mid[:8]} · active · tags: auth · used 0× · 0 days old · "
        f"memory/stm/use-jwt-tokens-for-authentication-in-{mid[:8]}.md\n"
    )


def test_search_json_has_the_seed_keys(runner):
    mid = invoke(runner, "save", "Deploys go out on Tuesdays", "-t", "ops").output.strip()
    data = json.loads(invoke(runner, "search", "deploys", "--json").output)
    assert data["success"] is True and data["count"] == 1
    assert data["results"][0]["id"] == mid
    assert data["results"][0]["tags"] == ["ops"]


def test_save_json(runner):
    data = json.loads(invoke(runner, "save", "x marks the spot", "--json").output)
    assert set(data) == {"success", "status", "memory_id", "path", "message", "has_embedding", "enrichment_applied",
                         "auto_entities", "calculated_strength", "entities", "memory_type", "urgency", "domain",
                         "priority", "enrichment"}
    assert data["status"] == "created" and data["enrichment_applied"] is True and data["enrichment"] == "done"


def test_no_results(runner):
    assert invoke(runner, "search", "nothing").output == "No memories found.\n"


def test_touch_prints_old_and_new_score(runner):
    mid = invoke(runner, "save", "reinforce me").output.strip()
    out = invoke(runner, "touch", mid[:8], "--boost-strength").output
    assert out == f"{mid}: score 1.0000 -> 1.6673 (used 1×, strength 1.1)\n"


def test_open_shows_the_memory(runner):
    mid = invoke(runner, "save", "Zoë prefers the café", "-t", "people").output.strip()
    out = invoke(runner, "open", mid[:8]).output
    assert out.splitlines()[0] == f"{mid}  (memory/stm/zoë-prefers-the-café-{mid[:8]}.md)"
    assert out.endswith("tags: people\n\nZoë prefers the café\n")


@pytest.mark.parametrize("args, message, code", [
    (["open", "deadbeef"], "Error: no memory matches 'deadbeef'; check the id with `vaultmem search`\n", 1),
    (["touch", "deadbeef"], "Error: no memory matches 'deadbeef'; check the id with `vaultmem search`\n", 1),
    (["search", 'a "b'], 'Error: unbalanced " in query; close the quote or remove it\n', 1),
    (["save", "  "], "Error: content is empty; pass the text to remember\n", 1),
    (["save", "x", "--meta", "oops"], "Error: --meta 'oops' is not key=value; write it like --meta project=apollo\n", 1),
])
def test_errors_are_one_line_with_a_fix(runner, args, message, code):
    result = runner.invoke(cli, args)
    assert result.exit_code == code
    assert result.output == message


def test_out_of_range_option_is_a_usage_error(runner):
    result = runner.invoke(cli, ["search", "x", "--top-k", "0"])
    assert result.exit_code == 2
    assert "Invalid value for '--top-k': 0 is not in the range 1<=x<=100." in result.output


def test_uninitialised_vault(runner, tmp_path):
    result = runner.invoke(cli, ["search", "x", "--vault", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert result.output == f"Error: vault {tmp_path / 'nope'} does not exist; run `vaultmem init {tmp_path / 'nope'}` first\n"


def test_bad_config_file_is_reported(runner, vault_path):
    (vault_path / ".vaultmem/config.yaml").write_text("decay_model: linear\n")
    result = runner.invoke(cli, ["search", "x"])
    assert result.exit_code == 1
    assert result.output == "Error: decay_model 'linear' is unknown; use one of power_law, exponential, two_component, actr\n"


def test_a_config_file_that_is_not_yaml_is_reported_with_its_line(runner, vault_path):
    config = vault_path / ".vaultmem/config.yaml"
    config.write_text("forget_threshold: 0.02\ndecay_model: power_law: 2\n")
    result = runner.invoke(cli, ["search", "x"])
    assert result.exit_code == 1
    assert result.output == (f"Error: cannot read {config}: line 2: mapping values are not allowed in this "
                             "context; fix or delete the file\n")
    assert config.read_text() == "forget_threshold: 0.02\ndecay_model: power_law: 2\n"


def test_init_then_index_commands(runner, tmp_path):
    target = tmp_path / "fresh"
    out = invoke(runner, "init", str(target)).output
    assert out.startswith(f"Initialised vault at {target}\n  created memory/stm/\n")
    assert invoke(runner, "init", str(target)).output == f"Vault at {target} was already initialised\n"
    invoke(runner, "save", "hello index", "--vault", str(target))
    assert invoke(runner, "index", "rebuild", "--vault", str(target)).output == "Rebuilt the index from 1 notes (0 malformed)\n"
    status = invoke(runner, "index", "status", "--vault", str(target))
    assert status.exit_code == 0
    assert status.output == "notes on disk: 1\nindexed:       1\nIndex is up to date\n"


def test_index_status_exits_1_when_stale(runner, vault_path):
    invoke(runner, "stats")
    (vault_path / "note.md").write_text("a person's note\n")
    result = runner.invoke(cli, ["index", "status"])
    assert result.exit_code == 1
    assert "not indexed yet: note.md\n" in result.output


def test_malformed_note_warning_on_stderr(runner, vault_path):
    (vault_path / "memory/stm/bad.md").write_text("---\nid: [\n---\nx\n")
    result = runner.invoke(cli, ["search", "x"])
    assert result.exit_code == 0
    assert result.stderr == ("warning: skipped malformed note memory/stm/bad.md: "
                             "invalid YAML at line 3: did not find expected node content\n")


def test_stats_json(runner):
    invoke(runner, "save", "one")
    data = json.loads(invoke(runner, "stats", "--json").output)
    assert data["total_memories"] == 1 and data["by_status"] == {"active": 1, "promoted": 0, "archived": 0}


def test_every_command_has_help_with_an_example():
    def walk(group, prefix):
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from walk(command, prefix + [name])
            else:
                yield prefix + [name], command

    for path, command in walk(cli, []):
        assert command.help, f"{' '.join(path)} has no help"
        assert "Example" in command.help, f"`vaultmem {' '.join(path)} --help` shows no example"


def _whoosh3() -> bool:
    """Whether the Whoosh installed is pyproject's whoosh3 (not another 2.7-compatible fork)."""
    import importlib.metadata

    try:
        importlib.metadata.version("whoosh3")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_help_and_search_import_no_heavy_libraries(vault_path):
    heavy = ("spacy", "mcp", "watchdog", "onnxruntime", "tokenizers", "numpy")
    # what only writes need: the secret filter's patterns (15 ms to compile), and urllib.request,
    # which xml.sax.saxutils (the service files' escaping) imports (28 ms)
    for_writes = {"vaultmem.base.secrets", "urllib.request"}
    # what only a query with syntax needs: Whoosh's searcher and parser (bm25.Lexicon)
    for_syntax = {"whoosh.searching", "whoosh.qparser"}
    # what other commands need: the features a search does not call (store.py imports each on
    # first use), and the standard modules only git, a spawn, a model install or a rebuild runs
    for_others = {"vaultmem.features.consolidate", "vaultmem.features.graph", "vaultmem.features.sync",
                  "vaultmem.features.mnemosyne.recall", "vaultmem.features.mnemosyne.hooks",
                  "vaultmem.storage.embeddings", "vaultmem.storage.models", "tempfile", "subprocess", "zipfile",
                  "logging"}  # 2-3 ms: a watcher's unreadable note logs (Memories.refresh_paths)
    if not _whoosh3():  # whoosh-reloaded imports these itself (make test-whoosh-reloaded): whoosh3's start-up is held to it
        for_writes -= {"urllib.request"}
        for_others -= {"tempfile", "subprocess", "logging"}
    # The save's own imports (its enrichment child, forked, imports spaCy and writes to the
    # same stderr, so it is not started here): the note is indexed without Whoosh's searcher
    # (index._delete_path) and spaCy waits for the child.
    code = ("import sys, contextlib\n"
            "from vaultmem.cli import commands, main\n"
            "commands.spawn_enrichment = lambda root: None\n"
            "sys.argv = ['vaultmem', 'save', 'anything goes', '--vault', sys.argv[1]]\n"
            "with contextlib.suppress(SystemExit):\n    main()\n"
            "print(' '.join(sys.modules), file=sys.stderr)\n")
    env = {**os.environ, "VAULTMEM_SAVE_ENRICHMENT": "background"}  # the default (the suite's is now)
    saved = subprocess.run([sys.executable, "-c", code, str(vault_path)], capture_output=True, text=True,
                           check=True, env=env)
    modules = set(saved.stderr.split())
    assert "vaultmem.storage.index" in modules and saved.stdout.strip()  # it saved
    assert not modules & (for_syntax | {"spacy"}), f"vaultmem save imports {modules & (for_syntax | {'spacy'})}"
    if portable.has_fcntl():  # its lock is flock itself (portable.FileLock): filelock's 13-15 ms spared
        assert "filelock" not in modules, "vaultmem save imports filelock"
    # What click imports itself is click's cost, not vaultmem's: on Python 3.10 click.types'
    # `import uuid` imports platform and with it subprocess (3.11's uuid no longer does).
    clicks = set(subprocess.run([sys.executable, "-c", "import sys, click; print(' '.join(sys.modules))"],
                                capture_output=True, text=True, check=True).stdout.split())
    assert ("subprocess" in clicks) is (sys.version_info < (3, 11))
    for_others -= clicks
    for args in (["--help"], ["search", "anything", "--vault", str(vault_path)]):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "vaultmem", *args],
                              capture_output=True, text=True, check=True)
        modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
        imported = {name.split(".")[0] for name in modules}
        assert not imported & set(heavy), f"vaultmem {' '.join(args)} imports {imported & set(heavy)}"
        assert not modules & for_writes, f"vaultmem {' '.join(args)} imports {modules & for_writes}"
        assert not modules & for_syntax, f"vaultmem {' '.join(args)} imports {modules & for_syntax}"
        assert not modules & for_others, f"vaultmem {' '.join(args)} imports {modules & for_others}"
        assert args[0] != "search" or "anything goes" in proc.stdout  # the plain path ran and found it


def test_starting_the_cli_looks_up_few_translations():
    """click.Path looks its name up in gettext's catalogs when made, probing the file system for
    each locale variant: one per --vault option cost ~4 ms of every command's start."""
    code = ("import gettext\n"
            "calls = []\n"
            "lookup = gettext.dgettext\n"
            "gettext.dgettext = lambda *a: calls.append(a) or lookup(*a)\n"
            "import vaultmem.cli\n"
            "print(len(calls))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(proc.stdout) <= 6
    def commands(group):
        for command in group.commands.values():
            yield command
            yield from commands(command) if hasattr(command, "commands") else ()

    options = [p for c in commands(cli) for p in c.params if p.name == "vault"]
    assert len(options) > 40 and len({id(p.type) for p in options}) == 1


def ended(bridge: Any) -> None:
    """What `server.serve` does last: the store's thread closed, and with the store its change feed."""
    bridge.close()


def test_commands_collect_cycles_rarely_and_the_long_running_ones_as_python_does(runner, vault_path, monkeypatch):
    """The CLI raises the cyclic collector's first threshold (a cold search ran ~70 collections
    walking objects that live until it ends); `watch` and `mcp`, which run for hours, put
    Python's own thresholds back."""
    import gc

    from vaultmem.cli import collector
    from vaultmem.mcp import server

    assert collector.PYTHON[0] < 50_000
    fresh = subprocess.run([sys.executable, "-c", "import gc, vaultmem.cli; print(*gc.get_threshold())"],
                           capture_output=True, text=True, check=True)
    assert fresh.stdout.split() == [str(n) for n in (50_000, *collector.PYTHON[1:])]  # set by importing the CLI
    try:
        collector.for_commands()  # (an earlier test's `watch` in this process put Python's back)
        invoke(runner, "watch", "--status", "--vault", str(vault_path))
        assert gc.get_threshold() == collector.PYTHON
        collector.for_commands()
        monkeypatch.setattr(server, "serve", lambda store, **k: ended(k["bridge"]))  # a session that ended at once
        invoke(runner, "mcp", "--vault", str(vault_path))
        assert gc.get_threshold() == collector.PYTHON
    finally:
        collector.for_commands()


def test_config_shows_values_and_sources(runner, vault_path, monkeypatch):
    (vault_path / ".vaultmem/config.yaml").write_text("forget_threshold: 0.02\n")
    monkeypatch.setenv("CORTEXGRAPH_DECAY_MODEL", "exponential")
    monkeypatch.setenv("VAULTMEM_PL_HALFLIFE_DAYS", "5")
    data = json.loads(invoke(runner, "config", "--json").output)["settings"]
    assert data["forget_threshold"] == {"value": 0.02, "source": ".vaultmem/config.yaml"}
    assert data["decay_model"] == {"value": "exponential", "source": "CORTEXGRAPH_DECAY_MODEL"}
    assert data["pl_halflife_days"] == {"value": 5.0, "source": "VAULTMEM_PL_HALFLIFE_DAYS"}
    assert data["decay_beta"] == {"value": 0.6, "source": "default"}
    lines = invoke(runner, "config").output.splitlines()
    assert any(line.startswith("decay_model") and line.endswith("(CORTEXGRAPH_DECAY_MODEL)") for line in lines)


def test_unknown_setting_names_the_fix(runner, vault_path):
    (vault_path / ".vaultmem/config.yaml").write_text("decay_modle: power_law\n")
    result = runner.invoke(cli, ["stats"])
    assert result.exit_code == 1
    assert result.output == (f"Error: unknown setting 'decay_modle' in {vault_path}/.vaultmem/config.yaml; "
                             "did you mean 'decay_model'?\n")


def test_mcp_config_prints_a_client_s_configuration_with_absolute_paths(runner, vault_path):
    import shlex
    from pathlib import Path

    from conftest import invoke as run

    for client in ("claude-desktop", "cursor"):
        result = run(runner, "mcp", "config", "--client", client, "--agent", "desk", "--read-only")
        assert result.exit_code == 0
        config = json.loads(result.stdout)["mcpServers"]["vaultmem"]
        assert Path(config["command"]).is_absolute() and Path(config["command"]).name.startswith("vaultmem")
        assert config["args"] == ["mcp", "--vault", str(vault_path.resolve()), "--read-only", "--agent", "desk"]
    line = run(runner, "mcp", "config", "--client", "claude-code", "--name", "memory").stdout
    words = shlex.split(line)
    assert words[:5] == ["claude", "mcp", "add", "memory", "--"] and Path(words[5]).is_absolute()
    assert words[6:] == ["mcp", "--vault", str(vault_path.resolve())]
    bad = run(runner, "mcp", "config", "--client", "emacs")
    assert bad.exit_code == 2 and "Invalid value for '--client'" in bad.output


def test_save_dash_reads_the_memory_from_stdin(runner, vault_path):
    result = runner.invoke(cli, ["save", "-", "--tag", "people"], input="Zoë prefers morning meetings\n")
    assert result.exit_code == 0
    mid = result.output.strip()
    note = (vault_path / f"memory/stm/zoë-prefers-morning-meetings-{mid[:8]}.md").read_text(encoding="utf-8")
    assert note.endswith("---\nZoë prefers morning meetings\n")
    again = runner.invoke(cli, ["save", "--json"], input="Deploys go out on Tuesdays\n")
    assert json.loads(again.output)["status"] == "created"
    found = json.loads(invoke(runner, "search", "deploys", "--json").output)["results"]
    assert [r["content"] for r in found] == ["Deploys go out on Tuesdays"]
    assert not list(vault_path.glob("memory/stm/-*.md"))


def test_store_dash_reads_stdin_and_empty_stdin_is_refused(runner, vault_path):
    result = runner.invoke(cli, ["store", "-", "--json"], input="Redis cluster migrated to port 6380\n")
    assert json.loads(result.output)["status"] == "created"
    empty = runner.invoke(cli, ["save", "-"], input="\n")
    assert empty.exit_code == 2
    assert "Error: Nothing to read: stdin held no content; pipe the text in, e.g. echo \"...\" | vaultmem ... -" \
        in empty.output
    assert len(list(vault_path.glob("memory/stm/*.md"))) == 1


def test_the_flags_of_what_was_removed_are_accepted_and_say_so(runner, vault_path, monkeypatch):
    """`watch --mcp-host`, `mcp --in-process` and `mcp config --no-record` still work for
    people's scripts: each does what the command does without it, and says so in one line on
    stderr (the watcher served MCP sessions; the server recorded its first answers)."""
    from conftest import invoke as run

    from vaultmem.mcp import server

    once = run(runner, "watch", "--once", "--json", "--mcp-host")
    assert once.exit_code == 0 and json.loads(once.stdout)["success"] is True
    assert once.stderr.splitlines()[0] == ("vaultmem watch: --mcp-host does nothing now: every `vaultmem mcp` serves "
                                           "its own session (until `vaultmem serve` serves MCP over HTTP)")
    served = []
    monkeypatch.setattr(server, "serve", lambda store, **options: served.append(options) or ended(options["bridge"]))
    session = run(runner, "mcp", "--in-process", "--read-only")
    assert session.exit_code == 0 and session.stdout == ""
    assert [(o["read_only"], o["profile"]) for o in served] == [(True, "all")]
    assert session.stderr == "vaultmem mcp: --in-process does nothing now: every `vaultmem mcp` serves its own session\n"
    plain = run(runner, "mcp", "config", "--client", "cursor")
    flagged = run(runner, "mcp", "config", "--client", "cursor", "--no-record")
    assert flagged.exit_code == 0 and flagged.stdout == plain.stdout
    assert flagged.stderr == plain.stderr + "vaultmem mcp config: --no-record does nothing now: the server records no answers\n"
