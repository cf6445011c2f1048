"""The CLI text of ``read_fields``: one ``path: value`` line per requested path."""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

# read-fields --format: text (path: JSON lines), json (as --json), or a compact format.
READ_FORMATS = ("text", "json", "auto", "outline", "lines", "table", "toon")
# The MCP read_fields tools' words for their format argument (serve and the proxy).
READ_FORMAT_DESCRIPTION = (
    "json (default): {path: value} as JSON. auto: each list or dict in the smallest format that reads back the "
    "same (a TOON table for rows), under a path: line. text: a path: JSON line per path. outline, lines, table, "
    "toon: that format."
)


def past_the_end(offset: int, total: int) -> str:
    """Why a page of a list path is empty: its offset is at or past the end."""
    return f"offset {offset} is past the end: the list has {total} item{'' if total == 1 else 's'}"


def render_fields_text(
    values: Mapping[str, Any],
    errors: Mapping[str, str] | None = None,
    totals: Mapping[str, int] | None = None,
    *,
    offset: int = 0,
    max_items: int | None = 20,
    missing: Mapping[str, int] | None = None,
    render: Callable[[Any], str] | None = None,
    offset_hint: str = "--offset",
    named: bool = False,
    page_counts: Mapping[str, int] | None = None,
) -> str:
    """``result[0].title: "Fix authentication bug"``; a None says why; long lists are paged.

    ``missing`` counts the items of a ``[*]`` path that lack the rest of it (shown as null).
    ``render`` (a compact format, ``read-fields --format``) writes each list or dict value on
    the lines below its ``path:`` line, indented two spaces so that none can pass for another
    path's line, instead of as JSON on it. A value holding bytes keeps the JSON line, whose
    ``<N bytes, base64: ...>`` marker tells bytes from text. ``offset_hint`` names the option
    that pages on (``--offset`` on the command line, ``offset`` for an MCP tool). ``named``: the
    values of wildcard and JSONPath paths are ``{concrete path: value}`` pairs, one line each below
    the ``path:`` line. ``page_counts``: paths whose ``missing`` count covers only the page (its length).
    An object that repeats is stated once and referred to as ``"=PATH"`` after
    (:mod:`pflow_structure.render.shared`, one legend line on top).
    """
    errors = errors or {}
    totals = totals or {}
    missing = missing or {}
    lines: list[str] = []
    shared = 0
    columns = _column_groups(values, errors, totals) if render is not None else {}
    for path, value in values.items():
        group = columns.get(path)
        if group is not None:  # several [*] paths over one list: one table, a column each
            if group:
                lines.append(_table(group, values, totals, missing, (offset, max_items, offset_hint), render))
            continue
        if path in errors:
            # A reason may span lines (a syntax error's caret); keep every line a comment.
            reason = errors[path].replace("\n", "\n  # ")
            lines.append(f"{path}: null  # {reason}")
            continue
        if isinstance(value, (list, dict)) and not (named and path in totals):  # a repeat said once: "=PATH"
            from pflow_structure.render.shared import share_repeats

            value, references = share_repeats(value, path, first_index=offset if path in totals else 0)
            shared += references
        note = ""
        if isinstance(value, list) and path in totals:
            shown = value
            if max_items is not None and len(value) > max_items:
                shown = value[:max_items]
            total = totals[path]
            end = offset + len(shown)
            if not shown and offset and offset >= total:
                note = f"  # {past_the_end(offset, total)}"
            elif not shown and total:
                note = f"  # none of {total} items shown (offset {offset})"
            elif end < total or offset:
                more = f"; {offset_hint} {end} for more" if end < total else ""
                note = f"  # items {offset}-{end - 1} of {total}{more}"
            if missing.get(path):
                of = f"these {page_counts[path]}" if page_counts and path in page_counts else f"{total}"
                note += f"{'; ' if note else '  # '}{missing[path]} of {of} items lack this path (null)"
            if named:
                pairs = [f"  {name}: {_json(item)}" for pair in shown for name, item in pair.items()]
                lines.append("\n".join([f"{path}:{note}", *pairs]))
                continue
            if render is not None and shown and not _has_bytes(shown):
                lines.append(f"{path}:{note}\n{_indented(render(shown))}")
                continue
            text = _json(shown)
            if len(shown) < len(value):
                text = text[:-1] + (", ..." if shown else "...") + "]"
        elif render is not None and isinstance(value, (list, dict)) and value and not _has_bytes(value):
            lines.append(f"{path}:\n{_indented(render(value))}")
            continue
        else:
            text = _json(value)
        lines.append(f"{path}: {text}{note}")
    if shared:
        from pflow_structure.render.shared import LEGEND

        lines.insert(0, LEGEND)
    return "\n".join(lines)


def _column_groups(
    values: Mapping[str, Any], errors: Mapping[str, str], totals: Mapping[str, int]
) -> dict[str, list[str]]:
    """Paths such as ``result[*].number`` and ``result[*].title``, read over the same list and holding
    primitives, grouped: the first path of a group maps to all of them, the others to ``[]``."""
    by_list: dict[tuple[str, int], list[str]] = {}
    for path, value in values.items():
        if path in errors or path not in totals or path.count("[*]") != 1 or not isinstance(value, list):
            continue
        prefix = path[: path.index("[*]") + 3]
        if path == prefix or any(isinstance(v, (list, dict, bytes, bytearray)) for v in value):
            continue
        by_list.setdefault((prefix, len(value)), []).append(path)
    groups: dict[str, list[str]] = {}
    for paths in by_list.values():
        if len(paths) > 1:
            groups[paths[0]] = paths
            groups.update((other, []) for other in paths[1:])
    return groups


def _table(
    paths: list[str],
    values: Mapping[str, Any],
    totals: Mapping[str, int],
    missing: Mapping[str, int],
    paging: tuple[int, int | None, str],
    render: Any,
) -> str:
    offset, max_items, offset_hint = paging
    prefix = paths[0][: paths[0].index("[*]") + 3]
    names = [path[len(prefix) :].removeprefix(".") for path in paths]
    count = len(values[paths[0]]) if max_items is None else min(len(values[paths[0]]), max_items)
    rows = [{name: values[path][index] for name, path in zip(names, paths, strict=True)} for index in range(count)]
    total, end = totals[paths[0]], offset + count
    notes = [f"items {offset}-{end - 1} of {total}"] if (end < total or offset) and count else []
    notes += [f"{offset_hint} {end} for more"] if end < total and count else []
    if not count and offset and offset >= total:
        notes.append(past_the_end(offset, total))
    elif not count and total:
        notes.append(f"none of {total} items shown (offset {offset})")
    notes += [f"{missing[path]} of {total} items lack {path} (null)" for path in paths if missing.get(path)]
    note = f"  # {'; '.join(notes)}" if notes else ""
    body = _indented(render(rows)) if rows else "  []"
    return f"{', '.join(paths)}:{note}\n{body}"


def _indented(text: str) -> str:
    return "\n".join("  " + line if line else line for line in text.split("\n"))


def _has_bytes(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (bytes, bytearray)):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=_bytes_default)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate cannot be printed as UTF-8: escape it
        text = json.dumps(value, default=_bytes_default)
    return text


def _bytes_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        import base64

        return f"<{len(value)} bytes, base64: {base64.b64encode(value).decode('ascii')}>"
    raise TypeError(f"cannot show a {type(value).__name__}")
