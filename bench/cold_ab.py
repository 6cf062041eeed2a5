"""Wall-clock time of a cold `vaultmem` command in this checkout and, with `--against`, in another
commit checked out beside it, the two run alternately so that both meet the same moments of a
machine whose speed drifts.

`bench/instructions.py` compares two versions by the instructions they execute, which the
machine's speed does not move; but it cannot see work done in parallel (child processes) or
waiting on system calls. This times the whole command, start to exit, as a person's shell does.

    python bench/cold_ab.py --against 4e64e3f --runs 41 -- search "kafka migration" --vault V10K
    python bench/cold_ab.py --runs 11 -- stats --vault V10K

Both trees are compiled to bytecode first; each run is `python -m vaultmem ARGS` with the tree
first on the path, its output discarded. A `save` or `store` run starts once the background
enrichment of the earlier saves has finished and a second passed (bench_core.settle_enrichment), as a person's
saves come seconds apart: saves back to back share the two cores with that enrichment.

    python bench/cold_ab.py --against cce0748 --runs 15 -- save "a note" --allow-duplicate --vault V100K

A commit whose index format differs from this checkout's runs on its own copy of the notes
(`--against-vault OLD`, indexed by that commit's `vaultmem index rebuild`; see mcp_ab.py):

    python bench/cold_ab.py --against 4c1f1fa --against-vault OLD --runs 21 -- search "kafka plan" --vault NEW

Prints the median, the fastest and the slowest run of each, the load average and
`calibrate.py`'s figure before and after.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import calibration_ms  # noqa: E402
from checkouts import checkouts, comparison_args  # noqa: E402


def run_once(tree: Path, args: list[str], cwd: Path) -> float:
    """Seconds of one `python -m vaultmem ARGS` with the package in `tree`. `cwd` is outside
    any checkout: `-m` puts the working directory first on the path."""
    env = {**os.environ, "PYTHONPATH": str(tree), "VAULTMEM_EMBEDDINGS": "off"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vaultmem", *args], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"vaultmem {' '.join(args)} failed in {tree} (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return took


def vault_option(args: list[str]) -> str | None:
    """The value of --vault in `args` (both spellings), or None."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--vault" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--vault="):
            return arg[len("--vault="):]
    return None


def settled(command: list[str]) -> Callable[[], None]:
    """What to wait for before each run of `command`: a save's vault done enriching."""
    if command[0] not in ("save", "store"):
        return lambda: None
    from bench_core import settle_enrichment

    from vaultmem.base.walk import resolve_vault

    root = resolve_vault(vault_option(command[1:]))

    def settle() -> None:
        settle_enrichment(root)
        time.sleep(1.0)  # and the watcher, if one runs, has indexed what the enrichment wrote

    return settle


def main() -> None:
    args, command = comparison_args(__doc__, "time", 21, 'search "kafka migration" --vault V10K')
    settle = settled(command)
    commands = {name: command for name in ("this checkout", args.against)}
    if args.against and args.against_vault:
        if "--vault" not in command[:-1]:
            sys.exit("--against-vault replaces the command's --vault VAULT: give one")
        at = command.index("--vault") + 1
        commands[args.against] = [*command[:at], args.against_vault, *command[at + 1:]]
    with checkouts(args.against) as (trees, scratch):
        for name, tree in trees.items():
            run_once(tree, commands[name], scratch)  # the first run reads the files into the page cache
        print(f"load average {os.getloadavg()[0]:.2f}, calibration {calibration_ms():.1f} ms before")
        times: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree in trees.items():
                settle()
                times[name].append(run_once(tree, commands[name], scratch))
        for name, found in times.items():
            print(f"{name:>16}: median {1000 * statistics.median(found):.0f} ms, fastest {1000 * min(found):.0f}, "
                  f"slowest {1000 * max(found):.0f} ({len(found)} runs)")
        print(f"load average {os.getloadavg()[0]:.2f}, calibration {calibration_ms():.1f} ms after")


if __name__ == "__main__":
    main()
