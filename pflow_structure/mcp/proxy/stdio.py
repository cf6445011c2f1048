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
dropped as it arrives (:class:`_Splitter`), and when either end of it names its id, the peer
waiting for it gets an error that says the size and the setting: the client for a request of its
own, the server for the client's answer to one of its requests, the proxy's caller for a
server's answer. Without the limit, a client that writes without a newline grows the proxy by
gigabytes a minute. A server's line over 4 MB goes to a temporary file as it arrives (:mod:`.spill`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import weakref
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import anyio

from pflow_structure.mcp.proxy import spill
from pflow_structure.mcp.proxy.spill import SpilledLine
from pflow_structure.mcp.proxy.startup import start

EXIT_WAIT = 2.0  # seconds a process may take to exit after its stdin closes, then after SIGTERM
BUFFER = 64
CHUNK = 65536


class _SpelledFloat(float):
    """A JSON number whose text is not Python's spelling of it (``1e-7``, ``1.50``): written back as it
    came, so that what the proxy relays reaches the other side byte for byte."""

    text: str


# Alive only while a message holds one; by identity (a WeakSet holds one of two equal floats: when that one
# went, the other, still in a message, was no longer known and was written 19.9 for 19.90).
_SPELLED: weakref.WeakValueDictionary[int, _SpelledFloat] = weakref.WeakValueDictionary()


def parse_float(text: str) -> float:
    """A JSON number as ``json.loads`` reads it; written back as it came when Python spells it otherwise."""
    value = float(text)
    if repr(value) == text or not math.isfinite(value):
        return value
    spelled = _SpelledFloat(text)
    spelled.text = text
    _SPELLED[id(spelled)] = spelled
    return spelled


def _float_text(value: float) -> str:
    text = getattr(value, "text", None)
    if text is not None:
        return str(text)
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _dumps(message: dict[str, Any], ascii_only: bool) -> str:
    if not _SPELLED:  # the usual case: the C encoder
        return json.dumps(message, ensure_ascii=ascii_only, separators=(",", ":"))
    strings = json.encoder.encode_basestring_ascii if ascii_only else json.encoder.encode_basestring
    make = json.encoder._make_iterencode  # type: ignore[attr-defined]  # the pure-Python encoder, with our floats
    return "".join(make({}, repr, strings, None, _float_text, ":", ",", False, False, True)(message, 0))


def encode(message: dict[str, Any]) -> bytes:
    """One line of JSON; escaped ASCII when the message holds a lone surrogate (not UTF-8)."""
    try:
        return (_dumps(message, ascii_only=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (_dumps(message, ascii_only=True) + "\n").encode("ascii")


LARGE_LINE = 1 << 20  # a line this long is decoded to text, and its bytes let go, before it is parsed


def decode(line: bytes | bytearray | str) -> dict[str, Any] | None:
    """A line as a message; None for a blank line or one that is not a JSON object (a server's
    stray output: the SDK's clients skip it too)."""
    if not line.strip():
        return None
    try:
        found = json.loads(line, parse_float=parse_float)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def as_text(line: bytearray) -> bytearray | str:
    """A large line as the text ``json.loads`` decodes it to (the same encoding rules), so that the caller
    can let its bytes go before parsing: ``json.loads`` of the bytes holds both the bytes and their text,
    and then the parsed message too (a 100 MB tool result three times). A short line stays bytes."""
    if len(line) < LARGE_LINE:
        return line
    try:
        return line.decode(json.detect_encoding(line), "surrogatepass")
    except UnicodeDecodeError:
        return line  # json.loads says what is wrong with it (decode: not a message)


HEAD = 4096  # bytes of each end of an over-long line kept to find its id
_ID = rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,256}")'
# the id of a JSON-RPC message: before any nested value (Python's SDK writes it there), or last
# (TypeScript's writes {"result":...,"jsonrpc":"2.0","id":2}); a nested object's id ends in "}}"
_EARLY_ID = re.compile(rb"\A\s*\{[^{}\[\]]*?" + _ID + rb"\s*[,}]")
_LATE_ID = re.compile(rb"[,{]\s*" + _ID + rb"\s*\}\s*\Z")


class TooLong(NamedTuple):
    """A line over the limit, dropped: its size, its id when either end of the line names one, and
    whether it was a request (a top-level ``method`` in its first bytes) rather than an answer."""

    size: int
    id: Any
    request: bool = False


_METHOD = re.compile(rb'\A\s*\{[^{}\[\]]*?"method"\s*:')
_ANSWER = re.compile(rb'\A\s*\{[^{}\[\]]*?"(?:result|error)"\s*:')


class _Splitter:
    """Byte chunks in, complete lines out, never holding more than ``limit`` bytes of one line; a line
    over ``spill_over`` bytes goes to a temporary file as it arrives (mcp/proxy/spill.py)."""

    def __init__(self, limit: int, spill_over: int | None = None) -> None:
        self.limit = limit
        self.spill_over = spill_over
        self.spilled: SpilledLine | None = None  # the line being written to a file
        self.pending = bytearray()  # one buffer: a line sent two bytes at a time costs its size, not 20 times it
        self.dropping: TooLong | None = None  # the line being dropped, with what it has cost so far
        self.head = b""
        self.tail = b""

    def feed(self, chunk: bytes) -> list[bytearray | TooLong | SpilledLine]:
        out: list[bytearray | TooLong | SpilledLine] = []
        parts = chunk.split(b"\n")
        for number, part in enumerate(parts):
            self._take(part)
            if number < len(parts) - 1:
                line = self._end()
                if line:
                    out.append(line)
        return out

    def rest(self) -> list[bytearray | TooLong | SpilledLine]:
        """At the end of the input: the last line, when it has no newline after it."""
        held = self.pending or self.dropping is not None or self.spilled is not None
        return [self._end()] if held else []

    def _take(self, part: bytes) -> None:
        if self.dropping is not None:
            self.dropping = self.dropping._replace(size=self.dropping.size + len(part))
            if len(self.head) < HEAD:  # a limit under HEAD: the head goes on past it
                self.head += part[: HEAD - len(self.head)]
            self.tail = (self.tail + part[-HEAD:])[-HEAD:]
            return
        held = self.pending if self.spilled is None else self.spilled
        size = held.size if isinstance(held, SpilledLine) else len(held)
        if size + len(part) > self.limit:
            first, last = (held.head, held.tail) if isinstance(held, SpilledLine) else (held[:HEAD], held[-HEAD:])
            self.head = bytes(first) + part[: max(0, HEAD - size)]
            self.tail = (bytes(last) + part[-HEAD:])[-HEAD:]
            self.dropping = TooLong(size + len(part), None)
            self.pending = bytearray()
            if self.spilled is not None:
                self.spilled.close()
                self.spilled = None
        elif self.spilled is not None:
            self.spilled.write(part)
        elif self.spill_over is not None and size + len(part) > self.spill_over:
            self.spilled = SpilledLine(keep=HEAD)
            self.spilled.write(self.pending)
            self.spilled.write(part)
            self.pending = bytearray()
        else:
            self.pending += part

    def _end(self) -> bytearray | TooLong | SpilledLine:
        if self.spilled is not None:
            spilled, self.spilled = self.spilled, None
            return spilled
        if self.dropping is not None:
            request = bool(_METHOD.match(self.head))
            known = request or bool(_ANSWER.match(self.head))  # else an id found may be anything's
            dropped = self.dropping._replace(id=_found_id(self.head, self.tail) if known else None, request=request)
            self.dropping, self.head, self.tail = None, b"", b""
            return dropped
        line, self.pending = self.pending, bytearray()
        return line  # json reads a bytearray as it reads bytes


def _found_id(head: bytes, tail: bytes) -> Any:
    found = _EARLY_ID.match(head) or _LATE_ID.search(tail)
    if found is None:
        return None
    try:
        return json.loads(found.group(1))
    except ValueError:  # 01, a bad escape: not an id a peer could be waiting on
        return None


def too_long_text(dropped: TooLong, limit: int, source: str) -> str:
    """What the log and the answer say of a dropped line; ``source``: "client" or "server"."""
    instead = "Pass large values by reference (${exec-ID:PATH}) or raise" if source == "client" else "Raise"
    return (
        f"pflow-structure proxy: a message from the {source} was {_size(dropped.size)}, over the "
        f"{_size(limit)} limit, and was dropped, not passed on. {instead} PFLOW_STRUCTURE_MAX_MESSAGE_SIZE "
        "(e.g. 1GB)."
    )


def _size(count: int) -> str:
    for unit, step in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if count >= step:
            return f"{count / step:.1f} {unit}".replace(".0 ", " ")
    return f"{count} bytes"


def _error(request_id: Any, text: str, code: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


def _limit() -> int:
    from pflow_structure.errors import ParameterError
    from pflow_structure.settings import DEFAULT_MAX_MESSAGE_BYTES, Settings

    try:
        return Settings.max_message_bytes()
    except ParameterError:  # said at start, where the settings are read (Settings.from_env)
        return DEFAULT_MAX_MESSAGE_BYTES


async def _split(
    read1: Any, limit: int, spill_over: int | None = None
) -> AsyncIterator[bytearray | TooLong | SpilledLine]:
    """The lines (and dropped over-long lines) of a byte stream, ``read1`` returning b"" at its end;
    a line over ``spill_over`` bytes in a temporary file."""
    splitter = _Splitter(limit, spill_over)
    while chunk := await read1(CHUNK):
        lines = splitter.feed(chunk)
        while lines:  # each line handed on, not kept here: a large one is freed once its reader decoded it
            yield lines.pop(0)
    for line in splitter.rest():
        yield line


async def _lines(read1: Any, sink: Any, limit: int | None = None) -> None:
    """Split what ``read1`` reads (a server's stdout) into messages for ``sink``; close ``sink`` at
    the end. An answer over ``limit`` reaches ``sink`` as an error for its request."""
    limit = _limit() if limit is None else limit
    async with sink:
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for line in _split(read1, limit, spill.SPILL_BYTES):
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
                await write(encode(message))


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
                async for line in _split(_read_stdin, limit):
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
