"""No secret reaches a file, a log line or an error message.

Credentials are offered to vaultmem every way an assistant or a person could: CLI `save`
(content, --context, --source, --tag, --meta), MCP `save_memory` over stdio (content,
context, source, meta, tags) and `create_relation` metadata. Then every byte vaultmem
wrote is searched for each secret: every file in the vault (notes, .trash/, the Whoosh
index, the SQLite catalog and its journal, state files), everything the CLI printed
(stdout and stderr) and the MCP server's stderr log. Zero hits.

Skipped until the enrichment issue's secret filter (`vaultmem.base.secrets`) is on the branch.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_helpers import report

pytest.importorskip("vaultmem.base.secrets", reason="the secret filter (enrichment issue) is not merged yet")

# Built at run time so this file itself holds no complete credential.
SECRETS = {
    "aws access key": "AKIA" + "Q7RZ4XK2M9PLW3NB",
    "github token": "ghp_" + "x8Kq2LmN4pR7sT9vW1yZ3aB5cD6eF0gH2jK4",
    "slack token": "xoxb-" + "7203948571-5928374650192-aKq8Zx2LmN4pR7sT9vW1yZ3a",
    "stripe key": "sk_live_" + "51Hq8Zx2LmN4pR7sT9vW1yZ3aB5cD6eF",
    "postgres password": "postgres://admin:" + "Tr0ub4dor-and-3" + "@db.internal.example:5432/prod",
    "pem key": "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEowIBAAKCAQEA7QxK2zL9mN4pR7sT9vW1yZ3aB5cD6eF0gH2jK4"
               + "\n-----END RSA PRIVATE KEY-----",
}
# The part of each secret that must never appear anywhere (the PEM body, the password).
NEEDLES = {name: (value if name not in ("postgres password", "pem key") else
                  {"postgres password": "Tr0ub4dor-and-3", "pem key": "MIIEowIBAAKCAQEA7QxK2zL9mN4"}[name])
           for name, value in SECRETS.items()}


def _env(vault: Path) -> dict[str, str]:
    import vaultmem

    src = str(Path(vaultmem.__file__).parent.parent)  # the code under test, wherever it is
    return dict(os.environ, PYTHONPATH=src, VAULTMEM_VAULT=str(vault), VAULTMEM_NOW="2026-11-22T10:15:00Z")


def _cli(vault: Path, *args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "vaultmem", *args], capture_output=True, text=True,
                          env=_env(vault), timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def _grep(root: Path, texts: dict[str, str]) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for name, needle in NEEDLES.items():
                if needle.encode() in data:
                    hits.append(f"{name} in {path.relative_to(root)}")
    for label, text in texts.items():
        for name, needle in NEEDLES.items():
            if needle in text:
                hits.append(f"{name} in {label}")
    return hits


def test_no_secret_reaches_a_file_a_log_or_an_error(tmp_path):
    vault = tmp_path / "vault"
    outputs: dict[str, str] = {}
    code, outputs["init"] = _cli(vault, "init", str(vault))
    assert code == 0, outputs["init"]
    code, out = _cli(vault, "save", "A harmless memory to relate to", "--json")
    assert code == 0, out
    harmless = json.loads(out)["memory_id"]
    code, out = _cli(vault, "save", "Another harmless memory", "--json")
    other = json.loads(out)["memory_id"]
    attempts = 0
    for name, secret in SECRETS.items():
        for label, args in (
            ("content", ["save", f"The deploy uses {secret} for access"]),
            ("context", ["save", "Deploy access details", "--context", f"key is {secret}"]),
            ("source", ["save", "Deploy access details", "--source", secret]),
            ("meta", ["save", "Deploy access details", "--meta", f"token={secret}"]),
            ("json", ["save", f"credential: {secret}", "--json"]),
        ):
            code, outputs[f"cli {label} {name}"] = _cli(vault, *args)
            attempts += 1
            assert code != 0, f"{name} via {label} was saved: {outputs[f'cli {label} {name}']}"

    # the MCP server over stdio, its stderr log captured
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    errlog = tmp_path / "mcp-stderr.log"
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", str(vault)],
                                   env=_env(vault))

    async def main() -> int:
        n = 0
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for name, secret in SECRETS.items():
                        for args in ({"content": f"Remember {secret}"},
                                     {"content": "Deploy access", "context": secret},
                                     {"content": "Deploy access", "source": secret},
                                     {"content": "Deploy access", "meta": {"token": secret}},
                                     {"content": "Deploy access", "tags": [secret[:90]]}):
                            result = await session.call_tool("save_memory", args)
                            n += 1
                            text = result.content[0].text
                            outputs[f"mcp save {name} {sorted(args)}"] = text
                            blocked = result.is_error or not json.loads(text).get("success", True)
                            assert blocked, f"{name} saved via MCP {sorted(args)}: {text[:200]}"
                        result = await session.call_tool("create_relation", {
                            "from_memory_id": harmless, "to_memory_id": other,
                            "relation_type": "related", "metadata": {"note": secret.replace("\n", " ")[:200]}})
                        outputs[f"mcp relate {name}"] = result.content[0].text
                        assert result.is_error, f"{name} written as relation metadata"
                        n += 1
        return n

    attempts += asyncio.run(main())
    outputs["mcp stderr"] = errlog.read_text()
    errlog.unlink()  # grepped as captured output below, not as a vault file
    outputs["watch --once"] = _cli(vault, "watch", "--once")[1]
    hits = _grep(vault, outputs)
    assert hits == []

    # A person's own note holding a credential is indexed (it is their vault) and flagged by
    # doctor, but no command prints the credential: not doctor, not a sync, not search.
    person_secret = "ghp_" + "P3rs0nW7rTt3nT0k3nQ9vW1yZ3aB5cD6eF0gH"
    (vault / "Notes").mkdir()
    (vault / "Notes" / "servers.md").write_text(f"# Servers\nThe CI token is {person_secret}\n", encoding="utf-8")
    shown = {}
    for args in (["doctor"], ["doctor", "--json"], ["index", "rebuild"], ["index", "status"], ["watch", "--once"],
                 ["search", "CI token"], ["search", "CI token", "--json"], ["stats"]):
        shown[" ".join(args)] = _cli(vault, *args)[1]
    flagged = json.loads(shown["doctor --json"])
    assert [p["path"] for p in flagged["problems"] if p["check"] == "credential"] == ["Notes/servers.md"]
    leaked = [label for label, text in shown.items() if person_secret in text]
    assert leaked == []
    report("secrets", secrets=len(SECRETS), attempts=attempts, files_grepped=sum(1 for p in vault.rglob("*")
                                                                                if p.is_file()), hits=0)


# -- the back doors of round two: every write path passes one gate -----------------------------------------

AWS = "AKIA" + "IOSFODNN7EXAMPL1"
PASSWORD = "Sup3r" + "S3cret!"


def _everything(vault: Path) -> bytes:
    """Every file vaultmem or the person wrote, but the derived index (which holds what the
    person's own notes hold, to search them)."""
    return b"".join(p.read_bytes() for p in vault.rglob("*") if p.is_file() and "index" not in p.relative_to(vault).parts)


def test_no_write_path_lets_a_credential_in(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from vaultmem.base.errors import SecretBlocked
    from vaultmem.cli import cli
    from vaultmem.store import MemoryStore

    vault = tmp_path / "vault"
    MemoryStore(vault).init()
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault))
    runner = CliRunner()
    store = MemoryStore(vault)

    # blocks, CLI and library (the MCP tool calls the same method)
    result = runner.invoke(cli, ["block", "set", "creds", f"aws key {AWS}"])
    assert (result.exit_code, result.output) == (
        1, "Error: blocked: content looks like aws_access_key; remove the credential (keep it in a password "
           "manager) and save again\n")
    with pytest.raises(SecretBlocked):
        store.block_set("creds", f"aws key {AWS}", agent="bot")
    assert not list((vault / "memory/blocks").iterdir())

    # a captured session: the snapshot keeps the session, not the token
    transcript = f"User: deploy with token {AWS} please\nAssistant: Deployed. We decided to rotate it tomorrow.\n"
    store.capture(transcript, agent="ops")
    snapshot = next((vault / "memory/sessions").iterdir()).read_text()
    assert "[redacted: aws_access_key]" in snapshot and AWS not in snapshot

    # a recall query is remembered for feedback without the password in it
    store.save("The staging database password rotates every month", source="ops")
    store.recall(f"what is the staging database password={PASSWORD}")
    state = next((vault / ".vaultmem/state").glob("last_recall-*.json")).read_text()
    assert "[redacted: password_assignment]" in state and PASSWORD not in state

    # consolidation never copies a token a person typed into a memory into the merged note
    for n in (1, 2):
        (vault / f"memory/stm/deploy-key-{n}.md").write_text(
            f"---\nid: 0c0ffee{n}-0000-4000-8000-0000000000{n}{n}\ntags: [ops]\n---\n"
            f"The deploy key for the staging cluster is {AWS} and it lives in the ops vault\n")
    store.sync()
    merged = store.consolidate(auto_detect=True, mode="apply", cohesion_threshold=0.5)
    assert merged["consolidated_clusters"] == 0 and len(merged["skipped_secrets"]) == 1
    assert merged["skipped_secrets"][0]["reason"].startswith("blocked: content looks like aws_access_key")
    assert sorted(p.name for p in (vault / "memory/stm").glob("deploy-key-*")) == ["deploy-key-1.md", "deploy-key-2.md"]

    # the person's own token does not stop vaultmem touching their note (only new lines pass the gate)
    assert store.touch("0c0ffee1")["use_count"] == 1
    store.close()
    assert _everything(vault).count(AWS.encode()) == 2  # only in the two notes the person wrote
    assert PASSWORD.encode() not in _everything(vault)
