"""Core benchmark: rebuild, freshness check, save, search, cold CLI, size, RSS, self-retrieval.

Builds a vault of N synthetic but realistic memories, then measures. The default corpus
(`bench/corpus.py`, `--corpus varied`) draws each memory's frame, wording and specifics from
pools, as real notes vary; `--corpus templates` is the first corpus (8 fixed sentence shapes),
kept to reproduce earlier figures.

    python bench/bench_core.py --sizes 1000,10000,100000

Prints one markdown table (copy it into docs/performance.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import corpus  # bench/corpus.py (the script's folder is on sys.path)

from vaultmem.storage.note import Memory, render_note, slugify
from vaultmem.store import MemoryStore

NOW = dt.datetime(2026, 11, 22, 10, 15, tzinfo=dt.timezone.utc)
VM = str(Path(sys.executable).with_name("vaultmem"))

PEOPLE = ("Alice Bob Carol Dmitri Emeka Fatima Grace Hiro Ines Jonas Kavya Liam Mei Noor Olga Pedro Quinn Rosa "
          "Sven Tariq Uma Viktor Wen Ximena Yusuf Zoë Amara Bruno Chiara Dev Elif Farid Greta Hana Ivan Jade Kofi "
          "Lena Mateo Nadia Oscar Priya Rafael Sofia Tomas Ugo Vera Will Xavier Yara Zane Aiko Bilal Cleo Dario "
          "Esme Felix Gus Hugo Iris").split()
TOOLS = ("PostgreSQL Redis Kafka Terraform Kubernetes nginx Grafana Prometheus Django FastAPI React Svelte "
         "TypeScript Rust Go Python pgbouncer Elasticsearch S3 CloudFront Vault Consul Airflow dbt Snowflake "
         "Sentry Datadog GitHub GitLab Jenkins Docker Helm ArgoCD Celery RabbitMQ SQLite DuckDB Whoosh Spark "
         "Flink Pulsar Cassandra MongoDB ClickHouse Trino Superset Metabase Jupyter Pandas Polars NumPy Ansible "
         "Packer Nomad Istio Envoy Traefik Caddy HAProxy Keycloak Okta Auth0 Stripe Twilio SendGrid Figma Linear "
         "Jira Notion Slack Zoom Obsidian Neovim VSCode Bazel Gradle Maven Poetry uv Ruff mypy pytest").split()
TOPICS = ("deploy release migration outage incident review budget roadmap hiring onboarding backup restore "
          "latency throughput caching authentication authorization billing invoice pricing search indexing "
          "logging alerting dashboard retention compliance audit encryption rotation schema partition replica "
          "failover benchmark regression refactor prototype experiment rollout quota sharding vacuum checkpoint "
          "snapshot webhook pagination throttling cron scheduler queue backlog sprint retro demo changelog license "
          "contract vendor procurement offsite workshop interview feedback promotion salary travel visa laptop "
          "monitor keyboard desk office parking lunch allergy birthday anniversary vacation holiday newsletter "
          "podcast conference talk paper thesis grant patent trademark domain certificate firewall subnet vpn "
          "bastion keypair token session cookie cors csp hsts dns cdn ttl").split()
VERBS = ("prefers decided agreed suggested reported noticed measured scheduled postponed approved rejected "
         "documented moved replaced upgraded pinned reverted proposed drafted merged shipped paused cancelled "
         "estimated benchmarked profiled debugged escalated delegated").split()
PLACES = ("Berlin Lisbon Nairobi Osaka Toronto Zürich Lagos Austin Dublin Seoul Porto Kraków Tallinn Bogotá "
          "Montréal Hanoi Cusco Bergen Valencia Accra").split()
ADJ = ("slow flaky noisy stale urgent optional legacy experimental quarterly nightly weekly critical minor "
       "blocking cheaper faster regional global internal external").split()
SYL = "ka lo mi ra ven tor sa qui del an bri zo pu lex mar ith on ue cal dra".split()


def codename(rng: random.Random) -> str:
    return "".join(rng.choice(SYL) for _ in range(3)).capitalize()


def sentence(rng: random.Random) -> str:
    person, other = rng.sample(PEOPLE, 2)
    tool, tool2 = rng.sample(TOOLS, 2)
    topic, topic2 = rng.sample(TOPICS, 2)
    project = codename(rng)
    n = rng.randint(2, 500)
    adj, place = rng.choice(ADJ), rng.choice(PLACES)
    forms = [
        f"{person} {rng.choice(VERBS)} that the {project} {topic} uses {tool} with {n} connections instead of {tool2}.",
        f"Project {project}: the {adj} {topic} for {tool} is scheduled for week {rng.randint(1, 52)} in "
        f"{place}; {other} owns the {topic2}.",
        f"{person} and {other} {rng.choice(VERBS)} the {adj} {topic} plan; ticket {project.upper()}-{n} "
        f"tracks the {tool} {topic2}.",
        f"Remember: {tool} {topic} limits for {project} are {n} requests per second, {person} "
        f"{rng.choice(VERBS)} it after the {adj} {topic2}.",
        f"The {project} team moved {topic} from {tool2} to {tool}; {person} says p95 went from {n} ms to {n // 2 + 1} ms.",
        f"{person} is allergic to {rng.choice(['peanuts', 'shellfish', 'gluten', 'lactose'])} and prefers "
        f"{place} for the {topic} offsite with {other}.",
        f"{other} asked {person} to keep the {adj} {tool} {topic} notes in {project}; the {topic2} review is "
        f"on day {rng.randint(1, 28)}.",
        f"In {place}, {person} {rng.choice(VERBS)} a {adj} {topic2} for {tool2}: {n} users, owner {other}, codename {project}.",
    ]
    return rng.choice(forms)


def build_vault(root: Path, n: int, seed: int = 7, make: Any = None) -> list[tuple[str, str]]:
    """Write N memory notes directly (as a sync client would); return (id, content) pairs."""
    make = make or corpus.memory
    rng = random.Random(seed)
    MemoryStore(root, clock=lambda: NOW).vault.init()
    stm = root / "memory/stm"
    template = (Path(__file__).resolve().parent.parent / "templates/memory.md").read_text()
    pairs = []
    for _ in range(n):
        content = make(rng)
        if make is sentence and rng.random() < 0.4:
            content += " " + sentence(rng)
        created = NOW - dt.timedelta(days=rng.uniform(0, 60))
        last_used = created + dt.timedelta(days=rng.uniform(0, (NOW - created).days or 1))
        mid = (f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}"
               f"-8{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}")
        memory = Memory(id=mid, content=content, created=created, last_used=min(last_used, NOW),
                        use_count=rng.randint(0, 8), strength=round(rng.uniform(1.0, 1.6), 2),
                        tags=rng.sample(TOPICS, 2), entities=[])
        (stm / f"{slugify(content)}-{mid[:8]}.md").write_text(render_note(template, memory))
        pairs.append((mid, content))
    return pairs


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    k = (len(values) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def settle_enrichment(root: Path, timeout: float = 120.0) -> None:
    """Wait until the background enrichment of earlier saves has finished (its job files in
    .vaultmem/enrich/ are gone): a person's saves come seconds apart, not back to back."""
    jobs = root / ".vaultmem" / "enrich"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and jobs.is_dir() and any(jobs.glob("*.json")):
        time.sleep(0.1)


def cli_time(args: list[str], env: dict[str, str], repeat: int = 5, root: Path | None = None) -> float:
    """Median seconds of `repeat` cold `vaultmem` processes; with `root`, each starts after the
    earlier ones' background enrichment finished."""
    times = []
    for _ in range(repeat):
        if root is not None:
            settle_enrichment(root)
        t = time.perf_counter()
        subprocess.run([VM, *args], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def self_retrieval(store: MemoryStore, pairs: list[tuple[str, str]], queries: int,
                   rng: random.Random) -> tuple[float, float, float, list[float]]:
    """3 random words of a random memory (words the index keeps) must find it in the top 10.

    Returns the hit rate over all queries; the ceiling, i.e. the rate a perfect ranking would
    reach (when k > 10 memories contain all three words, they tie and the target can be in
    the top 10 at best 10/k of the time); the hit rate over unambiguous queries (at most 10
    memories contain all three words, so a miss is a ranking failure, not a tie); and the
    query times.
    """
    import re

    # Query words are words the index keeps: vaultmem's analyzer drops its stop words
    # ("there", "before", "about" ...) from notes and queries alike, so they cannot find anything.
    from vaultmem.storage.fulltext.analysis import STOP_WORDS

    # whole words as the note has them ("Auth0", "p95"), numbers left out
    words_of = lambda text: [w for w in re.findall(r"\w{2,}", text) if not w.isdigit()]  # noqa: E731
    postings: dict[str, set[int]] = {}
    for i, (_mid, content) in enumerate(pairs):
        for w in set(w.lower() for w in words_of(content)):
            postings.setdefault(w, set()).add(i)
    hits = clear = clear_hits = 0
    ceiling = 0.0
    times = []
    for mid, content in rng.sample(pairs, min(queries, len(pairs))):
        words = [w for w in words_of(content) if w.lower() not in STOP_WORDS]
        picked = rng.sample(words, min(3, len(words)))
        t = time.perf_counter()
        found = [r["id"] for r in store.search(" ".join(picked), top_k=10)["results"]]
        times.append(time.perf_counter() - t)
        hit = mid in found
        hits += hit
        sharing = len(set.intersection(*(postings[w.lower()] for w in picked)))
        ceiling += min(1.0, 10 / sharing)
        if sharing <= 10:
            clear += 1
            clear_hits += hit
    asked = min(queries, len(pairs))
    return hits / asked, ceiling / asked, clear_hits / max(clear, 1), times


def run(n: int, workdir: Path, make: Any) -> dict[str, float]:
    root = workdir / f"vault-{n}"
    shutil.rmtree(root, ignore_errors=True)
    t = time.perf_counter()
    pairs = build_vault(root, n, make=make)
    write_s = time.perf_counter() - t
    store = MemoryStore(root, clock=lambda: NOW)
    t = time.perf_counter()
    store.index.rebuild()
    rebuild_s = time.perf_counter() - t
    fresh = timed(store.sync, 20)
    rng = random.Random(11)
    saves = timed(lambda: store.save(make(rng)), 50)
    queries = [" ".join(rng.sample(TOPICS + TOOLS, 2)) for _ in range(200)]
    store.search(queries[0])  # warm the searcher
    sync, store.sync = store.sync, lambda *a, **k: None  # time the query itself; freshness is timed above
    search = []
    for q in queries:
        t = time.perf_counter()
        store.search(q, top_k=10)
        search.append(time.perf_counter() - t)
    hit_rate, ceiling, clear_rate, memory_query_times = self_retrieval(store, pairs, 200, random.Random(5))
    store.sync = sync
    env = dict(os.environ, VAULTMEM_VAULT=str(root))
    cold_search = cli_time(["search", "kafka migration"], env)
    # a new note each time (--allow-duplicate: the same text would otherwise reinforce the first)
    cold_save = cli_time(["save", "Benchmark note saved from the CLI about Kafka retention", "--allow-duplicate"],
                         env, root=root)
    cold_help = cli_time(["--help"], env)
    size = store.index.size_bytes()
    store.close()
    return {
        "n": n, "write_s": write_s, "rebuild_s": rebuild_s,
        "fresh_p50_ms": statistics.median(fresh) * 1000,
        "save_p50_ms": statistics.median(saves) * 1000,
        "search_p50_ms": statistics.median(search) * 1000, "search_p95_ms": percentile(search, 0.95) * 1000,
        "msearch_p50_ms": statistics.median(memory_query_times) * 1000,
        "cli_search_s": cold_search, "cli_save_s": cold_save, "cli_help_s": cold_help,
        "index_mb": size / 1e6, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "self_hit": hit_rate, "self_ceiling": ceiling, "clear_hit": clear_rate,
    }


def growth(rows: list[dict[str, Any]], cols: list[tuple[str, str, str]]) -> str:
    """How each timing and size grows from one vault size to the next ("x2.0 from 10,000 to
    100,000"), the growth curve docs/performance.md keeps beside the table."""
    lines = []
    timed = [(key, label) for key, label, _fmt in cols if key not in ("n", "self_hit", "self_ceiling", "clear_hit")]
    for a, b in zip(rows, rows[1:], strict=False):
        parts = [f"{label} x{b[key] / a[key]:.1f}" for key, label in timed if a.get(key) and b.get(key)]
        lines.append(f"growth from {a['n']:,} to {b['n']:,} ({b['n'] / a['n']:g}x the notes): " + ", ".join(parts))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated vault sizes")
    parser.add_argument("--workdir", type=Path, default=None, help="where to build vaults (default: a temp dir)")
    parser.add_argument("--corpus", choices=("varied", "templates"), default="varied",
                        help="memories from bench/corpus.py (default) or the first 8-shape generator")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="vaultmem-bench-"))
    cols = [("n", "memories", "{:,}"), ("write_s", "write notes s", "{:.1f}"), ("rebuild_s", "full rebuild s", "{:.2f}"),
            ("fresh_p50_ms", "freshness check ms", "{:.1f}"), ("save_p50_ms", "save ms (in-process)", "{:.1f}"),
            ("search_p50_ms", "topic search p50 ms", "{:.2f}"), ("search_p95_ms", "topic search p95 ms", "{:.2f}"),
            ("msearch_p50_ms", "3-word search p50 ms", "{:.2f}"),
            ("cli_search_s", "cold CLI search s", "{:.3f}"), ("cli_save_s", "cold CLI save s", "{:.3f}"),
            ("cli_help_s", "--help s", "{:.3f}"), ("index_mb", "index MB", "{:.1f}"), ("rss_mb", "peak RSS MB", "{:.0f}"),
            ("self_hit", "self-retrieval top-10", "{:.3f}"), ("self_ceiling", "… best possible (ties)", "{:.3f}"),
            ("clear_hit", "… unambiguous queries", "{:.3f}")]
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print("| " + " | ".join(c[1] for c in cols) + " |")
    print("|" + "---|" * len(cols))
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        row = run(n, workdir, corpus.memory if args.corpus == "varied" else sentence)
        rows.append(row)
        print("| " + " | ".join(fmt.format(row[key]) for key, _, fmt in cols) + " |", flush=True)
    print(growth(rows, cols))
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
