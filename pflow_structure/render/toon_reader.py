"""Reading TOON documents back, strictly: the inverse of :func:`~pflow_structure.render.toon.render_toon`.

Anything the writer would not produce (tabs, trailing spaces, a key twice, a count that does
not match, an escape TOON does not have, a number too long to read) is refused with
:class:`NotRepresentable` naming the line, so a text that reads back is the value written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pflow_structure.errors import NotRepresentable
from pflow_structure.render.tables import JSON_INTEGER, JSON_NUMBER, LITERALS, TOON_SPECIAL, UNQUOTABLE, needs_quotes
from pflow_structure.render.toon import TOON_MAX_DEPTH

__all__ = ["parse_toon"]


_STRICT_QUOTED = r'"(?:[^"\\\x00-\x1f]|\\.)*"'  # no raw control character inside: the writer escapes them
_ANY_KEY = rf"{_STRICT_QUOTED}|[A-Za-z_][A-Za-z0-9_.]*"
_HEADER = re.compile(
    rf"(?P<key>{_ANY_KEY})?"
    rf"(?:\[(?P<count>0|[1-9][0-9]{{0,17}})\](?:\{{(?P<fields>(?:{_ANY_KEY})(?:,(?:{_ANY_KEY}))*)\}})?)?"
    r":(?P<rest>.*)"
)
_QUOTED_TOKEN = re.compile(_STRICT_QUOTED)
_CELL = re.compile(rf'({_STRICT_QUOTED}|[^,"]*)(,|\Z)')
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED: Mapping[str, str] = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t"}


def parse_toon(text: str) -> Any:
    """The value of a TOON document as :func:`render_toon` writes it (a :func:`render_toon_table` text too).

    Strict: two-space indentation only (no tabs, no blank lines, no trailing spaces), every
    ``[N]`` must match its items or rows, every row its field count, quoted strings may use
    only the escapes ``\\\\ \\" \\n \\r \\t``, an unquoted string must be one the writer
    would leave bare, and nothing may follow the root value. Anything else raises
    :class:`NotRepresentable`, so a text is never read as a value it does not hold. An empty
    text is an empty dict, as in TOON.

    >>> parse_toon("repo:\\n  name: x\\nruns[2]:\\n  - id: 1\\n  - done")
    {'repo': {'name': 'x'}, 'runs': [{'id': 1}, 'done']}
    """
    if text == "":
        return {}
    return _Reader(text).document()


def _refuse(reason: str, line: str | None = None) -> NotRepresentable:
    where = "" if line is None else f": {line[:40]!r}"
    return NotRepresentable(f"not a TOON document ({reason}){where}")


class _Reader:
    """A recursive-descent reader over the lines of a text; each nested level is one indentation deeper."""

    def __init__(self, text: str) -> None:
        if UNQUOTABLE.search(text):
            raise _refuse("a control character or a lone surrogate")
        self.contents: list[str] = []
        self.depths: list[int] = []
        for line in text.split("\n"):
            content = line.lstrip(" ")
            spaces = len(line) - len(content)
            if not content:
                raise _refuse("a blank line")
            if content[0] == "\t" or spaces % 2:
                raise _refuse("indentation is two spaces a level, never tabs", line)
            if content[-1] in " \t\r":
                raise _refuse("trailing whitespace", line)
            if spaces // 2 > TOON_MAX_DEPTH:
                raise _refuse(f"indented deeper than {TOON_MAX_DEPTH} levels")
            self.contents.append(content)
            self.depths.append(spaces // 2)
        self.pos = 0
        self.seen: dict[str, Any] = {}  # cells repeat down a table's columns: read each text once

    def value(self, cell: str) -> Any:
        try:
            return self.seen[cell]
        except KeyError:
            value = self.seen[cell] = _token(cell)
            return value

    def document(self) -> Any:
        first = self.contents[0]
        if self.depths[0]:
            raise _refuse("the first line is indented", first)
        head = _HEADER.match(first)
        if head is not None and head["key"] is None and head["count"] is not None:
            self.pos = 1
            value: Any = self.array(head, 0, first)
        elif head is None and len(self.contents) == 1:
            self.pos = 1
            value = _token(first)
        else:
            value = self.fields(0, {})
        if self.pos != len(self.contents):
            raise _refuse("text after the root value", self.contents[self.pos])
        return value

    def fields(self, depth: int, into: dict[str, Any]) -> dict[str, Any]:
        """The ``key: value`` lines at ``depth``, up to the first line less indented."""
        while self.pos < len(self.contents):
            at = self.depths[self.pos]
            if at < depth:
                break
            line = self.contents[self.pos]
            if at > depth:
                raise _refuse("unexpected indentation", line)
            self.pos += 1
            self.field(line, depth, into)
        return into

    def field(self, line: str, depth: int, into: dict[str, Any]) -> None:
        """One field standing at ``depth`` (its nested lines one deeper) into ``into``."""
        head = _HEADER.match(line)
        if head is None or head["key"] is None:
            raise _refuse("expected 'key: value'", line)
        key = _key(head["key"])
        if key in into:
            raise _refuse(f"the key {key!r} twice", line)
        if head["count"] is not None:
            into[key] = self.array(head, depth, line)
        elif head["rest"]:
            into[key] = _token(_after_space(head["rest"], line))
        elif self.pos < len(self.contents) and self.depths[self.pos] > depth:
            if self.depths[self.pos] != depth + 1:
                raise _refuse("indentation jumps more than one level", self.contents[self.pos])
            into[key] = self.fields(depth + 1, {})
        else:
            into[key] = {}

    def array(self, head: re.Match[str], depth: int, line: str) -> list[Any]:
        """The list a ``[N]`` header standing at ``depth`` opens: inline, rows or items one deeper."""
        count, rest = int(head["count"]), head["rest"]
        if head["fields"] is not None:
            if rest:
                raise _refuse("text after a table header", line)
            return self.rows(_columns(head["fields"], line), count, depth + 1, line)
        if rest:
            cells = _cells(_after_space(rest, line), line)
            if len(cells) != count:
                raise _refuse(f"[{count}] over {len(cells)} values", line)
            return [self.value(cell) for cell in cells]
        items = []
        while self.pos < len(self.contents) and self.depths[self.pos] == depth + 1:
            self.pos += 1
            items.append(self.item(self.contents[self.pos - 1], depth + 1))
        if len(items) != count:
            raise _refuse(f"[{count}] over {len(items)} items", line)
        return items

    def rows(self, columns: list[str], count: int, depth: int, line: str) -> list[Any]:
        rows = []
        while self.pos < len(self.contents) and self.depths[self.pos] == depth:
            row = self.contents[self.pos]
            self.pos += 1
            cells = _cells(row, row)
            if len(cells) != len(columns):
                raise _refuse(f"{len(cells)} cells under {len(columns)} columns", row)
            rows.append({column: self.value(cell) for column, cell in zip(columns, cells, strict=True)})
        if len(rows) != count:
            raise _refuse(f"[{count}] over {len(rows)} rows", line)
        return rows

    def item(self, line: str, depth: int) -> Any:
        """One ``- item`` line at ``depth`` and the lines that belong to it."""
        if line == "-":
            return {}
        if not line.startswith("- "):
            raise _refuse("a list item starts with '- '", line)
        body = line[2:]
        head = _HEADER.match(body)
        if head is None:
            return _token(body)
        if head["key"] is None:
            if head["count"] is None or head["fields"] is not None:
                raise _refuse("a keyless header in a list item is '- [N]:' without fields", line)
            return self.array(head, depth, line)
        # A dict item: its fields stand one level in, the first on the hyphen line.
        item: dict[str, Any] = {}
        self.field(body, depth + 1, item)
        return self.fields(depth + 1, item)


def _after_space(rest: str, line: str) -> str:
    if not rest.startswith(" ") or len(rest) < 2:
        raise _refuse("one space after the colon, then a value", line)
    return rest[1:]


def _columns(fields: str, line: str) -> list[str]:
    columns = [_key(cell) for cell in _cells(fields, line)]
    if len(set(columns)) != len(columns):
        raise _refuse("a column named twice", line)
    return columns


def _cells(text: str, line: str) -> list[str]:
    """Split at commas outside quoted strings; a quote must open and close a whole cell."""
    if '"' not in text:
        return text.split(",")
    cells, pos = [], 0
    while True:
        match = _CELL.match(text, pos)
        if match is None:
            raise _refuse("a quoted cell with text around it", line)
        cells.append(match[1])
        if not match[2]:
            return cells
        pos = match.end()


def _key(text: str) -> str:
    return _unquote(text) if text.startswith('"') else text


def _unquote(text: str) -> str:
    if _QUOTED_TOKEN.fullmatch(text) is None:
        raise _refuse("a quoted string with text after it", text)
    body = text[1:-1]
    return _ESCAPE.sub(_unescape, body) if "\\" in body else body


def _unescape(match: re.Match[str]) -> str:
    if match[1] not in _UNESCAPED:
        raise _refuse(f"the escape \\{match[1]}, which TOON does not have")
    return _UNESCAPED[match[1]]


def _token(text: str) -> Any:
    """One value: a quoted string, a literal, a JSON number, or a string the writer leaves bare."""
    if text[:1] == '"':
        return _unquote(text)
    if text in LITERALS:
        return LITERALS[text]
    if JSON_NUMBER.fullmatch(text):
        try:
            number = int(text) if JSON_INTEGER.fullmatch(text) else float(text)
        except ValueError as error:  # more digits than Python reads
            raise _refuse("a number too long to read", text) from error
        if isinstance(number, float) and not math.isfinite(number):
            raise _refuse("a number out of the float range", text)
        return number
    if needs_quotes(text, TOON_SPECIAL):
        raise _refuse("a string that must be quoted", text)
    return text
