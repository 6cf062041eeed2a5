"""find_secret on ~240-character prose: this tree's filter against a git revision's, in one
process, the two taking turns (so both see the same machine load); median of the rounds.

    .venv/bin/python bench/bench_secrets.py --base d84aae8 --rounds 101 --calls 200
"""
import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vaultmem.base import secrets as current

# Memories as an assistant saves them: ~240 characters of prose with names, numbers and paths.
PROSE = [
    "Zoe prefers the standup at 09:30 on Tuesdays; the release train for vaultmem 2.3.1 leaves on "
    "Thursday after the QA sign-off, and the staging deploy goes through the ops-runner-04 host in "
    "eu-west-1. Rotate the API key every 90 days.",
    "Decided to keep the Whoosh index under .vaultmem/index and rebuild it nightly; the migration "
    "script lives at ~/src/vaultmem/bench/rebuild_memory.py and takes about 40 s on the 10k-note "
    "vault. Bob owns the follow-up ticket OPS-1423 for the cron job.",
    "The client asked for the invoice in PDF by Friday; send it to accounts@example.com and copy "
    "Maria. The password manager is Bitwarden, shared vault for the team. Next review of the "
    "AbstractSingletonProxyFactoryBean refactor on feature/ABC-1234-login.",
]


def load_base(rev: str):
    source = subprocess.run(["git", "show", f"{rev}:vaultmem/base/secrets.py"], check=True,
                            capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent).stdout
    path = Path(tempfile.mkdtemp()) / "secrets_base.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("secrets_base", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["secrets_base"] = module
    spec.loader.exec_module(module)
    return module


def per_call_us(find, calls: int) -> float:
    t = time.perf_counter()
    for i in range(calls):
        find(PROSE[i % len(PROSE)])
    return (time.perf_counter() - t) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    base = load_base(args.base)
    assert all(current.find_secret(p) is None and base.find_secret(p) is None for p in PROSE)
    for find in (base.find_secret, current.find_secret):  # compile the lazy patterns first
        per_call_us(find, 30)
    runs: dict[str, list[float]] = {"base": [], "this tree": []}
    for r in range(args.rounds):
        order = [("base", base.find_secret), ("this tree", current.find_secret)]
        for name, find in order if r % 2 else order[::-1]:
            runs[name].append(per_call_us(find, args.calls))
    chars = statistics.mean(len(p) for p in PROSE)
    for name, times in runs.items():
        print(f"{name}: find_secret on {chars:.0f}-character prose, median {statistics.median(times):.0f} µs per call "
              f"({args.rounds} rounds of {args.calls} calls)")
    ratio = statistics.median(runs["this tree"]) / statistics.median(runs["base"])
    # each round timed both back to back, so its ratio is the least disturbed by other load
    paired = statistics.median(t / b for t, b in zip(runs["this tree"], runs["base"], strict=True))
    print(f"this tree / base: {ratio:.2f} (ratio of the medians), {paired:.2f} (median of the rounds' ratios)")


if __name__ == "__main__":
    main()
