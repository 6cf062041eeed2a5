"""`vaultmem service`: the watcher as a user service on Linux, macOS and Windows (rendered and
checked here; schtasks, systemctl and launchctl are never run)."""

from __future__ import annotations

import configparser
import json
import plistlib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import invoke

from vaultmem.base.config import TEMPLATE_DIR
from vaultmem.cli import service

NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}
T = "{" + NS["t"] + "}"
EXE = r"C:\Users\Ana Lúcia\AppData\Local\Programs\Python\Python313\Scripts\vaultmem.exe"
VAULT = r"C:\Users\Ana Lúcia\Documents\Notes & <Ideas>\vault\\"


def test_the_windows_template_is_a_task_that_runs_the_watcher_at_logon():
    task = ET.parse(TEMPLATE_DIR / "vaultmem-watch.xml").getroot()
    assert task.tag == T + "Task"
    assert task.find("t:Triggers/t:LogonTrigger/t:Enabled", NS).text == "true"
    assert task.find("t:Settings/t:MultipleInstancesPolicy", NS).text == "IgnoreNew"
    assert task.find("t:Settings/t:ExecutionTimeLimit", NS).text == "PT0S"  # runs for as long as you are logged on
    assert task.find("t:Actions/t:Exec/t:Arguments", NS).text.startswith("watch --vault ")
    assert (Path(__file__).resolve().parent.parent / "templates" / "vaultmem-watch.xml").is_file()


def test_windows_task_has_the_absolute_executable_and_the_vault_escaped():
    text = service.render("windows", EXE, VAULT, r"C:\Users\Ana Lúcia", "DESKTOP-1\\ana")
    assert text.startswith('<?xml version="1.0" encoding="UTF-16"?>')
    task = ET.fromstring(text.encode("utf-16"))  # well-formed, in the encoding it declares
    assert task.find("t:Actions/t:Exec/t:Command", NS).text == EXE
    # Windows splits this back into ["watch", "--vault", VAULT]: quotes around the space, the
    # trailing backslashes doubled before the closing quote
    assert task.find("t:Actions/t:Exec/t:Arguments", NS).text == (
        r'watch --vault "C:\Users\Ana Lúcia\Documents\Notes & <Ideas>\vault\\\\"')
    assert "Notes &amp; &lt;Ideas&gt;" in text
    assert [u.text for u in task.iter(T + "UserId")] == ["DESKTOP-1\\ana", "DESKTOP-1\\ana"]
    assert "YOU" not in text.split("-->", 1)[1]


def test_linux_unit_and_macos_plist_have_the_paths():
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read_string(service.render("linux", "/opt/vm/bin/vaultmem", "/home/ana/My Vault 100%", "/home/ana", "ana"))
    assert unit["Service"]["ExecStart"] == '/opt/vm/bin/vaultmem watch --vault "/home/ana/My Vault 100%%"'
    plist = plistlib.loads(service.render("macos", "/Users/ana/.local/bin/vaultmem", "/Users/ana/A & B",
                                          "/Users/ana", "ana").encode())
    assert plist["ProgramArguments"] == ["/Users/ana/.local/bin/vaultmem", "watch", "--vault", "/Users/ana/A & B"]
    assert plist["StandardErrorPath"] == "/Users/ana/Library/Logs/vaultmem-watch.log"


@pytest.mark.parametrize(("platform", "name", "commands"), [
    ("windows", "vaultmem-watch.xml", ['schtasks /Create /XML "{path}" /TN vaultmem-watch',
                                       "schtasks /Run /TN vaultmem-watch"]),
    ("linux", "vaultmem-watch.service", ["mkdir -p ~/.config/systemd/user",
                                         "cp '{path}' ~/.config/systemd/user/vaultmem-watch.service",
                                         "systemctl --user daemon-reload",
                                         "systemctl --user enable --now vaultmem-watch.service"]),
    ("macos", "com.vaultmem.watch.plist", [
        "cp '{path}' ~/Library/LaunchAgents/com.vaultmem.watch.plist",
        "launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/com.vaultmem.watch.plist"]),
])
def test_service_command_writes_the_file_and_prints_the_install_commands(runner, vault_path, tmp_path, monkeypatch,
                                                                         platform, name, commands):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(service, "installed_executable", lambda: "/opt/vm/bin/vaultmem")
    result = invoke(runner, "service", "--platform", platform, "--json")
    assert result.exit_code == 0
    path = tmp_path / name
    data = json.loads(result.stdout)
    assert data == {"success": True, "platform": platform, "path": str(path), "vault": str(vault_path.resolve()),
                    "install": [c.format(path=path) for c in commands]}
    raw = path.read_bytes()
    text = raw.decode("utf-16") if platform == "windows" else raw.decode("utf-8")
    assert raw.startswith(b"\xff\xfe") == (platform == "windows")  # UTF-16 with its byte-order mark
    assert "/opt/vm/bin/vaultmem" in text and str(vault_path.resolve()) in text
    again = invoke(runner, "service", "--platform", platform)
    assert again.exit_code == 1
    assert again.output == f"Error: {path} exists; pass --force to replace it, or --out to write elsewhere\n"
    plain = invoke(runner, "service", "--platform", platform, "--force", "--out", "svc.file")
    assert plain.exit_code == 0
    assert plain.output.startswith(f"Wrote {tmp_path / 'svc.file'}; install and start it with:\n  ")
    nowhere = invoke(runner, "service", "--platform", platform, "--out", "missing/svc.file")
    assert nowhere.exit_code == 1
    assert nowhere.output == (f"Error: cannot write {tmp_path / 'missing/svc.file'}: No such file or directory; "
                              "pass --out with a folder you can write to\n")


@pytest.mark.parametrize("platform", ["linux", "macos", "windows"])
def test_mcp_host_is_accepted_and_does_nothing_but_say_so(runner, vault_path, tmp_path, monkeypatch, platform):
    """`vaultmem service --mcp-host` (the watcher used to serve MCP sessions) still works for
    people's scripts: one line on stderr, and the same file as without it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(service, "installed_executable", lambda: "/opt/vm/bin/vaultmem")
    plain = invoke(runner, "service", "--platform", platform, "--out", "plain.file")
    flagged = invoke(runner, "service", "--platform", platform, "--out", "flagged.file", "--mcp-host")
    assert (plain.exit_code, flagged.exit_code) == (0, 0)
    assert plain.stderr == ""
    assert flagged.stderr == ("vaultmem service: --mcp-host does nothing now: every `vaultmem mcp` serves its own "
                              "session (until `vaultmem serve` serves MCP over HTTP)\n")
    assert flagged.stdout == plain.stdout.replace("plain.file", "flagged.file")
    assert (tmp_path / "flagged.file").read_bytes() == (tmp_path / "plain.file").read_bytes()
    assert b"mcp-host" not in (tmp_path / "flagged.file").read_bytes().replace(b"\0", b"")
