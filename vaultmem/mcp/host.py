"""A running `vaultmem watch` serves the vault's MCP sessions; `vaultmem mcp` hands it its stdin and stdout.

Every MCP client starts its own `vaultmem mcp`, and each would import the MCP SDK (0.45 s and
about 55 MB here: docs/performance.md) and open the index before it answers `initialize`.
A watcher started with `vaultmem watch --mcp-host` already has the index open and keeps the
SDK loaded (it imports it once, in the background, when it starts). So `vaultmem mcp` first
asks such a watcher over a Unix socket to take its session: it passes its stdin and stdout descriptors
along (`SCM_RIGHTS`), and the watcher serves the client's pipes directly, with the same tools,
profile, read-only mode and agent, so nothing is relayed and no frame differs. The
`vaultmem mcp` process then only waits (about 26 MB) until the watcher says the session is
over, because the client watches that process. If no watcher answers, it refuses (another
environment: `VAULTMEM_*` settings that differ), or the platform has no descriptor passing
(Windows), `vaultmem mcp` serves the session itself as before; `vaultmem mcp --in-process`
or `VAULTMEM_MCP_HOST=off` always does.

A watcher that stops (SIGTERM, Ctrl-C: an upgrade, a restart) hands each session back: it
stops reading between two messages, waits until every request it read is answered, and
sends the pipes back to the session's `vaultmem mcp` with what it had read but not served
and the client's `initialize` request; that process then serves the session from there
(`server.resumed`). A watcher that is killed ends its sessions (the clients reconnect), which
is why hosting is opt-in.

The socket is `$XDG_RUNTIME_DIR/vaultmem-<uid>/<vault digest>.sock` (else the temp folder), in a
folder only this user can open; a folder that is not this user's, or that others can open, is
never used.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import socket
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from vaultmem.base.config import session_environment

log = logging.getLogger("vaultmem.mcp.host")

PROTOCOL = 1
HELLO_TIMEOUT = 5.0
HAND_BACK_WAIT = 30.0  # the longest a stopping watcher waits for a session's answers in flight


def enabled() -> bool:
    """Whether sessions can be handed over here: descriptor passing exists (not Windows), and
    `VAULTMEM_MCP_HOST` does not say off."""
    from vaultmem.base import portable

    return (hasattr(socket, "send_fds") and hasattr(socket, "AF_UNIX") and portable.has_fcntl()
            and os.environ.get("VAULTMEM_MCP_HOST", "").lower() not in ("off", "0", "no", "false"))


def _folder() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"vaultmem-{os.getuid()}"


def socket_path(root: Path) -> Path:
    """Where the watcher of the vault at `root` listens."""
    digest = hashlib.sha256(os.fsencode(Path(root).resolve())).hexdigest()[:24]
    return _folder() / f"{digest}.sock"


def _private_folder(create: bool) -> Path | None:
    """The socket folder, only if it is this user's and nobody else can open it."""
    folder = _folder()
    if create:
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        log.warning("not using %s for MCP sessions: it must be a folder of this user's that only "
                    "this user can open (chmod 700)", folder)
        return None
    return folder


# -- the client side: `vaultmem mcp` --------------------------------------------------------------


@dataclasses.dataclass
class Resume:
    """A session the stopping watcher handed back (`Host.stop`): the client's `initialize`
    request (None if it had not sent one yet) and what the watcher had read but not served."""

    initialize: str | None
    unread: bytes


def hand_over(root: Path, *, read_only: bool, profile: str | None, agent: str | None) -> int | Resume | None:
    """Have the vault's watcher serve this process's MCP session on its stdin and stdout.

    Returns the exit status once the watcher has finished the session (0; 1 if the watcher
    went away in the middle), a `Resume` when the watcher stopped and gave the session back
    (stdin and stdout are the client's pipes again: serve it here, from there), or None when
    no watcher takes it: serve it here then."""
    if not enabled() or _private_folder(create=False) is None:
        return None
    path = socket_path(root)
    if not path.exists():
        return None
    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        ctl.settimeout(HELLO_TIMEOUT)
        ctl.connect(os.fspath(path))
        hello = {"v": PROTOCOL, "read_only": read_only, "profile": profile, "agent": agent, "env": session_environment()}
        socket.send_fds(ctl, [json.dumps(hello).encode() + b"\n"], [0, 1])
        answer = json.loads(_read_line(ctl) or b"{}")
    except (OSError, ValueError):
        ctl.close()
        return None
    if not answer.get("ok"):
        log.info("the watcher did not take the session (%s); serving it here", answer.get("reason", "no answer"))
        ctl.close()
        return None
    # The watcher serves the client's pipes now. This process lets go of them (the client
    # then sees the end of the session when the watcher closes them) and waits.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    ctl.settimeout(None)
    try:
        end, fds = _receive(ctl)
    except OSError:
        end, fds = None, []
    ctl.close()
    message = json.loads(end) if end else {}
    if message.get("done"):
        return 0
    if message.get("resume") and len(fds) == 2:
        os.dup2(fds[0], 0)
        os.dup2(fds[1], 1)
        for fd in fds:
            os.close(fd)
        return Resume(message.get("initialize"), base64.b64decode(message.get("buffer") or ""))
    for fd in fds:
        os.close(fd)
    print("vaultmem: the watcher serving this MCP session stopped; the client will start a new session",
          file=sys.stderr)
    return 1


def _receive(sock: socket.socket) -> tuple[bytes | None, list[int]]:
    """One line from the watcher, and the descriptors that came with it."""
    data, fds = b"", []
    while not data.endswith(b"\n"):
        chunk, got, _flags, _addr = socket.recv_fds(sock, 1 << 16, 2)
        fds += got
        if not chunk:
            return None, fds
        data += chunk
    return data, fds


def _read_line(sock: socket.socket) -> bytes | None:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data


# -- the watcher side ---------------------------------------------------------------------------


class Host:
    """MCP sessions served in the watcher's process: a thread accepts hand-overs on the socket,
    another runs every session in one event loop, each tool call in the agent's `Bridge`
    thread (one store per agent, long-lived like `vaultmem mcp`'s)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = socket_path(self.root)
        self.live_fds: set[int] = set()  # the clients' pipes being served (closed in forked children)
        self._listener: socket.socket | None = None
        self._loop: Any = None
        self._ready = threading.Event()
        self._stopping = False
        self._servers: dict[tuple[bool, str, str | None], Any] = {}
        self._building = threading.Lock()
        self._bridges: dict[str | None, Any] = {}
        self._threads: list[threading.Thread] = []
        self._sessions: set[Watched] = set()

    def start(self) -> bool:
        """Listen on the socket and warm the SDK in the background; False where this is off."""
        if not enabled() or _private_folder(create=True) is None:
            return False
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # one watcher per vault (its instance lock): this one is stale
        listener.bind(os.fspath(self.path))
        os.chmod(self.path, 0o600)
        listener.listen(16)
        self._listener = listener
        for target, name in ((self._run_loop, "vaultmem-mcp-sessions"), (self._accept, "vaultmem-mcp-accept")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("serving MCP sessions handed over on %s", self.path)
        return True

    def stop(self) -> None:
        """Stop accepting, and hand every session in progress back to its `vaultmem mcp`,
        which goes on serving it (between two messages: nothing is lost or answered twice)."""
        import asyncio

        self._stopping = True
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            with contextlib.suppress(OSError):
                self.path.unlink()
        if self._loop is not None and self._loop.is_running():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._hand_back_all(), self._loop).result(timeout=HAND_BACK_WAIT + 5)
            self._loop.call_soon_threadsafe(self._loop.stop)
        for bridge in self._bridges.values():
            with contextlib.suppress(Exception):
                bridge.close()

    # -- threads ---------------------------------------------------------------------------
    def _run_loop(self) -> None:
        import asyncio

        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server_for(False, None, None)  # the SDK imported and the default tools built now
        except Exception:  # noqa: BLE001 - reported; hand-overs are refused and served by the client
            log.exception("could not prepare the MCP server; sessions are served by `vaultmem mcp` itself")
            return
        self._ready.set()
        loop.run_forever()

    def _accept(self) -> None:
        import asyncio

        assert self._listener is not None
        while not self._stopping:
            try:
                ctl, _ = self._listener.accept()
            except OSError:
                return
            fds: list[int] = []
            try:
                ctl.settimeout(HELLO_TIMEOUT)
                message, fds, _flags, _addr = socket.recv_fds(ctl, 65536, 2)
                hello = json.loads(message)
                reason = self._refusal(hello, fds)
                if reason:
                    ctl.sendall(json.dumps({"ok": False, "reason": reason}).encode() + b"\n")
                    raise ValueError(reason)
                server = self._server_for(bool(hello["read_only"]), hello["profile"], hello["agent"])
                ctl.sendall(b'{"ok": true}\n')
                ctl.settimeout(None)
                self.live_fds.update(fds)
                asyncio.run_coroutine_threadsafe(self._session(server, fds, ctl), self._loop)
            except Exception as exc:  # noqa: BLE001 - a refused or broken hand-over: the client serves itself
                log.info("MCP hand-over not taken: %s", exc)
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                ctl.close()

    def _refusal(self, hello: Any, fds: list[int]) -> str | None:
        if not isinstance(hello, dict) or hello.get("v") != PROTOCOL or len(fds) != 2:
            return "another vaultmem version"
        if not self._ready.wait(timeout=30):
            return "the watcher's MCP server is not ready"
        if hello.get("env") != session_environment():
            return "different VAULTMEM_* environment"
        from vaultmem.mcp.server import PROFILES

        if hello.get("profile") not in (None, *PROFILES) or not isinstance(hello.get("read_only"), bool) or not (
                hello.get("agent") is None or isinstance(hello.get("agent"), str)):
            return "invalid options"
        return None

    def _server_for(self, read_only: bool, profile: str | None, agent: str | None) -> Any:
        """The MCP server for these options, built once (the first build imports the SDK)."""
        with self._building:
            return self._build(read_only, profile, agent)

    def _build(self, read_only: bool, profile: str | None, agent: str | None) -> Any:
        from vaultmem.mcp.server import Bridge, build_server

        bridge = self._bridges.get(agent)
        if bridge is None:
            from vaultmem.base.config import load_settings
            from vaultmem.base.timeutil import env_clock
            from vaultmem.store import MemoryStore, Policy

            # as `vaultmem mcp`; this process's watcher vouches for the index (a fence, no scan)
            store = MemoryStore(self.root, settings=load_settings(self.root), clock=env_clock(),
                                policy=Policy(freshness_ttl=1.0, long_lived=True, trust_watcher=True))
            store.agent = agent
            bridge = self._bridges[agent] = Bridge(store)
        profile = profile or bridge.raw_store.settings.mcp_tools
        key = (read_only, profile, agent)
        if key not in self._servers:
            self._servers[key] = build_server(bridge.raw_store, read_only=read_only, bridge=bridge, profile=profile)
        return self._servers[key]

    async def _session(self, server: Any, fds: list[int], ctl: socket.socket) -> None:
        from vaultmem.mcp.server import serve_session
        from vaultmem.mcp.stdio import fd_streams

        log.info("MCP session handed over (%d open)", len(self.live_fds) // 2)
        watched: Watched | None = None
        try:
            async with fd_streams(fds[0], fds[1]) as (lines, replies):
                watched = Watched(lines, replies)
                self._sessions.add(watched)
                await serve_session(server, watched, watched)
        except Exception:  # noqa: BLE001 - one session's failure never stops the watcher
            log.exception("an MCP session failed")
        finally:
            if watched is not None:
                self._sessions.discard(watched)
            try:
                if watched is not None and watched.stopped:
                    # The watcher is stopping: the client's pipes go back to its `vaultmem mcp`,
                    # with what was read but not yet served, and the session goes on there.
                    back = {"resume": True, "initialize": watched.initialize,
                            "buffer": base64.b64encode(watched.unread()).decode()}
                    socket.send_fds(ctl, [json.dumps(back).encode() + b"\n"], fds)
                    log.info("MCP session handed back to its vaultmem mcp")
                else:
                    ctl.sendall(b'{"done": true}\n')
                    log.info("MCP session ended")
            except OSError:
                pass
            for fd in fds:
                self.live_fds.discard(fd)
                with contextlib.suppress(OSError):
                    os.close(fd)
            ctl.close()

    async def _hand_back_all(self) -> None:
        import asyncio

        sessions = list(self._sessions)
        for watched in sessions:
            watched.stop()
        while any(w in self._sessions for w in sessions):
            await asyncio.sleep(0.01)


class Watched:
    """A served session's lines and replies (`stdio.Lines`/`Replies`), watched so that it can
    stop between messages: `stop()` stops reading, waits until every request read has its
    answer written, then ends the session as if the client had closed its end; `unread()` is
    what was read from the pipe but not served, and `initialize` the client's opening request."""

    def __init__(self, lines: Any, replies: Any) -> None:
        import asyncio

        self.lines, self.replies = lines, replies
        self.inflight = lines.inflight  # shared with `replies`, which marks each answer written
        self.stopped = False
        self._stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def initialize(self) -> str | None:
        return self.inflight.initialize

    def stop(self) -> None:
        if not self._stop.done():
            self._stop.set_result(None)

    def unread(self) -> bytes:
        return bytes(self.lines.reader._buffer)  # read from the pipe, not yet a line we served

    def __aiter__(self) -> Watched:
        return self

    async def __anext__(self) -> str:
        import asyncio

        if not self._stop.done():
            read = asyncio.ensure_future(self.lines.reader.readline())
            try:
                await asyncio.wait({read, self._stop}, return_when=asyncio.FIRST_COMPLETED)
            except BaseException:
                read.cancel()
                raise
            if read.done():
                raw = read.result()
                if not raw:  # the client closed its end: answer what was read, then end
                    await self.inflight.settle()
                    raise StopAsyncIteration
                line = raw.decode("utf-8", errors="replace")
                self.inflight.read(line)
                return line
            read.cancel()  # nothing taken from the buffer: a line not yet whole stays there
        self.stopped = True
        await self.inflight.settle(HAND_BACK_WAIT)
        raise StopAsyncIteration

    async def write(self, text: str) -> None:
        await self.replies.write(text)

    async def flush(self) -> None:
        await self.replies.flush()


