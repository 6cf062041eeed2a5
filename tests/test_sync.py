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
