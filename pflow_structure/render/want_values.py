"""The values of a ``want`` answer: the best matches under their paths, one row per record, in a budget.

The fields a ``want`` matched (template paths, ``result[0].user.login``) are read straight from the
value and written as rows, one per item of the list that holds them, its handle first::

    result[*] (100 items): number, user.login, state
      101,alice,open
      100,bob,closed
    Rows 0-1 of 100 shown; read on: pflow-structure read-fields ID 'result[*].number' ... --offset 2

A field outside any list is one ``path: value`` line. Cells are TOON cells (a string bare unless
it needs quotes, :func:`~pflow_structure.render.tables.cell_text`); a list or an object is its
compact JSON; a long string is cut (``…`` and its length) and reads whole with ``read-fields``.
Rows are added while the text fits the budget; the rest pages with the exact call that reads on
(``offset`` on the ``[*]`` paths). Pure: the value, the paths and a token counter in, lines out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from pflow_structure.paths import WILDCARD, format_path, parse_path
from pflow_structure.render.tables import cell_text

CELL_CHARS = 80  # a string cell longer than this is cut: rows stay rows
TokenCounter = Callable[[str], int]
CallText = Callable[[dict[str, Any]], str]  # a read_fields call's arguments -> how the answer writes it


class Table(NamedTuple):
    """The fields under one list: its path (``result``), the item paths relative to an item."""

    owner: tuple[Any, ...]
    columns: list[tuple[Any, ...]]


class WantValues(NamedTuple):
    """What the values part shows: ``values`` (read path -> the value shown: a column's cells for
    the rows shown), ``more`` (read path -> ``shown`` and ``next``, as ``_more`` of read_fields)
    and the text lines."""

    values: dict[str, Any]
    more: dict[str, dict[str, Any]]
    lines: list[str]


def read_path(segments: Sequence[Any]) -> str:
    """A template path's segments as the ``read-fields`` path that reads every item (``[0]`` → ``[*]``)."""
    return format_path([WILDCARD if segment == 0 else segment for segment in segments])


def group(paths: Sequence[str]) -> tuple[list[tuple[Any, ...]], list[Table]]:
    """(the paths outside any list, the tables): each path under the first list it passes through."""
    plain: list[tuple[Any, ...]] = []
    tables: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for path in paths:
        segments = tuple(parse_path(path))
        cut = next((i for i, segment in enumerate(segments) if segment == 0 and not isinstance(segment, bool)), -1)
        if cut < 0:
            plain.append(segments)
        else:
            tables.setdefault(segments[:cut], []).append(segments[cut + 1 :])
    return plain, [Table(owner, columns) for owner, columns in tables.items()]


def pick(value: Any, segments: Sequence[Any]) -> Any:
    """The value at template segments: a key, or ``0`` for every item (a list of what each holds);
    None where a key is missing."""
    for position, segment in enumerate(segments):
        if segment == 0 and not isinstance(segment, bool) and isinstance(value, list):
            return [pick(item, segments[position + 1 :]) for item in value]
        if isinstance(value, dict) and isinstance(segment, str):
            value = value.get(segment)
        else:
            return None
    return value


def cell(value: Any) -> str:
    """One cell: a primitive as a TOON cell, a long string cut, a list or object as compact JSON."""
    if isinstance(value, str) and len(value) > CELL_CHARS:
        return cell_text(value[:CELL_CHARS]) + f"…({len(value):,} chars)"
    if isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return text if len(text) <= CELL_CHARS else text[:CELL_CHARS] + f"…({len(text):,} chars)"
    return cell_text(value)


def relative(segments: Sequence[Any]) -> str:
    """An item's path as a column name: ``user.login``, ``labels[*].name``, ``.`` for the item itself."""
    if not segments:
        return "."
    text = read_path(segments)
    return text[1:] if text.startswith(".") else text


def want_values(
    outputs: Any,
    paths: Sequence[str],
    *,
    execution_id: str,
    budget: int,
    count: TokenCounter,
    call: CallText,
    rows: int | None = None,
) -> WantValues:
    """The values at ``paths`` (template paths of ``outputs``) within ``budget`` tokens (and at most
    ``rows`` rows a list), and their lines."""
    plain, tables = group(paths)
    values: dict[str, Any] = {format_path(list(segments)): pick(outputs, segments) for segments in plain}
    more: dict[str, dict[str, Any]] = {}
    used = count("\n".join(value_lines(values, {}, call))) if values else 0
    for position, table in enumerate(tables):
        room = max(budget - used, 0) // (len(tables) - position)
        shown = _fit_rows(outputs, table, room, count, execution_id, values, more, rows)
        used += count("\n".join(shown))
    return WantValues(values, more, value_lines(values, more, call))


def _fit_rows(
    outputs: Any,
    table: Table,
    room: int,
    count: TokenCounter,
    execution_id: str,
    values: dict[str, Any],
    more: dict[str, dict[str, Any]],
    rows: int | None,
) -> list[str]:
    """The rows of one table that fit ``room`` (at least one, at most ``rows``), put into ``values``
    (and ``more``)."""
    items = pick(outputs, table.owner)
    items = items if isinstance(items, list) else []
    reads = [read_path([*table.owner, 0, *column]) for column in table.columns]
    lines = [_header(format_path(list(table.owner)), [relative(c) for c in table.columns], len(items))]
    used = count(lines[0]) + 40  # and the paging line, when it comes
    columns: list[list[Any]] = [[] for _ in table.columns]
    for item in items[:rows]:
        cells = [pick(item, column) for column in table.columns]
        row = _row(cells)
        cost = count(row) + 1
        if used + cost > room and len(lines) > 1:
            break
        used += cost
        lines.append(row)
        for column, value in zip(columns, cells, strict=True):
            column.append(value)
    values.update(zip(reads, columns, strict=True))
    shown = len(lines) - 1
    if shown < len(items):
        arguments = {"execution_id": execution_id, "field_paths": reads, "offset": shown}
        for read in reads:
            more[read] = {"shown": f"items 0-{shown - 1} of {len(items)}", "items": len(items), "next": arguments}
    return lines


def _header(owner: str, columns: Sequence[str], total: int) -> str:
    return f"{owner}[*] ({total:,} items): " + ", ".join(columns)


def _row(cells: Sequence[Any]) -> str:
    return "  " + ",".join(cell(value) for value in cells)


def value_lines(values: Mapping[str, Any], more: Mapping[str, Mapping[str, Any]], call: CallText) -> list[str]:
    """The text of ``values`` (read path -> value, as :func:`want_values` makes them): a ``path: value``
    line for a path without ``[*]``, and a table of rows for the ``[*]`` paths of each list, with the
    line that pages on when ``more`` says the rows were cut."""
    lines: list[str] = []
    tables: dict[str, list[str]] = {}
    for path, value in values.items():
        owner, star, _ = path.partition("[*]")
        if star:
            tables.setdefault(owner, []).append(path)
        else:
            lines.append(f"{path}: {cell(value)}")
    for owner, reads in tables.items():
        columns = [values[read] if isinstance(values[read], list) else [] for read in reads]
        paged = more.get(reads[0]) or {}
        total = int(paged.get("items", len(columns[0])))
        names = [read[len(owner) + 3 :].lstrip(".") or "." for read in reads]
        lines.append(_header(owner, names, total))
        lines.extend(_row(cells) for cells in zip(*columns, strict=True))
        if "next" in paged:
            shown = len(columns[0])
            lines.append(f"Rows 0-{shown - 1} of {total:,} shown; read on: {call(dict(paged['next']))}")
    return lines


def covered(shown: Mapping[str, Any], path: str) -> bool:
    """Whether a template ``path`` (``result[0].title``) is among the read paths ``shown`` as values."""
    return read_path(parse_path(path)) in shown
