"""Any JSON value as a TOON document (https://github.com/toon-format/spec).

Nested dicts as indented ``key:`` blocks, lists of primitives inline, lists of like flat dicts
as the tables of :mod:`~pflow_structure.render.tables`, other lists as ``- item`` lines.
:func:`~pflow_structure.render.toon_reader.parse_toon` reads it back strictly, with the same
types: numbers are written as Python writes them (``1.0``, ``1e-07``, ``-0.0``), not in TOON's
canonical form, which would turn ``1.0`` into the int ``1`` and drop the sign of ``-0.0``
(other TOON readers take them as equal numbers, ``-0.0`` as ``0.0``). Nesting is limited to
``TOON_MAX_DEPTH`` levels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pflow_structure.errors import NotRepresentable
from pflow_structure.render.tables import cell_text, key_text, quote_text

__all__ = ["TOON_MAX_DEPTH", "render_toon"]


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
        lines.append(quote_text(value) if isinstance(value, str) and text.startswith("\ufeff") else text)
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
        label = pad + key_text(key)
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
        lines.append(f"{head}: {_inline(items)}" if items else head + ":")
        return
    inner = _nest(level)
    columns = _table_columns_or_none(items) if tabular else None
    if columns is not None:
        pad = "  " * (depth + 1)
        lines.append(f"{head}{{{','.join(key_text(c) for c in columns)}}}:")
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


def _inline(items: Sequence[Any]) -> str:
    """Primitives on one line, comma-separated. When one string needs quotes (a comma in it, say),
    every string is quoted: ``"a, b","c"`` reads as two items at a glance, ``"a, b",c`` less surely."""
    cells = [_scalar(item) for item in items]
    if any(isinstance(item, str) and cell.startswith('"') for item, cell in zip(items, cells, strict=True)):
        cells = [
            quote_text(str.__str__(item)) if isinstance(item, str) else cell
            for item, cell in zip(items, cells, strict=True)
        ]
    return ",".join(cells)


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
