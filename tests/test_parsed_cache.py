"""What a vault parsed from YAML, kept as JSON (base/config.yaml_cached): a cold command whose
settings and templates did not change reads them without PyYAML, and an edit, a damaged or
foreign kept file, a value JSON cannot hold or a read-only folder never gives a wrong value."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import Clock

from vaultmem.base.config import PARSED_DIR, load_settings, yaml_cached
from vaultmem.base.errors import ConfigError
from vaultmem.store import MemoryStore


def test_the_second_parse_reads_the_kept_json(tmp_path, monkeypatch):
    kept = tmp_path / "cache" / "x.json"
    assert yaml_cached("a: 1\nb: [x, 'y']\n", kept) == {"a": 1, "b": ["x", "y"]}
    assert json.loads(kept.read_text(encoding="utf-8")) == {"text": "a: 1\nb: [x, 'y']\n", "data": {"a": 1, "b": ["x", "y"]}}
    import vaultmem.base.config as config

    monkeypatch.setattr(config, "safe_yaml", lambda _text: pytest.fail("parsed again"))
    assert yaml_cached("a: 1\nb: [x, 'y']\n", kept) == {"a": 1, "b": ["x", "y"]}
    assert not [p for p in kept.parent.iterdir() if p != kept]  # no temp file left


def test_an_edit_a_damaged_file_or_another_texts_json_is_parsed_again(tmp_path):
    kept = tmp_path / "cache" / "x.json"
    yaml_cached("a: 1\n", kept)
    assert yaml_cached("a: 2\n", kept) == {"a": 2}  # the text changed
    kept.write_text('{"text": "a: 3\\n", "data": {"a": 99}}', encoding="utf-8")
    assert yaml_cached("a: 3\n", kept) == {"a": 99}  # (what the kept file says for exactly this text)
    kept.write_text('{"text": "a: 3\\n", "da', encoding="utf-8")
    assert yaml_cached("a: 3\n", kept) == {"a": 3}
    assert json.loads(kept.read_text(encoding="utf-8"))["data"] == {"a": 3}


def test_values_json_cannot_hold_are_never_kept(tmp_path):
    import datetime as dt

    for text, value in (("when: 2026-11-27\n", {"when": dt.date(2026, 11, 27)}), ("1: one\n", {1: "one"}),
                        ("x: .nan\n", None)):
        kept = tmp_path / f"{len(text)}.json"
        got = yaml_cached(text, kept)
        if value is not None:
            assert got == value
        assert not kept.exists(), text


def test_a_read_only_folder_parses_every_time(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        assert yaml_cached("a: 1\n", folder / "cache" / "x.json") == {"a": 1}
        assert not (folder / "cache").exists()
    finally:
        folder.chmod(0o700)


def test_settings_and_templates_are_kept_and_a_changed_setting_is_seen(vault_path, monkeypatch):
    from vaultmem.core import enrich

    monkeypatch.setattr(enrich, "_ENRICHERS", {})  # as in a fresh process: the templates are read
    config = vault_path / ".vaultmem/config.yaml"
    config.write_text("forget_threshold: 0.02\n", encoding="utf-8")
    assert load_settings(vault_path).forget_threshold == 0.02
    assert (vault_path / ".vaultmem" / PARSED_DIR / "config.yaml.json").is_file()
    config.write_text("forget_threshold: 0.03\n", encoding="utf-8")
    assert load_settings(vault_path).forget_threshold == 0.03
    config.write_text("forget_threshold: [0.03\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_settings(vault_path)
    assert str(err.value) == (f"cannot read {config}: line 2: did not find expected ',' or ']' (while parsing a flow "
                              "sequence); fix or delete the file")
    config.write_text("forget_threshold: 0.03\n", encoding="utf-8")
    store = MemoryStore(vault_path, settings=load_settings(vault_path), clock=Clock())
    store.save("I prefer TypeScript for new projects")
    kept = sorted(p.name for p in (vault_path / ".vaultmem" / PARSED_DIR).iterdir())
    assert [name.split("-")[0] for name in kept] == ["classify", "config.yaml.json", "entities"]
    store.close()


def test_a_cold_save_with_settings_reads_no_yaml_the_second_time(vault_path):
    (vault_path / ".vaultmem/config.yaml").write_text("forget_threshold: 0.02\n", encoding="utf-8")
    code = ("import sys, json; from pathlib import Path\n"
            "from vaultmem.base.config import load_settings; from vaultmem.store import MemoryStore\n"
            "s = MemoryStore(sys.argv[1], settings=load_settings(Path(sys.argv[1])))\n"
            "r = s.save(sys.argv[2], defer_entities=True)\n"
            "print(json.dumps({'yaml': 'yaml' in sys.modules, 'type': r['memory_type'],"
            " 'threshold': s.settings.forget_threshold}))")
    env = {**os.environ, "VAULTMEM_SAVE_ENRICHMENT": "background"}

    def save(text: str) -> dict:
        done = subprocess.run([sys.executable, "-c", code, str(vault_path), text], capture_output=True, text=True,
                              env=env, timeout=120, check=True)
        return json.loads(done.stdout.splitlines()[-1])

    assert save("I prefer tabs over spaces in every repository") == {"yaml": True, "type": "preference", "threshold": 0.02}
    assert save("I prefer dark mode in every editor I use") == {"yaml": False, "type": "preference", "threshold": 0.02}
