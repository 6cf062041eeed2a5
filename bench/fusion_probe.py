"""Exploration: the embedding model directly (vaultmem's encoder) and fusion variants, fast.

Caches per conversation: every turn's text variants and every question encoded with the
installed model (`vaultmem models install`; questions with and without the model's query
prefix), the raw BM25F scores vaultmem's index gives each question
(all matches), and each turn's decay score at "now". Fusion variants are then plain numpy.

    PYTHONPATH=. python bench/fusion_probe.py --data ../shared/data/locomo-dev.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval import KS, build_vault, normalise_evidence, sessions, turn_text  # noqa: E402


def turns_of(sample: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for _, _date, turns in sessions(sample["conversation"]):
        for turn in turns:
            text = turn_text(turn, True)
            if text:
                out.append({"dia": normalise_evidence([turn["dia_id"]])[0], "speaker": turn.get("speaker", ""),
                            "text": text, "raw": (turn.get("text") or "").strip()})
    return out


def model() -> Any:
    from vaultmem.storage import embeddings

    return embeddings.load_model()


def encode(texts: list[str], prefix: str = "") -> np.ndarray:
    m = model()
    return np.asarray(m.encode([prefix + t for t in texts]), dtype=np.float32)


def query_prefix() -> str:
    from vaultmem.storage import embeddings

    return embeddings.MODEL.query_prefix


TURN_VARIANTS = {
    "text": lambda t: t["text"],
    "speaker: text": lambda t: f"{t['speaker']}: {t['text']}",
    "speaker said, \"text\"": lambda t: f"{t['speaker']} said, \"{t['text']}\"",
    "speaker said: text": lambda t: f"{t['speaker']} said: {t['text']}",
    "speaker: Caroline. text": lambda t: f"speaker: {t['speaker']}. {t['text']}",
    "speaker: \"text\"": lambda t: f"{t['speaker']}: \"{t['text']}\"",
}


def build_cache(sample: dict[str, Any], cache: Path) -> dict[str, Any]:
    """Vectors, lexical scores and decay scores of one conversation (cached as .npz/.json)."""
    sid = sample["sample_id"]
    meta_path = cache / f"{sid}.json"
    vec_path = cache / f"{sid}.npz"
    if meta_path.exists() and vec_path.exists():
        meta = json.loads(meta_path.read_text())
        vecs = dict(np.load(vec_path))
        missing = [n for n in TURN_VARIANTS if f"turn|{n}" not in vecs]
        for name in missing:
            vecs[f"turn|{name}"] = encode([TURN_VARIANTS[name](t) for t in meta["turns"]])
        if missing:
            np.savez(vec_path, **vecs)
        return {**meta, "vecs": vecs}
    turns = turns_of(sample)
    qa = [q for q in sample["qa"] if normalise_evidence(q.get("evidence") or [])]
    vecs = {f"turn|{name}": encode([fn(t) for t in turns]) for name, fn in TURN_VARIANTS.items()}
    vecs["question"] = encode([q["question"] for q in qa], query_prefix())
    vecs["question|bare"] = encode([q["question"] for q in qa])
    with tempfile.TemporaryDirectory(prefix="vaultmem-probe-") as tmp:
        store, path_to_dia, now = build_vault(Path(tmp) / "v", sample, True)
        dia_row = {t["dia"]: n for n, t in enumerate(turns)}
        recs = store.index.records("kind = 'memory'")
        decay = [0.0] * len(turns)
        for rec in recs:
            decay[dia_row[path_to_dia[rec.path]]] = store.score_of(rec, now)
        lex = []
        for q in qa:
            hits, _ = store.index.search(q["question"], kinds=("memory",), statuses=None, limit=10_000)
            lex.append({dia_row[path_to_dia[p]]: s for p, s in hits})
        store.close()
    meta = {"turns": turns, "qa": [{"question": q["question"], "category": q["category"],
                                    "evidence": normalise_evidence(q["evidence"])} for q in qa],
            "decay": decay, "lex": [{str(k): v for k, v in d.items()} for d in lex]}
    meta_path.write_text(json.dumps(meta))
    np.savez(vec_path, **vecs)
    return {**meta, "vecs": vecs}


def recall(scores: np.ndarray, c: dict[str, Any]) -> dict[int, float]:
    """scores: questions x turns. Mean fraction of evidence in the top k, per k (percent)."""
    dia = [t["dia"] for t in c["turns"]]
    out = {k: 0.0 for k in KS}
    order = np.argsort(-scores, axis=1, kind="stable")
    for qi, q in enumerate(c["qa"]):
        ev = set(q["evidence"])
        ranked = [dia[j] for j in order[qi, :max(KS)]]
        for k in KS:
            out[k] += len(ev & set(ranked[:k])) / len(ev)
    return {k: 100 * v / len(c["qa"]) for k, v in out.items()}


def lex_matrix(c: dict[str, Any]) -> np.ndarray:
    m = np.zeros((len(c["qa"]), len(c["turns"])), dtype=np.float64)
    for qi, d in enumerate(c["lex"]):
        for j, s in d.items():
            m[qi, int(j)] = s
    return m


def show(name: str, per: dict[str, dict[int, float]], counts: dict[str, int]) -> None:
    total = sum(counts.values())
    allk = {k: sum(per[s][k] * counts[s] for s in per) / total for k in KS}
    cells = " ".join(f"{allk[k]:5.1f}" for k in KS)
    conv = "  ".join(f"{s}: {per[s][5]:4.1f}/{per[s][25]:4.1f}" for s in per)
    print(f"{name:<44} {cells}   | {conv}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache", default="/tmp/vaultmem-probe-cache-bge")
    ap.add_argument("--prf", action="store_true")
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    data = json.loads(Path(args.data).read_text())
    convs = {s["sample_id"]: build_cache(s, cache) for s in data}
    counts = {s: len(c["qa"]) for s, c in convs.items()}
    print(f"{'variant':<44} " + " ".join(f"R@{k:<3}" for k in KS) + "   | per conv R@5/R@25")

    def run(name: str, fn: Any) -> None:
        show(name, {s: recall(fn(c), c) for s, c in convs.items()}, counts)

    run("lexical (raw BM25F, no decay)", lex_matrix)
    v = 'speaker: "text"'
    run("cosine, question without the query prefix", lambda c: c["vecs"]["question|bare"] @ c["vecs"][f"turn|{v}"].T)
    for v in TURN_VARIANTS:
        run(f"cosine, turns as '{v}'", lambda c, v=v: c["vecs"]["question"] @ c["vecs"][f"turn|{v}"].T)
    v = 'speaker: "text"'
    print(f"-- with decay (w 0.3), turns as {v}")
    sem = lambda c: c["vecs"]["question"] @ c["vecs"][f"turn|{v}"].T  # noqa: E731
    run("  lexical, decay", lambda c: decayed(maxnorm(lex_matrix(c)), c))
    run("  semantic max-norm, no decay", sem)
    run("  semantic max-norm, decay", lambda c: decayed(np.maximum(sem(c), 0) / sem(c).max(1, keepdims=True), c))
    run("  semantic minmax-all, decay", lambda c: decayed(minmax(sem(c), np.ones_like(sem(c), dtype=bool)), c))
    for fusion in ("score max w.5 d100 (current)", "score minmax-all w.5", "score z-all w.5", "rrf 10"):
        run(f"  {fusion}, decay", lambda c, f=fusion: decayed(relevance(FUSIONS[f](lex_matrix(c), sem(c))), c))
    if "--prf" in sys.argv:
        print(f"-- PRF (Rocchio on the query vector from the fused top m), turns as {v}")
        for m in (3, 5, 10):
            for beta in (0.3, 0.5, 1.0):
                run(f"  prf m={m} beta={beta}", lambda c, m=m, b=beta: prf(c, v, m, b))
    print("-- temporal contiguity (episodes.py): a session's turns in order, neighbours = the turns beside")
    hyb = lambda c: relevance(score_fusion(lex_matrix(c), sem(c), norm="median"))  # noqa: E731
    lexr = lambda c: maxnorm(lex_matrix(c))  # noqa: E731
    for label, base in (("hybrid", hyb), ("lexical", lexr)):
        run(f"  {label}, none", lambda c, b=base: decayed(b(c), c))
        for variant, w in (("add", 0.3), ("add", 0.5), ("up", 0.5), ("up, found only", 0.4),
                           ("up, found only", 0.5), ("up, found only", 0.6), ("up, found only", 0.7)):
            run(f"  {label}, {variant} w {w}", lambda c, b=base, v=variant, w=w: decayed(contiguity(b(c), c, v, w), c))
        for span, d in ((2, 0.5), (2, 0.7), (2, 1.0), (3, 1.0)):
            run(f"  {label}, up, found only w 0.5, span {span} x{d}",
                lambda c, b=base, n=span, d=d: decayed(contiguity(b(c), c, "up, found only", 0.5, n, d), c))
    print("-- sweep, decay on")
    for name, fn in SWEEP.items():
        run(f"  {name}, decay", lambda c, fn=fn: decayed(relevance(fn(lex_matrix(c), sem(c))), c))
    return 0


SWEEP = {
    "score median w.5": lambda L, C: score_fusion(L, C, norm="median"),
    "score median w.5 d50": lambda L, C: score_fusion(L, C, norm="median", depth=50),
    "score median w.5 d200": lambda L, C: score_fusion(L, C, norm="median", depth=200),
    "score median w.4": lambda L, C: score_fusion(L, C, 0.4, norm="median"),
    "score median w.6": lambda L, C: score_fusion(L, C, 0.6, norm="median"),
    "score minmax-sem w.5": lambda L, C: score_fusion(L, C, norm="minmax-sem"),
    "score minmax-sem w.5 d50": lambda L, C: score_fusion(L, C, norm="minmax-sem", depth=50),
    "score minmax-sem w.5 d200": lambda L, C: score_fusion(L, C, norm="minmax-sem", depth=200),
    "score minmax(cand) w.5 d50": lambda L, C: score_fusion(L, C, norm="minmax", depth=50),
    "score minmax(cand) w.5 d200": lambda L, C: score_fusion(L, C, norm="minmax", depth=200),
    "semantic only, median": lambda L, C: np.clip((C - np.median(C, 1, keepdims=True)), 0, None),
    "semantic only, minmax top100": lambda L, C: np.where(fp_top(C), minmax(C, fp_top(C)), -1e9),
    "score minmax(cand) w.5": lambda L, C: score_fusion(L, C, norm="minmax"),
    "score z w.5": lambda L, C: score_fusion(L, C, norm="z"),
    "score max w.4": lambda L, C: score_fusion(L, C, 0.4),
    "score max w.6": lambda L, C: score_fusion(L, C, 0.6),
    "score z-all w.4": lambda L, C: score_fusion(L, C, 0.4, norm="z-all"),
    "score z-all w.6": lambda L, C: score_fusion(L, C, 0.6, norm="z-all"),
    "rrf 5": lambda L, C: rrf(L, C, 5),
    "rrf 20": lambda L, C: rrf(L, C, 20),
    "rrf 10 w.4": lambda L, C: rrf(L, C, 10, w=0.4),
    "rrf 10 w.6": lambda L, C: rrf(L, C, 10, w=0.6),
}


def contiguity(rel: np.ndarray, c: dict[str, Any], variant: str, w: float, span: int = 1,
               d: float = 1.0) -> np.ndarray:
    """add: rel + w x best neighbour; up: rel + w x max(0, best neighbour - rel);
    "found only": memories the search did not find (rel 0) stay out. Neighbours: up to
    `span` turns either side in the same session, the one at lag L counted x d**(L-1)."""
    session = np.array([int(t["dia"][1:].split(":")[0]) for t in c["turns"]])
    r = np.where(rel > -1e8, rel, 0.0)
    best = np.zeros_like(r)
    for lag in range(1, span + 1):
        prev, nxt = np.zeros_like(r), np.zeros_like(r)
        prev[:, lag:], nxt[:, :-lag] = r[:, :-lag], r[:, lag:]
        prev[:, ~np.r_[[False] * lag, session[lag:] == session[:-lag]]] = 0
        nxt[:, ~np.r_[session[:-lag] == session[lag:], [False] * lag]] = 0
        best = np.maximum(best, d ** (lag - 1) * np.maximum(prev, nxt))
    if variant == "add":
        return r + w * best
    lifted = r + w * np.maximum(0, best - r)
    return np.where(r > 0, lifted, -1e9) if variant.endswith("found only") else lifted


def decayed(rel: np.ndarray, c: dict[str, Any], w: float = 0.3) -> np.ndarray:
    s = np.asarray(c["decay"])[None, :]
    fresh = np.where(s > 0, s / (s + 0.3), 0)
    return np.where(rel > -1e8, rel * ((1 - w) + w * fresh), -1e9)


def relevance(f: np.ndarray) -> np.ndarray:
    """Fused scores to 0..1 as the pipeline does (divided by the best; negatives from z-scores shifted)."""
    cand = f > -1e8
    lo = np.where(cand, f, np.inf).min(1, keepdims=True)
    shifted = np.where(lo < 0, f - lo, f)
    best = np.where(cand, shifted, -np.inf).max(1, keepdims=True)
    return np.where(cand, shifted / np.where(best > 0, best, 1), -1e9)


def prf(c: dict[str, Any], v: str, m: int, beta: float, fusion: str = "score max w.5 d100 (current)") -> np.ndarray:
    Q, D = c["vecs"]["question"], c["vecs"][f"turn|{v}"]
    L = lex_matrix(c)
    first = FUSIONS[fusion](L, Q @ D.T)
    top = np.argsort(-first, axis=1, kind="stable")[:, :m]
    q2 = Q + beta * D[top].mean(axis=1)
    q2 /= np.linalg.norm(q2, axis=1, keepdims=True)
    return FUSIONS[fusion](L, q2 @ D.T)


def fp_top(C):
    return topmask(C, 100)


def topmask(m: np.ndarray, depth: int) -> np.ndarray:
    order = np.argsort(-m, axis=1, kind="stable")[:, :depth]
    mask = np.zeros_like(m, dtype=bool)
    np.put_along_axis(mask, order, True, axis=1)
    return mask


def lexmask(L: np.ndarray, depth: int) -> np.ndarray:
    return topmask(L, depth) & (L > 0)


def maxnorm(m: np.ndarray) -> np.ndarray:
    best = m.max(axis=1, keepdims=True)
    return np.where(best > 0, m / np.where(best > 0, best, 1), 0)


def minmax(m: np.ndarray, mask: np.ndarray) -> np.ndarray:
    lo = np.where(mask, m, np.inf).min(axis=1, keepdims=True)
    hi = np.where(mask, m, -np.inf).max(axis=1, keepdims=True)
    span = np.where(hi > lo, hi - lo, 1)
    return np.where(mask, (m - lo) / span, 0)


def zscore(m: np.ndarray, mask: np.ndarray) -> np.ndarray:
    n = mask.sum(axis=1, keepdims=True).clip(1)
    mu = np.where(mask, m, 0).sum(axis=1, keepdims=True) / n
    sd = np.sqrt(np.where(mask, (m - mu) ** 2, 0).sum(axis=1, keepdims=True) / n)
    return np.where(mask, (m - mu) / np.where(sd > 0, sd, 1), 0)


def score_fusion(L, C, w=0.5, depth=100, norm="max"):
    lm, sm = lexmask(L, depth), topmask(C, depth)
    cand = lm | sm
    if norm == "max":
        lx, s = maxnorm(L), np.maximum(C, 0) / C.max(axis=1, keepdims=True)
    elif norm == "minmax":
        lx, s = minmax(L, lm), minmax(C, sm)
    elif norm == "minmax-all":
        lx, s = maxnorm(L), minmax(C, np.ones_like(sm))
    elif norm == "median":
        med = np.median(C, axis=1, keepdims=True)
        lx, s = maxnorm(L), np.clip((C - med) / (C.max(axis=1, keepdims=True) - med), 0, None)
    elif norm == "minmax-sem":
        lx, s = maxnorm(L), minmax(C, sm)
    elif norm == "z":
        lx, s = zscore(L, lm), zscore(C, sm)
        lx = np.where(lm, lx, zscore(L, lm).min(axis=1, keepdims=True))
    elif norm == "z-all":
        allm = np.ones_like(sm)
        lx, s = zscore(L, allm), zscore(C, allm)
    f = (1 - w) * lx + w * s
    return np.where(cand, f, -1e9)


def rrf(L, C, k=60, depth=100, w=0.5):
    out = np.zeros_like(C, dtype=np.float64)
    for m, mask, wt in ((L, lexmask(L, depth), 1 - w), (C, topmask(C, depth), w)):
        order = np.argsort(-m, axis=1, kind="stable")
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(1, m.shape[1] + 1)[None, :].repeat(m.shape[0], 0), axis=1)
        out += np.where(mask, 2 * wt / (k + ranks), 0)
    return np.where(out > 0, out, -1e9)


FUSIONS = {
    "score max w.5 d100 (current)": lambda L, C: score_fusion(L, C),
    "score max w.5 d1000": lambda L, C: score_fusion(L, C, depth=1000),
    "score minmax w.5": lambda L, C: score_fusion(L, C, norm="minmax"),
    "score minmax-all w.5": lambda L, C: score_fusion(L, C, norm="minmax-all"),
    "score z w.5": lambda L, C: score_fusion(L, C, norm="z"),
    "score z-all w.5": lambda L, C: score_fusion(L, C, norm="z-all"),
    "score minmax-all w.3": lambda L, C: score_fusion(L, C, 0.3, norm="minmax-all"),
    "score minmax-all w.4": lambda L, C: score_fusion(L, C, 0.4, norm="minmax-all"),
    "score minmax-all w.6": lambda L, C: score_fusion(L, C, 0.6, norm="minmax-all"),
    "score z-all w.4": lambda L, C: score_fusion(L, C, 0.4, norm="z-all"),
    "score z-all w.6": lambda L, C: score_fusion(L, C, 0.6, norm="z-all"),
    "rrf 60": lambda L, C: rrf(L, C),
    "rrf 10": lambda L, C: rrf(L, C, 10),
}


if __name__ == "__main__":
    sys.exit(main())
