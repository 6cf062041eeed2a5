"""Every `$ vaultmem ...` example in README.md runs and prints what the README shows.

Examples run in order on one copy of fixtures/sample-vault with the clock frozen. Ids that
vaultmem generates (UUIDs, 8-hex short ids) match any id; `<vault>` and `<size>` match anything.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

from click.testing import CliRunner

from vaultmem.cli import cli

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = re.compile(
    r"(?P<uuid>\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)"
    r"|(?P<short>\b[0-9a-f]{8}\b)|(?P<any><vault>|<size>|<exe>)"
)


def examples(text: str) -> list[tuple[str, str]]:
    """(command, expected output) pairs from ```console blocks."""
    pairs: list[tuple[str, str]] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        command, output = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    pairs.append((command, "\n".join(output)))
                command, output = line[2:], []
            else:
                output.append(line)
        if command is not None:
            pairs.append((command, "\n".join(output)))
    return pairs


def pattern(expected: str) -> re.Pattern[str]:
    parts, last = [], 0
    for match in PLACEHOLDER.finditer(expected):
        parts.append(re.escape(expected[last:match.start()]))
        parts.append({"uuid": r"[0-9a-f-]{36}", "short": r"[0-9a-f]{8}", "any": r".+?"}[match.lastgroup])
        last = match.end()
    parts.append(re.escape(expected[last:]))
    return re.compile("".join(parts))


def test_readme_examples_are_true(tmp_path, monkeypatch):
    vault = tmp_path / "readme-vault"
    shutil.copytree(ROOT / "fixtures/sample-vault", vault)
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault))
    monkeypatch.setenv("VAULTMEM_NOW", "2026-11-22T10:15:00Z")
    pairs = examples((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(pairs) >= 5
    runner = CliRunner()
    for command, expected in pairs:
        argv = shlex.split(command)
        assert argv[0] == "vaultmem", command
        result = runner.invoke(cli, argv[1:])
        got = result.output.rstrip("\n")
        assert pattern(expected.rstrip("\n")).fullmatch(got), f"$ {command}\n--- README ---\n{expected}\n--- actual ---\n{got}"
