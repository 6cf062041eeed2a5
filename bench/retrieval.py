"""Retrieval quality on LoCoMo-format data: turn-level recall@k through `MemoryStore.search`.

For each conversation: a fresh vault with one memory note per dialogue turn (created at its
session's date and time, the session's turns a minute apart in order; `speaker`, `date` and
`dia_id` as properties, the image caption appended to the text when the turn shared one);
each question is a query; recall@k is the fraction of a question's evidence turns found in
the top k, averaged over questions, overall and per category. "Now" is the end of the last
session (its start plus a minute per turn). Each search mode is run with decay blended in
(the default ranking) and with relevance only (decay_weight = 0); `--contiguity 0` turns
temporal contiguity off.

    PYTHONPATH=. python bench/retrieval.py --data ../shared/data/locomo-dev.json
    PYTHONPATH=. python bench/retrieval.py --data FILE --modes lexical,hybrid --json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

KS = (1, 5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def normalise_evidence(items: list[str]) -> list[str]:
    """`"D8:6; D9:17"` -> D8:6, D9:17; `"D:11:26"` -> D11:26; `"D30:05"` -> D30:5."""
    found: list[str] = []
    for item in items:
        for session, turn in _EVIDENCE.findall(str(item)):
            dia = f"D{int(session)}:{int(turn)}"
            if dia not in found:
                found.append(dia)
    return found


def parse_session_date(text: str) -> dt.datetime:
    """LoCoMo's `"1:56 pm on 8 May, 2023"` as an aware UTC datetime."""
    clean = re.sub(r"\s+", " ", text.strip())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return dt.datetime.strptime(clean, fmt).replace(tzinfo=dt.timezone.utc)
        except ValueError:
            continue
    raise ValueError(f"unrecognised session date {text!r}")


def sessions(conv: dict[str, Any]) -> list[tuple[int, dt.datetime, list[dict[str, Any]]]]:
    out = []
    for key, turns in conv.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if not m or not isinstance(turns, list):
            continue
        date_text = conv.get(f"{key}_date_time")
        if not date_text:
            continue
        out.append((int(m.group(1)), parse_session_date(date_text), turns))
    out.sort()
    return out


def turn_text(turn: dict[str, Any], captions: bool) -> str:
    text = (turn.get("text") or "").strip()
    caption = (turn.get("blip_caption") or "").strip()
    if captions and caption:
        text = f"{text}\n\n(shared an image: {caption})" if text else f"(shared an image: {caption})"
    return text


def build_vault(root: Path, sample: dict[str, Any], captions: bool,
                same_instant: bool = False) -> tuple[Any, dict[str, str], dt.datetime]:
    """A fresh vault with one note per turn; returns (store, path -> dia_id, now). With
    `same_instant` every turn is created at one moment (no session times to lean on)."""
    from vaultmem.storage import note as notes
    from vaultmem.store import MemoryStore

    sess = sessions(sample["conversation"])
    now = max(d + dt.timedelta(minutes=len(turns)) for _, d, turns in sess)  # the last session's end
    if same_instant:
        now = sess[0][1]
    store = MemoryStore(root, clock=lambda: now)
    store.vault.init()
    folder = store.vault.abs(store.settings.stm_dir)
    template = store.template("memory")
    path_to_dia: dict[str, str] = {}
    for _, date, turns in sess:
        for n, turn in enumerate(turns):
            text = turn_text(turn, captions)
            if not text:
                continue
            dia = normalise_evidence([turn["dia_id"]])[0]
            at = now if same_instant else date + dt.timedelta(minutes=n)  # a session's turns a minute apart
            memory = notes.Memory(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{sample['sample_id']}/{dia}")),
                content=text, created=at, last_used=at, use_count=0, strength=1.0,
                status="active", tags=[], entities=[], source="locomo",
                meta={"speaker": turn.get("speaker", ""), "date": date.date().isoformat(), "dia_id": dia},
            )
            name = f"{notes.slugify(text)}-{memory.short_id}.md"
            (folder / name).write_text(notes.render_note(template, memory), encoding="utf-8")
            path_to_dia[f"{store.settings.stm_dir.strip('/')}/{name}"] = dia
    store.index.rebuild()
    return store, path_to_dia, now


def evaluate(store: Any, path_to_dia: dict[str, str], qa: list[dict[str, Any]], mode: str,
             decay_weight: float, kmax: int) -> tuple[list[tuple[int, dict[int, float]]], list[float]]:
    from vaultmem.base.errors import VaultmemError

    store.settings.decay_weight = decay_weight
    if "vaultmem.storage.embeddings" in sys.modules:  # time each run's query embeddings, not a cache hit
        sys.modules["vaultmem.storage.embeddings"]._query_cache.clear()
    rows, times = [], []
    for item in qa:
        evidence = set(normalise_evidence(item.get("evidence") or []))
        if not evidence:
            continue
        t0 = time.perf_counter()
        try:
            result = store.search(item["question"], top_k=kmax, mode=mode,
                                  include_review_candidates=False)["results"]
        except VaultmemError:
            result = []
        times.append(time.perf_counter() - t0)
        ranked = [path_to_dia.get(r["path"]) for r in result]
        rows.append((int(item.get("category", 0)), {
            k: len(evidence & set(ranked[:k])) / len(evidence) for k in KS if k <= kmax}))
    return rows, times


def summarise(rows: list[tuple[int, dict[int, float]]]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[int, float]]] = defaultdict(list)
    for cat, recall in rows:
        groups["all"].append(recall)
        groups[f"{cat} {CATEGORIES.get(cat, '?')}"].append(recall)
    out = {}
    for name in sorted(groups, key=lambda g: (g != "all", g)):
        items = groups[name]
        out[name] = {"n": len(items), **{f"R@{k}": round(100 * sum(r[k] for r in items) / len(items), 1)
                                           for k in items[0]}}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="LoCoMo-format JSON file (list of conversations).")
    ap.add_argument("--modes", default="lexical",
                    help="Comma-separated search modes: lexical, semantic, hybrid (default: lexical).")
    ap.add_argument("--decay", default="on,off", help="on (default blend), off (relevance only) or both.")
    ap.add_argument("--decay-weight", type=float, default=None,
                    help="decay_weight for decay=on (default: the setting's default).")
    ap.add_argument("--fusion", choices=("rrf", "score"), default=None,
                    help="Hybrid fusion method (default: the setting's, score).")
    ap.add_argument("--contiguity", type=float, default=None,
                    help="contiguity_weight (default: the setting's, 0.5; 0 = off).")
    ap.add_argument("--limit", type=int, default=0, help="Only the first N conversations (0 = all).")
    ap.add_argument("--no-captions", action="store_true", help="Leave image captions out of the notes.")
    ap.add_argument("--by-category", action="store_true", help="Also print the per-category rows.")
    ap.add_argument("--same-instant", action="store_true",
                    help="Create every turn at the same instant (no session times to lean on).")
    ap.add_argument("--per-conversation", action="store_true",
                    help="Also report each conversation on its own (sample_id after the mode).")
    ap.add_argument("--json", action="store_true", help="Print the results as JSON.")
    args = ap.parse_args(argv)

    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    if args.limit:
        data = data[: args.limit]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    decays = [d.strip() for d in args.decay.split(",") if d.strip()]
    kmax = max(KS)
    results: dict[str, Any] = {}
    collected: dict[str, list[Any]] = defaultdict(list)
    timings: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="vaultmem-bench-") as tmp:
        for n, sample in enumerate(data):
            store, path_to_dia, _now = build_vault(Path(tmp) / f"v{n}", sample, not args.no_captions,
                                                   args.same_instant)
            default_weight = store.settings.decay_weight if args.decay_weight is None else args.decay_weight
            if args.fusion:
                store.settings.hybrid_fusion = args.fusion
            if args.contiguity is not None:
                store.settings.contiguity_weight = args.contiguity
            if any(m in ("semantic", "hybrid") for m in modes):
                store.backfill_embeddings()
            for mode in modes:
                for decay in decays:
                    weight = default_weight if decay == "on" else 0.0
                    rows, times = evaluate(store, path_to_dia, sample["qa"], mode, weight, kmax)
                    collected[f"{mode} decay={decay}"].extend(rows)
                    timings[f"{mode} decay={decay}"].extend(times)
                    if args.per_conversation:
                        collected[f"{mode} decay={decay} {sample['sample_id']}"].extend(rows)
                        timings[f"{mode} decay={decay} {sample['sample_id']}"].extend(times)
            store.close()
    for name, rows in collected.items():
        times = sorted(timings[name])
        results[name] = {"recall": summarise(rows),
                         "p50_ms": round(1000 * times[len(times) // 2], 2) if times else None}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    header = f"{'configuration':<34} {'group':<16} {'n':>4} " + " ".join(f"{'R@' + str(k):>6}" for k in KS)
    print(header)
    print("-" * len(header))
    for name, res in results.items():
        for group, row in res["recall"].items():
            if group != "all" and not args.by_category:
                continue
            print(f"{name:<34} {group:<16} {row['n']:>4} " + " ".join(f"{row.get(f'R@{k}', 0):>6.1f}" for k in KS))
    for name, res in results.items():
        print(f"# {name}: p50 search {res['p50_ms']} ms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
