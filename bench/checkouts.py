"""This checkout and another commit side by side, for the benchmarks that compare two versions
(`instructions.py`, `cold_ab.py`)."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def checkouts(against: str | None) -> Iterator[tuple[dict[str, Path], Path]]:
    """({"this checkout": ROOT, against: a temporary git worktree of it}, a scratch folder
    outside both, to run `python -m vaultmem` from), each tree compiled to bytecode first; the
    worktree and the folder are removed afterwards."""
    trees = {"this checkout": ROOT}
    scratch = Path(tempfile.mkdtemp(prefix="vaultmem-bench-"))
    try:
        if against:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(scratch / "tree"),
                            against], check=True, capture_output=True)
            trees[against] = scratch / "tree"
        for tree in trees.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "vaultmem")], check=True)
        yield trees, scratch
    finally:
        if against:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(scratch / "tree")],
                           capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


def comparison_args(doc: str | None, measured: str, runs: int, example: str) -> tuple[argparse.Namespace, list[str]]:
    """The options both scripts take (--against COMMIT, --runs N) and the vaultmem command
    after `--`; an error naming `example` when there is none."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", help=f"a commit to {measured} as well (checked out in a temporary git worktree)")
    ap.add_argument("--runs", type=int, default=runs, help="runs per version (they alternate)")
    ap.add_argument("--against-vault", help="the vault the --against commit runs on, in place of the command's "
                                           "--vault (a copy of its notes indexed by that commit: an index "
                                           "format that changed would be rebuilt by each in turn); cold_ab.py")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="the vaultmem command, after --")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error(f"give the vaultmem command after --, e.g. -- {example}")
    return args, command
