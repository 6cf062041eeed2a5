"""Enrichment benchmark: the cost enrichment adds to one save, warm and cold.

    python bench/bench_enrich.py -n 500 --cold 5

Measures, on realistic memory sentences (fixtures/entities/sentences.yaml, cycled):
- secret filter, entity extraction and classification per save in a warm process (spaCy
  loaded), and their sum = what enrichment adds to a save (target <= 3 ms);
- a whole `MemoryStore.save` warm, with enrichment on and off (the difference is the
  enrichment's share, including the near-duplicate lookup);
- the first enrichment in a process (spaCy import + pipeline build);
- a cold `vaultmem save` CLI call (new process), with enrichment on and off.

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(samples) * 1000:.3f} | {p95 * 1000:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=500, help="saves to time in the warm process")
    parser.add_argument("--cold", type=int, default=5, help="cold CLI saves to time")
    args = parser.parse_args()

    sentences = [c["text"] for c in yaml.safe_load((ROOT / "fixtures/entities/sentences.yaml").read_text())]
    texts = [f"{sentences[i % len(sentences)]} (note {i})" for i in range(args.n)]

    t0 = time.perf_counter()
    from vaultmem.core.enrich import get_enricher

    enricher = get_enricher()
    enricher.entities("warm up")
    first = time.perf_counter() - t0

    from vaultmem.base.secrets import find_secret

    rows: list[tuple[str, str]] = []
    secret_t, entity_t, classify_t, total_t = [], [], [], []
    for text in texts:
        a = time.perf_counter()
        find_secret(text)
        b = time.perf_counter()
        ents = enricher.entities(text)
        c = time.perf_counter()
        enricher.enrich(text, entities=ents)
        d = time.perf_counter()
        secret_t.append(b - a)
        entity_t.append(c - b)
        classify_t.append(d - c)
        total_t.append(d - a)
    rows += [("secret filter", _ms(secret_t)), ("entities (spaCy + rules)", _ms(entity_t)),
             ("strength + type/urgency/domain", _ms(classify_t)),
             ("**enrichment per save (sum)**", _ms(total_t))]

    from vaultmem.base.config import load_settings
    from vaultmem.store import MemoryStore

    for label, enabled in (("MemoryStore.save, enrichment + dedupe on", True),
                           ("MemoryStore.save, enrichment + dedupe off", False)):
        with tempfile.TemporaryDirectory() as tmp:
            store = MemoryStore(Path(tmp) / "v", settings=load_settings(None))
            store.init()
            store.settings.enable_preprocessing = enabled
            store.settings.dedupe_on_save = enabled
            samples = []
            for text in texts:
                a = time.perf_counter()
                store.save(text)
                samples.append(time.perf_counter() - a)
            store.close()
        rows.append((label, _ms(samples)))
    rows.append(("first enrichment in a process (import spaCy, build pipeline)", f"{first * 1000:.0f} | -"))

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for label, value in (("cold CLI `vaultmem save`, enrichment on", "1"),
                         ("cold CLI `vaultmem save`, enrichment off", "0")):
        with tempfile.TemporaryDirectory() as tmp:
            vault = str(Path(tmp) / "v")
            subprocess.run([sys.executable, "-m", "vaultmem", "init", vault], check=True, env=env,
                           capture_output=True)
            samples = []
            for i in range(args.cold):
                a = time.perf_counter()
                subprocess.run([sys.executable, "-m", "vaultmem", "save", f"{sentences[i % len(sentences)]} #{i}",
                                "--vault", vault], check=True, capture_output=True,
                               env=dict(env, VAULTMEM_ENABLE_PREPROCESSING=value))
                samples.append(time.perf_counter() - a)
        rows.append((label, _ms(samples)))

    print(f"n = {args.n} warm saves, {args.cold} cold CLI saves\n")
    print("| step | median ms | p95 ms |")
    print("|---|---:|---:|")
    for label, cells in rows:
        print(f"| {label} | {cells} |")


if __name__ == "__main__":
    main()
