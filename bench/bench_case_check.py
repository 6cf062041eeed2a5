"""Median in-process save time with N memory notes in memory/stm: the cost of the check that no
two files differ only in case (base/portable.py lists the folder, once per change of it).

    python bench/bench_case_check.py 10000
    PYTHONPATH=<checkout of an older commit> python bench/bench_case_check.py 10000   # compare
"""
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import vaultmem
from vaultmem.store import MemoryStore

n = int(sys.argv[1])
root = Path(tempfile.mkdtemp()) / "v"
store = MemoryStore(root)
store.init()
stm = root / "memory/stm"
for i in range(n):
    ident = uuid.UUID(int=i + 1, version=4)
    (stm / f"note-{i:06d}-{str(ident)[:8]}.md").write_text(
        f"---\nid: {ident}\ncreated: 2026-11-01T10:00:00Z\nlast_used: 2026-11-01T10:00:00Z\nuse_count: 0\n"
        f"strength: 1.0\nstatus: active\ntags: []\n---\nfact number {i} about item{i} and thing{i % 97}\n")
store.sync()
times = []
for k in range(40):
    t = time.perf_counter()
    store.save(f"benchmark save {k} about widget{k} and gadget{k * 7}", dedupe=False)
    times.append((time.perf_counter() - t) * 1000)
print(f"{vaultmem.__file__}: {n} notes, save median {statistics.median(times):.1f} ms, p90 {sorted(times)[35]:.1f} ms")
store.close()
shutil.rmtree(root.parent)
