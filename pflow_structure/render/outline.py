"""The plaintext outline for record trees (seed 002), and its parser.

    [R001] (O) Cache invalidation approach
      Leaning toward event-driven invalidation with TTL fallback.

      [R002] (O+1) Redis pub/sub for cache invalidation
        Should we add Redis pub/sub to support event-driven cache

A header is ``indent "[" id "] (" state ")" " " title``; the summary (wrapped at the same
indent), then an optional search snippet ``> ...``, sit two spaces deeper; children follow at
that same depth. A blank line follows every record that shows text, so siblings with
summaries are separated and titles-only lists stay dense. Records come as a flat list with
parent ids or nested in ``children``; field names and state letters are configurable through
:class:`OutlineFields` and ``states``, so any tree of dicts can be drawn.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from pflow_structure.errors import NotRepresentable
from pflow_structure.render.tables import parse_scalar

STATE_LETTERS: Mapping[str, str] = {"OPEN": "O", "LATER": "L", "RESOLVED": "R", "DISCARDED": "D"}
CLOSED_STATES = frozenset({"RESOLVED", "DISCARDED"})
# Seed 002's example breaks its summaries at 63 characters after the indent.
DEFAULT_WIDTH = 63


class OutlineFields(NamedTuple):
    """Which key of a record dict holds each part of the outline."""

    id: str = "id"
    title: str = "title"
    summary: str = "summary"
    state: str = "state"
    parent: str = "parent_id"
    children: str = "children"
    open_children: str = "open_children_count"
    snippet: str = "snippet"


class _Node(NamedTuple):
    record: Mapping[str, Any]
    children: list[_Node]


class _Options(NamedTuple):
    fields: OutlineFields
    states: Mapping[str, str]
    width: int | None
    minimal: bool
    open_children: bool
    closed: frozenset[str] | None  # states whose summaries are left out; None keeps every summary
    max_depth: int | None


def render_outline(
    records: Sequence[Mapping[str, Any]],
    *,
    fields: OutlineFields = OutlineFields(),  # noqa: B008  (an immutable NamedTuple)
    states: Mapping[str, str] = STATE_LETTERS,
    width: int | None = DEFAULT_WIDTH,
    minimal: bool = False,
    open_children: bool = False,
    omit_closed_summaries: bool = False,
    closed_states: Iterable[str] = CLOSED_STATES,
    sections: bool = False,
    section_counts: Mapping[str, int] | None = None,
    max_depth: int | None = None,
    envelope: Mapping[str, Any] | None = None,
) -> str:
    """The outline of ``records`` (flat with parent ids, or nested), as one string.

    ``minimal`` shows titles only; ``open_children`` adds ``(O+2)`` from the open-children
    field; ``omit_closed_summaries`` drops summaries of records in ``closed_states``;
    ``sections`` groups the roots under ``## OPEN (3)`` headers (the count is of the roots
    shown unless ``section_counts`` gives totals, e.g. of a paged overview); ``max_depth`` shows that many
    levels and collapses the rest into ``[+N children]``; ``envelope`` is written first as
    ``key: value | key: value``. ``width=None`` never wraps.

    >>> print(render_outline([{"id": "R1", "state": "OPEN", "title": "Cache", "summary": "TTL."}]))
    [R1] (O) Cache
      TTL.
    """
    options = _Options(
        fields,
        states,
        width,
        minimal,
        open_children,
        frozenset(closed_states) if omit_closed_summaries else None,
        max_depth,
    )
    roots = build_tree(records, fields)
    lines: list[str] = []
    if envelope:
        lines += [" | ".join(f"{key}: {_one_line(value)}" for key, value in envelope.items()), ""]
    if sections:
        for state, group in _sections(roots, fields, states):
            _blank(lines)
            count = section_counts.get(state, len(group)) if section_counts else len(group)
            lines += [f"## {state} ({count})", ""]
            for node in group:
                _write(node, 0, options, lines)
    else:
        for node in roots:
            _write(node, 0, options, lines)
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)


def build_tree(records: Sequence[Mapping[str, Any]], fields: OutlineFields = OutlineFields()) -> list[_Node]:  # noqa: B008
    """Roots in input order; a record whose parent id names another record of the list goes under it.

    Nested ``children`` are kept as given. A record met twice (a parent-id cycle, a shared
    child) is drawn once; a cycle with no root is cut at its first record.
    """
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        raise NotRepresentable("an outline needs a list of records")
    for record in records:
        if not isinstance(record, Mapping):
            raise NotRepresentable("every record of an outline must be a dict")
    index = {_key(r.get(fields.id)): r for r in records if fields.id in r}
    attached: dict[int, list[Mapping[str, Any]]] = {}
    roots: list[Mapping[str, Any]] = []
    for record in records:
        parent = record.get(fields.parent)
        owner = index.get(_key(parent)) if parent is not None else None
        if owner is None or owner is record:
            roots.append(record)
        else:
            attached.setdefault(id(owner), []).append(record)
    seen: set[int] = set()
    built = [_build(r, fields, attached, seen) for r in roots]
    built += [_build(r, fields, attached, seen) for r in records if id(r) not in seen]  # cycles without a root
    return [node for node in built if node is not None]


def _build(
    record: Mapping[str, Any], fields: OutlineFields, attached: dict[int, list[Mapping[str, Any]]], seen: set[int]
) -> _Node | None:
    if id(record) in seen:
        return None
    seen.add(id(record))
    nested = record.get(fields.children)
    kids = [c for c in nested if isinstance(c, Mapping)] if isinstance(nested, list) else []
    kids += attached.get(id(record), [])
    children = [_build(c, fields, attached, seen) for c in kids]
    return _Node(record, [c for c in children if c is not None])


def _key(value: Any) -> Any:
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else repr(value)


def _sections(roots: list[_Node], fields: OutlineFields, states: Mapping[str, str]) -> list[tuple[str, list[_Node]]]:
    groups: dict[str, list[_Node]] = {state: [] for state in states}
    for node in roots:
        groups.setdefault(_one_line(node.record.get(fields.state, "")), []).append(node)
    return [(state, group) for state, group in groups.items() if group]


def _write(node: _Node, depth: int, options: _Options, lines: list[str]) -> None:
    fields, record = options.fields, node.record
    indent = "  " * depth
    lines.append(f"{indent}[{_one_line(record.get(fields.id, ''))}] {_state(record, options)}{_title(record, fields)}")
    text = _text_lines(record, options)
    lines += [f"{indent}  {line}" for line in text]
    if options.max_depth is not None and depth + 1 >= options.max_depth and node.children:
        count = len(node.children)
        lines.append(f"{indent}  [+{count} {'child' if count == 1 else 'children'}]")
    elif node.children:
        if text:
            lines.append("")
        for child in node.children:
            _write(child, depth + 1, options, lines)
    if text:
        lines.append("")


def _state(record: Mapping[str, Any], options: _Options) -> str:
    state = record.get(options.fields.state)
    if state is None:
        return ""
    letter = options.states.get(state, state) if isinstance(state, str) else _one_line(state)
    count = record.get(options.fields.open_children)
    suffix = f"+{count}" if options.open_children and isinstance(count, int) and count > 0 else ""
    return f"({letter}{suffix}) "


def _title(record: Mapping[str, Any], fields: OutlineFields) -> str:
    title = record.get(fields.title, "")
    return _one_line(title)


def _text_lines(record: Mapping[str, Any], options: _Options) -> list[str]:
    if options.minimal:
        return []
    lines: list[str] = []
    summary = record.get(options.fields.summary)
    closed = options.closed is not None and record.get(options.fields.state) in options.closed
    if summary not in (None, "") and not closed:
        for paragraph in _one_line(summary, keep_newlines=True).split("\n"):
            lines += wrap(paragraph, options.width)
    snippet = record.get(options.fields.snippet)
    if snippet not in (None, ""):
        lines.append(f"> {_one_line(snippet)}")
    return lines


def wrap(text: str, width: int | None) -> list[str]:
    """Greedy wrap at single spaces; joining the lines with one space gives ``text`` back."""
    if width is None or len(text) <= width:
        return [text]
    lines: list[str] = []
    current: str | None = None
    for word in text.split(" "):
        if current is None:
            current = word
        elif word and current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}"
    lines.append(current or "")
    return lines


def _one_line(value: Any, keep_newlines: bool = False) -> str:
    text = value if isinstance(value, str) else _scalar_text(value)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if keep_newlines else text.replace("\n", " ")


def _scalar_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _blank(lines: list[str]) -> None:
    if lines and lines[-1] != "":
        lines.append("")


# -- parsing ---------------------------------------------------------------------------------

_HEADER = re.compile(r"\[(?P<id>[^\]\n]*)\] (?:\((?P<state>[^()\s+]+)(?:\+(?P<open>\d+))?\) )?(?P<title>.*)")
_MORE = re.compile(r"\[\+(?P<count>\d+) child(?:ren)?\]")
_SECTION = re.compile(r"## .* \(\d+\)")


def parse_outline(
    text: str,
    *,
    fields: OutlineFields = OutlineFields(),  # noqa: B008
    states: Mapping[str, str] = STATE_LETTERS,
) -> list[dict[str, Any]]:
    """Read an outline back into nested records (``children`` lists), the inverse of render_outline.

    Wrapped summary lines are joined with one space; ``> `` lines become the snippet;
    ``[+N children]`` becomes ``hidden_children``; section headers and the envelope are skipped
    (see :func:`parse_envelope`).
    """
    names = {letter: state for state, letter in states.items()}
    roots: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = []  # (depth, record)
    lines = text.split("\n")
    if lines and _is_envelope(lines[0]):
        lines = lines[1:]
    for line in lines:
        if not line or (not line.startswith(" ") and _SECTION.fullmatch(line)):
            continue
        spaces = len(line) - len(line.lstrip(" "))
        header = _HEADER.fullmatch(line[spaces:]) if spaces % 2 == 0 else None
        depth = spaces // 2
        if header and depth <= (stack[-1][0] + 1 if stack else 0):
            record = _record(header, fields, names)
            while stack and stack[-1][0] >= depth:
                stack.pop()
            (stack[-1][1].setdefault(fields.children, []) if stack else roots).append(record)
            stack.append((depth, record))
            continue
        _add_text(stack, line, fields)
    return roots


def _record(header: re.Match[str], fields: OutlineFields, names: Mapping[str, str]) -> dict[str, Any]:
    record: dict[str, Any] = {fields.id: header["id"]}
    if header["state"] is not None:
        record[fields.state] = names.get(header["state"], header["state"])
    if header["open"] is not None:
        record[fields.open_children] = int(header["open"])
    record[fields.title] = header["title"]
    return record


def _add_text(stack: list[tuple[int, dict[str, Any]]], line: str, fields: OutlineFields) -> None:
    if not stack:
        raise NotRepresentable(f"outline text before any record: {line[:40]!r}")
    depth, record = stack[-1]
    prefix = "  " * (depth + 1)
    if not line.startswith(prefix):
        raise NotRepresentable(f"outline line is not indented under its record: {line[:40]!r}")
    body = line[len(prefix) :]
    more = _MORE.fullmatch(body)
    if more:
        record["hidden_children"] = int(more["count"])
    elif body.startswith("> "):
        record[fields.snippet] = body[2:]
    elif fields.summary in record:
        record[fields.summary] += " " + body
    else:
        record[fields.summary] = body


def _is_envelope(line: str) -> bool:
    return bool(line) and not line.startswith(("[", " ", "## ")) and ": " in line


def parse_envelope(text: str) -> dict[str, Any]:
    """The ``key: value | key: value`` line at the top of an outline, if there is one."""
    first = text.split("\n", 1)[0]
    if not _is_envelope(first):
        return {}
    pairs = (part.split(": ", 1) for part in first.split(" | "))
    return {pair[0]: parse_scalar(pair[1]) if len(pair) == 2 else "" for pair in pairs}
