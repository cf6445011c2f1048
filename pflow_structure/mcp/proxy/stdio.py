"""MCP's stdio transport for the proxy, both ends, as streams of JSON-RPC messages (dicts).

One JSON-RPC message per line of UTF-8, as the MCP specification defines stdio. The proxy
relays messages without looking into most of them, so it needs neither the SDK's message
classes nor its transports here: starting a proxy then costs no SDK import (about a second
with mcp 2.x), and the downstream process is started at once, while the client connects.

:func:`spawn` starts a command in its own process group and yields (receive, send) streams;
leaving it closes the process's stdin, waits, then terminates the group (an ``npx`` wrapper
and the server it started alike). :func:`own_stdio` does the same for this process's own
stdin and stdout; while it runs, anything else printed to stdout goes to stderr, so a stray
print cannot corrupt the protocol.

A line longer than ``PFLOW_STRUCTURE_MAX_MESSAGE_SIZE`` (256 MB) is not kept in memory: it is
dropped as it arrives (:mod:`.lines`), and when either end of it names its id, the peer
waiting for it gets an error that says the size and the setting: the client for a request of its
own, the server for the client's answer to one of its requests, the proxy's caller for a
server's answer. Without the limit, a client that writes without a newline grows the proxy by
gigabytes a minute. A server's line over 4 MB goes to a temporary file as it arrives (:mod:`.spill`).
A line is read and written as a message by :mod:`.messages`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio

from pflow_structure.mcp.proxy import spill
from pflow_structure.mcp.proxy.lines import CHUNK, Splitter, TooLong, split_lines, too_long_text
from pflow_structure.mcp.proxy.messages import (
    LARGE_LINE,
    as_text,
    decode,
    encode,
    encode_pieces,
    parse_float,
)
from pflow_structure.mcp.proxy.spill import SpilledLine, spilled_texts
from pflow_structure.mcp.proxy.startup import start

_Splitter = Splitter  # its name before lines.py

__all__ = [  # the line's parts live in lines.py and messages.py; their names stay importable from here
    "CHUNK",
    "LARGE_LINE",
    "TooLong",
    "as_text",
    "decode",
    "encode",
    "own_stdio",
    "parse_float",
    "spawn",
    "start",
    "stop_all",
    "too_long_text",
    "track",
]

EXIT_WAIT = 2.0  # seconds a process may take to exit after its stdin closes, then after SIGTERM
BUFFER = 64


def _error(request_id: Any, text: str, code: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


def _limit() -> int:
    from pflow_structure.errors import ParameterError
    from pflow_structure.settings import DEFAULT_MAX_MESSAGE_BYTES, Settings

    try:
        return Settings.max_message_bytes()
    except ParameterError:  # said at start, where the settings are read (Settings.from_env)
        return DEFAULT_MAX_MESSAGE_BYTES


async def _lines(read1: Any, sink: Any, limit: int | None = None) -> None:
    """Split what ``read1`` reads (a server's stdout) into messages for ``sink``; close ``sink`` at
    the end. An answer over ``limit`` reaches ``sink`` as an error for its request."""
    limit = _limit() if limit is None else limit
    async with sink:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for line in split_lines(read1, limit, spill.SPILL_BYTES):
                if isinstance(line, SpilledLine):  # a large answer's text stays in a file: spill.py
                    message = await anyio.to_thread.run_sync(spill.message_of, line, parse_float, decode)
                    del line
                    if message is not None:
                        await sink.send(message)
                    continue
                if isinstance(line, TooLong):
                    text = too_long_text(line, limit, "server")
                    print(text, file=sys.stderr, flush=True)
                    if line.id is not None and not line.request:  # the request waiting for it gets an error
                        await sink.send(_error(line.id, text, -32603))
                    continue  # a request of the server's, dropped: it gets no answer, as on a lost line
                decoded = as_text(line)
                del line  # a large line's bytes freed here, before it is parsed
                message = decode(decoded)
                del decoded  # not held while the message is handled (a large result is shaped meanwhile)
                if message is not None:
                    await sink.send(message)


async def _write_all(source: Any, write: Any) -> None:
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with source:
            async for message in source:
                if spilled_texts(message):
                    await _write_pieces(message, write)
                else:
                    await write(encode(message))


async def _write_pieces(message: dict[str, Any], write: Any) -> None:
    """A message holding texts left in files (a large result passed on: mcp/proxy/spill.py) written a
    piece at a time, never whole in memory; its files are closed (and so removed) afterwards."""
    try:
        pieces = encode_pieces(message)
        while (piece := await anyio.to_thread.run_sync(next, pieces, None)) is not None:
            await write(piece)
    finally:
        spill.close_message(message)


@contextlib.asynccontextmanager
async def spawn(
    command: list[str], process: subprocess.Popen[bytes] | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``command`` (or take the ``process`` already started for it); yield (receive, send)
    message streams. Raises OSError when it cannot start. Pipes are read and written in worker
    threads, so a process started before the event loop is used the same way."""
    process = process or start(command, env)
    assert process.stdin is not None and process.stdout is not None
    track(process)
    stdout, stdin = anyio.wrap_file(process.stdout), anyio.wrap_file(process.stdin)
    incoming_send, incoming = anyio.create_memory_object_stream[Any](BUFFER)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[Any](BUFFER)

    async def write(data: bytes) -> None:
        try:
            await stdin.write(data)
            await stdin.flush()
        except ValueError:  # its stdin was closed under the write (the process is being stopped): a broken pipe
            raise BrokenPipeError(f"the stdin of {command[0]} is closed") from None

    async with anyio.create_task_group() as group:
        group.start_soon(_lines, stdout.read1, incoming_send)
        group.start_soon(_write_all, outgoing_receive, write)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)  # its stdout ends, so the reading thread returns
            _LIVE.discard(process)
            group.cancel_scope.cancel()


_LIVE: set[subprocess.Popen[bytes]] = set()  # servers started and not yet stopped


def track(process: subprocess.Popen[bytes]) -> None:
    """Count ``process`` among the servers :func:`stop_all` stops."""
    _LIVE.add(process)


def stop_all() -> None:
    """Stop every server :func:`spawn` started that is still running, without an event loop: for the
    way out of a proxy that was interrupted or terminated (SIGTERM), so that a server that does not
    exit when its stdin closes is not left running on its own."""
    for process in list(_LIVE):
        _LIVE.discard(process)
        _stop_now(process)


async def _stop(process: subprocess.Popen[bytes]) -> None:
    await anyio.to_thread.run_sync(_stop_now, process)


def _stop_now(process: subprocess.Popen[bytes]) -> None:
    """Close stdin and wait; then SIGTERM the process group and wait; then SIGKILL it (blocking)."""
    with contextlib.suppress(Exception):
        assert process.stdin is not None
        process.stdin.close()
    for next_signal in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
        if _exited(process, EXIT_WAIT):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if os.name == "posix":
                os.killpg(process.pid, next_signal)
            else:
                process.send_signal(next_signal)
    _exited(process, EXIT_WAIT)


def _exited(process: subprocess.Popen[bytes], seconds: float) -> bool:
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


async def _read_stdin(size: int) -> bytes:
    """Up to ``size`` bytes of this process's stdin; a read still blocked when the proxy leaves before
    its input ends (a start-up failure) is abandoned, and the process exits without waiting for it."""
    read1: Any = sys.stdin.buffer.read1  # type: ignore[union-attr]  # a BufferedReader, typed as BinaryIO
    found: bytes = await anyio.to_thread.run_sync(read1, size, abandon_on_cancel=True)
    return found


@contextlib.asynccontextmanager
async def own_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """This process's stdin and stdout as (receive, send) message streams; stdout is kept for
    the protocol alone while inside (file descriptor 1 points at stderr meanwhile)."""
    protocol_fd = os.dup(sys.stdout.fileno())
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stdout = anyio.wrap_file(os.fdopen(protocol_fd, "wb"))
    incoming_send, incoming = anyio.create_memory_object_stream[Any](BUFFER)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[Any](BUFFER)

    limit = _limit()

    async def read() -> None:
        async with incoming_send:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                async for line in split_lines(_read_stdin, limit):
                    assert not isinstance(line, SpilledLine)  # the client's lines are never spilled
                    if isinstance(line, TooLong):
                        text = too_long_text(line, limit, "client")
                        print(text, file=sys.stderr, flush=True)
                        if line.id is not None and line.request:  # answered here: the proxy never sees it
                            await outgoing.send(_error(line.id, text, -32600))
                        elif line.id is not None:  # the client's answer to the server: an error instead
                            await incoming_send.send(_error(line.id, text, -32603))
                        continue
                    decoded = as_text(line)
                    del line
                    message = decode(decoded)
                    del decoded
                    if message is not None:
                        await incoming_send.send(message)

    async def write(data: bytes) -> None:
        await stdout.write(data)
        await stdout.flush()

    written = anyio.Event()

    async def write_then_tell() -> None:
        try:
            await _write_all(outgoing_receive, write)
        finally:
            written.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write_then_tell)
            try:
                yield incoming, outgoing
            finally:
                outgoing.close()  # the writer ends once the messages already sent are written
                with anyio.move_on_after(EXIT_WAIT, shield=True):
                    await written.wait()
                group.cancel_scope.cancel()
    finally:
        with contextlib.suppress(OSError):
            await stdout.aclose()
