"""stdin and stdout read and written by the event loop itself, for the SDK's stdio transport.

The SDK's `stdio_server()` reads each line and writes each reply through `anyio.wrap_file`:
a hop to a worker thread and back for every line read, every write and every flush, about
0.4 ms of a `search_memory` round trip on a 2-core machine (docs/performance.md). When both
ends are pipes or sockets (how every MCP client starts a server), `pipe_streams()` gives
line and write objects served by asyncio's pipe transports instead (no thread, same
frames), which `server.serve_session` hands the SDK's server loop directly
(`server.FrameReader`/`FrameWriter`). Elsewhere (Windows' proactor loop, a terminal, a file, or
`VAULTMEM_PLATFORM_RULES=no-fcntl`) it yields None and the SDK's own path runs.

Like the SDK, it claims fds 0 and 1 while serving: the wire moves to private descriptors,
fd 0 reads the null device and fd 1 writes to stderr, so a handler's or child's stray
output can never tear a frame. Both are put back on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any

from vaultmem.base import portable

# The longest a session whose client closed its end waits for the answers still in flight.
SETTLE_WAIT = 30.0

# How the SDK writes an answer to a request: {"jsonrpc":"2.0","id":<not null>,"result"|"error":...}
_ANSWER = re.compile(r'\{"jsonrpc":"2\.0","id":(-?\d+|"(?:[^"\\]|\\.)*"),"(?:result|error)":')
_OTHER = re.compile(r'\{"jsonrpc":"2\.0","(?:method|id":null)')


def answered_id(frame: str) -> Any:
    """The id of the request a frame answers, or None (a notification, a request of the
    server's own, an answer to a line that was no request); read from its head, parsed only
    if unusual."""
    match = _ANSWER.match(frame)
    if match:
        return json.loads(match.group(1))
    if _OTHER.match(frame):
        return None
    try:
        message = json.loads(frame)
    except ValueError:
        return None
    if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
        return message.get("id")
    return None


class InFlight:
    """The requests a session read and has not answered yet, so that it ends only once each
    has its answer: a client (a script) that writes its requests and closes its end gets every
    answer, where the SDK would end the session at once and answer those still running with
    "Connection closed". A request the client cancels (notifications/cancelled) gets no answer
    and is not waited for. `initialize` is the client's opening request, as read."""

    def __init__(self) -> None:
        self.ids: set[int | str] = set()
        self.idle = asyncio.Event()
        self.idle.set()
        self.initialize: str | None = None

    def read(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return
        ident = message.get("id")
        if isinstance(ident, (int, str)) and not isinstance(ident, bool):
            if message["method"] == "initialize":
                self.initialize = line
            self.ids.add(ident)
            self.idle.clear()
        elif message["method"] == "notifications/cancelled" and isinstance(message.get("params"), dict):
            self._done(message["params"].get("requestId"))

    def written(self, frame: str) -> None:
        ident = answered_id(frame)
        if ident is not None:
            self._done(ident)

    def _done(self, ident: Any) -> None:
        if isinstance(ident, (int, str)):
            self.ids.discard(ident)
        if not self.ids:
            self.idle.set()

    async def settle(self, timeout: float = SETTLE_WAIT) -> None:
        """Wait until every request read has its answer (at most `timeout` seconds)."""
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
            await asyncio.wait_for(self.idle.wait(), timeout)


class Lines:
    """The request lines, as `server.FrameReader` iterates them (text, newline kept); at the
    client's end of input, the end comes once every request read is answered (`InFlight`)."""

    def __init__(self, reader: asyncio.StreamReader, inflight: InFlight) -> None:
        self.reader = reader
        self.inflight = inflight  # shared with the session's Replies, which mark the answers

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        raw = await self.reader.readline()
        if not raw:
            await self.inflight.settle()
            raise StopAsyncIteration
        line = raw.decode("utf-8", errors="replace")
        self.inflight.read(line)
        return line

    def waiting(self) -> bool:
        """Whether the client has sent more than the request being served: bytes read and not
        yet taken as a line, or another request read and not answered (a burst, a cancellation
        on its way). A server runs a quick tool on its loop's thread only when nothing waits
        (server.Bridge), so a burst keeps its order and a cancellation is read in time."""
        return bool(getattr(self.reader, "_buffer", True)) or len(self.inflight.ids) > 1


class Replies:
    """Where `server.FrameWriter` writes each frame: `write` queues it, `flush` waits until the
    pipe has taken it (a client that stops reading holds the writer, not the loop)."""

    def __init__(self, writer: asyncio.StreamWriter, inflight: InFlight) -> None:
        self.writer = writer
        self.inflight = inflight

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))
        self.inflight.written(text)

    async def flush(self) -> None:
        await self.writer.drain()


@contextlib.asynccontextmanager
async def pipe_streams(unread: bytes = b"") -> AsyncIterator[tuple[Lines, Replies] | None]:
    """(lines, replies) over the process's stdin and stdout, or None where the SDK's threaded
    streams must serve (see the module's docstring); `unread`: bytes already read from stdin,
    which the lines begin with."""
    if not portable.piped(0, 1):
        yield None
        return
    import fcntl

    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        async with fd_streams(wire_in, wire_out, unread) as streams:
            yield streams
    finally:
        # The wire goes back to fds 0 and 1, blocking again (its file description is shared
        # with them); fd_streams closed the private copies.
        for fd, wire in ((0, wire_in), (1, wire_out)):
            with contextlib.suppress(OSError):
                os.dup2(wire, fd)
                os.set_blocking(fd, True)
            with contextlib.suppress(OSError):
                os.close(wire)


@contextlib.asynccontextmanager
async def fd_streams(in_fd: int, out_fd: int, unread: bytes = b"") -> AsyncIterator[tuple[Lines, Replies]]:
    """(lines, replies) over two pipe or socket descriptors, served by the running loop's pipe
    transports, the lines beginning with `unread`; the descriptors are duplicated, so the caller
    still owns (and closes) its own."""
    loop = asyncio.get_running_loop()
    transports: list[Any] = []
    try:
        # A frame is one line however long (a save's content, escaped): no line limit.
        reader = asyncio.StreamReader(limit=2**31, loop=loop)
        reader.feed_data(unread)  # before the transport reads: the pipe may already be at its end
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(os.dup(in_fd), "rb", buffering=0))
        transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), os.fdopen(os.dup(out_fd), "wb", buffering=0))
        transports.append(write_transport)
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
        inflight = InFlight()
        yield Lines(reader, inflight), Replies(writer, inflight)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
    finally:
        for transport in transports:  # each closes its duplicate
            transport.close()
