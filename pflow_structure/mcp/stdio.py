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
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio

from pflow_structure.mcp.prestart import start

EXIT_WAIT = 2.0  # seconds a process may take to exit after its stdin closes, then after SIGTERM
BUFFER = 64
CHUNK = 65536


def encode(message: dict[str, Any]) -> bytes:
    """One line of JSON; escaped ASCII when the message holds a lone surrogate (not UTF-8)."""
    try:
        return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")


def decode(line: bytes) -> dict[str, Any] | None:
    """A line as a message; None for a blank line or one that is not a JSON object (a server's
    stray output: the SDK's clients skip it too)."""
    if not line.strip():
        return None
    try:
        found = json.loads(line)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


async def _lines(receive: Any, sink: Any) -> None:
    """Split the byte chunks from ``receive`` into messages for ``sink``; close ``sink`` at the end."""
    pending: list[bytes] = []
    async with sink:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in receive:
                parts = chunk.split(b"\n")
                if len(parts) == 1:
                    pending.append(chunk)
                    continue
                for line in [b"".join([*pending, parts[0]]), *parts[1:-1]]:
                    message = decode(line)
                    if message is not None:
                        await sink.send(message)
                pending = [parts[-1]]


async def _write_all(source: Any, write: Any) -> None:
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with source:
            async for message in source:
                await write(encode(message))


@contextlib.asynccontextmanager
async def spawn(command: list[str], process: subprocess.Popen[bytes] | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``command`` (or take the ``process`` already started for it); yield (receive, send)
    message streams. Raises OSError when it cannot start. Pipes are read and written in worker
    threads, so a process started before the event loop is used the same way."""
    process = process or start(command)
    assert process.stdin is not None and process.stdout is not None
    stdout, stdin = anyio.wrap_file(process.stdout), anyio.wrap_file(process.stdin)
    incoming_send, incoming = anyio.create_memory_object_stream[Any](BUFFER)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[Any](BUFFER)

    async def chunks() -> AsyncIterator[bytes]:
        while chunk := await stdout.read1(CHUNK):
            yield chunk

    async def write(data: bytes) -> None:
        await stdin.write(data)
        await stdin.flush()

    async with anyio.create_task_group() as group:
        group.start_soon(_lines, chunks(), incoming_send)
        group.start_soon(_write_all, outgoing_receive, write)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)  # its stdout ends, so the reading thread returns
            group.cancel_scope.cancel()


async def _stop(process: subprocess.Popen[bytes]) -> None:
    """Close stdin and wait; then SIGTERM the process group and wait; then SIGKILL it."""
    with contextlib.suppress(Exception):
        assert process.stdin is not None
        process.stdin.close()
    for next_signal in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
        if await _exited(process, EXIT_WAIT):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if os.name == "posix":
                os.killpg(process.pid, next_signal)
            else:
                process.send_signal(next_signal)
    await _exited(process, EXIT_WAIT)


async def _exited(process: subprocess.Popen[bytes], seconds: float) -> bool:
    def wait() -> bool:
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    return await anyio.to_thread.run_sync(wait)


@contextlib.asynccontextmanager
async def own_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """This process's stdin and stdout as (receive, send) message streams; stdout is kept for
    the protocol alone while inside (file descriptor 1 points at stderr meanwhile)."""
    protocol_fd = os.dup(sys.stdout.fileno())
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stdin = anyio.wrap_file(sys.stdin.buffer)
    stdout = anyio.wrap_file(os.fdopen(protocol_fd, "wb"))
    incoming_send, incoming = anyio.create_memory_object_stream[Any](BUFFER)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[Any](BUFFER)

    async def read() -> None:
        async with incoming_send:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                async for line in stdin:
                    message = decode(line)
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
