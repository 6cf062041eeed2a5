"""`vaultmem sync`: several clones of one vault through a git remote converge and lose nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import invoke

from vaultmem.cli import cli
from vaultmem.features.sync import merge_properties


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch):
    for key, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.test", "GIT_COMMITTER_NAME": "t",
                       "GIT_COMMITTER_EMAIL": "t@example.test", "GIT_CONFIG_NOSYSTEM": "1"}.items():
        monkeypatch.setenv(key, value)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def vm(runner, device: Path, *args: str, now: str | None = None, code: int = 0):
    env = {"VAULTMEM_NOW": now} if now else None
    result = runner.invoke(cli, [*args, "--vault", str(device)], env=env, catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def memory_files(device: Path) -> dict[str, bytes]:
    return {p.relative_to(device).as_posix(): p.read_bytes() for p in sorted((device / "memory").rglob("*.md"))}


def first_device(tmp_path: Path, runner) -> tuple[Path, Path]:
    """An empty bare remote, and a vault in a git repository with it as `origin`."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    first = tmp_path / "first"
    assert invoke(runner, "init", str(first)).exit_code == 0
    git(first, "init", "-q", "-b", "main")
    git(first, "remote", "add", "origin", str(bare))
    return bare, first


@pytest.fixture
def remote(tmp_path, runner):
    """A bare remote holding one vault with one memory; `clone(name)` makes a device."""
    bare, first = first_device(tmp_path, runner)
    saved = json.loads(vm(runner, first, "save", "Deploys go out on Tuesdays", "--json").output)
    vm(runner, first, "sync", "setup")
    git(first, "add", "-A")
    git(first, "commit", "-q", "-m", "vault")
    git(first, "push", "-q", "-u", "origin", "main")

    def clone(name: str) -> Path:
        device = tmp_path / name
        git(tmp_path, "clone", "-q", str(bare), name)
        return device

    clone.saved = saved  # type: ignore[attr-defined]
    return clone


def test_status_clash_keeps_the_more_lasting_state():
    base = {"status": "active", "use_count": 1}
    promoted = {"status": "promoted", "promoted_at": "2026-11-02T10:00:00Z", "use_count": 2}
    archived = {"status": "archived", "archived_at": "2027-06-01T00:00:00Z", "use_count": 2}
    for ours, theirs in ((promoted, archived), (archived, promoted)):
        merged, clashes = merge_properties(base, ours, theirs)
        assert clashes == []
        assert merged == {"status": "promoted", "promoted_at": "2026-11-02T10:00:00Z", "use_count": 3}
    # one side's move alone is an ordinary change
    merged, _ = merge_properties(promoted, {**promoted, "status": "archived"}, promoted)
    assert merged["status"] == "archived"


def test_a_memory_promoted_here_and_archived_there_becomes_one_note(runner, remote):
    laptop, desktop = remote("laptop"), remote("desktop")
    mid, rel = remote.saved["memory_id"], remote.saved["path"]
    name = rel.rsplit("/", 1)[1][:-3]
    (laptop / "Projects.md").write_text(f"See [[{name}]] and [path]({rel.replace(' ', '%20')}).\n")
    first = vm(runner, laptop, "sync", "--all")  # --all: the person's note too, as the Obsidian Git plugin does
    assert "registered the merge driver" in first.output and "pushed" in first.output
    vm(runner, desktop, "sync", "--all")
    vm(runner, laptop, "promote", mid[:8], "--force", "--apply", now="2026-11-23T10:00:00Z")
    vm(runner, laptop, "touch", mid[:8], now="2026-11-23T11:00:00Z")
    vm(runner, laptop, "sync", "--all", now="2026-11-23T11:00:00Z")
    vm(runner, desktop, "touch", mid[:8], now="2026-11-24T10:00:00Z")
    vm(runner, desktop, "touch", mid[:8], now="2026-11-24T10:05:00Z")
    assert "Archived 1" in vm(runner, desktop, "gc", "--apply", now="2027-06-01T00:00:00Z").output
    out = json.loads(vm(runner, desktop, "sync", "--all", "--json", now="2027-06-01T00:00:00Z").output)
    ltm = f"memory/ltm/{rel.rsplit('/', 1)[1]}"
    archived = f"memory/archive/{rel.rsplit('/', 1)[1]}"
    assert out["success"] and out["pushed"] and out["merge"] == "merged"
    assert [(d["kept"], d["merged"], d["ancestor"]) for d in out["duplicates"]] == [(ltm, archived, True)]
    assert out["clashes"] == []
    vm(runner, laptop, "sync", "--all")
    assert memory_files(laptop) == memory_files(desktop)
    text = (desktop / ltm).read_text()
    assert "use_count: 3\n" in text and "status: promoted\n" in text and "archived_at" not in text
    assert "<<<<<<<" not in text and not (desktop / archived).exists()
    assert "last_used: 2026-11-24T10:05:00Z\n" in text
    # the index follows: one memory, long-term, three uses; the person's links resolve to it
    opened = json.loads(vm(runner, desktop, "open", mid[:8], "--json").output)["memories"]
    assert [(m["path"], m["use_count"]) for m in opened] == [(ltm, 3)]
    projects = (desktop / "Projects.md").read_text()
    assert f"[[{name}]]" in projects and f"({ltm.replace(' ', '%20')})" in projects


def test_sync_without_a_remote_commits_here_only(runner, tmp_path):
    device = tmp_path / "solo"
    assert invoke(runner, "init", str(device)).exit_code == 0
    git(device, "init", "-q", "-b", "main")
    vm(runner, device, "save", "Deploys go out on Tuesdays")
    (device / "Diary.md").write_text("mine\n")
    out = vm(runner, device, "sync")
    assert out.output.endswith("no remote: committed here only; add one with `git remote add origin URL` "
                               "and `git push -u origin HEAD`\n")
    tracked = git(device, "ls-files").split()
    assert ".gitattributes" in tracked and ".vaultmem/config.yaml" in tracked and "Diary.md" not in tracked
    assert not any(p.startswith(".vaultmem/index") for p in tracked)
    assert git(device, "status", "--porcelain").split("\n")[:2] == ["?? .obsidian/", "?? Diary.md"]  # yours
    vm(runner, device, "sync", "--all")
    assert "Diary.md" in git(device, "ls-files").split()


def test_sync_outside_git_names_the_fix(runner, vault_path):
    result = vm(runner, vault_path, "sync", code=1)
    assert result.output == (f"Error: {vault_path} is not in a git repository; run `git init` there and add a remote "
                             "(`git remote add origin URL`), or use your sync tool and `vaultmem sync copies`\n")


def test_a_branch_without_upstream_names_the_fix(runner, tmp_path):
    device = tmp_path / "solo"
    assert invoke(runner, "init", str(device)).exit_code == 0
    git(device, "init", "-q", "-b", "main")
    git(device, "remote", "add", "origin", str(tmp_path / "other.git"))
    git(device, "remote", "add", "backup", str(tmp_path / "backup.git"))
    result = vm(runner, device, "sync", code=1)
    assert result.output.endswith("Error: branch main has no upstream; run `git push -u origin main` once, "
                                  "then `vaultmem sync`\n")


def test_a_conflict_in_the_person_s_note_stops_the_sync_and_names_it(runner, remote):
    laptop, desktop = remote("laptop"), remote("desktop")
    mid = remote.saved["memory_id"]
    for device, line, now in ((laptop, "laptop's line", "2026-11-23T09:00:00Z"),
                              (desktop, "desktop's line", "2026-11-23T09:30:00Z")):
        (device / "Diary.md").write_text(f"{line}\n")
        vm(runner, device, "touch", mid[:8], now=now)
    vm(runner, laptop, "sync", "--all")
    result = vm(runner, desktop, "sync", "--all", code=1)
    assert result.output.endswith("Error: git could not merge 1 of your notes (Diary.md); fix the conflict markers "
                                  "in them, `git add` them, then run `vaultmem sync` again\n")
    assert "laptop's line" in (desktop / "Diary.md").read_text()  # git's markers, both texts
    assert "use_count: 2\n" in (desktop / remote.saved["path"]).read_text()  # the memory merged meanwhile
    (desktop / "Diary.md").write_text("laptop's line\ndesktop's line\n")
    git(desktop, "add", "Diary.md")
    out = json.loads(vm(runner, desktop, "sync", "--json").output)
    assert out["success"] and out["pushed"]
    vm(runner, laptop, "sync")
    assert (laptop / "Diary.md").read_text() == "laptop's line\ndesktop's line\n"
    assert memory_files(laptop) == memory_files(desktop)


def test_an_older_gitignore_is_brought_up_to_date(runner, remote):
    laptop = remote("laptop")
    (laptop / ".vaultmem" / "embeddings.sqlite").write_bytes(b"derived")
    vm(runner, laptop, "sync")
    assert "embeddings.sqlite" not in git(laptop, "ls-files", ".vaultmem")
    assert git(laptop, "ls-files", ".vaultmem").split() == [".vaultmem/.gitignore", ".vaultmem/config.yaml"]


def test_the_first_sync_publishes_the_branch(runner, tmp_path):
    bare, device = first_device(tmp_path, runner)
    vm(runner, device, "save", "Deploys go out on Tuesdays")
    out = json.loads(vm(runner, device, "sync", "--json").output)
    assert out["pushed"] and out["committed"] and out["message"] == "in sync"
    assert git(device, "rev-parse", "--abbrev-ref", "@{u}").strip() == "origin/main"
    assert git(bare, "rev-parse", "main") == git(device, "rev-parse", "HEAD")


def test_one_memory_in_two_folders_outside_git_becomes_one_note(runner, vault_path):
    saved = json.loads(vm(runner, vault_path, "save", "Deploys go out on Tuesdays", "--json").output)
    rel = saved["path"]
    text = (vault_path / rel).read_text()
    archived = rel.replace("memory/stm/", "memory/archive/")
    (vault_path / archived).write_text(text.replace("use_count: 0", "use_count: 4")
                                       .replace("status: active", "status: archived"))
    preview = vm(runner, vault_path, "sync", "copies")
    assert preview.output == f"would merge: {archived} -> {rel} (one memory in two places)\n"
    assert (vault_path / archived).exists()
    out = json.loads(vm(runner, vault_path, "sync", "copies", "--apply", "--json").output)
    [item] = out["duplicates"]
    assert (item["kept"], item["merged"], item["status"], item["ancestor"]) == (rel, archived, "merged", False)
    assert item["trashed_to"] == ".trash/" + rel.rsplit("/", 1)[1]
    merged = (vault_path / rel).read_text()
    assert "use_count: 4\n" in merged and "status: active\n" in merged  # no ancestor: the larger count
    assert not (vault_path / archived).exists()
    opened = json.loads(vm(runner, vault_path, "open", saved["memory_id"][:8], "--json").output)["memories"]
    assert [(m["path"], m["use_count"]) for m in opened] == [(rel, 4)]


def test_init_git_makes_a_repository_with_the_merge_driver(runner, tmp_path):
    device = tmp_path / "vault"
    result = invoke(runner, "init", str(device), "--git", "--json")
    assert result.exit_code == 0, result.output
    done = json.loads(result.output)["git"]
    assert done["repository_created"] and done["repository"] == str(device)
    assert (device / ".gitattributes").read_text() == "memory/**/*.md merge=vaultmem\n"
    assert git(device, "config", "merge.vaultmem.driver").strip() == done["driver"]
    again = json.loads(invoke(runner, "init", str(device), "--git", "--json").output)["git"]
    assert not again["repository_created"] and not again["attributes_added"]


def test_a_plain_git_pull_stopped_by_a_memory_moved_on_both_devices_is_finished_by_vaultmem_sync(runner, remote):
    laptop, desktop = remote("laptop"), remote("desktop")
    mid, rel = remote.saved["memory_id"], remote.saved["path"]
    for device in (laptop, desktop):
        vm(runner, device, "sync", "setup")
    vm(runner, laptop, "promote", mid[:8], "--force", "--apply", now="2026-11-23T10:00:00Z")
    vm(runner, laptop, "sync", now="2026-11-23T10:00:00Z")
    vm(runner, desktop, "touch", mid[:8], now="2026-11-24T10:00:00Z")
    vm(runner, desktop, "gc", "--apply", now="2027-06-01T00:00:00Z")
    git(desktop, "add", "-A")
    git(desktop, "commit", "-q", "-m", "the desktop's work")
    pulled = subprocess.run(["git", "-C", str(desktop), "pull", "--no-rebase", "--no-edit"], capture_output=True,
                            text=True, check=False)
    assert pulled.returncode == 1 and "CONFLICT (rename/rename)" in pulled.stdout  # git cannot place it
    out = json.loads(vm(runner, desktop, "sync", "--json").output)
    name = rel.rsplit("/", 1)[1]
    assert out["success"] and out["pushed"]
    assert [(d["kept"], d["merged"]) for d in out["duplicates"]] == [(f"memory/ltm/{name}", f"memory/archive/{name}")]
    text = (desktop / "memory/ltm" / name).read_text()
    assert "use_count: 1\n" in text and "status: promoted\n" in text and "<<<<<<<" not in text
    assert git(desktop, "status", "--porcelain").split("\n")[0] != "UU"
    vm(runner, laptop, "sync")
    assert memory_files(laptop) == memory_files(desktop)


def test_a_vault_in_a_subfolder_of_the_repository_syncs_and_shares_the_attributes(runner, tmp_path):
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    repo = tmp_path / "laptop"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", str(bare))
    vault = repo / "docs" / "vault"
    assert invoke(runner, "init", str(vault)).exit_code == 0
    saved = json.loads(vm(runner, vault, "save", "Deploys go out on Tuesdays", "--json").output)
    vm(runner, vault, "sync")
    assert ".gitattributes" in git(repo, "ls-files").split()
    assert (repo / ".gitattributes").read_text() == "docs/vault/memory/**/*.md merge=vaultmem\n"
    git(tmp_path, "clone", "-q", str(bare), "desktop")
    other = tmp_path / "desktop" / "docs" / "vault"
    vm(runner, other, "sync", "setup")
    vm(runner, vault, "touch", saved["memory_id"][:8], now="2026-11-23T09:00:00Z")
    vm(runner, vault, "sync")
    vm(runner, other, "touch", saved["memory_id"][:8], now="2026-11-23T10:00:00Z")
    git(other, "commit", "-q", "-am", "touched on the desktop")
    git(other, "pull", "-q", "--no-rebase", "--no-edit")  # plain git, the driver from the shared attributes
    assert "use_count: 2\n" in (other / saved["path"]).read_text()


def test_a_crlf_memory_moved_on_both_devices_stays_crlf_without_a_clash(runner, remote):
    laptop, desktop = remote("laptop"), remote("desktop")
    mid, rel = remote.saved["memory_id"], remote.saved["path"]
    note = laptop / rel
    text = note.read_bytes().replace(b"Deploys go out on Tuesdays\n",
                                     b"Deploys go out on Tuesdays\n\nThe freeze starts on the 18th.\n")
    note.write_bytes(text.replace(b"\n", b"\r\n"))  # written on Windows
    vm(runner, laptop, "sync")
    vm(runner, desktop, "sync")
    vm(runner, laptop, "promote", mid[:8], "--force", "--apply", now="2026-11-23T10:00:00Z")
    promoted = laptop / "memory/ltm" / rel.rsplit("/", 1)[1]
    promoted.write_bytes(promoted.read_bytes() + b"Hotfixes still ship on Fridays.\r\n")  # the person, on the laptop
    vm(runner, laptop, "sync", now="2026-11-23T10:00:00Z")
    vm(runner, desktop, "touch", mid[:8], now="2026-11-24T10:00:00Z")
    there = desktop / rel
    there.write_bytes(there.read_bytes().replace(b"on Tuesdays", b"on Tuesdays and Thursdays"))  # the person, there
    vm(runner, desktop, "gc", "--apply", now="2027-06-01T00:00:00Z")
    out = json.loads(vm(runner, desktop, "sync", "--json", now="2027-06-01T00:00:00Z").output)
    name = rel.rsplit("/", 1)[1]
    assert [(d["kept"], d["ancestor"], d["clean"]) for d in out["duplicates"]] == [(f"memory/ltm/{name}", True, True)]
    data = (desktop / "memory/ltm" / name).read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n") and b"<<<<<<<" not in data
    assert b"use_count: 1\r\n" in data and b"status: promoted\r\n" in data
    assert data.endswith(b"Deploys go out on Tuesdays and Thursdays\r\n\r\nThe freeze starts on the 18th.\r\n"
                         b"Hotfixes still ship on Fridays.\r\n")  # both devices' edits, line by line


def test_the_ancestor_git_holds_is_read_byte_for_byte(tmp_path):
    from vaultmem.features.sync import _git_show

    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "x.md").write_bytes("---\r\nid: a\r\n---\r\nDéjà vu\r\n".encode())
    git(tmp_path, "add", "x.md")
    git(tmp_path, "commit", "-q", "-m", "x")
    assert _git_show(tmp_path, "HEAD:./x.md") == "---\r\nid: a\r\n---\r\nDéjà vu\r\n"
    assert _git_show(tmp_path, "HEAD:./missing.md") is None


def _edit_body(path: Path, top: str | None = None, end: str | None = None) -> None:
    text = path.read_text(encoding="utf-8")
    head, _, body = text.partition("\n---\n")
    path.write_text(f"{head}\n---\n{top + chr(10) if top else ''}{body}{end + chr(10) if end else ''}", encoding="utf-8")


@pytest.mark.parametrize("value", [".inf", "1e400", ".nan", "9" * 5000])
def test_a_value_the_rule_cannot_use_loses_no_device_s_edit(runner, remote, value):
    """The red team's case: a hand-set `use_count` the driver used to crash on, and a sync that said
    `in sync` with one device's body line gone."""
    laptop = remote("laptop")
    note = laptop / remote.saved["path"]
    note.write_text(note.read_text().replace("use_count: 0", f"use_count: {value}"))
    git(laptop, "commit", "-qam", "by hand")
    git(laptop, "push", "-q")
    desktop = remote("desktop")
    _edit_body(laptop / remote.saved["path"], end="A appended this line")
    _edit_body(desktop / remote.saved["path"], top="B added this line at the top")
    outs = [vm(runner, device, "sync", "--json").output for device in (laptop, desktop, laptop, desktop)]
    assert all(json.loads(out)["success"] for out in outs)
    for device in (laptop, desktop):
        text = (device / remote.saved["path"]).read_text()
        assert "A appended this line" in text and "B added this line at the top" in text
        assert "<<<<<<<" not in text


def test_a_clash_stops_the_sync_pushes_nothing_and_the_next_sync_finishes(runner, remote):
    laptop, desktop = remote("laptop"), remote("desktop")
    rel = remote.saved["path"]
    for device, word in ((laptop, "Wednesdays"), (desktop, "Thursdays")):
        note = device / rel
        note.write_text(note.read_text().replace("Deploys go out on Tuesdays", f"Deploys go out on {word}"))
    vm(runner, laptop, "sync")
    pushed_before = git(laptop, "ls-remote", "origin", "main").split()[0]
    result = json.loads(vm(runner, desktop, "sync", "--json", code=1).stdout)
    assert result["success"] is False and result["clashes"] == [rel] and result["pushed"] is False
    assert result["message"] == (f"git could not merge 1 note ({rel}); fix the conflict markers in them, "
                                 "`git add` them, then run `vaultmem sync` again")
    assert git(desktop, "ls-remote", "origin", "main").split()[0] == pushed_before
    text = (desktop / rel).read_text()
    assert "<<<<<<< ours\nDeploys go out on Thursdays\n=======\nDeploys go out on Wednesdays\n>>>>>>> theirs\n" in text
    # doctor names the note; search never shows a marker line as the memory's title
    doctor = json.loads(vm(runner, desktop, "doctor", "--json", code=1).stdout)
    line = text.splitlines().index("<<<<<<< ours") + 1
    assert [(p["path"], p["line"]) for p in doctor["problems"] if p["check"] == "conflict_markers"] == [(rel, line)]
    found = vm(runner, desktop, "search", "deploys").output
    assert found.splitlines()[0].endswith("] Deploys go out on Thursdays")
    # the person settles it in Obsidian (no `git add`): the next sync finishes the merge
    (desktop / rel).write_text(text.replace(
        "<<<<<<< ours\nDeploys go out on Thursdays\n=======\nDeploys go out on Wednesdays\n>>>>>>> theirs\n",
        "Deploys go out on Wednesdays and Thursdays\n"))
    out = json.loads(vm(runner, desktop, "sync", "--json").output)
    assert out["success"] and out["pushed"] and out["clashes"] == []
    vm(runner, laptop, "sync")
    assert "Deploys go out on Wednesdays and Thursdays\n" in (laptop / rel).read_text()


@pytest.mark.parametrize(("ours_prop", "theirs_prop"), [
    ("access_times: [[1, 2], {a: 1}]", "access_times: [2026-11-22T10:15:00Z]"),
    ("status: [active]", "status: active"),
    ("use_count: .nan", "use_count: 3"),
])
def test_the_driver_keeps_both_sides_of_values_it_cannot_use(tmp_path, ours_prop, theirs_prop):
    from vaultmem.features.sync import merge_driver

    base = "---\nid: x\nuse_count: 1\n---\nfirst\nmiddle\nlast\n"
    ours = f"---\nid: x\n{ours_prop}\n---\nfirst\nmiddle\nlast\nours added\n"
    theirs = f"---\nid: x\n{theirs_prop}\n---\ntheirs added\nfirst\nmiddle\nlast\n"
    paths = []
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    merge_driver(*paths)
    merged = (tmp_path / "ours").read_text()
    assert "ours added" in merged and "theirs added" in merged
    assert ours_prop.split(":")[0] in merged


def test_a_cp1252_theirs_and_a_crlf_ours_are_merged_not_dropped(tmp_path):
    from vaultmem.features.sync import merge_driver

    base = b"---\nid: x\nuse_count: 1\n---\nfirst\nmiddle\nlast\n"
    crlf_ours = b"---\r\nid: x\r\nuse_count: 2\r\n---\r\nfirst\r\nmiddle\r\nlast\r\nours added\r\n"
    lf_theirs = b"---\nid: x\nuse_count: 1\n---\ntheirs added\nfirst\nmiddle\nlast\n"
    for name, data in (("base", base), ("ours", crlf_ours), ("theirs", lf_theirs)):
        (tmp_path / name).write_bytes(data)
    assert merge_driver(str(tmp_path / "base"), str(tmp_path / "ours"), str(tmp_path / "theirs")) is True
    assert (tmp_path / "ours").read_bytes() == (b"---\r\nid: x\r\nuse_count: 2\r\n---\r\n"
                                                 b"theirs added\r\nfirst\r\nmiddle\r\nlast\r\nours added\r\n")
    (tmp_path / "ours").write_bytes(base.replace(b"last\n", b"last\nours added\n"))
    (tmp_path / "theirs").write_bytes(b"---\nid: x\nuse_count: 1\n---\ncaf\xe9 added\nfirst\nmiddle\nlast\n")
    merge_driver(str(tmp_path / "base"), str(tmp_path / "ours"), str(tmp_path / "theirs"))
    merged = (tmp_path / "ours").read_bytes()
    assert b"ours added" in merged and b"caf\xe9 added" in merged
