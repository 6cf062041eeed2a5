"""Adapter: `vaultmem service`, the watcher as a user service on Linux (systemd), macOS
(launchd) and Windows (Task Scheduler): the template in templates/ with this installation's
`vaultmem` and the vault filled in, and the commands that install it (printed, never run)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from vaultmem.base.config import TEMPLATE_DIR
from vaultmem.base.errors import VaultmemError
from vaultmem.cli.common import emit_json, handle_errors, installed_executable, output_options, vault_option

PLATFORMS = ("linux", "macos", "windows")
FILES = {"linux": "vaultmem-watch.service", "macos": "com.vaultmem.watch.plist", "windows": "vaultmem-watch.xml"}
TASK = "vaultmem-watch"  # the Task Scheduler task's name


def this_platform() -> str:
    return {"darwin": "macos", "win32": "windows"}.get(sys.platform, "linux")


def _systemd_arg(arg: str) -> str:
    """One ExecStart word: `%` doubled (specifiers), quoted when it holds a space, quote or backslash."""
    arg = arg.replace("%", "%%")
    if any(c in arg for c in ' \t"\\\''):
        arg = '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


MCP_HOST_NOTICE = ("vaultmem service: --mcp-host does nothing now: every `vaultmem mcp` serves its own session "
                   "(until `vaultmem serve` serves MCP over HTTP)")


def render(platform: str, exe: str, vault: str, home: str, user: str) -> str:
    """The service file for `platform` running `exe watch --vault vault`."""
    template = (TEMPLATE_DIR / FILES[platform]).read_text(encoding="utf-8")
    if platform == "linux":
        sample = "ExecStart=%h/.local/bin/vaultmem watch --vault %h/Documents/vaultmem"
        line = "ExecStart=" + " ".join(_systemd_arg(a) for a in (exe, "watch", "--vault", vault))
        return template.replace(sample, line)
    from xml.sax.saxutils import escape  # here: it imports urllib.request, slow for every command's start

    if platform == "macos":
        return (template.replace("<string>/Users/YOU/.local/bin/vaultmem</string>", f"<string>{escape(exe)}</string>")
                .replace("<string>/Users/YOU/Documents/vaultmem</string>", f"<string>{escape(vault)}</string>")
                .replace("/Users/YOU/Library/Logs/", escape(home.rstrip("/") + "/Library/Logs/")))
    command = r"C:\Users\YOU\AppData\Local\Programs\Python\Python312\Scripts\vaultmem.exe"
    import subprocess  # here: subprocess and signal would slow every command's start

    arguments = subprocess.list2cmdline(["watch", "--vault", vault])  # how Windows splits a command line
    return (template.replace(f"<Command>{command}</Command>", f"<Command>{escape(exe)}</Command>")
            .replace(r"<Arguments>watch --vault C:\Users\YOU\Documents\vaultmem</Arguments>",
                     f"<Arguments>{escape(arguments)}</Arguments>")
            .replace("<UserId>YOU</UserId>", f"<UserId>{escape(user)}</UserId>")
            .replace('<?xml version="1.0" encoding="UTF-8"?>', '<?xml version="1.0" encoding="UTF-16"?>', 1))


def install_commands(platform: str, path: Path) -> list[str]:
    """The commands that install the written file `path` as a user service and start it."""
    if platform == "linux":
        return ["mkdir -p ~/.config/systemd/user",
                f"cp '{path}' ~/.config/systemd/user/{FILES['linux']}",
                "systemctl --user daemon-reload",
                f"systemctl --user enable --now {FILES['linux']}"]
    if platform == "macos":
        return [f"cp '{path}' ~/Library/LaunchAgents/{FILES['macos']}",
                f"launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/{FILES['macos']}"]
    return [f'schtasks /Create /XML "{path}" /TN {TASK}', f"schtasks /Run /TN {TASK}"]


def _windows_user() -> str:
    user = os.environ.get("USERNAME") or os.environ.get("USER") or "YOU"
    domain = os.environ.get("USERDOMAIN")
    return f"{domain}\\{user}" if domain else user


@click.command()
@click.option("--platform", "platform", type=click.Choice(PLATFORMS), default=None,
              help="The service manager to write for (default: this machine's).")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Where to write the file (default: its usual name in the current folder).")
@click.option("--force", is_flag=True, help="Replace the file if it exists.")
@click.option("--mcp-host", is_flag=True, hidden=True,
              help="Does nothing now: every `vaultmem mcp` serves its own session.")
@vault_option
@output_options
@handle_errors
def service(platform: str | None, out: str | None, force: bool, mcp_host: bool, vault: str | None,
            as_json: bool) -> None:
    """Write the watcher's user-service file for this vaultmem and vault (systemd on Linux,
    launchd on macOS, Task Scheduler on Windows) and print the commands that install it.
    Nothing is installed or started for you.

    \b
    Example:
      vaultmem service --vault ~/Documents/vaultmem
      vaultmem service --platform windows --out vaultmem-watch.xml
    """
    from vaultmem.base.config import resolve_vault

    if mcp_host:
        click.echo(MCP_HOST_NOTICE, err=True)

    platform = platform or this_platform()
    root = resolve_vault(vault).resolve()
    path = Path(out or FILES[platform]).absolute()
    if path.exists() and not force:
        raise VaultmemError(f"{path} exists; pass --force to replace it, or --out to write elsewhere")
    text = render(platform, installed_executable(), str(root), str(Path.home()), _windows_user())
    # Task Scheduler reads the encoding its own exports use: UTF-16 with a byte-order mark
    try:
        path.write_bytes(text.encode("utf-16") if platform == "windows" else text.encode("utf-8"))
    except OSError as exc:
        raise VaultmemError(f"cannot write {path}: {exc.strerror}; pass --out with a folder you can write to") from None
    commands = install_commands(platform, path)
    result: dict[str, Any] = {"success": True, "platform": platform, "path": str(path), "vault": str(root),
                              "install": commands}
    if as_json:
        emit_json(result)
        return
    click.echo(f"Wrote {path}; install and start it with:")
    for line in commands:
        click.echo(f"  {line}")


COMMANDS = (service,)
