"""Tables for lists of dicts that share their primitive keys: markdown and TOON-style, each with its parser.

    items[2]{id,name,score}:
      1,Ada,0.5
      2,"Smith, J",null

Both are lossless for what they accept, and each has a parser that proves it: a string
that could be read as something else (empty, ``42``, ``true``, leading or trailing spaces,
the delimiter, a quote, a backslash, a newline) is written as a quoted JSON string, and in
markdown a ``|`` is escaped as ``\\|``. A list these tables cannot hold (nested values, keys
that differ between items, a float that is not finite) raises :class:`NotRepresentable`.

The cell and key quoting here is shared with the TOON documents of any JSON value
(:mod:`~pflow_structure.render.toon` writes them, :mod:`~pflow_structure.render.toon_reader`
reads them back): :func:`cell_text`, :func:`key_text`, :func:`quote_text` and
:func:`needs_quotes` write; :data:`JSON_NUMBER`, :data:`JSON_INTEGER`, :data:`LITERALS`,
:data:`TOON_SPECIAL` and :data:`UNQUOTABLE` are the lexical rules both sides follow.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pflow_structure.errors import NotRepresentable

JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
JSON_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_LOOKS_NUMERIC = re.compile(r"-?[0-9][0-9.eE+-]*")  # "05", "1.", "1e5": a reader may take these as numbers
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
TOON_SPECIAL = frozenset('"\\[]{}:#,')  # TOON's reader gives these a meaning outside quotes
_MARKDOWN_SPECIAL = frozenset('"\\')


def parse_scalar(text: str) -> Any:
    """``null``, ``true``, ``false`` and JSON numbers as themselves; anything else stays a string."""
    if text in LITERALS:
        return LITERALS[text]
    if JSON_INTEGER.fullmatch(text):
        return int(text)
    if JSON_NUMBER.fullmatch(text):
        return float(text)
    return text


LITERALS: Mapping[str, Any] = {"null": None, "true": True, "false": False}


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


def needs_quotes(text: str, special: frozenset[str]) -> bool:
    """Whether ``text`` must be quoted to read back as this string (``special``: the delimiters)."""
    return (
        text == ""
        or text != text.strip()
        or _special_characters(special).search(text) is not None
        or text in LITERALS
        or _LOOKS_NUMERIC.fullmatch(text) is not None  # every JSON number, without int() on a long digit run
        or text.startswith("-")
    )


def cell_text(value: Any, special: frozenset[str] = TOON_SPECIAL) -> str:
    """One cell: primitives as JSON literals, strings bare unless they need quotes."""
    if isinstance(value, str):
        return quote_text(value) if needs_quotes(value, special) else _checked(value)
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
    header = ",".join(key_text(c) for c in columns)
    label = "" if name is None else key_text(name)
    rows = ("  " + ",".join(cell_text(item[c]) for c in columns) for item in items)
    return "\n".join([f"{label}[{len(items)}]{{{header}}}:", *rows])


def key_text(key: str) -> str:
    """A key as TOON writes it: bare when it is a plain name, else quoted."""
    return key if _PLAIN_KEY.fullmatch(key) else quote_text(key)


def quote_text(text: str) -> str:
    """A quoted string with only the escapes TOON allows (backslash, quote, newline, return, tab)."""
    return json.dumps(_checked(text), ensure_ascii=False)


def _checked(text: str) -> str:
    if UNQUOTABLE.search(text):
        raise NotRepresentable("a string with a control character or a lone surrogate has no TOON or table form")
    return text


UNQUOTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


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
