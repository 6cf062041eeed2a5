"""Shared blocks: versioned notes in memory/blocks/, and racing writers never lose an update."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from conftest import invoke

from vaultmem.base.errors import ConflictError, InvalidInput
from vaultmem.features.mnemosyne import blocks
from vaultmem.store import MemoryStore


def test_set_get_and_the_note_on_disk(store, vault_path, clock):
    assert store.block_get("project_status") is None
    first = store.block_set("project_status", "Sprint 14: auth done", agent="pm-agent")
    assert set(first) == {"version", "id", "name", "path", "lastWriter", "updatedAt"}
    assert first["version"] == 1 and first["path"] == "memory/blocks/block-project_status.md"
    clock.advance(hours=1)
    second = store.block_set("project_status", "Sprint 14: payments 60%", agent="planner")
    assert second["version"] == 2 and second["id"] == first["id"]
    got = store.block_get("project_status")
    assert got == {"name": "project_status", "content": "Sprint 14: payments 60%", "version": 2,
                   "lastWriter": "planner", "updatedAt": "2026-11-22T11:15:00Z", "id": first["id"],
                   "path": "memory/blocks/block-project_status.md"}
    text = (vault_path / "memory/blocks/block-project_status.md").read_text()
    assert text == (f"---\nid: {first['id']}\ncreated: 2026-11-22T10:15:00Z\nmemory_type: core\n"
                    "block: project_status\nversion: 2\nlast_writer: planner\nupdated_at: 2026-11-22T11:15:00Z\n"
                    "---\nSprint 14: payments 60%\n")


def test_a_person_s_properties_survive_a_write(store, vault_path):
    store.block_set("on_call", "alice")
    path = vault_path / "memory/blocks/block-on_call.md"
    path.write_text(path.read_text().replace("block: on_call\n", "block: on_call\ncolor: red\n"))
    store.block_set("on_call", "bob", agent="rota")
    text = path.read_text()
    assert "color: red\n" in text and text.endswith("---\nbob\n") and "version: 2\n" in text


def test_invalid_names_and_stale_expected_version(store):
    with pytest.raises(InvalidInput, match=r"block name '\.\./x' is not valid"):
        store.block_set("../x", "nope")
    store.block_set("freeze", "false")
    with pytest.raises(ConflictError) as err:
        store.block_set("freeze", "true", expected_version=0)
    assert str(err.value) == ("block 'freeze' is at version 1, not 0; another writer changed it. "
                              "Read it again (`vaultmem block get`) and retry")
    assert store.block_set("freeze", "true", expected_version=1)["version"] == 2


def test_a_writer_that_loses_the_race_retries_on_top(store, vault_path):
    store.block_set("status", "v1", agent="a")
    rival = MemoryStore(vault_path, clock=store.clock)
    seen = []

    def between(version):
        seen.append(version)
        if len(seen) == 1:  # the rival writes after we read version 1, before we lock
            rival.block_set("status", "rival", agent="b")

    result = blocks.set_(store, "status", "mine", agent="a", _between=between)
    assert seen == [1, 2]  # read 1, lost the race, re-read 2
    assert result["version"] == 3 and store.block_get("status")["content"] == "mine"
    rival.close()


def test_a_writer_with_expected_version_fails_clearly_when_it_loses(store, vault_path):
    store.block_set("status", "v1")
    rival = MemoryStore(vault_path, clock=store.clock)
    with pytest.raises(ConflictError, match=r"block 'status' is at version 2, not 1"):
        blocks.set_(store, "status", "mine", expected_version=1,
                    _between=lambda v: rival.block_set("status", "rival"))
    assert store.block_get("status")["content"] == "rival"
    rival.close()


def test_threads_racing_never_lose_a_version(vault_path, clock):
    versions: list[int] = []
    lock = threading.Lock()

    def work(n):
        s = MemoryStore(vault_path, clock=clock)  # one store per thread, like one per process
        for i in range(5):
            v = s.block_set("counter", f"writer {n} write {i}", agent=f"w{n}")["version"]
            with lock:
                versions.append(v)
        s.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(versions) == list(range(1, 21))
    assert MemoryStore(vault_path).block_get("counter")["version"] == 20


def test_processes_racing_never_lose_a_version(vault_path):
    script = (
        "import json, sys\n"
        "from vaultmem.store import MemoryStore\n"
        "s = MemoryStore(sys.argv[1])\n"
        "print(json.dumps([s.block_set('counter', f'{sys.argv[2]} {i}', agent=sys.argv[2])['version'] for i in range(8)]))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(vault_path), f"p{n}"], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ)) for n in range(3)]
    versions = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        versions += json.loads(out)
    assert sorted(versions) == list(range(1, 25))
    final = MemoryStore(vault_path).block_get("counter")
    assert final["version"] == 24 and final["lastWriter"] in {"p0", "p1", "p2"}


def test_block_cli(runner, vault_path):
    assert invoke(runner, "block", "set", "deploy_freeze", "true", "--agent", "release-bot").output == (
        "Block deploy_freeze is at version 1\n")
    result = invoke(runner, "block", "get", "deploy_freeze")
    assert result.output.splitlines()[0] == "true"
    data = json.loads(invoke(runner, "block", "get", "deploy_freeze", "--json").output)
    assert data["lastWriter"] == "release-bot" and data["version"] == 1
    assert invoke(runner, "block", "get", "nope", "--json").output == "null\n"
    missing = invoke(runner, "block", "get", "nope")
    assert missing.exit_code == 1
    assert missing.output == "Error: no block named 'nope'; create it with `vaultmem block set nope TEXT`\n"
    stale = invoke(runner, "block", "set", "deploy_freeze", "false", "--expect-version", "0")
    assert stale.exit_code == 1 and stale.output.startswith("Error: block 'deploy_freeze' is at version 1, not 0")
    listed = json.loads(invoke(runner, "block", "list", "--json").output)
    assert listed["count"] == 1 and listed["blocks"][0]["name"] == "deploy_freeze"
    assert invoke(runner, "block", "list").output == "deploy_freeze  v1  release-bot  2026-11-22T10:15:00Z\n"


def test_a_block_written_before_the_prefix_keeps_its_file(store, vault_path):
    legacy = vault_path / "memory/blocks/persona.md"
    legacy.write_text("---\nblock: persona\nversion: 3\n---\nterse\n")
    assert store.block_get("persona")["version"] == 3
    result = store.block_set("persona", "kind", agent="a")
    assert (result["path"], result["version"]) == ("memory/blocks/persona.md", 4)
    assert not (vault_path / "memory/blocks/block-persona.md").exists()
    store.block_set("home", "x")  # a new block never takes a name a person's note would
    assert [b["name"] for b in store.block_list()] == ["home", "persona"]
    assert (vault_path / "memory/blocks/block-home.md").is_file()
