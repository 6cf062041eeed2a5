"""A session's first messages answered from recorded answers while the SDK loads (mcp/prelude.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_mcp_stdio import session_run

from vaultmem.mcp import prelude

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no fcntl: the SDK answers every message there")

V = "2025-11-25"
ANSWERS = {V: {"initialize": {"protocolVersion": V, "capabilities": {"tools": {"listChanged": False}},
                              "serverInfo": {"name": "vaultmem", "version": "9"}},
               "tools/list": {"tools": [{"name": "search_memory", "inputSchema": {"type": "object"}}]}}}


def init(ident: Any = 1, version: str = V, **extra: Any) -> str:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}, **extra}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "initialize", "params": params})


INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
TOOLS_LIST = '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
CALL = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_memory","arguments":{"query":"x"}}}'


def run(lines: list[str], close: bool = False, answers: dict[str, Any] = ANSWERS) -> tuple[Any, list[Any]]:
    """answer_early over real pipes; what it returned and the frames it wrote."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, "".join(line + "\n" for line in lines).encode())
    if close:
        os.close(in_w)
    try:
        early = prelude.answer_early(answers, in_r, out_w)
    finally:
        for fd in (in_r, out_w) if close else (in_r, in_w, out_w):
            os.close(fd)
    written = b""
    while chunk := os.read(out_r, 1 << 16):
        written += chunk
    os.close(out_r)
    return early, [json.loads(line) for line in written.splitlines()]


def test_initialize_and_tools_list_are_answered_and_the_rest_is_left_for_the_sdk():
    early, frames = run([init(), INITIALIZED, TOOLS_LIST, CALL, TOOLS_LIST])
    assert frames == [{"jsonrpc": "2.0", "id": 1, "result": ANSWERS[V]["initialize"]},
                      {"jsonrpc": "2.0", "id": 2, "result": ANSWERS[V]["tools/list"]}]
    assert early == prelude.Early(init() + "\n", (CALL + "\n" + TOOLS_LIST + "\n").encode(), initialized=True,
                                  closed=False, answered=["initialize", "tools/list"])


def test_a_string_id_is_echoed_and_a_client_that_leaves_is_seen():
    early, frames = run([init("a-1"), INITIALIZED], close=True)
    assert frames == [{"jsonrpc": "2.0", "id": "a-1", "result": ANSWERS[V]["initialize"]}]
    assert (early.closed, early.unread, early.answered) == (True, b"", ["initialize"])


@pytest.mark.parametrize("first", [
    init(version="2024-11-05"),  # a version nothing was recorded for
    init(extra=1),  # a field the early answer does not know
    init(True),  # an id JSON-RPC does not allow
    init(None),
    init(1.5),
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}',
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},'
    '"clientInfo":{"name":"t"}}}',
    '{not json',
    '[' + init() + ']',  # a batch
    TOOLS_LIST,  # before initialize
    CALL,
])
def test_anything_but_a_plain_known_first_request_goes_to_the_sdk_untouched(first):
    early, frames = run([first, INITIALIZED])
    assert frames == []
    assert early == prelude.Early(None, (first + "\n" + INITIALIZED + "\n").encode(), initialized=False,
                                  closed=False, answered=[])


def test_every_static_request_recorded_is_answered():
    answers = {V: {**ANSWERS[V], "ping": {}, "prompts/list": {"prompts": []}}}
    lines = [init(), INITIALIZED, '{"jsonrpc":"2.0","id":5,"method":"ping"}',
             '{"jsonrpc":"2.0","id":6,"method":"prompts/list"}',
             '{"jsonrpc":"2.0","id":7,"method":"resources/templates/list"}']  # not recorded here
    early, frames = run(lines, answers=answers)
    assert [(f["id"], f["result"]) for f in frames] == [(1, ANSWERS[V]["initialize"]), (5, {}), (6, {"prompts": []})]
    assert early.unread == (lines[-1] + "\n").encode() and early.answered == ["initialize", "ping", "prompts/list"]


def test_tools_list_before_the_initialized_notification_or_with_a_cursor_goes_to_the_sdk():
    early, frames = run([init(), TOOLS_LIST])
    assert [f["id"] for f in frames] == [1]
    assert (early.unread, early.initialized) == ((TOOLS_LIST + "\n").encode(), False)
    paged = '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"x"}}'
    early, frames = run([init(), INITIALIZED, paged])
    assert [f["id"] for f in frames] == [1] and early.unread == (paged + "\n").encode()


def test_a_client_that_stops_reading_ends_the_session():
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.close(out_r)
    os.write(in_w, (init() + "\n").encode())
    try:
        early = prelude.answer_early(ANSWERS, in_r, out_w)
    finally:
        for fd in (in_r, in_w, out_w):
            os.close(fd)
    assert early == prelude.Early(None, b"", closed=True)


def test_the_server_is_built_and_handed_the_session_while_the_client_is_silent():
    """`when_loaded` runs on the answering thread after the loader finished, and the session
    goes to the SDK at once, before the client's next message: what comes next is left unread
    for the SDK, and nothing answered later comes from the record."""
    import importlib
    import threading

    for name in prelude._SERVING_MODULES:  # loaded already: the loader finishes at once
        importlib.import_module(name)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, f"{init()}\n{INITIALIZED}\n{TOOLS_LIST}\n".encode())
    events: list[str] = []
    built, returned, sent = threading.Event(), threading.Event(), threading.Lock()
    later = TOOLS_LIST.replace('"id":2', '"id":4') + "\n" + CALL + "\n"

    def build() -> None:
        events.append(f"built on {threading.current_thread().name}")
        built.set()

    def send_later() -> None:  # the client's next messages, if the prelude is still reading 1 s on
        if built.wait(10) and not returned.wait(1.0):
            with sent:
                os.write(in_w, later.encode())

    threading.Thread(target=send_later, daemon=True).start()
    try:
        early = prelude.answer_early(ANSWERS, in_r, out_w, warm_up=True, when_loaded=build)
        returned.set()
        if sent.acquire(blocking=False):
            os.write(in_w, later.encode())
        left = os.read(in_r, 1 << 16).decode()
        answered = os.read(out_r, 1 << 16).decode().splitlines()
    finally:
        for fd in (in_r, in_w, out_w, out_r):
            os.close(fd)
    assert events == [f"built on {threading.current_thread().name}"]
    assert early.answered == ["initialize", "tools/list"] and early.unread == b"" and early.initialized
    assert [json.loads(frame)["id"] for frame in answered] == [1, 2]  # tools/list 4 left for the SDK
    assert left == later


def test_nothing_recorded_or_no_pipes_answers_nothing(tmp_path):
    assert prelude.answer_early({}, 0, 1) is None
    with open(tmp_path / "f", "wb+") as handle:
        assert prelude.answer_early(ANSWERS, handle.fileno(), handle.fileno()) is None


# -- the cache ------------------------------------------------------------------------------------


def test_answers_are_remembered_per_key_and_version(tmp_path):
    path = tmp_path / "c" / "mcp-replies.json"
    assert prelude.recorded("k", path) == {}
    prelude.remember("k", V, "initialize", ANSWERS[V]["initialize"], path)
    prelude.remember("k", V, "tools/list", ANSWERS[V]["tools/list"], path)
    prelude.remember("k", "2026-07-28", "tools/list", {"tools": []}, path)  # no initialize: not usable
    assert prelude.recorded("k", path) == ANSWERS
    assert prelude.recorded("other", path) == {}
    for n in range(prelude.KEEP + 2):
        prelude.remember(f"k{n}", V, "initialize", ANSWERS[V]["initialize"], path)
    entries = json.loads(path.read_text())["entries"]
    assert sorted(entries) == sorted(f"k{n}" for n in range(2, prelude.KEEP + 2))


def test_a_cache_others_can_write_or_a_broken_one_is_not_used(tmp_path):
    path = tmp_path / "mcp-replies.json"
    prelude.remember("k", V, "initialize", ANSWERS[V]["initialize"], path)
    path.chmod(0o666)
    assert prelude.recorded("k", path) == {}
    path.chmod(0o600)
    assert prelude.recorded("k", path) == {V: {"initialize": ANSWERS[V]["initialize"]}}
    path.write_text('{"format": 1, "entries": ')
    assert prelude.recorded("k", path) == {}
    prelude.remember("k", V, "initialize", ANSWERS[V]["initialize"], path)  # written over, whole
    assert prelude.recorded("k", path) == {V: {"initialize": ANSWERS[V]["initialize"]}}


def test_a_cache_edited_into_odd_shapes_is_written_over_not_fatal(tmp_path):
    path = tmp_path / "mcp-replies.json"
    path.write_text(json.dumps({"format": 1, "entries": {"k": {"versions": [], "used": "yesterday"},
                                                          "j": "x", "i": {"used": True}}}))
    prelude.remember("k", V, "initialize", ANSWERS[V]["initialize"], path)
    assert prelude.recorded("k", path) == {V: {"initialize": ANSWERS[V]["initialize"]}}
    assert prelude.recorded("j", path) == {} and prelude.recorded("i", path) == {}


def test_the_key_follows_options_environment_and_code(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("x = 1\n")
    key = prelude.build_key(False, "all", package)
    assert prelude.build_key(False, "all", package) == key
    assert len({key, prelude.build_key(True, "all", package), prelude.build_key(False, "core", package)}) == 3
    monkeypatch.setenv("VAULTMEM_AGENT", "claude")  # the session's own: the answers do not change
    assert prelude.build_key(False, "all", package) == key
    monkeypatch.setenv("VAULTMEM_DECAY_MODEL", "power_law")
    assert prelude.build_key(False, "all", package) != key
    monkeypatch.delenv("VAULTMEM_DECAY_MODEL")
    (package / "a.py").write_text("x = 22\n")
    assert prelude.build_key(False, "all", package) != key


# -- served for real ------------------------------------------------------------------------------


def test_the_second_session_answers_early_exactly_as_the_sdk_did(vault_path, tmp_path):
    """The first `vaultmem mcp` records what the SDK answered; the next one answers
    `initialize` and `tools/list` from that while the SDK loads, then the SDK serves the
    tool calls; the client sees the same answers."""
    async def scenario(s: Any, init: Any) -> dict[str, Any]:
        tools = await s.list_tools()
        saved = await s.call_tool("save_memory", {"content": "The boiler is serviced every October"})
        found = await s.call_tool("search_memory", {"query": "boiler"})
        return {"init": init.model_dump(), "tools": tools.model_dump(), "saved": saved.is_error,
                "found": [r["content"] for r in found.structured_content["results"]]}

    cache = Path(os.environ["HOME"]) / ".cache" / "vaultmem" / "mcp-replies.json"
    first = session_run(vault_path, scenario, errlog=tmp_path / "1.log")
    assert "while the SDK loaded" not in (tmp_path / "1.log").read_text()
    entries = json.loads(cache.read_text())["entries"]
    assert [sorted(answers) for e in entries.values() for answers in e["versions"].values()] == [
        ["initialize", "tools/list"]]
    stamp = cache.stat().st_mtime_ns

    second = session_run(vault_path, scenario, errlog=tmp_path / "2.log")
    assert "answered initialize, tools/list while the SDK loaded" in (tmp_path / "2.log").read_text()
    assert second["init"] == first["init"] and second["tools"] == first["tools"]
    # the second save merged into the first (the same text): one memory, found by the SDK's search
    assert second["found"] == first["found"] == ["The boiler is serviced every October"]
    assert second["saved"] is first["saved"] is False
    assert cache.stat().st_mtime_ns == stamp  # nothing new to record

    core = session_run(vault_path, scenario, "--tools", "core", errlog=tmp_path / "3.log")
    assert "while the SDK loaded" not in (tmp_path / "3.log").read_text()  # another tool list
    assert len(core["tools"]["tools"]) == 5 and len(first["tools"]["tools"]) > 5


def raw_session(vault: Path, lines: list[str], answers: int) -> list[dict[str, Any]]:
    """Send `lines`, read `answers` frames, then close stdin (an answer still in flight at the
    end of stdin is cancelled by the SDK)."""
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "VAULTMEM_EMBEDDINGS": "off"})
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(line + "\n" for line in lines))
    proc.stdin.flush()
    frames = [json.loads(proc.stdout.readline()) for _ in range(answers)]
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0 and proc.stdout.read() == ""
    return frames


def test_raw_frames_match_and_a_session_without_the_initialized_notification_works(vault_path):
    lines = [init(), INITIALIZED, TOOLS_LIST, '{"jsonrpc":"2.0","id":7,"method":"ping"}',
             '{"jsonrpc":"2.0","id":8,"method":"prompts/list"}',
             '{"jsonrpc":"2.0","id":9,"method":"resources/templates/list"}', CALL]
    recorded = raw_session(vault_path, lines, 6)  # the SDK answers, and records
    early = raw_session(vault_path, lines, 6)  # all but the call from the record
    assert [f["id"] for f in early] == [1, 2, 7, 8, 9, 3]
    assert early == recorded, (early, recorded)
    assert early[2]["result"] == {} and early[5]["result"]["isError"] is False
    cache = Path(os.environ["HOME"]) / ".cache" / "vaultmem" / "mcp-replies.json"
    [entry] = json.loads(cache.read_text())["entries"].values()
    assert sorted(entry["versions"][V]) == ["initialize", "ping", "prompts/list", "resources/templates/list",
                                            "tools/list"]
    # a client that calls a tool without sending notifications/initialized first
    terse = raw_session(vault_path, [init(), CALL], 2)
    assert [f["id"] for f in terse] == [1, 3] and terse[1]["result"]["isError"] is False


def first_start(vault: Path, env: dict[str, str], errlog: Path) -> list[dict[str, Any]]:
    """A client's first start: initialize, tools/list and a search answered, then stdin closed
    (the SDK, serving the call, logs what was answered before it loaded)."""
    with errlog.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault)], text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(line + "\n" for line in [init(), INITIALIZED, TOOLS_LIST, CALL]))
        proc.stdin.flush()
        frames = [json.loads(proc.stdout.readline()) for _ in range(3)]
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    return frames


def test_mcp_config_records_the_first_answers_so_a_client_s_first_start_is_answered_early(vault_path, tmp_path):
    from click.testing import CliRunner
    from conftest import invoke
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    def files() -> dict[str, bytes]:
        return {str(p.relative_to(vault_path)): p.read_bytes() for p in sorted(vault_path.rglob("*")) if p.is_file()}

    before = files()
    result = invoke(CliRunner(), "mcp", "config", "--client", "cursor", "--vault", str(vault_path))
    assert result.exit_code == 0
    assert json.loads(result.stdout)["mcpServers"]["vaultmem"]["args"] == ["mcp", "--vault", str(vault_path.resolve())]
    assert result.stderr.splitlines()[-1] == (
        f"# recorded the server's first answers (protocol {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}): "
        "the client's first start answers at once")
    assert V in HANDSHAKE_PROTOCOL_VERSIONS
    assert files() == before  # the recording sessions changed nothing in the vault
    cache = Path(os.environ["HOME"]) / ".cache" / "vaultmem" / "mcp-replies.json"
    entries = json.loads(cache.read_text())["entries"]
    # this shell's settings (the tests' VAULTMEM_NOW...) and none (an app started from the Dock)
    assert len(entries) == 2
    for entry in entries.values():
        assert sorted(entry["versions"]) == sorted(HANDSHAKE_PROTOCOL_VERSIONS)
        assert {version: sorted(answers) for version, answers in entry["versions"].items()} == {
            version: ["initialize", "ping", "prompts/list", "resources/templates/list", "tools/list"]
            for version in HANDSHAKE_PROTOCOL_VERSIONS}
    stamp = cache.stat().st_mtime_ns

    shell = first_start(vault_path, dict(os.environ), tmp_path / "shell.log")
    assert "answered initialize, tools/list while the SDK loaded" in (tmp_path / "shell.log").read_text()
    dock = {name: os.environ[name] for name in ("HOME", "PATH", "PYTHONPATH") if name in os.environ}
    bare = first_start(vault_path, dock, tmp_path / "dock.log")
    assert "answered initialize, tools/list while the SDK loaded" in (tmp_path / "dock.log").read_text()
    assert shell[:2] == bare[:2] and shell[0]["result"]["protocolVersion"] == V
    assert len(shell[1]["result"]["tools"]) == 28 and shell[2]["result"]["isError"] is False
    assert cache.stat().st_mtime_ns == stamp  # nothing was left to record


def test_mcp_config_says_when_the_answers_cannot_be_recorded_and_prints_the_config_anyway(vault_path):
    from click.testing import CliRunner
    from conftest import invoke

    (vault_path / ".vaultmem/config.yaml").write_text("mcp_tools: tiny\n")
    result = invoke(CliRunner(), "mcp", "config", "--client", "claude-code", "--vault", str(vault_path))
    assert result.exit_code == 0
    assert result.stdout.startswith("claude mcp add vaultmem -- ")
    assert result.stderr == (
        "# could not record the server's first answers (the MCP server did not answer protocol version "
        "2024-11-05's first requests: Error: mcp_tools must be one of core, cortexgraph, mnemosyne, all, "
        "got 'tiny'); the client's first start records them\n")
    assert not (Path(os.environ["HOME"]) / ".cache" / "vaultmem" / "mcp-replies.json").exists()
    quiet = invoke(CliRunner(), "mcp", "config", "--client", "claude-code", "--vault", str(vault_path), "--no-record")
    assert (quiet.exit_code, quiet.stderr, quiet.stdout) == (0, "", result.stdout)


FAKE_SERVER = '''
import json, sys, time
mode = sys.argv[1]
for line in sys.stdin:
    ask = json.loads(line)
    if "id" not in ask:
        continue
    if mode == "silent":
        time.sleep(30)
    if mode == "dies":
        print("Error: the vault is gone", file=sys.stderr)
        sys.exit(1)
    if ask["method"] == "initialize":
        asked = ask["params"]["protocolVersion"]
        if mode == "refuses":
            answer = {"error": {"code": -32602, "message": "no thanks"}}
        else:
            answer = {"result": {"protocolVersion": asked if asked != "1999-01-01" else "2025-11-25"}}
    elif ask["method"] == "prompts/list":
        answer = {"error": {"code": -32601, "message": "Method not found"}}
    else:
        answer = {"result": {}}
    print(json.dumps({"jsonrpc": "2.0", "id": ask["id"], **answer}), flush=True)
'''


@pytest.mark.parametrize(("mode", "outcome"), [
    ("answers", ["2025-11-25"]),  # 1999-01-01 not spoken; prompts/list not served: nothing to record
    ("refuses", "the MCP server answered initialize (2025-11-25) with an error: no thanks"),
    ("dies", "the MCP server did not answer protocol version 2025-11-25's first requests: Error: the vault is gone"),
    ("silent", "the MCP server did not answer protocol version 2025-11-25's first requests in 1 s"),
])
def test_prime_asks_each_version_and_says_what_went_wrong(tmp_path, mode, outcome):
    from vaultmem.base.errors import VaultmemError

    server = tmp_path / "server.py"
    server.write_text(FAKE_SERVER)
    command = [sys.executable, str(server), mode]
    if isinstance(outcome, list):
        assert prelude.prime(command, versions=("2025-11-25", "1999-01-01"), timeout=30) == outcome
        return
    with pytest.raises(VaultmemError) as raised:
        prelude.prime(command, versions=("2025-11-25",), timeout=1)
    assert str(raised.value) == outcome


def test_prime_says_when_the_server_cannot_be_run(tmp_path):
    from vaultmem.base.errors import VaultmemError

    with pytest.raises(VaultmemError) as raised:
        prelude.prime([str(tmp_path / "no-such-server")], versions=("2025-11-25",))
    assert str(raised.value) == f"cannot run {tmp_path / 'no-such-server'}: No such file or directory"


LEAN = """
import sys
{hook}
import vaultmem.mcp.server
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
import sse_starlette.sse
print("uvicorn" in sys.modules, sse_starlette.sse.AppStatus.original_handler is None,
      [type(f).__name__ for f in sys.meta_path if "Uvicorn" in type(f).__name__])
import uvicorn.main
print(sys.modules["uvicorn.main"].Server.__name__)
"""


@pytest.mark.parametrize(("hook", "printed"), [
    ("from vaultmem.mcp import lean; lean.stdio_only()", "False True []\nServer\n"),
    ("", "True False []\nServer\n"),
])
def test_a_stdio_server_does_not_load_uvicorn_for_sse_starlette(hook, printed):
    """sse_starlette imports uvicorn only to patch its exit handler, and skips that when
    uvicorn is missing; with `lean.stdio_only()` its import fails, once, for sse_starlette
    alone: the hook leaves sys.meta_path and the next importer gets uvicorn. Without the hook the
    SDK loads uvicorn (if it stops doing so, the hook is obsolete and this case says so)."""
    proc = subprocess.run([sys.executable, "-c", LEAN.format(hook=hook)], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent, timeout=120)
    assert proc.stderr == ""
    assert proc.stdout == printed


def test_the_serving_commands_skip_uvicorn(runner, vault_path, monkeypatch):
    """`vaultmem mcp` and `vaultmem watch` install the hook before anything imports the SDK
    (a no-op in a process that already imported it, as this one may have)."""
    from vaultmem.cli import cli, collector
    from vaultmem.mcp import host, lean

    installed = []
    monkeypatch.setattr(lean, "stdio_only", lambda: installed.append(True))
    monkeypatch.setattr(host, "hand_over", lambda *a, **k: 0)  # a watcher served the session
    try:
        assert runner.invoke(cli, ["mcp", "--vault", str(vault_path)]).exit_code == 0
        status = runner.invoke(cli, ["watch", "--status", "--vault", str(vault_path)])
        assert status.output.startswith("No watcher has run for "), status.output
    finally:
        collector.for_commands()  # as the CLI's import left it, for the tests after this one
    assert installed == [True, True]
