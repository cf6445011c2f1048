"""A large line from a server kept in a temporary file, and a tool result's text that never becomes a ``str``.

A 100 MB tool result read as one line, decoded and parsed is three copies of itself in memory: the
line's bytes, its text, then the result's inner text. Here a line over :data:`SPILL_BYTES` goes to a
temporary file as it arrives (:class:`SpilledLine`, written by ``lines.Splitter``). When it is an
answer whose result is text blocks (``{"content": [{"type": "text", "text": ...}]}``), its envelope
is read from the file a piece at a time and a text longer than :data:`TEXT_IN_FILE_CHARS`
characters is unescaped into a second file (:class:`SpilledText`); the message handed on holds that
object where the text was. The proxy's shaping then caches the list item by item from the file
(service/streaming.py), or, when the result is passed on as it came (an error result; broken JSON,
which that item scan finds), the client's writer writes the text from the file a piece at a time
(``messages.encode_pieces``). Anything else, and anything that does not read as expected, is read
back whole and parsed as before (``messages.decode``): the same message, at the old cost.

The files are made by :func:`tempfile.TemporaryFile` in the cache directory: removed from the
directory at once (only this process can reach them, through its open file), gone when closed, when
the object holding them is collected, or when the process ends however it ends.
"""

from __future__ import annotations

import codecs
import io
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]

SPILL_BYTES = 4 << 20  # a line longer than this goes to a file as it arrives (a smaller one stays bytes)
PIECE = 1 << 20  # bytes read from a file at a time
HEAD_CHARS = 4096  # the first characters of a spilled text, kept to see how it starts
# A text longer than this stays in a file: shaping.EXACT_COUNT_CHARS, past which the proxy counts a text's
# tokens by its length alone (a text in a file is always counted so: the two must be equal).
TEXT_IN_FILE_CHARS = 4_000_000
SMALL_VALUE = 1 << 20  # an envelope value longer than this (not the text): the line is parsed whole
_SPACE = " \t\n\r"  # JSON's whitespace


def spill_dir() -> str:
    """The cache directory (made when missing), else the system's temporary directory."""
    from pflow_structure.settings import Settings

    try:
        directory = Settings.from_env().cache_dir
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except (OSError, ValueError):  # ValueError: a setting the proxy's start already named (ParameterError)
        return tempfile.gettempdir()
    return str(directory)


def _temporary(directory: str | None) -> IO[bytes]:
    for where in (directory or spill_dir(), None):
        try:
            return tempfile.TemporaryFile(dir=where)  # mode 0600, and no name left behind
        except OSError:
            continue
    return io.BytesIO()  # no directory takes a file: the line is held in memory, as before spilling


class SpilledLine:
    """One line of a server's output, in a temporary file: its first and last bytes kept to find an id."""

    def __init__(self, directory: str | None = None, keep: int = 4096) -> None:
        self.file = _temporary(directory)
        self.size = 0
        self.keep = keep
        self.head = b""
        self.tail = b""

    def write(self, data: bytes | bytearray) -> None:
        try:
            self.file.write(data)
        except OSError:  # the disk is full: the line is held in memory from here, as before spilling
            self.file.seek(0)
            held = io.BytesIO(self.file.read(self.size))
            self.file.close()
            self.file = held
            self.file.seek(self.size)
            self.file.write(data)
        self.size += len(data)
        if len(self.head) < self.keep:
            self.head += bytes(data[: self.keep - len(self.head)])
        self.tail = (self.tail + bytes(data[-self.keep :]))[-self.keep :]

    def read(self) -> bytes:
        self.file.seek(0)
        return self.file.read()

    def close(self) -> None:
        self.file.close()


class SpilledText:
    """A JSON string's value, written to a temporary file as UTF-8 (a lone surrogate kept as it is, as
    ``surrogatepass`` writes it); ``len()`` is its length in characters, as the ``str``'s would be."""

    def __init__(self, directory: str | None = None) -> None:
        self.file = _temporary(directory)
        self.chars = 0
        self.head = ""
        self.has_surrogate = False  # a lone surrogate: the message holding it is written as escaped ASCII

    def write(self, text: str) -> None:
        if len(self.head) < HEAD_CHARS:
            self.head += text[: HEAD_CHARS - len(self.head)]
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            self.has_surrogate = True
            data = text.encode("utf-8", "surrogatepass")
        self.file.write(data)
        self.chars += len(text)

    def __len__(self) -> int:
        return self.chars

    def __repr__(self) -> str:
        return f"<text of {self.chars} characters in a temporary file>"

    def utf8_pieces(self) -> Iterator[bytes]:
        """The text's UTF-8 (``text.encode("utf-8", "surrogatepass")``), a piece at a time."""
        self.file.seek(0)
        while piece := self.file.read(PIECE):
            yield piece

    def pieces(self) -> Iterator[str]:
        """The text, a piece at a time."""
        decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        for piece in self.utf8_pieces():
            yield decoder.decode(piece)
        yield decoder.decode(b"", final=True)

    def read(self) -> str:
        return "".join(self.pieces())

    @property
    def closed(self) -> bool:
        return self.file.closed

    def close(self) -> None:
        self.file.close()


def message_of(line: SpilledLine, parse_float: Callable[[str], Any], decode: Callable[[str], Any]) -> Any:
    """The message of a spilled line: its large text left in a file when it is a tool result's, else the
    line read back and given to ``decode`` (its text) as a line held in memory is."""
    try:
        try:
            found = _Envelope(line.file, parse_float, TEXT_IN_FILE_CHARS).message()
        except _WholeError:
            found = None
        if found is not None:
            return found
        raw = line.read()
    finally:
        line.close()
    try:
        text: Any = raw.decode(json.detect_encoding(raw), "surrogatepass")
    except UnicodeDecodeError:
        text = raw  # json.loads says what is wrong with it (decode: not a message)
    del raw
    return decode(text)


def spilled_text(result: Any) -> SpilledText | None:
    """The spilled text of a result's one text block, if it has one."""
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return None
    text = content[0].get("text")
    return text if isinstance(text, SpilledText) else None


def plain_result(result: Any) -> Any:
    """``result`` with its spilled texts read back into strings (the result itself when it has none)."""
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list) or not any(_spilled_block(block) for block in content):
        return result
    blocks = [
        {key: value.read() if isinstance(value, SpilledText) else value for key, value in block.items()}
        if _spilled_block(block)
        else block
        for block in content
    ]
    return {key: blocks if key == "content" else value for key, value in result.items()}


def plain_message(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its result's spilled texts read back (the message itself when it has none)."""
    result = message.get("result")
    plain = plain_result(result)
    return message if plain is result else {**message, "result": plain}


def json_size(result: Any, json_bytes: Callable[[Any], bytes]) -> int:
    """``len(json_bytes(plain_result(result)))`` for a JSON writer that escapes a character at a time (the
    failure log's size of a result), without reading a spilled text into memory whole."""
    spilled = spilled_text(result)
    if spilled is None:
        return len(json_bytes(result))
    block = {**result["content"][0], "text": ""}
    size = len(json_bytes({**result, "content": [block]}))
    return size + sum(len(json_bytes(piece)) - 2 for piece in spilled.pieces())  # each without its quotes


def close_message(message: Any, keep: Iterable[SpilledText] = ()) -> None:
    """Close (and so remove) the files of a message's spilled texts, but those in ``keep`` (passed on)."""
    kept = {id(text) for text in keep}
    for text in spilled_texts(message):
        if id(text) not in kept:
            text.close()


def spilled_texts(message: Any) -> list[SpilledText]:
    """The texts of a message's result left in files, in the order they are written."""
    result = message.get("result") if isinstance(message, dict) else None
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list):
        return []
    return [
        value
        for block in content
        if isinstance(block, dict)
        for value in block.values()
        if isinstance(value, SpilledText)
    ]


def _spilled_block(block: Any) -> bool:
    return isinstance(block, dict) and any(isinstance(value, SpilledText) for value in block.values())


class _WholeError(Exception):
    """The line is not read a piece at a time: it is parsed whole, as before."""


_OPEN = ("result",), ("result", "content")  # the envelope's containers entered key by key
_TEXT_PATH_LENGTH = 4  # ("result", "content", index, "text")


class _Envelope:
    """A JSON-RPC answer read from a file a piece at a time, its result's text blocks entered."""

    def __init__(self, file: IO[bytes], parse_float: Callable[[str], Any], lazy_chars: int) -> None:
        file.seek(0)
        start = file.read(4)
        if json.detect_encoding(start) != "utf-8":
            raise _WholeError
        file.seek(0)
        self.file = file
        self.decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        self.scan = json.JSONDecoder(parse_float=parse_float).scan_once  # type: ignore[attr-defined]
        self.probe = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # where a value ends
        self.lazy_chars = lazy_chars
        self.text = ""
        self.at = 0
        self.ended = False
        self.spilled: list[SpilledText] = []

    def message(self) -> dict[str, Any] | None:
        try:
            message = self._object(())
            if self._space() < len(self.text) or not isinstance(message.get("result"), dict) or "method" in message:
                raise _WholeError
        except (_WholeError, ValueError, StopIteration, RecursionError, OSError):  # OSError: a full disk
            for text in self.spilled:
                text.close()
            raise _WholeError from None
        return message if self.spilled else None  # no text to leave in a file: parsed whole, as before

    def _more(self) -> bool:
        if self.ended:
            return False
        piece = self.file.read(PIECE)
        self.ended = not piece
        self.text = self.text[self.at :] + self.decoder.decode(piece, final=self.ended)
        self.at = 0
        return not self.ended

    def _space(self) -> int:
        """Skip whitespace; the position of the next character (``len(self.text)`` at the end)."""
        while True:
            while self.at < len(self.text) and self.text[self.at] in _SPACE:
                self.at += 1
            if self.at < len(self.text) or not self._more():
                return self.at

    def _expect(self, char: str) -> None:
        if self._space() >= len(self.text) or self.text[self.at] != char:
            raise _WholeError
        self.at += 1

    def _object(self, path: tuple[Any, ...]) -> dict[str, Any]:
        self._expect("{")
        found: dict[str, Any] = {}
        if self._peek("}"):
            return found
        while True:
            self._space()
            key = self._small()
            if not isinstance(key, str):
                raise _WholeError
            self._expect(":")
            found[key] = self._value((*path, key))
            if self._peek("}"):
                return found
            self._expect(",")

    def _array(self, path: tuple[Any, ...]) -> list[Any]:
        self._expect("[")
        found: list[Any] = []
        if self._peek("]"):
            return found
        while True:
            found.append(self._value((*path, len(found))))
            if self._peek("]"):
                return found
            self._expect(",")

    def _peek(self, char: str) -> bool:
        if self._space() < len(self.text) and self.text[self.at] == char:
            self.at += 1
            return True
        return False

    def _value(self, path: tuple[Any, ...]) -> Any:
        at = self._space()
        first = self.text[at : at + 1]
        if path in _OPEN and first == "{":
            return self._object(path)
        if path == ("result", "content") and first == "[":
            return self._array(path)
        if len(path) == _TEXT_PATH_LENGTH - 1 and path[:2] == ("result", "content") and first == "{":
            return self._object(path)
        if len(path) == _TEXT_PATH_LENGTH and path[3] == "text" and first == '"':
            return self._string()
        return self._small()

    def _small(self) -> Any:
        """A value parsed by the standard library's scanner once it and what follows it are read."""
        while True:
            at = self._space()
            try:
                end = self.probe(self.text, at)[1]
            except (StopIteration, ValueError):
                end = len(self.text)
            following = end
            while following < len(self.text) and self.text[following] in _SPACE:
                following += 1
            if following < len(self.text) and self.text[following] in ",:}]":
                value, self.at = self.scan(self.text, at)  # once: a spelled float is made once (messages._SPELLED)
                return value
            if len(self.text) - at > SMALL_VALUE or not self._more():
                raise _WholeError

    def _string(self) -> str | SpilledText:
        """A string, unescaped a piece at a time; into a file once longer than ``lazy_chars``."""
        self.at += 1  # the opening quote
        pieces: list[str] = []
        held = 0
        spilled: SpilledText | None = None
        while True:
            cut = len(self.text) if self.ended else _whole_escapes(self.text, self.at, len(self.text))
            body = self.text[self.at : cut]
            piece, end = scanstring(body + '"', 0, True)  # a ValueError: parsed whole, which says it
            done = end <= len(body)
            self.at += end if done else len(body)
            if spilled is not None:
                spilled.write(piece)
            else:
                pieces.append(piece)
                held += len(piece)
                if held > self.lazy_chars:
                    spilled = SpilledText(None)
                    self.spilled.append(spilled)
                    for part in pieces:
                        spilled.write(part)
                    pieces = []
            if done:
                return spilled if spilled is not None else "".join(pieces)
            if self.ended:
                raise _WholeError  # no closing quote
            self._more()


def _whole_escapes(text: str, start: int, end: int) -> int:
    """Where to cut ``text[start:end]``, a piece of a JSON string's body, so that no escape is cut in two
    (a surrogate pair is one): before the first escape that the last 11 characters do not hold whole."""
    at = max(start, end - 11)  # an escape is at most 12 characters (\\ud83d\\ude00)
    while (at := text.find("\\", at, end)) >= 0:
        run = at
        while run > start and text[run - 1] == "\\":
            run -= 1
        if (at - run) % 2:  # the escaped character of a \\\\ before it
            at += 1
            continue
        length = 2
        if text[at + 1 : at + 2] == "u":
            length = 6
            if "d800" <= text[at + 2 : at + 6].lower() <= "dbff":  # a high surrogate: with its pair
                length = 12
        if at + length > end:
            return at
        at += length if length != 12 else 6
    return end
