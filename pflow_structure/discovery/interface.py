"""Parse the ``Interface:`` block of a pflow node docstring into the nested format.

    Interface:
    - Reads: shared["text"]: str  # Text to summarise
    - Writes: shared["issue_data"]: dict  # GitHub issue
        - number: int  # Issue number
        - labels: list[dict]  # Issue labels
            - name: str  # Label name
    - Params: encoding: str  # File encoding (optional, default: utf-8)
    - Actions: default (success), error (failure)

becomes ``{"description", "inputs", "outputs", "params", "actions"}`` (plus ``"other"`` for
labels such as ``Shared:`` that pflow does not define). Each item is ``{"key", "type",
"description"}``, with ``"structure"`` (fields of a dict) or ``"items"`` (fields of each list
item) when nested lines follow.

Limits, on purpose (seed 003, section 4):
- Types: ``str int float bool dict list any``, ``list[T]`` and unions of those (``dict|str``,
  which pflow's own nodes use). No ``str | null``, no optional marker (``age?``).
- Defaults stay in the description text; a description is everything after the first ``#``,
  so commas, parentheses and ``default: {}`` never start a new parameter.
- Nesting stops at 5 levels.
- Text that does not parse becomes ``{"_raw": original}`` for that item or field only; the
  parser never raises on bad input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 5
SIMPLE_TYPES = ("str", "int", "float", "bool", "dict", "list", "any")
_SECTIONS = {"reads": "inputs", "writes": "outputs", "params": "params"}
_HEADER = re.compile(r"-\s*([A-Za-z]\w*)\s*:\s*(.*)")
_SHARED = re.compile(r"""shared\[\s*(?:"([^"]+)"|'([^']+)')\s*\]\s*(?::\s*(.*))?""")
_PARAM = re.compile(r"([A-Za-z_]\w*)\s*(?::\s*(.*))?")
_FIELD = re.compile(r"-\s*([^\s:#]+)\s*:\s*(.*)")
_FIELD_NAME = re.compile(r"[A-Za-z_$@][\w$@-]*")
_ACTION = re.compile(r"([\w<>.-]+)\s*(?:\((.*)\))?")
_NOTE = re.compile(r"(.*?)\s*\(([^()]*)\)")


@dataclass
class _Line:
    """One line of the block, with the lines indented under it."""

    indent: int
    text: str
    children: list[_Line] = field(default_factory=list)

    def source(self) -> str:
        """The original text of this line and its children (for ``_raw``)."""
        lines = [self.text]
        lines.extend(child.source() for child in self.children)
        return "\n".join(lines)


def parse_interface(docstring: str | None) -> dict[str, Any]:
    """The interface of a node from its docstring; never raises on bad text.

    >>> parse_interface('Echo.\\n\\nInterface:\\n- Params: n: int  # Count (default: 1)')["params"]
    [{'key': 'n', 'type': 'int', 'description': 'Count (default: 1)'}]
    """
    lines = _clean_lines(docstring or "")
    result: dict[str, Any] = {
        "description": first_line(lines),
        "inputs": [],
        "outputs": [],
        "params": [],
        "actions": [],
    }
    for item in _tree(_interface_block(lines)):
        _add_item(item, result)
    return result


def first_line(lines: list[str] | str) -> str:
    """The first non-empty line, stripped (a node's one-line description)."""
    for line in lines.splitlines() if isinstance(lines, str) else lines:
        if line.strip():
            return line.strip()
    return ""


def _clean_lines(docstring: str) -> list[str]:
    """Like ``inspect.cleandoc``: the first line stripped, the rest dedented (without importing inspect)."""
    lines = docstring.expandtabs().splitlines()
    rest = [line for line in lines[1:] if line.strip()]
    margin = min((len(line) - len(line.lstrip()) for line in rest), default=0)
    return [lines[0].strip()] + [line[margin:] for line in lines[1:]] if lines else []


def _interface_block(lines: list[str]) -> list[str]:
    """The lines after ``Interface:`` up to the first blank line or dedent to plain text."""
    for index, line in enumerate(lines):
        if line.strip() == "Interface:":
            base = len(line) - len(line.lstrip())
            block: list[str] = []
            for following in lines[index + 1 :]:
                indent = len(following) - len(following.lstrip())
                if not following.strip() or (indent <= base and not following.lstrip().startswith("-")):
                    break
                block.append(following)
            return block
    return []


def _tree(lines: list[str]) -> list[_Line]:
    """Group lines by indentation: each line owns the following lines indented deeper."""
    roots: list[_Line] = []
    stack: list[_Line] = []
    for raw in lines:
        line = _Line(len(raw) - len(raw.lstrip()), raw.strip())
        while stack and stack[-1].indent >= line.indent:
            stack.pop()
        (stack[-1].children if stack else roots).append(line)
        stack.append(line)
    return roots


def _add_item(item: _Line, result: dict[str, Any]) -> None:
    match = _HEADER.fullmatch(item.text)
    if match is None:
        result.setdefault("other", []).append({"_raw": item.source()})
        return
    label, rest = match.group(1), match.group(2)
    section = _SECTIONS.get(label.lower())
    if label.lower() == "actions":
        result["actions"].extend(_parse_actions(rest))
    elif section is None:
        entries = _parse_declarations(rest, item, _PARAM)
        result.setdefault("other", []).extend({"section": label, **entry} for entry in entries)
    else:
        pattern = _PARAM if section == "params" else _SHARED
        result[section].extend(_parse_declarations(rest, item, pattern))


def _parse_declarations(rest: str, item: _Line, pattern: re.Pattern[str]) -> list[dict[str, Any]]:
    """``shared["a"]: str, shared["b"]: int  # shared description`` → one entry per declaration."""
    declared, description = _split_comment(rest)
    notes, nested = _split_children(item)
    description = _join(description, notes)
    segments = [segment.strip() for segment in _split_top_level(declared, ",")]
    segments = [segment for segment in segments if segment]
    if not segments:
        return [{"_raw": item.source()}]
    entries = []
    for segment in segments:
        declaration, note = _split_note(segment)
        match = pattern.fullmatch(declaration)
        if match is None:
            entries.append({"_raw": item.source() if len(segments) == 1 else segment})
            continue
        key = next(group for group in match.groups()[:-1] if group)
        entry = _entry(key, match.groups()[-1], _join(note, [description]), nested, depth=0)
        entries.append(entry if "_raw" not in entry else {"_raw": item.source()})
    return entries


def _entry(key: str, type_text: str | None, description: str, nested: list[_Line], depth: int) -> dict[str, Any]:
    """``{"key", "type", "description"}`` plus the nested fields, or ``{"_raw": ...}``."""
    type_text, note = _split_note(type_text or "any")
    parsed = _parse_type(type_text, depth)
    if parsed is None:
        return {"_raw": ""}
    type_name, inline_fields = parsed
    entry: dict[str, Any] = {"key": key, "type": type_name, "description": _join(note, [description])}
    nested_key = _nested_key(type_name)
    if nested and nested_key is None:
        return {"_raw": ""}  # fields under a str or an int: not a shape we understand
    fields = inline_fields if inline_fields is not None else _parse_fields(nested, depth + 1)
    if nested_key and fields:
        entry[nested_key] = fields
    return entry


def _nested_key(type_name: str) -> str | None:
    """Where nested fields go: ``structure`` for a dict, ``items`` for a list of dicts."""
    members = type_name.split("|")
    if "dict" in members:
        return "structure"
    if "list" in members or "list[dict]" in members:
        return "items"
    return None


def _parse_fields(lines: list[_Line], depth: int) -> dict[str, Any]:
    """Nested ``- name: type  # description`` lines; a bad line becomes ``{"_raw": line}`` under its name."""
    fields: dict[str, Any] = {}
    for line in lines:
        match = _FIELD.fullmatch(line.text)
        if match is None:
            fields[f"_raw_{len(fields)}"] = {"_raw": line.source()}
            continue
        name, rest = match.group(1), match.group(2)
        if depth > MAX_DEPTH or not _FIELD_NAME.fullmatch(name):
            fields[name] = {"_raw": line.source()}
            continue
        type_text, description = _split_comment(rest)
        notes, nested = _split_children(line)
        entry = _entry(name, type_text, _join(description, notes), nested, depth)
        if "_raw" in entry:
            fields[name] = {"_raw": line.source()}
        else:
            del entry["key"]
            fields[name] = entry
    return fields


def _split_children(line: _Line) -> tuple[list[str], list[_Line]]:
    """Continuation lines (a wrapped description or ``# more``) apart from nested field lines."""
    notes: list[str] = []
    nested: list[_Line] = []
    for child in line.children:
        if child.text.startswith("-"):
            nested.append(child)
        else:
            notes.append(child.source().lstrip("#").strip())
    return notes, nested


def _parse_type(text: str, depth: int) -> tuple[str, dict[str, Any] | None] | None:
    """A normalised type name, plus fields when written inline (``[{name: str}]``); None if unknown."""
    compact = text.strip()
    if compact.startswith(("[", "{")):
        return _parse_inline(compact, depth)
    members = [member.strip().lower() for member in compact.split("|")]
    if all(_simple_or_list(member) for member in members):
        return "|".join(members), None
    return None


def _simple_or_list(name: str) -> bool:
    if name in SIMPLE_TYPES:
        return True
    inner = re.fullmatch(r"list\s*\[\s*(.+?)\s*\]", name)
    return inner is not None and _simple_or_list(inner.group(1))


def _parse_inline(text: str, depth: int) -> tuple[str, dict[str, Any] | None] | None:
    """``{a: str, b: int}`` is a dict and ``[{...}]`` a list of dicts, nested up to :data:`MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        return None
    if text.startswith("[") and text.endswith("]"):
        inner = _parse_inline(text[1:-1].strip(), depth)
        return None if inner is None or not inner[0].startswith("dict") else ("list[dict]", inner[1])
    if not (text.startswith("{") and text.endswith("}")):
        return None
    fields: dict[str, Any] = {}
    for part in _split_top_level(text[1:-1], ","):
        name, colon, type_text = part.partition(":")
        parsed = _parse_type(type_text, depth + 1) if colon else None
        if parsed is None or not _FIELD_NAME.fullmatch(name.strip()):
            return None
        fields[name.strip()] = {"type": parsed[0], "description": ""}
        nested_key = _nested_key(parsed[0])
        if parsed[1] and nested_key:
            fields[name.strip()][nested_key] = parsed[1]
    return ("dict", fields) if fields else None


def _parse_actions(rest: str) -> list[Any]:
    """``default (success), error (failure)`` → ``["default", "error"]``."""
    actions: list[Any] = []
    for part in _split_top_level(rest, ","):
        part = part.strip()
        if not part:
            continue
        match = _ACTION.fullmatch(part)
        actions.append(match.group(1) if match else {"_raw": part})
    return actions


def _split_comment(text: str) -> tuple[str, str]:
    """Declaration and description: the description is everything after the first top-level ``#``."""
    parts = _split_top_level(text, "#", maxsplit=1)
    declared = parts[0].strip()
    return declared, parts[1].strip() if len(parts) > 1 else ""


def _split_note(type_text: str) -> tuple[str, str]:
    """``str (optional)`` → ``("str", "optional")``: a trailing note on the type joins the description."""
    match = _NOTE.fullmatch(type_text.strip())
    if match and match.group(1) and not match.group(1).rstrip().endswith(("[", "{")):
        return match.group(1), match.group(2).strip()
    return type_text.strip(), ""


def _split_top_level(text: str, separator: str, maxsplit: int = -1) -> list[str]:
    """Split on ``separator`` outside brackets, braces, parentheses and quotes."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char == separator and depth == 0 and (maxsplit < 0 or len(parts) < maxsplit):
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def _join(first: str, more: list[str]) -> str:
    return " ".join(part for part in [first, *more] if part)
