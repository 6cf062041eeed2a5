"""Degraded but readable: a vault on a read-only file system is searched with its index in the
user's cache, and a full disk is a one-line error that changed nothing.

Tests run as any user (often root, whom permissions do not stop), so the read-only file
system is simulated where vaultmem probes for it; every byte of the vault is compared."""

from __future__ import annotations

import errno
import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from vaultmem.cli import cli
from vaultmem.storage import vault as vault_module


def snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def readonly_vault(tmp_path, monkeypatch):
    root = tmp_path / "ro"
    shutil.copytree(FIXTURES / "sample-vault", root)
    CliRunner().invoke(cli, ["init", str(root)])
    monkeypatch.setenv("VAULTMEM_VAULT", str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real = vault_module._unwritable
    monkeypatch.setattr(vault_module, "_unwritable",
                        lambda folder: "Read-only file system" if folder == root / ".vaultmem" else real(folder))
    return root


def test_a_read_only_vault_is_searched_with_its_index_in_the_cache(readonly_vault, tmp_path):
    before = snapshot(readonly_vault)
    runner = CliRunner()
    result = runner.invoke(cli, ["search", "JWT", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["id"].startswith("7f3c2a1e")
    cache = next((tmp_path / "cache/vaultmem").iterdir())
    assert cache.name.startswith("ro-") and (cache / "index").is_dir()
    text = runner.invoke(cli, ["search", "JWT"])  # --json keeps stderr quiet; text output says why
    assert text.exit_code == 0 and (f"note: the vault is read-only (Read-only file system); searching with the index in "
                                     f"{cache}, writes are off\n") in text.stderr
    for args in (["stats"], ["open", "7f3c2a1e"], ["recall", "JWT tokens"], ["doctor"]):
        assert runner.invoke(cli, args).exit_code in (0, 1), args  # doctor: 1 = found problems
    saved = runner.invoke(cli, ["save", "a new memory"])
    assert saved.exit_code == 1 and saved.output.endswith(
        "Error: the vault is read-only (Read-only file system); vaultmem can search it but not change it\n")
    touched = runner.invoke(cli, ["touch", "7f3c2a1e"])
    assert touched.exit_code == 1 and "the vault is read-only" in touched.output
    assert snapshot(readonly_vault) == before  # not one byte written into the vault


def test_a_full_disk_is_a_one_line_error_and_nothing_changes(runner, vault_path, monkeypatch):
    before = snapshot(vault_path)

    def full(self, path, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(vault_module.Vault, "_synced_temp", full)
    result = invoke_save(runner)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot write {vault_path}/memory/stm/a-memory-for-a-full-disk-")
    assert result.output.endswith(": the disk is full (No space left on device); free some space and retry "
                                  "(nothing was changed)\n")
    assert {p for p in snapshot(vault_path) if not p.startswith(".vaultmem/")} == {
        p for p in before if not p.startswith(".vaultmem/")}


def test_a_full_disk_under_the_index_is_a_one_line_error(runner, vault_path, monkeypatch):
    from vaultmem.storage.index import Index

    def full(self, *args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Index, "sync", full)
    result = runner.invoke(cli, ["stats"])
    assert (result.exit_code, result.output) == (
        1, "Error: cannot write the index: database or disk is full; free some space and retry (nothing was changed)\n")


def invoke_save(runner):
    return runner.invoke(cli, ["save", "A memory for a full disk"])
