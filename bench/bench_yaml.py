"""Frontmatter parsing speed: 10,000 typical memory frontmatters read the old way (PyYAML's
YAML 1.1 safe loader, what python-frontmatter's handler ran) and the new way (`load_yaml`:
yamlcore's YAML 1.2 core schema with every guard), each best of 5.

    .venv/bin/python bench/bench_yaml.py --n 10000
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
import uuid
from collections.abc import Callable
from typing import Any

import yaml
import yamlcore

from vaultmem.storage import note as notes


def frontmatters(n: int) -> list[str]:
    """What vaultmem writes for a saved memory, with a person's properties mixed in."""
    start = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.timezone.utc)
    out = []
    for i in range(n):
        memory = notes.Memory(
            id=str(uuid.UUID(int=i + 1)), content="", created=start + dt.timedelta(minutes=i),
            last_used=start + dt.timedelta(minutes=2 * i), use_count=i % 7, strength=1.0 + (i % 3) / 10,
            tags=["auth", f"project/p{i % 40}"] if i % 2 else ["preferences"], entities=["JWT", f"Person {i % 90}"],
            source="claude-code", context="a session about login", memory_type="decision",
            meta={"urgency": "important", "domain": "engineering"} if i % 3 else {"t": "12:30", "answer": "NO"},
        )
        out.append("".join(notes.render_property(k, v) for k, v in memory.frontmatter().items()))
    return out


def best(runs: int, fn: Callable[[str], Any], texts: list[str]) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for text in texts:
            fn(text)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    texts = frontmatters(args.n)
    old_loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    cases = [
        (f"PyYAML 1.1 {old_loader.__name__} (before)", lambda t: yaml.load(t, Loader=old_loader)),
        ("yamlcore CoreLoader, pure Python", lambda t: yaml.load(t, Loader=yamlcore.CoreLoader)),
        ("yamlcore CCoreLoader (libyaml)", lambda t: yaml.load(t, Loader=yamlcore.CCoreLoader)),
        ("load_yaml: CCoreLoader + guards (after)", notes.load_yaml),
    ]
    print(f"{args.n:,} frontmatters, {sum(map(len, texts)) // args.n} bytes each on average, best of {args.runs}")
    for name, fn in cases:
        seconds = best(args.runs, fn, texts)
        print(f"{name:42} {seconds:7.3f} s  {seconds / args.n * 1e6:6.1f} us each")


if __name__ == "__main__":
    main()
