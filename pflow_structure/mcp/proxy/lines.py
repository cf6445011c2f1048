"""A byte stream cut into lines, never holding more than the limit of one line.

:class:`Splitter` takes chunks and gives complete lines (``bytearray``). A line over the limit
(``PFLOW_STRUCTURE_MAX_MESSAGE_SIZE``) is dropped as it arrives and comes out as :class:`TooLong`:
its size, and its id when either end of the line names one, so that the peer waiting for it gets an
error (:func:`too_long_text` says what). A line over ``spill_over`` bytes (a server's, over 4 MB) goes
to a temporary file as it arrives and comes out as a :class:`~.spill.SpilledLine`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

from pflow_structure.mcp.proxy.spill import SpilledLine

CHUNK = 65536  # bytes read from a stream at a time

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


class Splitter:
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


async def split_lines(
    read1: Any, limit: int, spill_over: int | None = None
) -> AsyncIterator[bytearray | TooLong | SpilledLine]:
    """The lines (and dropped over-long lines) of a byte stream, ``read1`` returning b"" at its end;
    a line over ``spill_over`` bytes in a temporary file."""
    splitter = Splitter(limit, spill_over)
    while chunk := await read1(CHUNK):
        lines = splitter.feed(chunk)
        while lines:  # each line handed on, not kept here: a large one is freed once its reader decoded it
            yield lines.pop(0)
    for line in splitter.rest():
        yield line
