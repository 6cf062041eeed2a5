"""Platforms: every fallback of base/portable.py run here on Linux (VAULTMEM_PLATFORM_RULES),
names valid on Linux, macOS, Windows and in Obsidian, and no two files differing only in case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path

import pytest
from conftest import invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem import watcher as w
from vaultmem.base import portable
from vaultmem.base.errors import InvalidInput, VaultmemError
from vaultmem.storage import note as notes
from vaultmem.storage import segments
from vaultmem.storage.vault import safe_file_name
from vaultmem.store import MemoryStore

RULES = "VAULTMEM_PLATFORM_RULES"
LINUX = sys.platform == "linux"  # where nothing needs a fallback; elsewhere the fallbacks are the real thing


def memory_text(ident: str, body: str, created: str = "2026-11-20T10:00:00Z", last_used: str = "2026-11-20T10:00:00Z",
                use_count: int = 0) -> str:
    return (f"---\nid: {ident}\ncreated: {created}\nlast_used: {last_used}\nuse_count: {use_count}\n"
            f"strength: 1.0\nstatus: active\ntags: []\n---\n{body}\n")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- the switches -------------------------------------------------------------------------------


def test_switches_are_read_at_each_call(monkeypatch):
    assert portable.forced() == frozenset()
    if LINUX:
        assert portable.can_fork() is True and portable.has_fcntl() is True and portable.glibc() is not None
    monkeypatch.setenv(RULES, " No-Fork , case-insensitive,unknown")
    assert portable.forced() == {"no-fork", "case-insensitive"}
    assert portable.can_fork() is False and portable.pool_context().get_start_method() == "spawn"
    assert portable.case_insensitive_fs(Path.cwd()) is True
    monkeypatch.setenv(RULES, "windows")
    assert portable.forced() == set(portable.RULES)
    assert (portable.can_fork(), portable.has_fcntl(), portable.glibc()) == (False, False, None)


def test_case_insensitivity_is_probed_on_the_real_file_system(tmp_path):
    folder = tmp_path / "Probe"
    folder.mkdir()
    assert portable.case_insensitive_fs(folder) is (sys.platform in ("darwin", "win32"))  # default file systems


# -- one watcher per vault, with and without fcntl ---------------------------------------------


@pytest.mark.parametrize("rules", ["", "no-fcntl"])
def test_a_second_watcher_is_told_the_running_pid(tmp_path, monkeypatch, rules):
    monkeypatch.setenv(RULES, rules)
    state = tmp_path / ".vaultmem"
    first, second = w.InstanceLock(state), w.InstanceLock(state)
    first.acquire()
    assert (state / w.PID_FILE).read_text() == f"{os.getpid()}\n"
    assert second.held_by_other() is True and first.held_by_other() is False
    with pytest.raises(VaultmemError) as info:
        second.acquire(wait=0.1)
    assert str(info.value) == (f"a watcher already runs for this vault (PID {os.getpid()}); stop it first "
                               f"(`kill {os.getpid()}`) or check it with `vaultmem watch --status`")
    first.release()
    assert not (state / w.PID_FILE).exists()
    assert second.held_by_other() is False
    second.acquire(wait=0.1)
    assert second.stale_pid is None
    second.release()


@pytest.mark.skipif(sys.platform == "win32", reason="Windows locks with its own call; the PID lock file is for neither")
def test_without_fcntl_a_dead_watchers_lock_file_is_taken_over(tmp_path, monkeypatch):
    monkeypatch.setenv(RULES, "no-fcntl")
    state = tmp_path / ".vaultmem"
    (state / "state").mkdir(parents=True)
    gone = dead_pid()
    (state / w.LOCK_FILE).write_text(f"{gone}\n")  # what a killed watcher leaves
    (state / w.PID_FILE).write_text(f"{gone}\n")
    lock = w.InstanceLock(state)
    assert lock.held_by_other() is False
    lock.acquire(wait=0.1)
    assert lock.stale_pid == gone
    assert (state / w.LOCK_FILE).read_text() == f"{os.getpid()}\n"
    lock.release()
    assert not (state / w.LOCK_FILE).exists()


@pytest.mark.skipif(sys.platform == "win32", reason="Windows locks with its own call; the PID lock file is for neither")
def test_without_fcntl_a_live_holder_keeps_its_lock(tmp_path, monkeypatch):
    monkeypatch.setenv(RULES, "no-fcntl")
    state = tmp_path / ".vaultmem"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (state / "state").mkdir(parents=True)
        (state / w.LOCK_FILE).write_text(f"{holder.pid}\n")
        (state / w.PID_FILE).write_text(f"{holder.pid}\n")
        with pytest.raises(VaultmemError, match=rf"^a watcher already runs for this vault \(PID {holder.pid}\)"):
            w.InstanceLock(state).acquire(wait=0.1)
    finally:
        holder.kill()
        holder.wait()


# -- no glibc ------------------------------------------------------------------------------------


def test_without_glibc_the_heap_tweaks_do_nothing(monkeypatch):
    assert (w._malloc_trim() is not None) is LINUX
    monkeypatch.setenv(RULES, "no-glibc")
    assert w._glibc() is None and w._malloc_trim() is None
    w._tune_malloc()  # a no-op, not an AttributeError


# -- no fork: spawned children -------------------------------------------------------------------


def test_without_fork_a_spawned_child_merges_the_segments(tmp_path, monkeypatch):
    from test_segments import assert_every_note_current, committed_without_merging, sizes

    monkeypatch.setenv(RULES, "no-fork")
    store, versions = committed_without_merging(tmp_path / "v", notes=20, edits=12)
    try:
        assert len(sizes(store)) == 13
        pid = segments.start_merge(store.vault)
        assert pid in segments._SPAWNED
        assert segments.finished(pid, wait=True) == segments.MERGED
        assert pid not in segments._SPAWNED
        assert sizes(store) == [(20, 0)]
        assert_every_note_current(store, versions)
        again = segments.start_merge(store.vault)
        assert segments.finished(again, wait=True) == segments.NOTHING_TO_DO
    finally:
        store.close()


def test_without_fork_a_big_rebuild_parses_in_spawned_workers(sample_vault, clock, monkeypatch):
    import vaultmem.storage.index as index_module

    store = MemoryStore(sample_vault, clock=clock)
    serial = store.rebuild_index()
    assert store.index.parse_context is None
    monkeypatch.setattr(index_module, "PARALLEL_PARSE_MIN", 1)
    monkeypatch.setenv(RULES, "no-fork")
    spawned = store.rebuild_index()
    assert store.index.parse_context == "spawn"
    assert spawned == serial
    assert store.search("café zürich")["results"][0]["id"].startswith("9c1e44f0")
    monkeypatch.setenv(RULES, "")
    store.rebuild_index()
    assert store.index.parse_context == ("fork" if LINUX else "spawn")
    store.close()


# -- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "problem"), [
    ("CON", "is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension)"),
    ("aux.md", "is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension)"),
    ("LPT1.x", "is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension)"),
    ("com9 .txt", "is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension)"),
    ("a:b?.md", "contains ':', '?', which Windows or Obsidian forbid in file names"),
    ("x#1 [draft].md", "contains '#', '[', ']', which Windows or Obsidian forbid in file names"),
    ("tab\there", "contains U+0009, which Windows or Obsidian forbid in file names"),
    ("notes.", "ends in a dot or a space, which Windows drops from file names"),
    ("notes ", "ends in a dot or a space, which Windows drops from file names"),
    ("x" * 121, "is 121 characters; the limit is 120 (Windows' 260-character paths)"),
    ("", "is empty"),
])
def test_name_problems_are_named(name, problem):
    assert portable.name_problem(name) == problem


@pytest.mark.parametrize("name", ["CONSOLE.md", "com10.md", "LPT0", "con-notes.md", "café ^ok".replace("^", "-"),
                                  "x" * 120, "block-CON.md"])
def test_names_every_platform_accepts(name):
    assert portable.name_problem(name) is None


def test_path_budget():
    assert portable.path_problem("memory/stm/" + "x" * 100 + ".md") is None
    long = "/".join(["folder"] * 30) + "/x.md"
    assert portable.path_problem(long) == (f"is {len(long)} characters from the vault's folder; the limit is 200, "
                                           "so the full path stays within Windows' 260")
    assert portable.path_problem("memory/a|b/x.md") == (
        "has a part 'a|b' that contains '|', which Windows or Obsidian forbid in file names")


@pytest.mark.parametrize(("name", "message"), [
    ("CON", "block name 'CON' is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any "
            "extension); use another name, such as 'CON-block'"),
    ("lpt1.x", "block name 'lpt1.x' is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any "
               "extension); use another name, such as 'lpt1-block.x'"),
    ("draft.", "block name 'draft.' ends in a dot or a space, which Windows drops from file names; use another "
               "name, such as 'draft-block'"),
])
def test_bad_block_names_get_one_line_with_the_fix(runner, vault_path, name, message):
    result = invoke(runner, "block", "set", name, "text")
    assert result.exit_code != 0
    assert result.output.endswith(f"Error: {message}\n")
    assert not list((vault_path / "memory/blocks").glob("*.md"))


@settings(max_examples=200, deadline=None)
@given(content=st.text(min_size=1, max_size=400), folder=st.sampled_from(["memory/stm", "memory/ltm/work"]))
def test_generated_memory_names_pass_every_platforms_rules(content, folder):
    ident = str(uuid.uuid4())
    rel = f"{folder}/{notes.slugify(content)}-{ident[:8]}.md"
    assert portable.path_problem(rel) is None, rel
    numbered = f"{folder}/{notes.slugify(content)}-{ident[:8]}-{ident[:8]}-999.md"  # a free name on a clash
    assert portable.path_problem(numbered) is None, numbered


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_sanitized_names_pass_every_platforms_rules(name):
    safe = safe_file_name(name)
    assert portable.name_problem(safe) is None, safe
    assert portable.name_problem(f"{safe} 1.md") is None  # what the trash numbers it


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", fullmatch=True))
def test_accepted_block_names_make_valid_files(name):
    from vaultmem.features.mnemosyne.blocks import FILE_PREFIX, check_name

    try:
        accepted = check_name(name)
    except InvalidInput:
        assert portable.name_problem(name) is not None or name.endswith(".md")
        return
    assert portable.name_problem(accepted) is None
    assert portable.path_problem(f"memory/blocks/{FILE_PREFIX}{accepted}.md") is None


# -- case: never two files differing only in case ------------------------------------------------

CASE_RULES = ["", "case-insensitive"]  # the result is the same on both kinds of file system


# names whose case folding is not one letter for one letter: ß -> ss, the Kelvin sign -> k, Σ/ς/σ
_FOLDY = st.text(st.sampled_from("aAbBsSßẞkKKσΣςİi.-1"), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(_FOLDY, max_size=12, unique=True), st.lists(_FOLDY, max_size=4), _FOLDY)
def test_folded_names_find_every_spelling_of_a_form(names, added, probe):
    folded = portable.FoldedNames([os.fsencode(name) for name in names])
    for name in added:
        folded.add(name)
    everything = [*names, *added]
    for key in {n.casefold() for n in everything} | {probe.casefold()}:
        assert sorted(folded.get(key)) == sorted(n for n in everything if n.casefold() == key)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from("aAbBkK.-1"), min_size=1, max_size=4), max_size=12, unique=True),
       st.lists(_FOLDY, max_size=4), _FOLDY)
def test_folded_ascii_names_find_every_spelling_of_a_form(names, added, probe):
    # an ASCII listing is searched as one lowered string: forms that are prefixes of others,
    # the first and the last name, probes that fold to ASCII (the Kelvin sign) or do not
    folded = portable.FoldedNames([os.fsencode(name) for name in names])
    for name in added:
        folded.add(name)
    everything = [*names, *added]
    for key in {n.casefold() for n in everything} | {probe.casefold(), "k", "a.", ".-1"}:
        assert sorted(folded.get(key)) == sorted(n for n in everything if n.casefold() == key)


@pytest.mark.parametrize("rules", CASE_RULES)
def test_save_takes_a_free_name_beside_a_case_variant(store, vault_path, monkeypatch, rules):
    monkeypatch.setenv(RULES, rules)
    fixed = uuid.UUID("7f3c2a1e-5b9d-4c1e-9a0b-2d4e6f8a1c3e")
    monkeypatch.setattr("vaultmem.core.memories.uuid.uuid4", lambda: fixed)
    (vault_path / "memory/stm/Hello-World-7f3c2a1e.md").write_text("the person's note\n")
    result = store.save("hello world", dedupe=False)
    assert result["path"] == "memory/stm/hello-world-7f3c2a1e-1.md"
    assert (vault_path / "memory/stm/Hello-World-7f3c2a1e.md").read_text() == "the person's note\n"


@pytest.mark.parametrize("rules", CASE_RULES)
def test_moves_take_a_free_name_and_an_existing_folders_spelling(store, vault_path, monkeypatch, rules):
    monkeypatch.setenv(RULES, rules)
    a, b = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    (vault_path / "memory/stm/Work").mkdir()
    (vault_path / "memory/stm/Work/Plan.md").write_text(memory_text(a, "the plan"))
    (vault_path / "memory/stm/Work/ideas.md").write_text(memory_text(b, "the ideas"))
    (vault_path / "memory/ltm/work").mkdir(parents=True)
    (vault_path / "memory/ltm/work/plan.md").write_text("the person's own plan\n")
    moved = store.promote(a, force=True)
    assert moved["promoted_count"] == 1
    assert sorted(p.name for p in (vault_path / "memory/ltm").iterdir()) == ["work"]
    assert sorted(p.name for p in (vault_path / "memory/ltm/work").iterdir()) == ["Plan-11111111.md", "plan.md"]
    store.promote(b, force=True)
    assert sorted(p.name for p in (vault_path / "memory/ltm/work").iterdir()) == [
        "Plan-11111111.md", "ideas.md", "plan.md"]


@pytest.mark.parametrize("rules", CASE_RULES)
def test_gc_archive_and_trash_avoid_case_variants(store, vault_path, monkeypatch, rules):
    monkeypatch.setenv(RULES, rules)
    old = "33333333-3333-4333-8333-333333333333"
    (vault_path / "memory/stm/Old.md").write_text(memory_text(old, "an old fact", "2025-01-01T00:00:00Z",
                                                              "2025-01-01T00:00:00Z"))
    (vault_path / "memory/archive").mkdir(parents=True, exist_ok=True)
    (vault_path / "memory/archive/old.md").write_text("the person's note\n")
    result = store.gc(apply=True)
    assert (result["archived_count"], result["removed_count"]) == (1, 0)
    assert sorted(p.name for p in (vault_path / "memory/archive").iterdir()) == ["Old-33333333.md", "old.md"]
    (vault_path / ".trash").mkdir()
    (vault_path / ".trash/old-33333333.md").write_text("trashed before\n")
    trashed = store.vault.trash("memory/archive/Old-33333333.md")
    assert trashed == ".trash/Old-33333333 1.md"


def test_a_block_differing_only_in_case_is_refused(store, vault_path):
    store.block_set("persona", "terse")
    with pytest.raises(InvalidInput) as info:
        store.block_set("Persona", "chatty")
    assert str(info.value) == ("block name 'Persona' differs only in case from the block 'persona', which macOS and "
                               "Windows keep in the same file; use 'persona'")
    assert sorted(p.name for p in (vault_path / "memory/blocks").iterdir()) == ["block-persona.md"]


def test_files_vaultmem_writes_never_differ_only_in_case(store, vault_path):
    (vault_path / "memory/Graph.canvas").write_text("{}\n")
    with pytest.raises(VaultmemError) as info:
        store.export_canvas("memory/graph.canvas")
    assert str(info.value) == ("cannot create memory/graph.canvas: memory/Graph.canvas exists and differs only in case, "
                               "which macOS and Windows treat as the same file; use that name or another")
    assert (vault_path / "memory/Graph.canvas").read_text() == "{}\n"
    with pytest.raises(InvalidInput) as bad:
        store.export_canvas("memory/aux.canvas")
    assert str(bad.value) == ("cannot create memory/aux.canvas: the path has a part 'aux.canvas' that is a device "
                              "name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension); "
                              "choose a shorter or plainer name")


# -- the daily commands with Windows' rules -----------------------------------------------------


def test_watch_save_search_gc_run_with_windows_rules(runner, vault_path, monkeypatch):
    from test_watcher import Running, hits, wait_for

    monkeypatch.setenv(RULES, "windows")
    saved = invoke(runner, "save", "The deploy window is Tuesday 14:00 UTC", "--json")
    assert saved.exit_code == 0
    path = json.loads(saved.stdout)["path"]
    assert portable.path_problem(path) is None
    found = invoke(runner, "search", "deploy window", "--json")
    assert found.exit_code == 0
    assert [r["path"] for r in json.loads(found.stdout)["results"]] == [path]
    gc = invoke(runner, "gc", "--json")
    assert gc.exit_code == 0 and json.loads(gc.stdout)["success"] is True
    once = invoke(runner, "watch", "--once", "--json")
    assert once.exit_code == 0 and json.loads(once.stdout)["success"] is True

    r = Running(vault_path)  # the daemon: PID lock file, spawned merge children, no glibc
    try:
        assert (vault_path / ".vaultmem" / w.LOCK_FILE).read_text() == f"{os.getpid()}\n"
        assert r.store.index.merge_on_commit is False
        status = invoke(runner, "watch", "--status", "--json")
        assert json.loads(status.stdout)["running"] is True
        (vault_path / "memory/stm/kestrel.md").write_text(memory_text(str(uuid.uuid4()), "kestrels hover"))
        reader = MemoryStore(vault_path)
        wait_for(lambda: hits(reader, "kestrels") == ["memory/stm/kestrel.md"], what="the watcher's batch")
        reader.close()
        second = invoke(runner, "watch")
        assert second.exit_code == 1
        assert f"a watcher already runs for this vault (PID {os.getpid()})" in second.output
    finally:
        r.stop()
    assert not (vault_path / ".vaultmem" / w.LOCK_FILE).exists()


def test_the_ci_workflow_runs_the_readme_test_command_everywhere():
    import yaml

    root = Path(__file__).resolve().parent.parent
    flow = yaml.safe_load((root / ".github/workflows/test.yml").read_text(encoding="utf-8"))
    job = flow["jobs"]["test"]
    assert job["strategy"]["matrix"] == {"os": ["ubuntu-latest", "macos-latest", "windows-latest"],
                                         "python": ["3.10", "3.11", "3.12", "3.13"]}
    assert job["defaults"]["run"]["shell"] == "bash"
    assert job["steps"][-1]["run"] == "make test PYTHON=python"
    assert "make test" in (root / "README.md").read_text(encoding="utf-8")
    assert (root / ".ci/run").read_text(encoding="utf-8").rstrip().endswith("make test")


def test_a_folder_is_listed_again_once_it_changed_and_not_for_vaultmems_own_saves(store, vault_path, monkeypatch):
    calls: list[str] = []
    real = os.listdir
    monkeypatch.setattr(portable.os, "listdir", lambda folder: calls.append(os.fsdecode(folder)) or real(folder))
    stm = vault_path / "memory/stm"
    for i in range(5):
        store.save(f"fact number {i} about otters", dedupe=False)
    assert calls.count(str(stm)) == 1  # each save added its own name to the listing
    before = os.stat(stm).st_mtime_ns
    (stm / "Person-Made.md").write_text("written by the person\n")
    # a later tick of the folder's clock (file systems stamp folders coarsely)
    os.utime(stm, ns=(before + 10_000_000, before + 10_000_000))
    assert portable.case_variant(stm / "person-made.md") == stm / "Person-Made.md"
    assert calls.count(str(stm)) == 2


@pytest.mark.parametrize("stat_at", [True, False], ids=["folder-descriptor", "full-path"])
def test_the_scan_finds_the_same_notes_through_a_folder_descriptor_or_by_path(tmp_path, monkeypatch, stat_at):
    """Vault.scan stats each note by name in an open folder where the OS allows it (Linux,
    macOS) and by its full path elsewhere (Windows): both find exactly the notes, the temp
    files of interrupted writes and the canvases, and skip what the scan always skips."""
    from vaultmem.base import walk

    root = tmp_path / "v"
    for rel in ("memory/stm/a.md", "memory/ltm/Ünïcode ñame.md", "Projects/deep/er/still.md", "top.md",
                "memory/stm/.a.md.vaultmem-tmp-123-x", "Boards/plan.canvas", ".obsidian/workspace.md",
                "node_modules/pkg/readme.md", ".hidden.md", "memory/stm/not-a-note.txt",
                "Old notes.md/inside.md"):  # a folder whose name ends in .md is walked into
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x" * len(rel), encoding="utf-8")
    (root / "memory/stm/link.md").symlink_to(root / "top.md")  # a symlink is not a note
    (root / "linked-folder").symlink_to(root / "Projects", target_is_directory=True)  # never followed
    monkeypatch.setattr(walk, "_STAT_AT", stat_at and walk._STAT_AT)
    store = MemoryStore(root)
    found = store.vault.scan()
    assert sorted(found) == ["Old notes.md/inside.md", "Projects/deep/er/still.md", "memory/ltm/Ünïcode ñame.md",
                             "memory/stm/a.md", "top.md"]
    for rel, (mtime_ns, size) in found.items():
        st = os.stat(root / rel)
        assert (mtime_ns, size) == (st.st_mtime_ns, st.st_size)
    assert store.vault.temp_files == [str(root / "memory/stm/.a.md.vaultmem-tmp-123-x")]
    assert store.vault.canvas_files() == ["Boards/plan.canvas"]
    store.close()


@pytest.mark.skipif(not portable.has_fcntl(), reason="flock: POSIX")
def test_file_lock_counts_nested_holds_and_excludes_every_other_holder(tmp_path):
    path = tmp_path / "lock"
    first, second = portable.FileLock(path), portable.FileLock(path)
    assert first.acquire(timeout=0) and first.acquire(timeout=0)  # nested: counted
    assert not second.acquire(timeout=0)  # another open of the file, in this very process
    start = time.monotonic()
    assert not second.acquire(timeout=0.2)
    assert time.monotonic() - start >= 0.2
    first.release()
    assert first.is_locked and not second.acquire(timeout=0)  # one hold left
    first.release()
    assert not first.is_locked and second.acquire(timeout=0)
    held = subprocess.run([sys.executable, "-c", "import sys; from vaultmem.base import portable; "
                           "sys.exit(0 if portable.FileLock(sys.argv[1]).acquire(timeout=0) else 3)", str(path)])
    assert held.returncode == 3  # another process waits too
    second.release()
    second.release()  # one release too many: nothing to drop
    assert first.acquire(timeout=0)
    first.release()


@pytest.mark.skipif(not hasattr(os, "fork") or not portable.has_fcntl(), reason="fork and flock: POSIX")
def test_a_forked_child_does_not_keep_its_parent_s_lock(tmp_path):
    path = tmp_path / "lock"
    lock = portable.FileLock(path)
    assert lock.acquire(timeout=0)
    read, write = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns about fork in threaded processes
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: holds nothing, and can take the lock once the parent lets go
        os.close(read)
        try:
            mine = portable.FileLock(path)
            ok = not lock.is_locked and lock.fd is None and mine.acquire(timeout=5)
            os.write(write, b"1" if ok else b"0")
            time.sleep(0.5)  # hold it a while, then exit
        finally:
            os._exit(0)
    os.close(write)
    lock.release()  # the child's copy of the descriptor was closed at the fork: the lock is free
    assert os.read(read, 1) == b"1"
    assert not lock.acquire(timeout=0)  # the child holds it now
    os.waitpid(pid, 0)
    assert lock.acquire(timeout=0)
    lock.release()
    os.close(read)


def test_a_vault_lock_held_elsewhere_is_waited_for_then_named(store, vault_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from vaultmem.base import portable; "
                               "lock = portable.FileLock(sys.argv[1]); lock.acquire(timeout=5); print('held', flush=True); "
                               "time.sleep(30)", str(store.vault.derived_dir / "lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        start = time.monotonic()
        with pytest.raises(VaultmemError) as raised, store.vault.lock(timeout=0.3):
            pass
        assert time.monotonic() - start >= 0.3
        assert str(raised.value) == (f"another vaultmem process has held {store.vault.derived_dir / 'lock'} for 0 s; "
                                     "check for a stuck process and retry")
    finally:
        holder.kill()
        holder.wait()
    with store.vault.lock(timeout=5), store.vault.lock(timeout=0):  # free again, and re-entrant
        pass


def _merge_holder(vault: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process that holds the vault lock as a segment merge does (Vault.merging) for
    `seconds`, then lets it go."""
    code = ("import sys, time; from pathlib import Path; from vaultmem.base.config import Settings; "
            "from vaultmem.storage.vault import Vault; v = Vault(Path(sys.argv[1]), Settings()); "
            "cm = v.lock(timeout=5); cm.__enter__(); rec = v.merging(); rec.__enter__(); print('held', flush=True); "
            "time.sleep(float(sys.argv[2])); rec.__exit__(None, None, None); cm.__exit__(None, None, None)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(vault), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_writer_waits_out_the_watcher_s_index_merge(store, vault_path):
    """A segment merge holds the lock as long as it takes (~90 s at 100,000 notes): a writer
    that meets one waits for it past its own timeout, and gets the lock when it ends."""
    holder = _merge_holder(vault_path, 1.5)
    try:
        assert store.vault.merge_holding()[0] == holder.pid
        start = time.monotonic()
        with store.vault.lock(timeout=0.3):
            waited = time.monotonic() - start
        assert 1.0 <= waited < 10
        assert store.vault.merge_holding() is None
        assert not (store.vault.derived_dir / "merging.json").exists()  # the merge removed its record
    finally:
        holder.kill()
        holder.wait()


def test_a_merge_that_outlasts_the_wait_is_named(store, vault_path, monkeypatch):
    from vaultmem.storage import vault as vault_mod

    monkeypatch.setattr(vault_mod, "MERGE_WAIT", 0.5)
    holder = _merge_holder(vault_path, 30)
    try:
        with pytest.raises(VaultmemError) as raised, store.vault.lock(timeout=0.3):
            pass
        message = str(raised.value)
        assert message.startswith(f"the watcher's index merge (PID {holder.pid}) has held "
                                  f"{store.vault.derived_dir / 'lock'} for ")
        assert message.endswith(" s; it ends on its own: retry when it has")
    finally:
        holder.kill()
        holder.wait()
    # a record its dead merge left behind (killed) is not a merge: the lock is free again
    assert (store.vault.derived_dir / "merging.json").exists() and store.vault.merge_holding() is None
    with store.vault.lock(timeout=1):
        pass
