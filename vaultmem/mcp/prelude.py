"""A session's first messages answered while the MCP SDK loads.

Importing the SDK is most of `vaultmem mcp`'s start-up (0.45-0.6 s of 0.55-0.9 s on a 2-core
machine, docs/performance.md), yet a client's first requests need none of it: `initialize`,
`tools/list`, `prompts/list`, `resources/templates/list` and `ping` get the same answer every
time from one build of vaultmem and the SDK, one tool profile, read-only or not, and one
protocol version. So a session the SDK serves records those answers (`Recorder`) in the
user's cache folder, and the next `vaultmem mcp` with the same build and options answers them
from there (`answer_early`) while a thread imports the SDK. The first message that is
anything else (a tool call, `resources/list`, a request with parameters, a protocol version
nothing was recorded for, an `initialize` with fields it does not know) hands the session
to the SDK as if the SDK had read every line itself: the client's `initialize` is replayed
to it with its answer dropped, then the unread bytes (`server.resumed`, the path a session
handed back by a stopping watcher takes). So does the SDK having loaded while the client is
silent: the server is built and the session handed over then, ready for the next message.
The client sees the SDK's own answers, about half a second sooner; a tool call waits until
the SDK has loaded.

Only where stdin and stdout are pipes or sockets (how every MCP client starts a server) and
the event loop's pipe transports serve the session (`stdio.pipe_streams`: not Windows).
The cache file is used only when it is the user's own and no one else can write it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import logging
import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vaultmem import __version__
from vaultmem.base import portable
from vaultmem.base.config import session_environment

log = logging.getLogger("vaultmem.mcp.prelude")

FORMAT = 1
KEEP = 8  # builds/option sets remembered: a few clients with different profiles, an upgrade
# Requests without parameters whose answer depends only on the build, the options and the
# protocol version (resources/list does not: it lists the vault's memories).
STATIC = ("tools/list", "prompts/list", "resources/templates/list", "ping")
RECORDED = ("initialize", *STATIC)
_INIT_FIELDS = frozenset({"protocolVersion", "capabilities", "clientInfo"})
_CLIENT_INFO_FIELDS = frozenset({"name", "version", "title", "description", "websiteUrl", "icons"})
# What serving a session imports; loaded by `warm` on a thread while the first messages are answered.
_SERVING_MODULES = ("vaultmem.store", "mcp.server", "mcp.server.stdio", "mcp.shared._context_streams",
                    "mcp.shared.message", "mcp_types.jsonrpc", "vaultmem.mcp.server")


def cache_file() -> Path | None:
    """Where the answers are recorded; None when this user has no home folder to cache in."""
    try:
        return portable.user_cache() / "vaultmem" / "mcp-replies.json"
    except RuntimeError:  # Path.home() with neither $HOME nor a password entry
        return None


def build_key(read_only: bool, profile: str, package: Path | None = None) -> str:
    """What the recorded answers depend on: vaultmem's version and code (each module's size and
    modification time, so an edited checkout never gets an old answer), the SDK's and
    pydantic's files, the options, and the `VAULTMEM_*` environment."""
    digest = hashlib.sha256(json.dumps([FORMAT, __version__, read_only, profile, sorted(session_environment().items()),
                                        sys.version_info[:2]]).encode())
    package = package or Path(__file__).resolve().parent.parent
    for path in sorted(package.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(package)}:{st.st_size}:{st.st_mtime_ns};".encode())
    for name in ("mcp", "mcp_types", "pydantic", "pydantic_core"):  # pydantic writes the input schemas
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None:
            digest.update(f"{name}:absent;".encode())
            continue
        st = os.stat(origin)
        digest.update(f"{name}:{origin}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()[:32]


def _read_cache(path: Path) -> dict[str, Any]:
    """The cache's entries, or {} when it is missing, unreadable, malformed, or could have
    been written by someone else (its answers go to the model verbatim)."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
                log.warning("not using %s: it must be this user's file that only this user can write", path)
                return {}
            if not stat.S_ISREG(st.st_mode):
                return {}
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), dict):
        return {}
    return data["entries"]


def recorded(key: str, path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The recorded answers for `key`: {protocol version: {method: result}} (`RECORDED`)."""
    path = path or cache_file()
    entry = _read_cache(path).get(key) if path is not None else None
    if not isinstance(entry, dict) or not isinstance(entry.get("versions"), dict):
        return {}
    out = {}
    for version, answers in entry["versions"].items():
        if (isinstance(answers, dict) and isinstance(answers.get("initialize"), dict)
                and answers["initialize"].get("protocolVersion") == version):
            out[version] = {m: r for m, r in answers.items() if m in RECORDED and isinstance(r, dict)}
    return out


def remember(key: str, version: str, method: str, result: dict[str, Any], path: Path | None = None) -> None:
    """Add one answer to the cache (atomically, under a lock: sessions starting together each
    add theirs; the last `KEEP` keys are kept). A cache that cannot be written costs only
    speed: the failure is logged, the session goes on."""
    path = path or cache_file()
    if path is None:
        return
    try:
        lock = portable.ExclusiveLock(path.with_name(f".{path.name}.lock"))
        deadline = time.monotonic() + 2.0
        while not lock.try_acquire():
            if time.monotonic() > deadline:
                log.info("not recording an MCP answer: %s stayed locked", path)
                return
            time.sleep(0.005)
    except OSError as exc:
        log.info("could not record the MCP answers in %s: %s", path, exc)
        return
    try:
        _remember(key, version, method, result, path)
    finally:
        lock.release()


def _remember(key: str, version: str, method: str, result: dict[str, Any], path: Path) -> None:
    try:
        entries = _read_cache(path)
        entry = entries.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("versions"), dict):
            entry = {"versions": {}}
        answers = entry["versions"].get(version)
        entry["versions"][version] = {**(answers if isinstance(answers, dict) else {}), method: result}
        entry["used"] = time.time()
        entries[key] = entry

        def used(k: str) -> float:
            stamp = entries[k].get("used") if isinstance(entries[k], dict) else None
            return float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else 0.0

        keep = sorted(entries, key=used)
        for old in keep[:-KEEP]:
            del entries[old]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump({"format": FORMAT, "entries": entries}, handle, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError as exc:
        log.info("could not record the MCP answers in %s: %s", path, exc)
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


# -- serving a session ------------------------------------------------------------------------------


def serve_stdio(root: Path, open_store: Callable[[], Any], *, read_only: bool, profile: str,
                resume: Any = None) -> int:
    """Serve the MCP session on stdin and stdout (`vaultmem mcp`): its first messages answered
    from the record while the SDK loads (when `resume` is None: no watcher handed a session
    back), the store (`open_store`) and server built while the client is silent, then the
    SDK serving the rest (`server.serve`). The exit status."""
    key = build_key(read_only, profile)
    prepared: tuple[Any, Any] | None = None

    def build() -> None:
        nonlocal prepared
        from vaultmem.mcp.server import prepare

        store = open_store()
        prepared = store, prepare(store, read_only=read_only, profile=profile,
                                  record=lambda lines, replies: Recorder(key, lines, replies))

    if resume is None and (root / ".vaultmem").is_dir():  # not a vault yet: open_store fails, before any answer
        resume = answer_early(recorded(key), warm_up=True, when_loaded=build)
        if resume is not None and resume.closed:  # the client left before asking for more
            return 0
    if prepared is None:
        build()
    assert prepared is not None
    store, server = prepared
    from vaultmem.mcp.server import serve

    serve(store, read_only=read_only, profile=profile, resume=resume, server=server)
    return 0


# -- answering early --------------------------------------------------------------------------------


@dataclasses.dataclass
class Early:
    """What the early answers leave for the SDK: the client's initialize request (None if
    none was answered), whether its `notifications/initialized` was read, the bytes read but
    not answered, and whether the client has closed its end."""

    initialize: str | None
    unread: bytes
    initialized: bool = True
    closed: bool = False
    answered: list[str] = dataclasses.field(default_factory=list)


def warm() -> threading.Thread:
    """Import what serving needs, on a daemon thread (an import error surfaces later, when the
    main thread imports the same module)."""
    import importlib

    def run() -> None:
        for name in _SERVING_MODULES:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001  (re-raised by the main thread's own import)
                return

    thread = threading.Thread(target=run, name="vaultmem-mcp-warm", daemon=True)
    thread.start()
    return thread


def _request(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if (not isinstance(message, dict) or message.get("jsonrpc") != "2.0"
            or not isinstance(message.get("method"), str)):
        return None
    return message


def _plain_id(message: dict[str, Any]) -> bool:
    ident = message.get("id")
    return isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))


def _initialize_version(message: dict[str, Any]) -> str | None:
    """The protocol version an `initialize` request asks for, when it is one the early
    answer can stand in for: fields as the specification has them, nothing else."""
    params = message.get("params")
    if not _plain_id(message) or not isinstance(params, dict) or set(message) - {"jsonrpc", "id", "method", "params"}:
        return None
    info = params.get("clientInfo")
    if (set(params) != _INIT_FIELDS or not isinstance(params["capabilities"], dict)
            or not isinstance(info, dict) or set(info) - _CLIENT_INFO_FIELDS
            or not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str)):
        return None
    version = params["protocolVersion"]
    return version if isinstance(version, str) else None


def _frame(ident: Any, result: dict[str, Any]) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}, separators=(",", ":"),
                       ensure_ascii=False) + "\n").encode("utf-8")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def answer_early(answers: dict[str, dict[str, Any]], in_fd: int = 0, out_fd: int = 1,
                 warm_up: bool = False, when_loaded: Callable[[], None] | None = None) -> Early | None:
    """Answer the session's first messages on `in_fd`/`out_fd` from `answers` (`recorded`)
    until one needs the SDK (importing it meanwhile on a thread when `warm_up`, then running
    `when_loaded` on this thread if the client is still silent, building the server, and
    returning at once: the SDK serves what comes next); None
    when nothing could be answered this way (no recorded answers, or the descriptors are not
    pipes or sockets), and nothing was read."""
    if not answers or not portable.piped(in_fd, out_fd):
        return None
    loader = warm() if warm_up else None
    idle = _Idle(loader, when_loaded) if loader is not None and when_loaded is not None else None
    try:
        early = _answer(answers, in_fd, out_fd, idle)
    except BrokenPipeError:  # the client stopped reading: the session is over
        early = Early(None, b"", closed=True)
    if loader is not None and not early.closed:
        loader.join()  # no two threads importing at once (a cycle in a library would deadlock them)
    return early


class _Idle:
    """While the client is silent: once the SDK has loaded, run `task` (once); `done` once it ran."""

    def __init__(self, loader: threading.Thread, task: Callable[[], None]) -> None:
        self.loader = loader
        self.task: Callable[[], None] | None = task

    @property
    def done(self) -> bool:
        return self.task is None

    def wait(self, fd: int) -> None:
        """Return when `fd` has something to read, having run the task if its time came first."""
        import select

        while self.task is not None and not select.select([fd], [], [], 0.02)[0]:
            if not self.loader.is_alive():
                task, self.task = self.task, None
                task()


def _answer(answers: dict[str, dict[str, Any]], in_fd: int, out_fd: int, idle: _Idle | None = None) -> Early:
    buffer = b""
    init_line: str | None = None
    version: str | None = None
    initialized = False
    answered: list[str] = []
    while True:
        cut = buffer.find(b"\n")
        if cut < 0:
            if idle is not None:
                idle.wait(in_fd)
                if idle.done:
                    # The server is built: the SDK takes the session now, while the client is
                    # silent, so its loop, streams and the replayed initialize are ready before
                    # the next message (a first tool call waited ~20 ms for them).
                    return Early(init_line, buffer, initialized, False, answered)
            try:
                chunk = os.read(in_fd, 1 << 16)
            except InterruptedError:
                continue
            if not chunk:
                return Early(init_line, buffer, initialized, not buffer.strip(), answered)
            buffer += chunk
            continue
        line, rest = buffer[:cut + 1], buffer[cut + 1:]
        message = _request(line)
        method = message.get("method") if message else None
        if method == "initialize" and init_line is None and message is not None:
            asked = _initialize_version(message)
            if asked in answers and "initialize" in answers[asked]:
                _write_all(out_fd, _frame(message["id"], answers[asked]["initialize"]))
                init_line, version, buffer = line.decode("utf-8"), asked, rest
                answered.append(method)
                continue
        elif (method == "notifications/initialized" and init_line is not None and not initialized
              and message is not None and "id" not in message and not message.get("params")):
            initialized, buffer = True, rest
            continue
        elif (method in STATIC and initialized and message is not None and _plain_id(message)
              and not message.get("params") and version is not None and method in answers[version]):
            _write_all(out_fd, _frame(message["id"], answers[version][method]))
            buffer = rest
            answered.append(method)
            continue
        return Early(init_line, buffer, initialized, False, answered)


# -- recording what the SDK answers ---------------------------------------------------------------


class Recorder:
    """Wraps a session's (lines, replies) to note the SDK's answers to `initialize` and the
    `STATIC` requests (`remember`); it looks only at the session's first few lines, then
    passes everything through untouched."""

    LOOK = 8

    def __init__(self, key: str, lines: Any, replies: Any, path: Path | None = None) -> None:
        self.key, self.lines, self.replies, self.path = key, lines, replies, path
        self.known = recorded(key, path)  # what is recorded already is not written again
        self.seen = 0
        self.pending: dict[Any, str] = {}  # request id -> method
        self.version: str | None = None

    def __aiter__(self) -> Recorder:
        return self

    async def __anext__(self) -> str:
        line: str = await self.lines.__anext__()
        if self.seen < self.LOOK:
            self.seen += 1
            message = _request(line.encode("utf-8"))
            if message is not None and _plain_id(message):
                if message["method"] == "initialize":
                    asked = _initialize_version(message)
                    if asked is not None:
                        self.pending[message["id"]] = "initialize"
                        self.version = asked
                elif message["method"] in STATIC and not message.get("params"):
                    self.pending[message["id"]] = message["method"]
        return line

    async def write(self, text: str) -> None:
        if self.pending:
            try:
                self._note(text)
            except Exception as exc:  # noqa: BLE001  (recording is an optimisation: never the session's end)
                log.info("could not record an MCP answer: %s", exc)
        await self.replies.write(text)

    async def flush(self) -> None:
        await self.replies.flush()

    def _note(self, text: str) -> None:
        try:
            frame = json.loads(text)
        except ValueError:
            return
        if not isinstance(frame, dict) or frame.get("id") not in self.pending or not isinstance(frame.get("result"), dict):
            return
        method = self.pending.pop(frame["id"])
        result = frame["result"]
        if self.version is None or (method == "initialize" and result.get("protocolVersion") != self.version):
            return  # an unsupported version was asked for: the SDK chose another; not recorded
        if self.known.get(self.version, {}).get(method) != result:
            remember(self.key, self.version, method, result, self.path)
            self.known.setdefault(self.version, {})[method] = result


# -- recording ahead of the first session -----------------------------------------------------------


def record_first_answers(command: list[str], root: Path) -> list[str] | None:
    """`prime` the server `command` runs for the vault at `root` under this process's
    environment and, when that has vaultmem settings, under one without them (an app started
    from the Dock or the Start menu has none): the protocol versions recorded. None when
    nothing is recorded here: on Windows (no early answers there) or for a folder that is not
    a vault yet (the server would not start). VaultmemError when a session failed."""
    if not portable.has_fcntl() or not (root / ".vaultmem").is_dir():
        return None
    settings = session_environment()
    envs = [dict(os.environ)] + ([{k: v for k, v in os.environ.items() if k not in settings}] if settings else [])
    versions: list[str] = []
    for env in envs:
        versions = prime(command, env=env)
    return versions


def prime(command: list[str], env: dict[str, str] | None = None, versions: tuple[str, ...] | None = None,
          timeout: float = 60.0) -> list[str]:
    """Record the first answers of the MCP server `command` runs (`vaultmem mcp --vault ...`,
    as a client's configuration names it) for each protocol version a client can ask for, by
    running one short session per version, so even the client's first start answers
    `initialize` at once. The sessions ask only what is recorded (nothing in the vault
    changes) and run two at a time. The versions recorded, in order; VaultmemError naming the
    first session that failed and why."""
    from concurrent.futures import ThreadPoolExecutor

    from vaultmem.base.errors import VaultmemError

    if versions is None:
        try:
            from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
        except ImportError as exc:  # another SDK layout
            raise VaultmemError(f"cannot tell which protocol versions the MCP SDK speaks ({exc})") from None
        versions = tuple(HANDSHAKE_PROTOCOL_VERSIONS)
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda v: _prime_one(command, v, env, timeout), versions))
    for outcome in outcomes:
        if outcome not in ("recorded", "not spoken"):
            raise VaultmemError(outcome)
    return [version for version, outcome in zip(versions, outcomes, strict=True) if outcome == "recorded"]


def _prime_one(command: list[str], version: str, env: dict[str, str] | None, timeout: float) -> str:
    """One session asking `version`'s recorded requests: "recorded", "not spoken" (the server
    answered `initialize` with another version), or what went wrong, in one line."""
    import subprocess
    import tempfile

    asks = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "vaultmem mcp config", "version": __version__}}}),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        *(json.dumps({"jsonrpc": "2.0", "id": n, "method": method}) for n, method in enumerate(STATIC, start=2))]
    waiting = set(range(1, len(STATIC) + 2))
    outcome = "recorded"
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=env)
        except OSError as exc:
            return f"cannot run {command[0]}: {exc.strerror or exc}"
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write("".join(f"{ask}\n" for ask in asks).encode())
                proc.stdin.flush()
            while waiting and (line := proc.stdout.readline()):
                try:
                    frame = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(frame, dict) or frame.get("id") not in waiting:
                    continue
                result = frame.get("result")
                if not isinstance(result, dict) and frame["id"] != 1:
                    waiting.discard(frame["id"])  # a request this server does not serve: nothing to record
                    continue
                if not isinstance(result, dict):
                    error = frame.get("error")
                    message = error.get("message") if isinstance(error, dict) else None
                    outcome = f"the MCP server answered initialize ({version}) with an error: {message or frame}"
                    break
                if frame["id"] == 1 and result.get("protocolVersion") != version:
                    outcome = "not spoken"
                    waiting.clear()
                waiting.discard(frame["id"])
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()  # the end of the session
            proc.wait()
        finally:
            timed_out = not timer.is_alive() and waiting
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if (not waiting and proc.returncode == 0) or outcome.startswith("the MCP server answered"):
            return outcome
        if timed_out:
            return f"the MCP server did not answer protocol version {version}'s first requests in {timeout:g} s"
        errors.seek(0)
        said = [line for line in errors.read().decode("utf-8", "replace").splitlines() if line.strip()]
    why = said[-1].strip() if said else f"it exited with status {proc.returncode}"
    return f"the MCP server did not answer protocol version {version}'s first requests: {why}"
