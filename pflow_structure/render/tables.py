"""Tables for lists of dicts that share their primitive keys (markdown and TOON-style), and TOON documents.

    items[2]{id,name,score}:
      1,Ada,0.5
      2,"Smith, J",null

Both are lossless for what they accept, and each has a parser that proves it: a string
that could be read as something else (empty, ``42``, ``true``, leading or trailing spaces,
the delimiter, a quote, a backslash, a newline) is written as a quoted JSON string, and in
markdown a ``|`` is escaped as ``\\|``. A list these tables cannot hold (nested values, keys
that differ between items, a float that is not finite) raises :class:`NotRepresentable`.

:func:`render_toon` writes any JSON value as a TOON document (https://github.com/toon-format/spec):
nested dicts as indented ``key:`` blocks, lists of primitives inline, lists of like flat dicts as
the tables above, other lists as ``- item`` lines. :func:`parse_toon` reads it back strictly, with
the same types: numbers are written as Python writes them (``1.0``, ``1e-07``, ``-0.0``), not in
TOON's canonical form, which would turn ``1.0`` into the int ``1`` and drop the sign of ``-0.0``
(other TOON readers take them as equal numbers, ``-0.0`` as ``0.0``). Nesting is limited to
``TOON_MAX_DEPTH`` levels.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pflow_structure.errors import NotRepresentable

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_LOOKS_NUMERIC = re.compile(r"-?[0-9][0-9.eE+-]*")  # "05", "1.", "1e5": a reader may take these as numbers
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_TOON_SPECIAL = frozenset('"\\[]{}:#,')  # TOON's reader gives these a meaning outside quotes
_MARKDOWN_SPECIAL = frozenset('"\\')


def parse_scalar(text: str) -> Any:
    """``null``, ``true``, ``false`` and JSON numbers as themselves; anything else stays a string."""
    if text in _LITERALS:
        return _LITERALS[text]
    if _INTEGER.fullmatch(text):
        return int(text)
    if _NUMBER.fullmatch(text):
        return float(text)
    return text


_LITERALS: Mapping[str, Any] = {"null": None, "true": True, "false": False}


def table_columns(items: Any) -> list[str]:
    """The shared keys of a non-empty list of dicts with primitive values, in the first item's order."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence) or not items:
        raise NotRepresentable("a table needs a non-empty list of dicts")
    first = items[0]
    if not isinstance(first, Mapping) or not first:
        raise NotRepresentable("a table needs dicts with at least one key")
    columns = list(first)
    for item in items:
        if not isinstance(item, Mapping) or len(item) != len(columns) or any(c not in item for c in columns):
            raise NotRepresentable("table rows must all have the same keys")
        for value in item.values():
            _check_primitive(value)
    if not all(isinstance(c, str) for c in columns):
        raise NotRepresentable("table keys must be strings")
    return columns


def _check_primitive(value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise NotRepresentable("a float that is not finite has no JSON form")
    if value is not None and not isinstance(value, (str, int, float)):
        raise NotRepresentable(f"a table cell must be a primitive, not {type(value).__name__}")


@functools.cache
def _special_characters(special: frozenset[str]) -> re.Pattern[str]:
    """A pattern for any character of ``special``, a control character or DEL."""
    return re.compile("[" + "".join(re.escape(ch) for ch in sorted(special)) + "\x00-\x1f\x7f]")


def _needs_quotes(text: str, special: frozenset[str]) -> bool:
    return (
        text == ""
        or text != text.strip()
        or _special_characters(special).search(text) is not None
        or text in _LITERALS
        or _LOOKS_NUMERIC.fullmatch(text) is not None  # every JSON number, without int() on a long digit run
        or text.startswith("-")
    )


def cell_text(value: Any, special: frozenset[str] = _TOON_SPECIAL) -> str:
    """One cell: primitives as JSON literals, strings bare unless they need quotes."""
    if isinstance(value, str):
        return _quote(value) if _needs_quotes(value, special) else _checked(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def _read_cell(text: str) -> Any:
    if text.startswith('"'):
        try:
            return json.loads(text)
        except ValueError as error:
            raise NotRepresentable(f"a quoted cell that is not a JSON string: {text[:40]!r}") from error
    return parse_scalar(text)


# -- TOON-style ------------------------------------------------------------------------------


def render_toon_table(items: Sequence[Mapping[str, Any]], name: str | None = "items") -> str:
    """``name[N]{a,b}:`` and one comma-separated row per item, indented two spaces.

    ``name=None`` writes TOON's root form ``[N]{a,b}:``.

    >>> print(render_toon_table([{"id": 1, "name": "Ada"}, {"id": 2, "name": "Smith, J"}]))
    items[2]{id,name}:
      1,Ada
      2,"Smith, J"
    """
    columns = table_columns(items)
    header = ",".join(_key_text(c) for c in columns)
    label = "" if name is None else _key_text(name)
    rows = ("  " + ",".join(cell_text(item[c]) for c in columns) for item in items)
    return "\n".join([f"{label}[{len(items)}]{{{header}}}:", *rows])


def render_toon(value: Any) -> str:
    """Any JSON value as a TOON document: nested dicts indented, lists inline, as tables or as items.

    A dict's fields are ``key: value`` lines, a nested dict is ``key:`` with its fields two
    spaces deeper, a list of primitives is ``key[N]: a,b``, a list of like flat dicts is a
    ``key[N]{a,b}:`` table and any other list is ``key[N]:`` with one ``- item`` line each (an
    item dict puts its first field on the hyphen line). A list at the root is written without a
    key (``[N]{a}:``), a primitive at the root as itself. Refused (:class:`NotRepresentable`):
    an empty dict at the root (an empty text), keys that are not strings, floats that are not
    finite, strings TOON cannot escape, values that are not JSON, nesting deeper than
    ``TOON_MAX_DEPTH`` containers.

    >>> print(render_toon({"total": 2, "tags": ["a", "b"], "rows": [{"id": 1}, {"id": 2}]}))
    total: 2
    tags[2]: a,b
    rows[2]{id}:
      1
      2
    >>> print(render_toon({"repo": {"name": "x", "owner": {"id": 7}}, "runs": [{"id": 1, "steps": [2, 3]}, "done"]}))
    repo:
      name: x
      owner:
        id: 7
    runs[2]:
      - id: 1
        steps[2]: 2,3
      - done
    """
    lines: list[str] = []
    if isinstance(value, Mapping):
        if not value:
            raise NotRepresentable("an empty dict at the root would be an empty TOON text")
        _write_fields(value, 0, 1, lines)
    elif isinstance(value, (list, tuple)):
        _write_array("", value, 0, 1, lines, tabular=True)
    else:
        text = _scalar(value)
        # A reader drops a byte-order mark that starts the text, so a root string starting with one is quoted.
        lines.append(_quote(value) if isinstance(value, str) and text.startswith("\ufeff") else text)
    return "\n".join(lines)


TOON_MAX_DEPTH = 100
"""The deepest nesting :func:`render_toon` writes and :func:`parse_toon` reads: containers in a value,
levels of two-space indentation in a text. Checked before going a level deeper, so no RecursionError."""

_CONTAINERS = (Mapping, list, tuple)
_PRIMITIVES = frozenset({str, int, float, bool, type(None)})


def _nest(level: int) -> int:
    if level >= TOON_MAX_DEPTH:
        raise NotRepresentable(f"a value nested deeper than {TOON_MAX_DEPTH} levels")
    return level + 1


def _scalar(value: Any) -> str:
    """A primitive as :func:`cell_text` writes it; anything else is refused."""
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return cell_text(value)
    if isinstance(value, int):
        try:
            return str(int(value))
        except ValueError as error:  # more digits than sys.get_int_max_str_digits() allows, as in json.dumps
            raise NotRepresentable("an integer too long to write as digits") from error
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotRepresentable("a float that is not finite has no JSON form")
        return repr(float(value))
    if isinstance(value, str):
        return cell_text(str.__str__(value))
    raise NotRepresentable(f"a {kind.__name__} is not a JSON value")


def _is_container(value: Any) -> bool:
    return type(value) not in _PRIMITIVES and isinstance(value, _CONTAINERS)


def _write_fields(value: Mapping[Any, Any], depth: int, level: int, lines: list[str]) -> None:
    """The fields of a non-empty dict at ``level`` (1 is the root), each line ``depth`` levels in."""
    pad = "  " * depth
    for key, item in value.items():
        if not isinstance(key, str):
            raise NotRepresentable("TOON keys must be strings")
        label = pad + _key_text(key)
        if isinstance(item, Mapping):
            inner = _nest(level)
            lines.append(label + ":")
            if item:
                _write_fields(item, depth + 1, inner, lines)
        elif isinstance(item, (list, tuple)):
            _write_array(label, item, depth, _nest(level), lines, tabular=True)
        else:
            lines.append(f"{label}: {_scalar(item)}")


def _write_array(prefix: str, items: Sequence[Any], depth: int, level: int, lines: list[str], *, tabular: bool) -> None:
    """``prefix[N]`` and the items: inline primitives, a table, or ``- item`` lines ``depth + 1`` levels in.

    ``tabular`` is False for a list that is itself a list item, where TOON allows no field list.
    """
    head = f"{prefix}[{len(items)}]"
    if not any(map(_is_container, items)):
        lines.append(f"{head}: {','.join(_scalar(item) for item in items)}" if items else head + ":")
        return
    inner = _nest(level)
    columns = _table_columns_or_none(items) if tabular else None
    if columns is not None:
        pad = "  " * (depth + 1)
        lines.append(f"{head}{{{','.join(_key_text(c) for c in columns)}}}:")
        lines.extend(pad + ",".join(_scalar(item[c]) for c in columns) for item in items)
        return
    lines.append(head + ":")
    pad = "  " * (depth + 1)
    for item in items:
        if isinstance(item, Mapping):
            if not item:
                lines.append(pad + "-")
                continue
            first = len(lines)
            _write_fields(item, depth + 2, inner, lines)
            # The item's fields stand one level in; the first moves up onto the hyphen line.
            lines[first] = pad + "- " + lines[first][len(pad) + 2 :]
        elif isinstance(item, (list, tuple)):
            _write_array(pad + "- ", item, depth + 1, inner, lines, tabular=False)
        else:
            lines.append(pad + "- " + _scalar(item))


def _table_columns_or_none(items: Sequence[Any]) -> list[str] | None:
    """The columns when every item is a dict with the first one's keys and no container values (TOON's
    tabular rule); the values' types are checked as the rows are written."""
    first = items[0]
    if not isinstance(first, Mapping) or not first or not all(isinstance(key, str) for key in first):
        return None
    keys = first.keys()
    for item in items:
        if not isinstance(item, Mapping) or len(item) != len(keys) or item.keys() != keys:
            return None
        if any(map(_is_container, item.values())):
            return None
    return list(keys)


def _key_text(key: str) -> str:
    return key if _PLAIN_KEY.fullmatch(key) else _quote(key)


def _quote(text: str) -> str:
    """A quoted string with only the escapes TOON allows (backslash, quote, newline, return, tab)."""
    return json.dumps(_checked(text), ensure_ascii=False)


def _checked(text: str) -> str:
    if _UNQUOTABLE.search(text):
        raise NotRepresentable("a string with a control character or a lone surrogate has no TOON or table form")
    return text


_UNQUOTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


_QUOTED = r'"(?:[^"\\]|\\.)*"'
_TOON_LINE = re.compile(
    rf"(?P<key>{_QUOTED}|[A-Za-z_][A-Za-z0-9_.]*)?(?:\[(?P<count>[0-9]+)\](?:\{{(?P<keys>.*)\}})?)?:(?: (?P<rest>.*))?"
)


def _toon_rows(keys: str, rows: list[str], count: int) -> list[dict[str, Any]]:
    columns = [_read_key(k) for k in _split_quoted(keys, ",")]
    if len(rows) != count:
        raise NotRepresentable("the TOON row count does not match its header")
    items = []
    for line in rows:
        if not line.startswith("  "):
            raise NotRepresentable("TOON rows are indented two spaces")
        cells = _split_quoted(line[2:], ",")
        if len(cells) != len(columns):
            raise NotRepresentable("a TOON row with the wrong number of cells")
        items.append({c: _read_cell(cell) for c, cell in zip(columns, cells, strict=True)})
    return items


def parse_toon_table(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """The name (None for the root form) and the items of a :func:`render_toon_table` text."""
    header = _TOON_LINE.fullmatch(text.split("\n", 1)[0])
    if header is None or header["keys"] is None:
        raise NotRepresentable("not a TOON table header")
    rows = text.split("\n")[1:]
    name = _read_key(header["key"]) if header["key"] is not None else None
    return name, _toon_rows(header["keys"], rows, int(header["count"]))


def _read_key(text: str) -> str:
    return str(json.loads(text)) if text.startswith('"') else text


def _split_quoted(text: str, delimiter: str) -> list[str]:
    """Split at ``delimiter`` outside double-quoted JSON strings."""
    cells, start, quoted, i = [], 0, False, 0
    while i < len(text):
        ch = text[i]
        if quoted and ch == "\\":
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == delimiter and not quoted:
            cells.append(text[start:i])
            start = i + 1
        i += 1
    cells.append(text[start:])
    return cells


# -- reading TOON documents ------------------------------------------------------------------

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
        if _UNQUOTABLE.search(text):
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
    if text in _LITERALS:
        return _LITERALS[text]
    if _NUMBER.fullmatch(text):
        try:
            number = int(text) if _INTEGER.fullmatch(text) else float(text)
        except ValueError as error:  # more digits than Python reads
            raise _refuse("a number too long to read", text) from error
        if isinstance(number, float) and not math.isfinite(number):
            raise _refuse("a number out of the float range", text)
        return number
    if _needs_quotes(text, _TOON_SPECIAL):
        raise _refuse("a string that must be quoted", text)
    return text


# -- markdown --------------------------------------------------------------------------------


def render_markdown_table(items: Sequence[Mapping[str, Any]]) -> str:
    """A GitHub-flavoured markdown table, one row per item.

    >>> print(render_markdown_table([{"id": 1, "name": "a|b"}]))
    | id | name |
    |---|---|
    | 1 | a\\|b |
    """
    columns = table_columns(items)
    lines = [_md_row([_md_cell(c) for c in columns]), "|" + "---|" * len(columns)]
    lines += [_md_row([_md_cell(item[c]) for c in columns]) for item in items]
    return "\n".join(lines)


def _md_cell(value: Any) -> str:
    return cell_text(value, _MARKDOWN_SPECIAL).replace("|", "\\|")


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def parse_markdown_table(text: str) -> list[dict[str, Any]]:
    """The items of a :func:`render_markdown_table` text."""
    lines = text.split("\n")
    if len(lines) < 2 or not re.fullmatch(r"\|(?:-+\|)+", lines[1]):
        raise NotRepresentable("not a markdown table")
    columns = [str(_read_cell(c)) for c in _md_split(lines[0])]
    items = []
    for line in lines[2:]:
        cells = _md_split(line)
        if len(cells) != len(columns):
            raise NotRepresentable("a markdown row with the wrong number of cells")
        items.append({c: _read_cell(cell) for c, cell in zip(columns, cells, strict=True)})
    return items


def _md_split(line: str) -> list[str]:
    if not (line.startswith("| ") and line.endswith(" |")):
        raise NotRepresentable("a markdown row starts with '| ' and ends with ' |'")
    cells, current, i, body = [], [], 0, line[2:-2]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            current.append("|" if body[i + 1] == "|" else body[i : i + 2])
            i += 2
            continue
        if body.startswith(" | ", i):
            cells.append("".join(current))
            current, i = [], i + 3
            continue
        current.append(ch)
        i += 1
    cells.append("".join(current))
    return cells
