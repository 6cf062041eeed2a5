"""Ctrl-C during `vaultmem index rebuild` stops it within a second and leaves a usable index:
the old one (the new one is built beside it and swapped in only when complete)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vaultmem.base import portable
from vaultmem.store import MemoryStore

NOTES = 4000  # over PARALLEL_PARSE_MIN: worker processes parse while this one indexes


def _vault(root: Path) -> Path:
    store = MemoryStore(root)
    store.init()
    stm = root / "memory" / "stm"
    for n in range(NOTES):
        (stm / f"n{n:05d}.md").write_text(
            f"---\nid: {n:08x}-0000-4000-8000-000000000000\ncreated: 2026-11-01T10:00:00Z\nstatus: active\n---\n"
            f"Note {n} about the ferry timetable and the {('kafka', 'garden', 'piano')[n % 3]} plan.\n",
            encoding="utf-8")
    store.rebuild_index()
    store.close()
    return root


def _vaultmem(*args: str, **kwargs) -> subprocess.Popen[str]:
    env = {**os.environ, "VAULTMEM_EMBEDDINGS": "off"}
    return subprocess.Popen([sys.executable, "-m", "vaultmem", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("target", ["process", "group"])
def test_ctrl_c_stops_a_rebuild_within_a_second_and_the_index_still_answers(tmp_path, target):
    """SIGINT to the rebuilding process (`process`), or to its whole process group as a
    terminal's Ctrl-C sends it (`group`: its worker processes too), while it is at work."""
    vault = _vault(tmp_path / "v")
    building = vault / ".vaultmem" / "index.building"
    proc = _vaultmem("index", "rebuild", "--quiet", "--vault", str(vault), start_new_session=True)
    deadline = time.monotonic() + 60
    while not (building / "catalog.sqlite").exists():  # at work: the new index is being written
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.3)
    assert proc.poll() is None  # still rebuilding (4,000 notes take seconds)
    sent = time.monotonic()
    if target == "group":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    took = time.monotonic() - sent
    _out, err = proc.communicate()
    assert proc.returncode != 0
    assert took < 1.0, took
    assert "Traceback" not in err, err
    if portable.can_fork():  # no worker outlives the rebuild
        time.sleep(0.2)
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)
    found = _vaultmem("search", "kafka plan", "--json", "--top-k", "3", "--vault", str(vault))
    out, err = found.communicate(timeout=120)
    assert found.returncode == 0, err
    assert out.count('"path": "memory/stm/n') == 3
    assert not building.exists()  # the next command removed what the interrupted one left
