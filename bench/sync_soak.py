"""Soak: one vault on three devices, random work and syncs in random order, many rounds.

    .venv/bin/python bench/sync_soak.py --rounds 200 --seeds 1,2,3 --mode git
    .venv/bin/python bench/sync_soak.py --rounds 200 --seeds 1,2,3 --mode files

Each round one device saves, touches, lets "the person" write a line into a memory's body,
promotes or runs gc, then usually syncs: `vaultmem sync` through a bare git remote (`git`), or
a simulated Syncthing that leaves `.sync-conflict-...` copies merged by `vaultmem sync copies
--apply` (`files`). At the end every device syncs twice, and the ledger of what happened
anywhere is checked against what the devices hold (tests/sync_sim.py). The test suite runs
the same simulation for 30 rounds (tests/test_sync_sim.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from sync_sim import run  # noqa: E402

from vaultmem.cli.common import installed_executable  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--mode", choices=["git", "files"], default="git")
    args = parser.parse_args()
    failed = False
    for seed in [int(s) for s in args.seeds.split(",")]:
        with tempfile.TemporaryDirectory(prefix="vaultmem-soak-") as tmp:
            start = time.perf_counter()
            report = run(Path(tmp), args.rounds, seed, args.mode, installed_executable())
            report["seconds"] = round(time.perf_counter() - start, 1)
        failed |= bool(report["problems"])
        print(json.dumps({"mode": args.mode, "rounds": args.rounds, "seed": seed, **report}))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
