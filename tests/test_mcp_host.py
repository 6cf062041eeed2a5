"""`vaultmem watch --mcp-host` serving the sessions `vaultmem mcp` hands over (mcp/host.py):
real processes, the SDK's stdio client, files on disk."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_tools import RAW_REQUESTS

from vaultmem.mcp import host

pytestmark = pytest.mark.skipif(not host.enabled(), reason="no descriptor passing on this platform")


@pytest.fixture
def runtime(monkeypatch):
    folder = Path(tempfile.mkdtemp(prefix="vm"))  # short: a socket path holds at most 104-108 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def watcher(vault_path, runtime):
    log = runtime / "watch.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "watch", "--mcp-host", "--vault", str(vault_path)],
                                stdout=subprocess.DEVNULL, stderr=err)
    sock = host.socket_path(vault_path)
    deadline = time.monotonic() + 30
    while not (sock.exists() and "serving MCP sessions" in log.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    yield proc, log
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


def session(vault: Path, scenario: Any, *extra: str, env: dict[str, str] | None = None) -> tuple[Any, str, float]:
    """Run `scenario` over a `vaultmem mcp` session; returns its result, the process's stderr and
    the seconds until `initialize` was answered."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", str(vault), *extra],
                                   env={**os.environ, **(env or {})})
    errlog = Path(tempfile.mkstemp(prefix="vm-err")[1])

    async def main() -> tuple[Any, float]:
        with errlog.open("w") as err:
            start = time.perf_counter()
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    answered = time.perf_counter() - start
                    return await scenario(s), answered

    try:
        result, answered = asyncio.run(asyncio.wait_for(main(), timeout=60))
        return result, errlog.read_text(), answered
    finally:
        errlog.unlink()


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def test_the_watcher_serves_a_handed_over_session(vault_path, watcher):
    proc, log = watcher

    async def scenario(s: Any) -> dict[str, Any]:
        saved = data(await s.call_tool("save_memory", {"content": "Deploys go out on Tuesdays", "tags": ["ops"]}))
        found = data(await s.call_tool("search_memory", {"query": "deploys"}))
        bad = await s.call_tool("search_memory", {"query": "deploys", "top_k": 0})
        tools = {t.name for t in (await s.list_tools()).tools}
        return {"saved": saved, "found": found, "bad": bad, "tools": tools}

    out, stderr, _answered = session(vault_path, scenario)
    assert "serving" not in stderr  # `vaultmem mcp` did not serve it: the watcher did
    assert "MCP session handed over" in log.read_text()
    note = vault_path / out["saved"]["path"]
    assert note.read_text(encoding="utf-8").endswith("---\nDeploys go out on Tuesdays\n")
    assert [r["id"] for r in out["found"]["results"]] == [out["saved"]["memory_id"]]
    assert out["bad"].is_error and "top_k" in out["bad"].content[0].text
    assert "save_memory" in out["tools"]

    # the same options as a session served here: read-only, a profile, an agent
    async def read_only(s: Any) -> Any:
        return {t.name for t in (await s.list_tools()).tools}, await s.call_tool("save_memory", {"content": "x"})

    (tools, attempt), stderr, _ = session(vault_path, read_only, "--read-only", "--tools", "core")
    assert tools == {"search_memory", "open_memories"}  # memory_recall reinforces what it returns: a write
    assert attempt.is_error and attempt.content[0].text == "Unknown tool: save_memory"
    assert "serving" not in stderr
    assert len(list((vault_path / "memory/stm").iterdir())) == 1
    assert proc.poll() is None


def test_agents_keep_their_private_memories_through_the_watcher(vault_path, watcher):
    """One store per agent in the watcher: alpha's private memory is alpha's alone."""
    (vault_path / "memory/stm/ferry-0000abcd.md").write_text(
        "---\nid: 0000abcd-0000-4000-8000-000000000000\ncreated: 2026-11-20T10:00:00Z\n"
        "last_used: 2026-11-20T10:00:00Z\nuse_count: 1\nstrength: 1.0\nstatus: active\nagent: alpha\n"
        "private: true\n---\nMy private ferry timetable\n", encoding="utf-8")

    async def search(s: Any) -> Any:
        return [r["id"] for r in data(await s.call_tool("search_memory", {"query": "ferry timetable"}))["results"]]

    mine, _, _ = session(vault_path, search, "--agent", "alpha")
    theirs, _, _ = session(vault_path, search, "--agent", "beta")
    person, _, _ = session(vault_path, search)
    assert mine == person == ["0000abcd-0000-4000-8000-000000000000"] and theirs == []


def test_sessions_are_served_here_when_the_watcher_must_not(vault_path, watcher):
    _proc, log = watcher

    async def count(s: Any) -> int:
        return len((await s.list_tools()).tools)

    for extra, env in ((("--in-process",), None), ((), {"VAULTMEM_DECAY_MODEL": "exponential"})):
        n, stderr, _ = session(vault_path, count, *extra, env=env)
        assert n > 5 and "serving" in stderr, (extra, env)
    assert "MCP session handed over" not in log.read_text()
    assert "different VAULTMEM_* environment" in log.read_text()


def test_a_socket_folder_others_can_open_is_never_used(vault_path, runtime, watcher):
    folder = host.socket_path(vault_path).parent
    folder.chmod(0o755)
    assert host.hand_over(vault_path, read_only=False, profile=None, agent=None) is None
    folder.chmod(0o700)


def test_stopping_the_watcher_leaves_no_socket_and_mcp_serves_itself(vault_path, watcher):
    proc, _log = watcher
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert not host.socket_path(vault_path).exists()

    async def count(s: Any) -> int:
        return len((await s.list_tools()).tools)

    n, stderr, _ = session(vault_path, count)
    assert n > 5 and "serving" in stderr


def test_raw_frames_through_the_watcher_match_a_session_served_here(vault_path, watcher):
    requests = RAW_REQUESTS

    def frames(*extra: str) -> tuple[list[Any], str]:
        proc = subprocess.run([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault_path), *extra],
                              input="".join(json.dumps(r) + "\n" for r in requests) + "{not json\n",
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr

    handed, handed_err = frames()
    here, here_err = frames("--in-process")
    assert "serving" not in handed_err and "serving" in here_err
    by_id = {m.get("id"): m for m in handed}  # the parse error may come before the tool's answer
    assert sorted(by_id, key=str) == [1, 2, None] and by_id[None]["error"]["code"] == -32700
    assert by_id[1]["result"]["serverInfo"]["name"] == "vaultmem"
    assert by_id == {m.get("id"): m for m in here}


def test_two_clients_at_once_each_get_their_own_answers(vault_path, watcher):
    """Two sessions served side by side in the watcher's one event loop: each saves and
    finds its own memory, in its own options (one of them read-only)."""
    from concurrent.futures import ThreadPoolExecutor

    def client(word: str, read_only: bool) -> Any:
        async def scenario(s: Any) -> Any:
            if not read_only:
                await s.call_tool("save_memory", {"content": f"The {word} launch checklist", "tags": [word]})
            found = []
            for _ in range(20):
                found.append([r["content"] for r in data(await s.call_tool("search_memory", {"query": word}))["results"]])
            return found, {t.name for t in (await s.list_tools()).tools}

        return session(vault_path, scenario, *(["--read-only"] if read_only else []))

    with ThreadPoolExecutor(2) as pool:
        writer = pool.submit(client, "falcon", False)
        reader = pool.submit(client, "heron", True)
        (written, writer_tools), writer_err, _ = writer.result(timeout=120)
        (read, reader_tools), reader_err, _ = reader.result(timeout=120)
    assert written == [["The falcon launch checklist"]] * 20
    assert read == [[]] * 20  # nobody saved a heron
    assert "save_memory" in writer_tools and "save_memory" not in reader_tools
    assert "serving" not in writer_err + reader_err


def test_a_stopping_watcher_hands_its_sessions_back(vault_path, watcher):
    """SIGTERM to the watcher in the middle of a session: the session goes on, served by
    the client's own `vaultmem mcp` from the next message on, and nothing is lost."""
    proc, log = watcher

    async def scenario(s: Any) -> Any:
        first = data(await s.call_tool("save_memory", {"content": "Ferries leave at nine", "tags": ["travel"]}))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        after = data(await s.call_tool("search_memory", {"query": "ferries"}))
        second = data(await s.call_tool("save_memory", {"content": "Trains leave at ten", "tags": ["travel"]}))
        both = data(await s.call_tool("search_memory", {"query": "leave", "tags": ["travel"]}))
        tools = {t.name for t in (await s.list_tools()).tools}
        return first, after, second, both, tools

    (first, after, second, both, tools), stderr, _ = session(vault_path, scenario)
    assert "MCP session handed back to its vaultmem mcp" in log.read_text()
    assert "serving" in stderr  # `vaultmem mcp` serves the rest
    assert [r["id"] for r in after["results"]] == [first["memory_id"]]
    assert sorted(r["id"] for r in both["results"]) == sorted([first["memory_id"], second["memory_id"]])
    assert "save_memory" in tools
    assert len(list((vault_path / "memory/stm").iterdir())) == 2


@pytest.mark.parametrize(("frame", "answers"), [
    ('{"jsonrpc":"2.0","id":5,"result":{}}', True),
    ('{"jsonrpc":"2.0","id":"a\\"b","error":{"code":1}}', True),
    ('{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}', False),  # a line that was no request
    ('{"jsonrpc":"2.0","method":"notifications/message","params":{}}', False),
    ('{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}', False),  # the server asks
    ('{"result":{},"id":3,"jsonrpc":"2.0"}', True),  # another key order: parsed
    ('{"id":null,"jsonrpc":"2.0","error":{}}', False),
])
def test_a_stopping_session_counts_the_answers_it_wrote(frame, answers):
    """A stopping session waits for an answer to every request it read (host.Watched, through
    stdio.InFlight): which frames answer a request, and which request."""
    from vaultmem.mcp import stdio

    assert (stdio.answered_id(frame) is not None) is answers
