"""Fixtures for a fresh world: a temporary vault, a fixed clock, a CLI runner."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

from vaultmem.base.config import load_settings
from vaultmem.store import MemoryStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# Property tests: `make test` runs profile `ci`, `make test-thorough` profile `thorough`
# (HYPOTHESIS_PROFILE=thorough), where each test that sets its own count runs it in full.
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.register_profile("ci", max_examples=100, deadline=None)
settings.register_profile("thorough", max_examples=300, deadline=None)
settings.load_profile(PROFILE)


def examples(thorough: int, ci: int) -> int:
    """A property test's max_examples: `thorough` under the thorough profile, else `ci` (the
    test's docstring says why `ci` examples still cover what it checks)."""
    return thorough if PROFILE == "thorough" else ci
NOW = dt.datetime(2026, 11, 22, 10, 15, 0, tzinfo=dt.timezone.utc)


class Clock:
    """Fixed, advanceable time: tests never sleep."""

    def __init__(self, start: dt.datetime = NOW) -> None:
        self.current = start

    def __call__(self) -> dt.datetime:
        return self.current

    def advance(self, **delta: float) -> dt.datetime:
        self.current += dt.timedelta(**delta)
        return self.current


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No test touches a real home folder or inherits a developer's settings."""
    import os

    for name in list(os.environ):
        if name.startswith(("VAULTMEM_", "CORTEXGRAPH_")) or name == "LTM_VAULT_PATH":
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # the user cache is under the test's home
    monkeypatch.setenv("VAULTMEM_NOW", NOW.strftime("%Y-%m-%dT%H:%M:%SZ"))
    # The default suite never loads the embedding model, even where the extra is installed;
    # tests marked `embeddings` switch it on (run them with `pytest -m embeddings`).
    monkeypatch.setenv("VAULTMEM_EMBEDDINGS", "off")
    # saves fill in entities before returning, so no background process edits a test's notes;
    # tests of the background path set it to `background`
    monkeypatch.setenv("VAULTMEM_SAVE_ENRICHMENT", "now")
    # a time a note holds without a zone is in this machine's zone (setting `timezone`): UTC here
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def vault_path(tmp_path) -> Path:
    path = tmp_path / "vault"
    MemoryStore(path, clock=Clock()).init()
    return path


@pytest.fixture
def store(vault_path, clock) -> MemoryStore:
    s = MemoryStore(vault_path, settings=load_settings(vault_path), clock=clock)
    yield s
    s.close()


@pytest.fixture
def sample_vault(tmp_path) -> Path:
    """A copy of fixtures/sample-vault: memories, a person's notes, one broken note."""
    path = tmp_path / "sample"
    shutil.copytree(FIXTURES / "sample-vault", path)
    return path


@pytest.fixture
def runner(monkeypatch, vault_path) -> CliRunner:
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault_path))
    return CliRunner()


def invoke(runner: CliRunner, *args: str):
    from vaultmem.cli import cli

    return runner.invoke(cli, list(args), catch_exceptions=False)
