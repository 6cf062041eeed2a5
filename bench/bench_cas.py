"""A person saving a note every few milliseconds (another process, atomic saves, as an editor
does) while vaultmem touches the same note: how many of the person's saves survive.

    .venv/bin/python bench/bench_cas.py --touches 200 --interval-ms 5

Before compare-and-swap writes (round two's attack) 173 of 13,803 saves were lost at 5 ms.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vaultmem.base.config import load_settings
from vaultmem.base.errors import ConflictError
from vaultmem.store import MemoryStore

PERSON = r"""
import os, sys, time
note, stop, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
tmp = os.path.join(os.path.dirname(note), ".editor-swap")
i = 0
while not os.path.exists(stop):
    i += 1
    with open(note, "rb") as f:
        text = f.read()
    with open(tmp, "wb") as f:
        f.write(text + b"edit %d\n" % i)
    os.replace(tmp, note)
    time.sleep(interval)
print(i)
"""
MID = "0a1b2c44-0000-4000-8000-000000000008"
TEXT = (f"---\nid: {MID}\ncreated: 2026-11-01T09:00:00Z\nlast_used: 2026-11-01T09:00:00Z\nuse_count: 0\n"
        "strength: 1.0\nstatus: active\ntags: []\n---\nThe on-call rota changes on Mondays.\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--touches", type=int, default=200)
    parser.add_argument("--interval-ms", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        MemoryStore(vault).init()
        note = vault / "memory/stm/on-call-rota-0a1b2c44.md"
        note.write_text(TEXT)
        store = MemoryStore(vault, settings=load_settings(vault))
        stop = Path(tmp) / "stop"
        person = subprocess.Popen([sys.executable, "-c", PERSON, str(note), str(stop), str(args.interval_ms / 1000)],
                                  stdout=subprocess.PIPE, text=True)
        conflicts = 0
        start = time.perf_counter()
        for _ in range(args.touches):
            try:
                store.touch(MID[:8])
            except ConflictError:
                conflicts += 1
        elapsed = time.perf_counter() - start
        stop.touch()
        saved = int(person.communicate(timeout=60)[0])
        text = note.read_text()
        lost = sum(1 for i in range(1, saved + 1) if f"edit {i}\n" not in text)
        store.close()
    print(f"touches {args.touches}, person saved {saved} times every {args.interval_ms:g} ms, "
          f"lost {lost} ({lost / max(saved, 1):.2%}), conflicts {conflicts}, {elapsed:.1f} s")


if __name__ == "__main__":
    main()
