"""Three devices, one vault, random work and syncs in random order: they converge and lose nothing."""

from __future__ import annotations

import pytest
from sync_sim import run

from vaultmem.cli.common import installed_executable


@pytest.mark.parametrize("seed", [7])
def test_three_git_clones_converge_and_count_every_use(tmp_path, seed):
    report = run(tmp_path, rounds=30, seed=seed, mode="git", executable=installed_executable())
    assert report["problems"] == []
    assert report["clashes_kept"] == 0  # every clash stopped a sync until the person settled it
    assert report["memories"] >= 5 and report["uses"] >= 5 and report["person_lines"] >= 3
    assert set(report["actions"]) == {"save", "touch", "edit", "promote", "gc"}


@pytest.mark.parametrize("seed", [7])
def test_three_devices_with_a_file_sync_tool_converge_and_keep_every_memory(tmp_path, seed):
    report = run(tmp_path, rounds=30, seed=seed, mode="files")
    # without an ancestor, uses counted on two devices between two syncs are not added up
    # (docs/sync.md): a count may be lower than the uses made, never higher
    assert report["problems"] == []
    assert report["memories"] >= 5 and report["person_lines"] >= 3
