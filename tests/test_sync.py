"""One memory, many devices: the merge rule for a memory note and git's merge driver."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import invoke

from vaultmem.features.sync import merge_note

BASE = ("---\nid: 11111111-2222-4333-8444-555555555555\ncreated: 2026-11-01T09:00:00Z\n"
        "last_used: 2026-11-10T09:00:00Z\nuse_count: 3\nstrength: 1.2\nstatus: active\n"
        "tags: [ops]\nentities: []\nvaultmem: memory\nproject: apollo  # mine\n---\n"
        "Deploys go out on Tuesdays.\n\nThe freeze starts on the 18th.\n")


def edit(text: str, **changes: str) -> str:
    for key, value in changes.items():
        lines = text.split("\n")
        text = "\n".join(f"{key}: {value}" if line.startswith(f"{key}:") else line for line in lines)
    return text


def test_two_devices_touches_add_up_and_times_take_the_later():
    ours = edit(BASE, use_count="5", last_used="2026-11-20T09:00:00Z")  # touched twice here
    theirs = edit(BASE, use_count="4", last_used="2026-11-21T10:00:00Z", strength="1.3")  # once there
    merged, clean = merge_note(BASE, ours, theirs)
    assert clean
    assert merged == edit(BASE, use_count="6", last_used="2026-11-21T10:00:00Z", strength="1.3")


def test_without_an_ancestor_counters_take_the_larger():
    ours = edit(BASE, use_count="5")
    theirs = edit(BASE, use_count="4", last_used="2026-11-21T10:00:00Z")
    merged, clean = merge_note(None, ours, theirs)
    assert clean and "use_count: 5\n" in merged and "last_used: 2026-11-21T10:00:00Z\n" in merged


def test_tags_and_entities_take_the_union_and_a_one_sided_edit_wins():
    ours = edit(BASE, tags="[ops, release]", project="hermes  # mine")
    theirs = edit(BASE, tags="[ops, infra]", entities="[Kafka]")
    merged, clean = merge_note(BASE, ours, theirs)
    assert clean
    assert "project: hermes  # mine\n" in merged  # the person's edit here, comment and all
    assert "tags: [ops, release, infra]\n" in merged and "entities: [Kafka]\n" in merged


def test_bodies_merge_line_by_line_and_a_real_clash_is_kept_visibly():
    ours = BASE.replace("Deploys go out on Tuesdays.", "Deploys go out on Wednesdays.")
    theirs = BASE.replace("The freeze starts on the 18th.", "The freeze starts on the 19th.")
    merged, clean = merge_note(BASE, ours, theirs)
    assert clean and merged.endswith("Deploys go out on Wednesdays.\n\nThe freeze starts on the 19th.\n")
    clash = BASE.replace("Deploys go out on Tuesdays.", "Deploys go out on Thursdays.")
    merged, clean = merge_note(BASE, ours, clash)
    assert not clean
    assert "<<<<<<< ours\nDeploys go out on Wednesdays.\n=======\nDeploys go out on Thursdays.\n>>>>>>> theirs\n" in merged


def test_a_clash_of_the_person_s_property_is_kept_with_both_values():
    merged, clean = merge_note(BASE, edit(BASE, project="hermes"), edit(BASE, project="zeus"))
    assert not clean and "project: hermes\n" in merged
    assert "<<<<<<< ours: project: 'hermes'\n=======\nproject: 'zeus'\n>>>>>>> theirs (properties)\n" in merged


def test_crlf_and_the_person_s_formatting_are_kept():
    base = BASE.replace("\n", "\r\n")
    ours = edit(BASE, use_count="4", last_used="2026-11-20T09:00:00Z").replace("\n", "\r\n")
    theirs = edit(BASE, use_count="4", last_used="2026-11-20T09:00:05Z").replace("\n", "\r\n")
    merged, clean = merge_note(base, ours, theirs)
    assert clean and merged == edit(BASE, use_count="5", last_used="2026-11-20T09:00:05Z").replace("\n", "\r\n")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.test", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.test", "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


@pytest.fixture
def two_devices(tmp_path, runner, monkeypatch):
    laptop = tmp_path / "laptop"
    assert invoke(runner, "init", str(laptop)).exit_code == 0
    git(laptop, "init", "-q", "-b", "main")
    saved = json.loads(invoke(runner, "save", "Deploys go out on Tuesdays", "--vault", str(laptop), "--json").output)
    setup = invoke(runner, "sync", "setup", "--vault", str(laptop), "--json")
    assert setup.exit_code == 0, setup.output
    git(laptop, "add", "-A")
    git(laptop, "commit", "-q", "-m", "vault")
    desktop = tmp_path / "desktop"
    subprocess.run(["git", "clone", "-q", str(laptop), str(desktop)], check=True, capture_output=True)
    assert invoke(runner, "sync", "setup", "--vault", str(desktop)).exit_code == 0
    return laptop, desktop, saved


def test_git_pull_merges_two_devices_touches_without_a_conflict(runner, two_devices):
    laptop, desktop, saved = two_devices
    tracked = git(laptop, "ls-files")
    assert ".gitattributes" in tracked and ".vaultmem/index" not in tracked and saved["path"] in tracked
    assert (laptop / ".gitattributes").read_text() == "memory/**/*.md merge=vaultmem\n"
    for _ in range(2):
        invoke(runner, "touch", saved["memory_id"][:8], "--vault", str(laptop))
    git(laptop, "commit", "-q", "-am", "touched on the laptop")
    invoke(runner, "touch", saved["memory_id"][:8], "--vault", str(desktop))
    git(desktop, "commit", "-q", "-am", "touched on the desktop")
    git(desktop, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    text = (desktop / saved["path"]).read_text()
    assert "<<<<<<<" not in text and "use_count: 3\n" in text  # 2 uses there + 1 here
    assert json.loads(invoke(runner, "open", saved["memory_id"][:8], "--vault", str(desktop), "--json").output
                      )["memories"][0]["use_count"] == 3  # the index follows the pull


COPY_NAMES = ["{stem}.sync-conflict-20261125-101500-ABCDEF7.md",  # Syncthing
              "{stem} (conflicted copy 2026-11-25).md",  # Dropbox, Obsidian Sync
              "{stem} 2.md"]  # iCloud, Finder


@pytest.mark.parametrize("pattern", COPY_NAMES)
def test_a_file_sync_conflict_copy_is_merged_and_then_trashed(runner, vault_path, pattern):
    saved = json.loads(invoke(runner, "save", "Deploys go out on Tuesdays", "--json").output)
    original = vault_path / saved["path"]
    text = original.read_text()
    copy = original.with_name(pattern.format(stem=original.stem))
    copy.write_text(edit(text, use_count="4", last_used="2026-11-23T08:00:00Z"))  # the other device's touches
    original.write_text(edit(text, use_count="2"))
    before = {p: p.read_bytes() for p in vault_path.rglob("*.md")}
    preview = json.loads(invoke(runner, "sync", "copies", "--json").output)
    assert [(c["copy"], c["original"], c["status"]) for c in preview["copies"]] == [
        (str(copy.relative_to(vault_path)), saved["path"], "would merge")]
    assert {p: p.read_bytes() for p in vault_path.rglob("*.md")} == before  # a preview writes nothing
    out = invoke(runner, "sync", "copies", "--apply")
    assert out.output == f"merged: {copy.relative_to(vault_path)} -> {saved['path']}\n"
    merged = original.read_text()
    assert "use_count: 4\n" in merged and "last_used: 2026-11-23T08:00:00Z\n" in merged  # no ancestor: larger, later
    assert not copy.exists() and (vault_path / ".trash" / copy.name).exists()
    found = json.loads(invoke(runner, "search", "Deploys Tuesdays", "--json").output)["results"]
    assert [r["path"] for r in found] == [saved["path"]]
    assert invoke(runner, "sync", "copies").output == "No conflict copies of memory notes.\n"


def test_the_next_write_merges_a_waiting_copy_and_a_read_never_does(runner, vault_path):
    saved = json.loads(invoke(runner, "save", "Deploys go out on Tuesdays", "--json").output)
    original = vault_path / saved["path"]
    copy = original.with_name(f"{original.stem}.sync-conflict-20261125-101500-ABCDEF7.md")
    copy.write_text(edit(original.read_text(), use_count="4", last_used="2026-11-21T08:00:00Z"))
    before = {p: p.read_bytes() for p in vault_path.rglob("*.md")}
    for read in (["search", "Deploys"], ["open", saved["memory_id"][:8]], ["stats"], ["doctor"]):
        invoke(runner, *read)
    assert {p: p.read_bytes() for p in vault_path.rglob("*.md")} == before  # reads never merge
    touched = json.loads(invoke(runner, "touch", saved["memory_id"][:8], "--json").output)
    assert touched["use_count"] == 5  # the copy's 4 (the larger), then this use
    assert not copy.exists() and (vault_path / ".trash" / copy.name).exists()


def test_a_file_named_like_a_copy_that_holds_another_memory_is_left_alone(runner, vault_path):
    """The red team's case: a file named like memory A's conflict copy but holding memory B
    (another id) was merged into A (markers around both ids) and sent to .trash/."""
    a = json.loads(invoke(runner, "save", "Deploys go out on Tuesdays", "--json").output)
    b = json.loads(invoke(runner, "save", "The wifi at the lake house is slow", "--json").output)
    original = vault_path / a["path"]
    stranger = original.with_name(f"{original.stem}.sync-conflict-20261125-101500-ABCDEF7.md")
    (vault_path / b["path"]).rename(stranger)
    before = {p: p.read_bytes() for p in vault_path.rglob("*.md")}
    out = invoke(runner, "sync", "copies", "--apply")
    rel = stranger.relative_to(vault_path).as_posix()
    assert out.output == (f"left alone: {rel} is named like a copy of {a['path']} but holds another memory "
                          f"(id {b['memory_id']}); rename it\n")
    assert {p: p.read_bytes() for p in vault_path.rglob("*.md")} == before
    invoke(runner, "touch", a["memory_id"][:8])  # a write merges waiting copies: not this one
    assert stranger.read_bytes() == before[stranger]
    doctor = json.loads(invoke(runner, "doctor", "--json").output)
    assert [p["message"] for p in doctor["problems"] if p["check"] == "conflict_copy"] == [
        f"{rel} is named like a sync-conflict copy of {original.name} but holds another memory "
        f"(id {b['memory_id']}); rename it so it is kept as its own"]


def test_two_bodies_without_an_ancestor_are_both_kept(runner, vault_path):
    saved = json.loads(invoke(runner, "save", "Deploys go out on Tuesdays", "--json").output)
    original = vault_path / saved["path"]
    copy = original.with_name(f"{original.stem} (conflicted copy).md")
    copy.write_text(original.read_text().replace("Tuesdays", "Thursdays"))
    result = json.loads(invoke(runner, "sync", "copies", "--apply", "--json").output)
    assert result["copies"][0]["clean"] is False
    body = original.read_text().split("---\n", 2)[2]
    assert "Deploys go out on Tuesdays" in body and "Deploys go out on Thursdays" in body and "<<<<<<<" in body


def test_the_watcher_merges_a_conflict_copy_as_it_arrives(runner, vault_path):
    from test_watcher import Running, wait_for

    saved = json.loads(invoke(runner, "save", "Deploys go out on Tuesdays", "--json").output)
    original = vault_path / saved["path"]
    running = Running(vault_path)
    try:
        copy = original.with_name(f"{original.stem} 2.md")
        copy.write_text(edit(original.read_text(), use_count="7"))
        wait_for(lambda: not copy.exists(), what="the copy to be merged and trashed")
        assert "use_count: 7\n" in original.read_text() and (vault_path / ".trash" / copy.name).exists()
    finally:
        running.stop()
