"""Importing vaultmem starts no process, and neither does a read command (issue 50): background
work (enrichment, segment merges, embeddings) is started by writes, the watcher or a command
that asks for it, never by `search`, `recall`, `open`, `stats`, `context`, `count` or
`backlinks`, even with an enrichment job waiting in the queue."""

from __future__ import annotations

import json
import multiprocessing.process
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import invoke

ROOT = Path(__file__).resolve().parent.parent

# Every way the standard library starts a process, and what each is patched with.
STARTERS = [(os, name) for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve")
            if hasattr(os, name)]


class Started(AssertionError):
    pass


@pytest.fixture
def no_process(monkeypatch):
    """Every start of a process fails the test, wherever vaultmem asks for it."""
    started: list[str] = []

    def refuse(what: str):
        def start(*_args, **_kwargs):
            started.append(what)
            raise Started(f"{what} was called")

        return start

    for module, name in STARTERS:
        monkeypatch.setattr(module, name, refuse(f"os.{name}"))
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("subprocess.Popen"))
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse("multiprocessing.Process.start"))
    return started


@pytest.fixture
def vault_with_a_queued_job(vault_path, monkeypatch):
    """A vault with a few memories and a person's note, one memory saved with its enrichment
    deferred (`save --json` in the background mode) and its background child prevented, as
    are the others'."""
    runner = CliRunner()
    spawned: list[Path] = []
    import vaultmem.cli.commands as commands

    monkeypatch.setattr(commands, "spawn_enrichment", lambda root: spawned.append(root))
    monkeypatch.setenv("VAULTMEM_SAVE_ENRICHMENT", "background")
    saved = json.loads(invoke(runner, "save", "Alice Chen moved the billing database to PostgreSQL 16",
                              "--tag", "db", "--json", "--vault", str(vault_path)).output)
    assert (saved["enrichment"], saved["enrichment_pid"], spawned) == ("pending", None, [vault_path])
    for text in ("Use JWT tokens for authentication in all new APIs",
                 "The release freeze starts on December 18; only hotfixes ship after that"):
        assert invoke(runner, "save", text, "--vault", str(vault_path)).exit_code == 0
    (vault_path / "Projects").mkdir()
    (vault_path / "Projects" / "billing.md").write_text(f"# Billing\nSee [[{Path(saved['path']).stem}]].\n")
    assert len(spawned) == 3 and len(queued(vault_path)) == 3  # three jobs wait for a child that never ran
    return vault_path, saved["memory_id"]


def queued(vault: Path) -> list[str]:
    return sorted(p.name for p in (vault / ".vaultmem" / "enrich").glob("*.json"))


READS = [
    ("search", "billing", "--json"),
    ("search", "billing OR release", "--json"),  # query syntax: Whoosh's own searcher
    ("recall", "what database does billing use", "--json"),
    ("open", "{id}", "--json"),
    ("stats", "--json"),
    ("context", "--json"),
    ("count", "--json"),
    ("backlinks", "{id}", "--json"),
]


@pytest.mark.parametrize("args", READS, ids=[" ".join(a[:2]) for a in READS])
def test_a_read_command_starts_no_process(vault_with_a_queued_job, no_process, args):
    vault, memory_id = vault_with_a_queued_job
    queue = queued(vault)
    result = invoke(CliRunner(), *[a.format(id=memory_id) for a in args], "--vault", str(vault))
    assert (result.exit_code, no_process) == (0, []), result.output
    assert queued(vault) == queue  # no enrichment done or started by reading


def test_a_read_command_that_rebuilds_the_index_starts_no_process(vault_with_a_queued_job, no_process):
    vault, memory_id = vault_with_a_queued_job
    shutil.rmtree(vault / ".vaultmem" / "index")
    result = invoke(CliRunner(), "search", "billing", "--json", "--vault", str(vault))
    assert (result.exit_code, no_process) == (0, []), result.output
    assert [r["id"] for r in json.loads(result.output)["results"]] == [memory_id]


def test_the_check_sees_a_process_started(vault_path, no_process):
    with pytest.raises(Started):
        subprocess.run(["true"], check=False)
    with pytest.raises(Started):
        multiprocessing.Process(target=print).start()
    assert no_process == ["subprocess.Popen", "multiprocessing.Process.start"]


IMPORT_ALL = textwrap.dedent("""
    import importlib, json, os, pkgutil, sys
    started = []

    def refuse(what):
        def start(*args, **kwargs):
            started.append(what)
            raise RuntimeError(what)
        return start

    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            setattr(os, name, refuse("os." + name))
    import subprocess
    subprocess.Popen.__init__ = refuse("subprocess.Popen")
    sys.argv = [os.path.join(os.path.dirname(sys.executable), "vaultmem"), *sys.argv[1:]]
    import vaultmem
    names = sorted(m.name for m in pkgutil.walk_packages(vaultmem.__path__, "vaultmem."))
    for name in names:
        importlib.import_module(name)
    try:
        child = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        child = None
    print(json.dumps({"modules": names, "started": started, "child": child}))
""")


def test_importing_every_module_starts_no_process(vault_path):
    """As the `vaultmem search` command would import them (argv names the command and a vault),
    in a fresh interpreter: no process is started, and none exists afterwards."""
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_PLATFORM_RULES"}
    done = subprocess.run([sys.executable, "-c", IMPORT_ALL, "search", "billing", "--vault", str(vault_path)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    files = [p.relative_to(ROOT).with_suffix("").parts for p in (ROOT / "vaultmem").rglob("*.py")]
    modules = {".".join(f[:-1] if f[-1] == "__init__" else f) for f in files} - {"vaultmem"}
    assert report["modules"] == sorted(modules)  # every module but the package itself, imported first
    assert (report["started"], report["child"]) == ([], None)
