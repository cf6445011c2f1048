"""One cell of a want answer: how a value is written in a row, and the same cut in the answer's dict.

A string over :data:`CELL_CHARS` (a ranked or picked row: :data:`RANKED_CHARS`) is cut and ends with
``…(its length)``; a list or an object is its compact JSON, cut the same way. The text writes the cell
(:func:`cell`); the dict an MCP client reads holds the same cut string (:func:`shown_values`), so a
long body costs the dict what it costs the text and reads whole by its path. A column with one value
in every row shown is written once (:func:`alike_columns`). Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pflow_structure.errors import NotRepresentable
from pflow_structure.render.tables import cell_text

CELL_CHARS = 80  # a string cell longer than this is cut: rows stay rows
RANKED_CHARS = 200  # a ranked row's string cell shows this much: a few rows, read whole
TokenCounter = Callable[[str], int]
_CUT_END = re.compile(r"…\([0-9,]+ chars\)")  # what a cut cell ends with, right after its first ``limit`` characters


def _cut(value: Any, limit: int, slack: int = 0) -> str | None:
    """``value``'s text cut past ``limit`` characters, ending ``…(its length)``; None when it is not cut
    (not longer than ``limit`` and ``slack``)."""
    if isinstance(value, str):
        return value[:limit] + f"…({len(value):,} chars)" if len(value) > limit + slack else None
    if isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return text[:limit] + f"…({len(text):,} chars)" if len(text) > limit + slack else None
    return None


def cell(value: Any, limit: int = CELL_CHARS) -> str:
    """One cell: a primitive as a TOON cell, a long string cut (past ``limit``), a list or object as
    compact JSON. A string the dict already holds cut (:func:`shown_values`) is written as it was cut."""
    if isinstance(value, str) and len(value) > limit and _CUT_END.fullmatch(value, limit):
        return _primitive(value[:limit]) + value[limit:]
    cut = _cut(value, limit)
    if cut is not None:
        return _primitive(value[:limit]) + cut[limit:] if isinstance(value, str) else _escaped(cut)
    if isinstance(value, (list, dict)):
        return _escaped(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return _primitive(value)


_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone one: no UTF-8 form, so no line of an answer can hold it


def _escaped(text: str) -> str:
    """``text`` with each lone surrogate written as its JSON escape (``\\ud800``)."""
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _primitive(value: Any) -> str:
    """A TOON cell; a string TOON cannot hold (a control character, a lone surrogate) as a JSON string
    with those characters escaped, so that one such string does not fail the whole answer."""
    try:
        return cell_text(value)
    except NotRepresentable:
        return _escaped(json.dumps(value, ensure_ascii=False))


DICT_SLACK = 40  # the dict cuts a cell only this far past the limit: a short cut saves less than it costs to say
CUT_NOTE = "long values are cut, ending …(their length); read one whole by its path, e.g. {example}"


def shown_values(
    values: Mapping[str, Any], more: Mapping[str, Mapping[str, Any]], alike: Mapping[str, int]
) -> tuple[dict[str, Any], str | None]:
    """``values`` (read path -> value, or a column of cells unless ``alike`` names it) as the text shows
    them: each long cell cut as :func:`cell` cuts it (a ranked or picked table's at :data:`RANKED_CHARS`);
    and, when a cell was cut, what the cut means with the path that reads the first one whole."""
    shown: dict[str, Any] = {}
    example: str | None = None
    for read, value in values.items():
        entry = more.get(read) or {}
        entry = more.get(entry["as"]) or {} if "as" in entry else entry
        limit = RANKED_CHARS if "order" in entry or "where" in entry else CELL_CHARS
        if "[*]" not in read or read in alike:
            cut = _cut(value, limit, DICT_SLACK)
            shown[read] = value if cut is None else cut
            example = example or (None if cut is None else read.replace("[*]", "[0]", 1))
            continue
        column = value if isinstance(value, list) else []
        cuts = [_cut(each, limit, DICT_SLACK) for each in column]
        shown[read] = [each if cut is None else cut for each, cut in zip(column, cuts, strict=True)] or value
        first = next((position for position, cut in enumerate(cuts) if cut is not None), None)
        if first is not None and example is None:
            rows = (entry.get("order") or entry.get("where") or {}).get("items")
            index = rows[first] if isinstance(rows, list) and first < len(rows) else first
            example = read.replace("[*]", f"[{index}]", 1)
    return shown, None if example is None else CUT_NOTE.format(example=example)


ALIKE_ROWS = 3  # a column the same in at least this many rows is written once, above the table
ALIKE = " (in every row shown)"


def same_value(one: Any, other: Any) -> bool:
    """Equal and of one type: ``1``, ``True`` and ``1.0`` are three values in a column."""
    return type(one) is type(other) and one == other


def alike_columns(columns: Sequence[Sequence[Any]], reads: Sequence[str], count: TokenCounter) -> list[bool]:
    """Which columns hold one value in every row (``playlistId``, ``due_at: null``): written once, not
    per row, when at least one other column varies and the line is shorter than the cells it saves."""

    def once(column: Sequence[Any], read: str) -> bool:
        if len(column) < ALIKE_ROWS or any(not same_value(value, column[0]) for value in column):
            return False
        text = cell(column[0])
        return len(column) * (count(text) + 1) > count(f"{read}: {text}{ALIKE}") + 1

    if not any(any(not same_value(value, column[0]) for value in column) for column in columns):
        return [False] * len(columns)  # nothing varies: the rows are the answer
    return [once(column, read) for column, read in zip(columns, reads, strict=True)]
