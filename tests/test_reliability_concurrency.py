"""Four vaultmem processes and a person editing in Obsidian, all at once, on one vault.

A `vaultmem mcp` server (driven over stdio by a client process making save_memory,
touch_memory and search_memory calls) and the `vaultmem watch` daemon run beside them. Each worker process runs
a seeded mix of save, touch, relate, gc --apply, promote --auto,
search and stats through the library (the same `MemoryStore` the CLI, watcher and MCP server
call) and logs what succeeded. A fifth process imitates a person: it rewrites note bodies
and adds tags, writing whole files the way an editor saves them. Afterwards:
- every saved and seeded memory is in exactly one file (none lost, none duplicated);
- each memory's use_count equals its seeded count plus the touches that reported success
  (no lost update), and every edit the person made is still there;
- every note parses (none half-written);
- one sync later, `index status` is clean and no temp file is left.

Short by default (4 x 60 operations); VAULTMEM_SOAK=1 runs 4 x 500.

The person's writer takes the vault's advisory lock for the instant of its write: it
models Obsidian reloading a file changed on disk before saving over it. An editor that
saved a stale buffer over a newer file would lose vaultmem's change whatever vaultmem did;
what this test proves is that vaultmem never loses the person's change or its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from reliability_helpers import (
    SOAK,
    check_after_next_command,
    ids_by_file,
    memory_files,
    open_store,
    parse,
    report,
    seed,
)

import vaultmem

OPS = 500 if SOAK else 60
WORKERS = 4
PERSON_EDITS = 150 if SOAK else 25

WORKER = r"""
import json, random, sys
sys.path.insert(0, sys.argv[4])
from reliability_helpers import open_store, mid
from vaultmem.base.errors import VaultmemError
vault, seed_, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed_)
store = open_store(vault)
log = []
fresh = [mid(200 + i) for i in range(8)]
mine = []
for n in range(ops):
    op = rng.choices(["save", "touch", "gc", "promote", "relate", "block", "search", "stats"],
                     [28, 36, 8, 8, 10, 8 if hasattr(store, "block_set") else 0, 6, 4])[0]
    try:
        if op == "save":
            result = store.save(f"Worker {seed_} memory {n}: remember setting {rng.randint(0, 10**6)}.",
                                tags=[f"w{seed_}"])
            mine.append(result["memory_id"])
            log.append(["save", result["memory_id"]])
        elif op == "touch":
            target = rng.choice(fresh + mine[-5:])
            result = store.touch(target)
            log.append(["touch", target])
        elif op == "gc":
            log.append(["gc", store.gc(apply=True, limit=2)["archived_count"]])
        elif op == "promote":
            log.append(["promote", len(store.promote(auto=True).get("promoted_ids", []))])
        elif op == "relate":
            a, b = rng.sample(fresh + mine[-3:], 2)
            store.relate(a, b, rng.choice(["related", "supports"]))
            log.append(["relate", a, b])
        elif op == "block":  # blocks are versioned: every successful set is one version
            result = store.block_set("shared-plan", f"Plan written by worker {seed_} at step {n}.")
            log.append(["block", result["version"]])
        elif op == "search":
            store.search("remember setting", top_k=5)
        else:
            store.stats()
    except VaultmemError as exc:
        log.append(["error", op, str(exc)])
print(json.dumps(log))
"""

MCP_CLIENT = r"""
import asyncio, json, random, sys
sys.path.insert(0, sys.argv[4])
from reliability_helpers import mid
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
vault, seed_, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed_)
log = []
async def main():
    import os
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", vault],
                                   env=dict(os.environ))  # the code under test, not whatever is installed
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            fresh = [mid(200 + i) for i in range(8)]
            for n in range(ops):
                op = rng.choices(["save", "touch", "search"], [3, 5, 2])[0]
                if op == "save":
                    result = await session.call_tool("save_memory", {"content": f"MCP memory {n} {rng.random()}"})
                    data = json.loads(result.content[0].text) if not result.is_error else None
                    log.append(["save", data["memory_id"]] if data else ["error", op, result.content[0].text])
                elif op == "touch":
                    target = rng.choice(fresh)
                    result = await session.call_tool("touch_memory", {"memory_id": target})
                    log.append(["touch", target] if not result.is_error else ["error", op, result.content[0].text])
                else:
                    result = await session.call_tool("search_memory", {"query": "memory", "top_k": 5})
                    if result.is_error:
                        log.append(["error", op, result.content[0].text])
asyncio.run(main())
print(json.dumps(log))
"""

PERSON = r"""
import json, random, sys, os
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from reliability_helpers import open_store
vault, seed_, edits = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed_)
store = open_store(vault)  # only for its lock: the person edits files directly
log = []
for n in range(edits):
    notes = sorted(p for p in (vault / "memory").rglob("*.md") if p.parent.name in ("stm", "ltm", "archive"))
    target = rng.choice(notes)
    marker = f"Person edit {n}."
    with store.vault.lock():
        try:
            text = target.read_text(encoding="utf-8")
        except FileNotFoundError:  # moved by gc/promote a moment ago: pick another next time
            continue
        head, _, body = text.partition("\n---\n")
        head, sep = head + "\n", "---\n"
        if "tags: []\n" in head:
            head = head.replace("tags: []\n", "tags:\n  - person-edit\n")
        elif "tags:\n" in head and "person-edit" not in head:
            head = head.replace("tags:\n", "tags:\n  - person-edit\n", 1)
        new = head + sep + body.rstrip("\n") + "\n" + marker + "\n"
        tmp = target.with_name(".obsidian-save.tmp")
        tmp.write_text(new, encoding="utf-8")
        os.replace(tmp, target)
    ident = [l for l in head.splitlines() if l.startswith("id: ")][0][4:]
    log.append([ident, marker])
apollo = vault / "Projects" / "Apollo.md"
apollo.write_text(apollo.read_text(encoding="utf-8") + "Edited during the run.\n", encoding="utf-8")
print(json.dumps(log))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="stops the watcher with SIGTERM, which Windows cannot deliver to a handler")
def test_four_writers_and_a_person_lose_nothing(tmp_path):
    vault = tmp_path / "vault"
    store = open_store(vault)
    store.init()
    seeded = seed(vault)
    store.sync()
    initial = {m["id"]: m["use_count"] for m in store.search(None, top_k=100, status="all")["results"]}
    store.close()
    assert set(initial) == set(seeded)

    tests_dir = str(Path(__file__).parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(vaultmem.__file__).parent.parent), tests_dir]))
    # the watcher daemon syncs and runs maintenance while everything else writes
    watcher = subprocess.Popen([sys.executable, "-m", "vaultmem", "watch", "--vault", str(vault)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(vault), str(w), str(OPS), tests_dir],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
             for w in range(WORKERS)]
    procs.append(subprocess.Popen([sys.executable, "-c", MCP_CLIENT, str(vault), "77", str(OPS), tests_dir],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True))
    procs.append(subprocess.Popen([sys.executable, "-c", PERSON, str(vault), "99", str(PERSON_EDITS), tests_dir],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True))
    outputs = [p.communicate(timeout=900) for p in procs]
    assert watcher.poll() is None, watcher.communicate()[1][-2000:]  # it survived the whole run
    watcher.send_signal(signal.SIGTERM)  # finishes the batch in hand, then exits
    watcher_err = watcher.communicate(timeout=120)[1]
    assert watcher.returncode == 0, watcher_err[-2000:]
    assert "Traceback" not in watcher_err, watcher_err[-2000:]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    logs = [json.loads(out) for out, _ in outputs[:WORKERS + 1]]  # the workers and the MCP client
    person_log = json.loads(outputs[-1][0])

    errors = [entry for log in logs for entry in log if entry[0] == "error"]
    assert errors == [], errors
    saved = [entry[1] for log in logs for entry in log if entry[0] == "save"]
    touches = Counter(entry[1] for log in logs for entry in log if entry[0] == "touch")

    # every memory exactly once, every note parses
    ids = ids_by_file(vault)
    assert {i: n for i, n in ids.items() if n != 1} == {}
    assert set(ids) == set(seeded) | set(saved)

    # use counts add up: no touch was lost to a concurrent write or move
    by_id = {}
    for rel, text in memory_files(vault).items():
        props = parse(text)
        by_id[str(props["id"])] = (rel, props, text)
    for ident in set(seeded) | set(saved):
        expected = initial.get(ident, 0) + touches.get(ident, 0)
        assert by_id[ident][1]["use_count"] == expected, (ident, by_id[ident][0])

    # every relation a worker wrote is still in its note (a later rewrite never dropped it)
    relations = [entry[1:] for log in logs for entry in log if entry[0] == "relate"]
    names = {ident: rel.rsplit("/", 1)[1][:-3] for ident, (rel, _p, _t) in by_id.items()}
    for a, b in relations:
        assert f"[[{names[b]}]]" in by_id[a][2], (by_id[a][0], names[b])

    # no block version was lost: the final version counts every successful set
    block_sets = [entry[1] for log in logs for entry in log if entry[0] == "block"]
    if block_sets:
        block = parse((vault / "memory" / "blocks" / "block-shared-plan.md").read_text(encoding="utf-8"))
        assert block["version"] == len(block_sets) == max(block_sets)
        assert len(set(block_sets)) == len(block_sets)  # no two writers got the same version

    # the person's edits survived every vaultmem write and move
    for ident, marker in person_log:
        rel, props, text = by_id[ident]
        assert text.count(marker) == 1, (rel, marker)
        assert "person-edit" in props["tags"], rel
    assert (vault / "Projects" / "Apollo.md").read_text(encoding="utf-8").endswith("Edited during the run.\n")

    status = check_after_next_command(vault)
    moved = sum(entry[1] for log in logs for entry in log if entry[0] in ("gc", "promote"))
    report("concurrency", processes=WORKERS + 4, operations=(WORKERS + 1) * OPS,
           saves=len(saved), touches=sum(touches.values()), relations=len(relations), block_sets=len(block_sets),
           moves=moved, person_edits=len(person_log),
           notes_at_end=status["notes_on_disk"], files_lost=0, lost_updates=0)
    assert len(saved) > 0 and sum(touches.values()) > 0 and moved > 0
