"""What a package index shows of vaultmem is true: the MIT license pyproject names is the
LICENSE file shipped with it, and the Python versions the classifiers claim are the ones
requires-python allows and the CI workflow runs."""

from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_license_is_mit_and_ships_as_the_license_file():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.splitlines()[:3] == ["MIT License", "", "Copyright (c) 2026 vaultmem contributors"]
    assert "Permission is hereby granted, free of charge, to any person obtaining a copy" in text
    assert (PROJECT["license"], PROJECT["license-files"]) == ("MIT", ["LICENSE"])
    # PEP 639: a license expression leaves no License :: classifier beside it
    assert not [c for c in PROJECT["classifiers"] if c.startswith("License ::")]


def test_the_python_versions_claimed_are_the_ones_required_and_tested():
    claimed = [c.rsplit(" :: ", 1)[1] for c in PROJECT["classifiers"]
               if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    workflow = (ROOT / ".github" / "workflows" / "test.yml").read_text(encoding="utf-8")
    tested = re.search(r"python: \[(.*)\]", workflow).group(1)
    assert claimed == ["3.10", "3.11", "3.12", "3.13"]
    assert [v.strip().strip('"') for v in tested.split(",")] == claimed
    assert PROJECT["requires-python"] == f">={claimed[0]}"
    assert {"Operating System :: OS Independent", "Typing :: Typed"} <= set(PROJECT["classifiers"])
    assert (ROOT / "vaultmem" / "py.typed").is_file()
