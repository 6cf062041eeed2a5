"""Instructions a `vaultmem` command executes, counted by valgrind (cachegrind), for this
checkout and, with `--against`, for another commit checked out beside it: a comparison of two
versions that the machine's speed does not move.

The development machine runs the same code up to 1.6 times slower from one hour to the next,
and a 100,000-note rebuild took 20.8 to 33.0 s with the same code within a quarter of an hour
(docs/performance.md). Counted instructions of one command repeat to within 0.1 %. They
leave out what the kernel does (system calls, page faults) and how well the code uses the
CPU's caches, so a change made for those is timed as well; and valgrind runs a command
20-50 times slower, so count on a small vault (a few thousand notes).

    python bench/instructions.py --against 3619fa1 -- search hiking --vault V10K
    python bench/instructions.py --against HEAD~3 -- index rebuild --quiet --vault V3K

Every process of the command is counted (a rebuild's forked workers too) and summed. Python's
string hashing is fixed (PYTHONHASHSEED=0) and both trees are compiled to bytecode first, so
neither count includes compiling. Needs valgrind (`apt install valgrind`) and git.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from checkouts import checkouts, comparison_args  # noqa: E402

_REFS = re.compile(r"==\d+== I\s+refs:\s+([\d,]+)")


def count(tree: Path, args: list[str], cwd: Path) -> int:
    """Instructions of `python -m vaultmem ARGS` run with the package in `tree`, all processes.
    `cwd` is outside any checkout: `-m` puts the working directory first on the path."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0", "VAULTMEM_EMBEDDINGS": "off"}
    where = subprocess.run([sys.executable, "-c", "import vaultmem; print(vaultmem.__file__)"], env=env, cwd=cwd,
                           capture_output=True, text=True, check=True).stdout.strip()
    if not Path(where).is_relative_to(tree):
        sys.exit(f"with PYTHONPATH={tree}, vaultmem is imported from {where}; cannot count that tree")
    proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           sys.executable, "-m", "vaultmem", *args], cwd=cwd,
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    counts = [int(found.replace(",", "")) for found in _REFS.findall(proc.stderr)]
    if proc.returncode != 0 or not counts:
        sys.exit(f"vaultmem {' '.join(args)} failed under valgrind (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return sum(counts)


def main() -> None:
    args, command = comparison_args(__doc__, "count", 1, "search hiking --vault V10K")
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed; install it (apt install valgrind) and run again")
    with checkouts(args.against) as (trees, scratch):
        counts: dict[str, list[int]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree in trees.items():
                counts[name].append(count(tree, command, scratch))
        for name, found in counts.items():
            print(f"{name:>16}: {', '.join(f'{n:,}' for n in found)} instructions")
        if args.against:
            ours, theirs = min(counts["this checkout"]), min(counts[args.against])
            print(f"{'change':>16}: {ours - theirs:+,} ({100 * (ours - theirs) / theirs:+.2f} %)")


if __name__ == "__main__":
    main()
