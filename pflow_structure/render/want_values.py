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

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from pflow_structure.paths import WILDCARD, format_path, parse_path
from pflow_structure.render.want_cells import ALIKE, RANKED_CHARS, alike_columns, cell

TokenCounter = Callable[[str], int]
CallText = Callable[[dict[str, Any]], str]  # a read_fields call's arguments -> how the answer writes it


class Table(NamedTuple):
    """The fields under one list: its path (``result``), the item paths relative to an item."""

    owner: tuple[Any, ...]
    columns: list[tuple[Any, ...]]


class WantValues(NamedTuple):
    """What the values part shows: ``values`` (read path -> the value shown: a column's cells for
    the rows shown, or its one value when ``alike`` names it), ``more`` (read path -> ``shown`` and
    ``next``, as ``_more`` of read_fields), ``alike`` (read path -> the rows shown, for a column with one
    value in every row shown: that value once) and the text lines."""

    values: dict[str, Any]
    more: dict[str, dict[str, Any]]
    lines: list[str]
    alike: dict[str, int]


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
    order: tuple[str, bool, int] | None = None,
    where: tuple[str, Sequence[int]] | None = None,
) -> WantValues:
    """The values at ``paths`` (template paths of ``outputs``) within ``budget`` tokens (and at most
    ``rows`` rows a list), and their lines; ``order`` (a column's template path, highest first or
    not, how many rows) ranks its list's rows and shows the first of them; ``where`` (a column's
    template path, the indices of its list's items :func:`picked_items` picked) shows only those rows."""
    plain, tables = group(paths)
    ranked = _ranked_column(order)
    picked = _ranked_column((where[0], True, 0)) if where is not None else None
    values: dict[str, Any] = {format_path(list(segments)): pick(outputs, segments) for segments in plain}
    more: dict[str, dict[str, Any]] = {}
    alike: dict[str, int] = {}
    used = count("\n".join(value_lines(values, {}, call, count))) if values else 0
    for position, table in enumerate(tables):
        room = max(budget - used, 0) // (len(tables) - position)
        by = ranked if ranked is not None and ranked[0] == table.owner and ranked[1] in table.columns else None
        if by is None and where is not None and picked is not None and picked[0] == table.owner:
            shown = _where_rows(outputs, table, list(where[1]), picked[1], execution_id, values, more, room, count)
        else:
            shown = _fit_rows(outputs, table, room, count, execution_id, values, more, rows, by, alike)
        used += count("\n".join(shown))
    more = _once_a_table(more)
    return WantValues(values, more, value_lines(values, more, call, count, alike), alike)


def _once_a_table(more: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``more`` with a table's shared entry (its paging, ranking or pick, and the call that reads on) under
    its first column only, the others ``{"as": FIRST}``: the same entry once a column cost the dict
    (the MCP answer) hundreds of tokens."""
    first: dict[str, str] = {}
    written: dict[str, dict[str, Any]] = {}
    for read, entry in more.items():
        owner = read.partition("[*]")[0]
        if owner in first and more[first[owner]] == entry:
            written[read] = {"as": first[owner]}
        else:
            first.setdefault(owner, read)
            written[read] = entry
    return written


def _entry(more: Mapping[str, Mapping[str, Any]], read: str) -> Mapping[str, Any]:
    """A column's ``more`` entry, through ``as``."""
    entry = more.get(read) or {}
    return more.get(entry["as"]) or {} if "as" in entry else entry


def _fit_rows(
    outputs: Any,
    table: Table,
    room: int,
    count: TokenCounter,
    execution_id: str,
    values: dict[str, Any],
    more: dict[str, dict[str, Any]],
    rows: int | None,
    by: Ranking | None = None,
    alike: dict[str, int] | None = None,
) -> list[str]:
    """The rows of one table that fit ``room`` (at least one, at most ``rows``), put into ``values``
    (and ``more``); ``by`` (owner, column, highest first, rows) ranks them and keeps the first. A
    column with one value in every row shown goes into ``alike`` and ``values`` holds that value once."""
    items = pick(outputs, table.owner)
    items = items if isinstance(items, list) else []
    reads = [read_path([*table.owner, 0, *column]) for column in table.columns]
    lines = [_header(format_path(list(table.owner)), [relative(c) for c in table.columns], len(items))]
    used = count(lines[0]) + 40  # and the paging line, when it comes
    columns: list[list[Any]] = [[] for _ in table.columns]
    if by is not None:
        return _ranked_rows(items, table, reads, by, execution_id, values, more, room - used, count)
    # A column alike in every item that can be shown is written once: the rows are counted without it. A
    # row costs at least a token, so no more items than ``room`` can be shown.
    scan = items[: max(room, 0) + 1]
    same = alike_columns([[pick(item, column) for item in scan] for column in table.columns], reads, count)
    varies = [not each for each in same]
    for item in items[:rows]:
        cells = [pick(item, column) for column in table.columns]
        row = _row([value for value, keep in zip(cells, varies, strict=True) if keep])
        cost = count(row) + 1
        if used + cost > room and len(lines) > 1:
            break
        used += cost
        lines.append(row)
        for column, value in zip(columns, cells, strict=True):
            column.append(value)
    shown = len(lines) - 1
    once = alike_columns(columns, reads, count) if any(same) else [False] * len(columns)
    for read, column, single in zip(reads, columns, once, strict=True):
        values[read] = column[0] if single else column
        if single and alike is not None:
            alike[read] = shown
    if shown < len(items):
        arguments = {"execution_id": execution_id, "field_paths": reads, "offset": shown}
        for read in reads:
            more[read] = {"shown": f"items 0-{shown - 1} of {len(items)}", "items": len(items), "next": arguments}
    return lines


Ranking = tuple[tuple[Any, ...], tuple[Any, ...], bool, int]  # list, column in an item, highest first, rows


def _ranked_column(order: tuple[str, bool, int] | None) -> Ranking | None:
    """``order`` as (its list's segments, the column's segments in an item, highest first, rows)."""
    if order is None:
        return None
    segments = tuple(parse_path(order[0]))
    cut = next((i for i, segment in enumerate(segments) if segment == 0 and not isinstance(segment, bool)), -1)
    return (segments[:cut], segments[cut + 1 :], order[1], order[2]) if cut >= 0 else None


def _rank_key(value: Any) -> tuple[int, Any]:
    """Numbers by value, then strings (ISO times sort as text); a missing value last either way."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (2, value)
    return (1, str(value)) if isinstance(value, str) else (0, 0)


def _ranked_rows(
    items: list[Any],
    table: Table,
    reads: list[str],
    by: Ranking,
    execution_id: str,
    values: dict[str, Any],
    more: dict[str, dict[str, Any]],
    room: int,
    count: TokenCounter,
) -> list[str]:
    """The first items by ``by``'s column (as many as it asks and fit ``room``, at least one), each with
    its index: ``values`` gets the columns in that order and ``more`` the ranking (``order``: the column,
    the direction, the items' indices)."""
    _, column, highest, wanted = by
    present = [i for i, item in enumerate(items) if _rank_key(pick(item, column))[0]]
    absent = [i for i in range(len(items)) if i not in set(present)]
    ranked = sorted(present, key=lambda i: _rank_key(pick(items[i], column)), reverse=highest) + absent
    chosen, rows = _indexed_rows(items, table, ranked[:wanted], reads, values, room, count)
    sorted_by = read_path([*table.owner, 0, *column])
    order = {"by": sorted_by, "highest_first": highest, "items": chosen}
    arguments: dict[str, Any] = {"execution_id": execution_id, "field_paths": reads}
    kinds = {"string" if isinstance(pick(items[i], column), str) else "number" for i in present}
    left = min(wanted, len(present)) - len(chosen)
    if left > 0 and len(kinds) == 1:  # the rows asked for past those shown, ranked, in one jq read
        from pflow_structure.paths.jq import jq_rows_ranked

        columns = [(relative(each), each) for each in table.columns]
        expression = jq_rows_ranked(table.owner, column, columns, (kinds.pop(), highest, chosen, left))
        arguments = {"execution_id": execution_id, "jq": expression} if expression else arguments
    shown = f"the {len(chosen)} {'highest' if highest else 'lowest'} by {relative(column)} of {len(items)}"
    for read in reads:
        more[read] = {"shown": shown, "items": len(items), "order": order, "next": arguments}
    return rows  # value_lines writes them again, with the header and the line that reads on


def picked_items(outputs: Any, path: str, test: Callable[[Any], bool]) -> list[int] | None:
    """The indices of the items of the list a column's template ``path`` runs through whose cell passes
    ``test``; None when none does, when more than :data:`PICK_SHARE` do, or when the list is shorter than
    :data:`PICK_ITEMS`."""
    ranking = _ranked_column((path, True, 0))
    if ranking is None:
        return None
    owner, column = ranking[0], ranking[1]
    items = pick(outputs, owner)
    items = items if isinstance(items, list) else []
    if len(items) < PICK_ITEMS:
        return None  # a short list reads whole for little more
    chosen = [index for index, item in enumerate(items) if test(pick(item, column))]
    return chosen if 0 < len(chosen) <= len(items) * PICK_SHARE else None


SAID = 3  # a pick names at most this many of the values its rows hold, each cut at SAID_CHARS
SAID_CHARS = 40
PICK_ITEMS = 10  # rows are picked by a value from lists this long
PICK_SHARE = 0.5  # when at most this share of the rows holds it


def _where_rows(
    outputs: Any,
    table: Table,
    chosen: list[int],
    column: tuple[Any, ...],
    execution_id: str,
    values: dict[str, Any],
    more: dict[str, dict[str, Any]],
    room: int,
    count: TokenCounter,
) -> list[str]:
    """The rows of the ``chosen`` items (as many as fit ``room``, at least one), each with its index:
    ``values`` gets their columns and ``more`` the pick (``where``: the column, its values shown, the
    items' indices) and the call that reads every row."""
    items = pick(outputs, table.owner)
    reads = [read_path([*table.owner, 0, *each]) for each in table.columns]
    header = _header(format_path(list(table.owner)), ["[i]", *(relative(c) for c in table.columns)], len(items))
    # the header (with what the pick says, about 20 tokens) and the line that reads every row (about 40)
    shown, rows = _indexed_rows(items, table, chosen, reads, values, room - count(header) - 60, count)
    distinct: list[str] = []
    for index in chosen:  # the values the picked rows hold, a few (the rows may hold many)
        text = str(pick(items[index], column))
        if text not in distinct:
            distinct.append(text)
            if len(distinct) > SAID:
                break
    said = [cell(text, SAID_CHARS) for text in distinct[:SAID]]
    where = {"by": read_path([*table.owner, 0, *column]), "values": distinct[:SAID], "items": shown}
    whose = f"whose {relative(column)} is {' or '.join(said)}" + (" or …" if len(distinct) > SAID else "")
    about = (
        f"the first {len(shown)} of the {len(chosen)} (of {len(items)}) {whose}"
        if len(shown) < len(chosen)
        else f"the {len(chosen)} of {len(items)} {whose}"
    )
    arguments: dict[str, Any] = {"execution_id": execution_id, "field_paths": reads}
    if len(shown) < len(chosen):  # the rest of the pick in one read, when jq can say which rows
        expression = _pick_jq(table, column, [str(pick(items[i], column)) for i in chosen])
        if expression:  # the picked rows after those shown
            arguments = {"execution_id": execution_id, "jq": f"{expression} | .[{len(shown)}:]"}
    for read in reads:
        more[read] = {"shown": about, "items": len(items), "where": where, "next": arguments}
    return rows


PICK_JQ_VALUES = 6  # a jq read of the rest of a pick names at most this many values


def _pick_jq(table: Table, column: tuple[Any, ...], held: Sequence[str]) -> str | None:
    """A jq expression that gives every picked row (its index and the table's columns), or None when the
    values are too many or a column runs through a list of the item."""
    from pflow_structure.paths.jq import jq_rows_where

    values = list(dict.fromkeys(held))
    if len(values) > PICK_JQ_VALUES:
        return None
    return jq_rows_where(table.owner, column, [(relative(each), each) for each in table.columns], values)


def _indexed_rows(
    items: list[Any],
    table: Table,
    indices: Sequence[int],
    reads: Sequence[str],
    values: dict[str, Any],
    room: int,
    count: TokenCounter,
) -> tuple[list[int], list[str]]:
    """The rows of the items at ``indices``, each with its index, as many as fit ``room`` (at least one):
    (the indices shown, their rows); ``values`` gets their columns."""
    shown: list[int] = []
    rows: list[str] = []
    for index in indices:
        row = _ranked_row(index, [pick(items[index], each) for each in table.columns])
        if shown and count("\n".join([*rows, row])) > room:
            break
        shown.append(index)
        rows.append(row)
    for read, each in zip(reads, table.columns, strict=True):
        values[read] = [pick(items[i], each) for i in shown]
    return shown, rows


def _ranked_row(index: int, cells: Sequence[Any]) -> str:
    return f"  [{index}] " + ",".join(cell(value, RANKED_CHARS) for value in cells)


def _header(owner: str, columns: Sequence[str], total: int) -> str:
    return f"{owner}[*] ({total:,} items): " + ", ".join(columns)


def _row(cells: Sequence[Any]) -> str:
    return "  " + ",".join(cell(value) for value in cells)


def value_lines(
    values: Mapping[str, Any],
    more: Mapping[str, Mapping[str, Any]],
    call: CallText,
    count: TokenCounter,
    alike: Mapping[str, int] | None = None,
) -> list[str]:
    """The text of ``values`` (read path -> value, as :func:`want_values` makes them): a ``path: value``
    line for a path without ``[*]``, and a table of rows for the ``[*]`` paths of each list, with the
    line that pages on when ``more`` says the rows were cut; a column ``alike`` names (its one value in
    ``values``) is one line above its table."""
    alike = alike or {}
    lines: list[str] = []
    tables: dict[str, list[str]] = {}
    for path, value in values.items():
        owner, star, _ = path.partition("[*]")
        if star:
            tables.setdefault(owner, []).append(path)
        else:
            lines.append(f"{path}: {cell(value)}")
    for owner, every in tables.items():
        lines.extend(f"{read}: {cell(values[read])}{ALIKE}" for read in every if read in alike)
        reads = [read for read in every if read not in alike] or every
        columns = [values[read] if isinstance(values[read], list) else [] for read in reads]
        paged = _entry(more, reads[0])
        total = int(paged.get("items", len(columns[0])))
        names = [read[len(owner) + 3 :].lstrip(".") or "." for read in reads]
        if "order" in paged or "where" in paged:  # ranked or picked: each row with its item's index
            lines.append(_header(owner, ["[i]", *names], total) + f"; {paged['shown']}")
            rows_ = zip((paged.get("order") or paged["where"])["items"], *columns, strict=True)
            lines.extend(_ranked_row(index, cells) for index, *cells in rows_)
            in_order = " in their order" if "order" in paged else ""
            reads_on = f"All {total:,} rows{in_order}"
            if "jq" in paged["next"]:
                reads_on = "The next rows by rank" if "order" in paged else "The other picked rows"
            lines.append(f"{reads_on}: {call(dict(paged['next']))}")
            continue
        lines.append(_header(owner, names, total))
        lines.extend(_row(cells) for cells in zip(*columns, strict=True))
        if "next" in paged:
            shown = len(columns[0])
            lines.append(f"Rows 0-{shown - 1} of {total:,} shown; read on: {call(dict(paged['next']))}")
    return lines
