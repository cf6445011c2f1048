"""Field paths: the grammar. Parse, format, quote keys; tell JSONPath from our own paths.

Grammar (our own paths)::

    path     := first ( "." name | "[" int "]" | "[" "-" int "]" | "[*]" | "[" quoted "]" )*
    first    := name | "[" quoted "]"
    name     := letter_or_underscore ( word_char | "-" )*
    quoted   := JSON double-quoted string | single-quoted string (\\' and \\\\ escapes)

A path that starts with ``$`` or holds a filter (``[?(...)]``) is JSONPath: :mod:`.resolve`
hands it to jsonpath-ng, imported only then.

In a structure, ``[0]`` stands for every item of a list and ``[*]`` for every value of a
dynamic-key dict; in ``read_fields``, ``[0]`` is item 0 and ``[*]`` is every item.
"""

from __future__ import annotations

import json
import re

from pflow_structure.errors import PathNotFoundError, PathSyntaxError
from pflow_structure.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any, Final


class Wildcard:
    """The ``[*]`` segment: every item of a list, every value of a dict (one instance, :data:`WILDCARD`)."""

    _instance: Wildcard | None = None

    def __new__(cls) -> Wildcard:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "WILDCARD"

    def __reduce__(self) -> str:
        return "WILDCARD"


WILDCARD: Final = Wildcard()
Segment = str | int | Wildcard
ConcretePath = tuple[str | int, ...]


class Match(NamedTuple):
    """One value a path reached, with the concrete path (no wildcards) where it sits."""

    path: ConcretePath
    value: Any
    missing: bool = False  # a None placeholder for a list item that lacks the rest of a [*] path
    reason: PathNotFoundError | None = None  # why it is missing


class AtLeast(int):
    """A count of matches known from below: a read that stopped once it had its page (and one more)
    did not count the rest. It reads as ``at least N`` wherever it is written."""

    def __str__(self) -> str:
        return f"at least {int(self)}"

    def __format__(self, spec: str) -> str:
        return str(self) if not spec else int.__format__(int(self), spec)


def first_matches(matches: Iterator[Match], stop: int | None) -> list[Match]:
    """The first ``stop`` of ``matches`` (all when None), and on past ``stop`` until one is found:
    a caller asks one more than it shows, so a list of ``stop`` or more says there may be more."""
    if stop is None:
        return list(matches)
    taken: list[Match] = []
    found = False
    for match in matches:
        taken.append(match)
        found = found or not match.missing
        if found and len(taken) >= stop:
            break
    return taken


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NAME = re.compile(r"[^\W\d][\w-]*")
_INT = re.compile(r"-?\d+")
_LENIENT_JSON = json.JSONDecoder(strict=False)


def is_plain_key(key: str) -> bool:
    """True when ``key`` can be written bare (``a.key``); otherwise it is quoted in brackets."""
    return bool(_PLAIN_KEY.match(key))


def quote_key(key: str) -> str:
    """The bracketed form of a key: ``["content-type"]``.

    Unicode stays readable; a lone surrogate (not valid UTF-8, so not printable) is escaped.
    """
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return "[" + json.dumps(key) + "]"
    return "[" + json.dumps(key, ensure_ascii=False) + "]"


def format_path(segments: Sequence[Segment]) -> str:
    """Write segments as a path that :func:`parse_path` reads back to the same segments.

    >>> format_path(["result", 0, "content-type"])
    'result[0]["content-type"]'
    """
    parts: list[str] = []
    for position, segment in enumerate(segments):
        if isinstance(segment, Wildcard):
            parts.append("[*]")
        elif isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif is_plain_key(segment):
            parts.append(segment if position == 0 else "." + segment)
        else:
            parts.append(quote_key(segment))
    return "".join(parts)


def is_jsonpath(path: str) -> bool:
    """Paths starting with ``$`` or holding a filter expression (``[?``) are JSONPath.

    A ``[?`` inside a quoted key (``data["[?"]``) is part of the key, not a filter.
    """
    if path.startswith("$"):
        return True
    return "[?" in path and _has_filter_outside_quotes(path)


def _has_filter_outside_quotes(path: str) -> bool:
    quote = ""
    index = 0
    while index < len(path):
        char = path[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif path.startswith("[?", index):
            return True
        index += 1
    return False


def parse_path(path: str) -> tuple[Segment, ...]:
    """Parse one of our paths into segments; raise :class:`PathSyntaxError` with a column."""
    if not isinstance(path, str):
        raise PathSyntaxError(repr(path), 0, f"a path must be a string, not {type(path).__name__}")
    if path == "":
        raise PathSyntaxError(path, 0, "the path is empty")
    return tuple(_Parser(path).segments())


def template_covers(template: str, path: str) -> bool:
    """True when structure path ``template`` stands for ``path``: ``[*]`` for any key or index.

    >>> template_covers("result.methods[*].path", "result.methods.list.path")
    True
    """
    wanted, given = parse_path(template), parse_path(path)
    return len(wanted) == len(given) and all(w is WILDCARD or w == g for w, g in zip(wanted, given, strict=True))


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, reason: str, column: int | None = None) -> PathSyntaxError:
        return PathSyntaxError(self.text, self.pos if column is None else column, reason)

    def segments(self) -> Iterator[Segment]:
        if self.text[0] == "[":
            segment = self.bracket()
            if not isinstance(segment, str):
                raise self.fail("a path must start with a name or a quoted key", 0)
            yield segment
        else:
            yield self.name()
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == ".":
                self.pos += 1
                if self.pos < len(self.text) and self.text[self.pos] == "[":
                    raise self.fail("unexpected '[' after '.'; write a[0] or a[\"key\"], not a.[...]")
                yield self.name()
            elif char == "[":
                yield self.bracket()
            else:
                raise self.fail(f"unexpected {char!r}; expected '.' or '['")

    def name(self) -> str:
        match = _NAME.match(self.text, self.pos)
        if not match:
            if self.pos >= len(self.text):
                raise self.fail("the path ends where a name was expected")
            char = self.text[self.pos]
            if char.isdigit():
                raise self.fail(f'a name cannot start with a digit; use [{char}...] for an index or ["..."]')
            raise self.fail(f'expected a name, found {char!r}; quote unusual keys as ["key"]')
        self.pos = match.end()
        return match.group()

    def bracket(self) -> Segment:
        start = self.pos
        self.pos += 1
        if self.pos >= len(self.text):
            raise self.fail("'[' is not closed")
        char = self.text[self.pos]
        segment: Segment
        if char == "*":
            self.pos += 1
            segment = WILDCARD
        elif char in "\"'":
            segment = self.quoted(char)
        else:
            match = _INT.match(self.text, self.pos)
            if not match:
                raise self.fail("expected an index, '*' or a quoted key inside [ ]")
            try:
                segment = int(match.group())
            except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
                raise self.fail("the index has too many digits") from None
            self.pos = match.end()
        if self.pos >= len(self.text) or self.text[self.pos] != "]":
            raise self.fail(f"expected ']' to close the '[' at column {start + 1}")
        self.pos += 1
        return segment

    def quoted(self, quote: str) -> str:
        start = self.pos
        index = start + 1
        while index < len(self.text):
            char = self.text[index]
            if char == "\\":
                index += 2
                continue
            if char == quote:
                literal = self.text[start : index + 1]
                self.pos = index + 1
                return self.unquote(literal, quote, start)
            index += 1
        raise self.fail(f"the quoted key starting at column {start + 1} is not closed", start)

    def unquote(self, literal: str, quote: str, column: int) -> str:
        if quote == '"':
            try:
                # strict=False: a raw tab or newline inside the quotes is taken as written.
                value = _LENIENT_JSON.decode(literal)
            except ValueError as exc:
                raise self.fail(f"bad escape in quoted key: {exc.args[0].split(':')[0]}", column) from None
            assert isinstance(value, str)
            return value
        # Only \' and \\ are escapes; any other backslash is kept, as in JMESPath raw strings.
        return re.sub(r"\\(['\\])", r"\1", literal[1:-1])
