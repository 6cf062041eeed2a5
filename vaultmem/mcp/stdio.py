"""stdin and stdout read and written by the event loop itself, for the SDK's stdio transport.

The SDK's `stdio_server()` reads each line and writes each reply through `anyio.wrap_file`:
a hop to a worker thread and back for every line read, every write and every flush, about
0.4 ms of a `search_memory` round trip on a 2-core machine (docs/performance.md). When both
ends are pipes or sockets (how every MCP client starts a server), `pipe_streams()` hands
`stdio_server()` line and write objects served by asyncio's pipe transports instead: no
thread, same frames. Elsewhere (Windows' proactor loop, a terminal, a file, or
`VAULTMEM_PLATFORM_RULES=no-fcntl`) it yields None and the SDK's own path runs.

Like the SDK, it claims fds 0 and 1 while serving: the wire moves to private descriptors,
fd 0 reads the null device and fd 1 writes to stderr, so a handler's or child's stray
output can never tear a frame. Both are put back on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from vaultmem.base import portable


class Lines:
    """The request lines, as `stdio_server()` iterates them (text, newline kept)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class Replies:
    """Where `stdio_server()` writes each frame: `write` queues it, `flush` waits until the
    pipe has taken it (a client that stops reading holds the writer, not the loop)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

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
        yield Lines(reader), Replies(writer)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
    finally:
        for transport in transports:  # each closes its duplicate
            transport.close()
