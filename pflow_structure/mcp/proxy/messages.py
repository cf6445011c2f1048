"""One JSON-RPC message as one line of JSON and back, numbers as the peer wrote them.

MCP's stdio transport is one message a line (mcp/proxy/stdio.py). :func:`decode` reads a line
(``None`` for one that is not a JSON object: a server's stray output); :func:`encode` writes a
message back. A number whose text is not Python's spelling of it (``19.90``, ``1e-7``) is read as a
:class:`_SpelledFloat` that remembers its text (:func:`parse_float`), so that what the proxy relays
reaches the other side byte for byte.
"""

from __future__ import annotations

import json
import math
import uuid
import weakref
from collections.abc import Iterator
from typing import Any

from pflow_structure.mcp.proxy.spill import SpilledText, spilled_texts


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
    """One line of JSON; escaped ASCII when the message holds a lone surrogate (not UTF-8). A text
    left in a file (mcp/proxy/spill.py) is read back into the line: :func:`encode_pieces` does not."""
    if spilled_texts(message):
        return b"".join(encode_pieces(message))
    try:
        return (_dumps(message, ascii_only=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (_dumps(message, ascii_only=True) + "\n").encode("ascii")


def encode_pieces(message: dict[str, Any]) -> Iterator[bytes]:
    """:func:`encode` of ``message`` with its texts left in files read back, a piece at a time: the line
    around them first (checked to encode before anything is given), then each text escaped a piece
    at a time between the pieces of that line. Escaping is one character at a time, so the pieces
    join to the very bytes of the line written whole."""
    parts, texts, ascii_only = _around(message)
    return _joined(parts, texts, ascii_only)


def check_encodes(message: dict[str, Any]) -> None:
    """Raise what :func:`encode` would raise for ``message``, without reading a text left in a file."""
    if spilled_texts(message):
        _around(message)
    else:
        encode(message)


def _around(message: dict[str, Any]) -> tuple[list[bytes], list[SpilledText], bool]:
    """The line of ``message`` cut where its texts in files go, those texts, and whether it is ASCII."""
    texts = spilled_texts(message)
    marks = {id(text): f"pflowstructurespilled{uuid.uuid4().hex}" for text in texts}
    result = message["result"]
    blocks = [
        {key: marks[id(value)] if isinstance(value, SpilledText) else value for key, value in block.items()}
        if isinstance(block, dict)
        else block
        for block in result["content"]
    ]
    stand_in = {**message, "result": {**result, "content": blocks}}
    ascii_only = any(text.has_surrogate for text in texts)
    line = b""
    if not ascii_only:
        try:
            line = (_dumps(stand_in, ascii_only=False) + "\n").encode("utf-8")
        except UnicodeEncodeError:
            ascii_only = True
    if ascii_only:
        line = (_dumps(stand_in, ascii_only=True) + "\n").encode("ascii")
    parts = []
    for text in texts:
        before, found, line = line.partition(f'"{marks[id(text)]}"'.encode("ascii"))
        if not found:  # the text is not where a result's text block holds it: never so for spilled_texts'
            raise ValueError("a text in a file is not in its message's line")
        parts.append(before + b'"')
        line = b'"' + line
    return [*parts, line], texts, ascii_only


def _joined(parts: list[bytes], texts: list[SpilledText], ascii_only: bool) -> Iterator[bytes]:
    escape = json.encoder.encode_basestring_ascii if ascii_only else json.encoder.encode_basestring
    charset = "ascii" if ascii_only else "utf-8"
    for part, text in zip(parts[:-1], texts, strict=True):
        yield part
        for piece in text.pieces():
            if piece:
                yield escape(piece)[1:-1].encode(charset)
    yield parts[-1]


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
