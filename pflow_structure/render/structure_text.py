"""The CLI text of a ``registry_run`` result: the same content as the dict, as lines.

Paths are shown as a tree: a line indented under another continues that line's path, so
``result[0].user.login`` is written once as ``result``, ``[0].user`` and ``.login`` on three
lines instead of repeating its prefix on every line::

    ✓ Node executed successfully
    Execution ID: exec-1763463202-0cd0c8fe

    Template paths (indented lines extend the path above; ~N average length):
      result list, 100 items; each [0]:
        .title str ~52
        .milestone dict|null, in 31 of 100
          .title str ~5

``layout="flat"`` writes pflow's own lines instead, one full path each
(``  ✓ ${result[0].title} (str, ~52 chars)``); the pflow plugin prints those.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Container, Iterable, Mapping
from typing import Any, Literal

from pflow_structure.paths import is_plain_key

Layout = Literal["tree", "flat"]
TREE_HEADER = "Template paths (indented lines extend the path above; ~N average length):"
FLAT_HEADER = "Available template paths:"
NO_PATHS = "(none: the node wrote no outputs)"
NONE_FIT = "(none fit the answer's budget: see the warning below)"


def describe_entry(entry: Mapping[str, Any], *, short: bool = False) -> str:
    """``{"type": "str", "avg_length": 52}`` → ``str, ~52 chars`` (``str ~52`` when ``short``)."""
    type_name = str(entry.get("type", "?"))
    parts = [type_name]
    if "avg_length" in entry:
        if short:
            parts[0] = f"{type_name} ~{entry['avg_length']}"
        else:
            kinds = type_name.split("|")
            unit = "bytes" if "bytes" in kinds and "str" not in kinds else "chars"
            parts.append(f"~{entry['avg_length']} {unit}")
    if "hint" in entry:  # a value hint (structure/hints.py): ``int epoch s 2012..2017``
        if short:
            parts[0] = f"{parts[0]} {entry['hint']}"
        else:
            parts.append(str(entry["hint"]))
    if "json" in entry:
        parts.append(f"JSON {entry['json']}")
    if "length" in entry:  # after "JSON list": a string holding a JSON array has items too
        if "min_length" in entry:
            parts.append(f"{entry['min_length']}-{entry['max_length']} items, avg {_number(entry['length'])}")
        else:
            parts.append(counted(entry["length"], "item"))
    names = entry.get("key_names")
    if entry.get("dynamic_keys") and not names:
        parts.append(counted(entry.get("keys", "?"), "dynamic key"))
    if "present" in entry:
        parts.append(f"in {entry['present']} of {entry['of']}" + _which_items(entry))
    if "same_as" in entry:
        parts.append(f"same keys as {entry['same_as']}")
    if entry.get("truncated") == "depth":
        parts.append("deeper levels not shown")
    if entry.get("dynamic_keys") and names:  # last: the names run to the end of the line
        more = ", …" if len(names) < entry.get("keys", 0) else ""
        parts.append(counted(entry.get("keys", "?"), "key") + ": " + ", ".join(_key_name(str(n)) for n in names) + more)
    return ", ".join(parts)


def _which_items(entry: Mapping[str, Any]) -> str:
    """``: [2]``, or ``: [3] [7] [9]…`` when more items hold the field: which items have it."""
    indices = entry.get("present_at") or []
    if not indices:
        return ""
    more = "…" if len(indices) < int(entry.get("present", 0)) else ""
    return ": " + " ".join(f"[{index}]" for index in indices) + more


def counted(count: Any, noun: str) -> str:
    """``1 item``, ``2 items``, ``? items``: the noun agrees with the count."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def describe_hidden(entry: Mapping[str, Any]) -> str:
    """``{"type": "dict", "names": ["name", "uid"], "patterns": {"*_url": 3}, "more": 8}`` →
    ``dict: name, uid, *_url (3), +8 more``;
    without a type (a shown object's other keys) → ``other keys: name, uid, +8 more``."""
    names = [_key_name(str(name)) for name in entry.get("names", [])]
    names.extend(f"{pattern} ({count})" for pattern, count in (entry.get("patterns") or {}).items())
    if entry.get("more"):
        names.append(f"+{entry['more']} more")
    head = f"{entry['type']}:" if "type" in entry else "other keys:"
    return f"{head} {', '.join(names)}"


def tree_lines(
    structure: Mapping[str, Mapping[str, Any]], hidden: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """One line per path, each indented under the nearest listed path it extends; after a shown
    path's own lines, the keys the filter hid below it (``hidden``, see filtering/hidden.py).

    A container whose lines below all go through one item (``[0]`` of a list, ``[*]`` of a dict
    with data keys) ends its line with that item (``; each [0]:``), so the lines below extend the
    item and do not each repeat ``[0]``; the line still reads as the container's, not as item 0's::

        .Findings list, 20 items; each [0]:
          .Id str ~82
          .Title str ~23
    """
    items = _item_anchors(structure, hidden or {})
    anchored = _anchor_hidden(structure, hidden or {}, items.values())
    lines: list[str] = []
    stack: list[str] = []  # the chain of listed paths (and items) the current line may extend

    def close(path: str) -> None:
        for obj, entry in anchored.pop(path, []):
            lines.append("  " * (len(stack) + 2) + f"{obj[len(path) :]} {describe_hidden(entry)}".lstrip(" "))

    for path, entry in structure.items():
        while stack and not _extends(path, stack[-1]):
            close(stack.pop())
        shown = path[len(stack[-1]) :] if stack else path
        if path in items:
            item = items[path]
            step = item[len(path) :]
            lines.append("  " * (len(stack) + 1) + f"{shown} {describe_entry(entry, short=True)}; each {step}:")
            stack.append(item)
            continue
        lines.append("  " * (len(stack) + 1) + f"{shown} {describe_entry(entry, short=True)}")
        stack.append(path)
    while stack:
        close(stack.pop())
    for obj, entry in anchored.pop("", []):  # the outputs' own keys
        lines.append(f"  {obj} {describe_hidden(entry)}".rstrip() if obj else f"  {describe_hidden(entry)}")
    return lines


ITEM_LINES = 2  # a container gets an item line when at least this many lines go through the item


def _item_anchors(
    structure: Mapping[str, Mapping[str, Any]], hidden: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """Container path → its item path (``result.items`` → ``result.items[0]``), for each container
    whose lines below all extend the one item, at least ITEM_LINES of them (see :func:`tree_lines`)."""
    below: dict[str, list[str]] = {}  # a listed path → what its direct lines show
    stack: list[str] = []
    for path in structure:
        while stack and not _extends(path, stack[-1]):
            stack.pop()
        if stack:
            below.setdefault(stack[-1], []).append(path[len(stack[-1]) :])
        stack.append(path)
    for obj in hidden:  # a hidden entry's line sits under the longest listed path it extends
        anchor = _longest_listed(obj, structure)
        if anchor:
            below.setdefault(anchor, []).append(obj[len(anchor) :])
    items: dict[str, str] = {}
    for path, shown in below.items():
        step = shown[0][:3]  # every line must start with the same item step
        wanted = len(shown) >= ITEM_LINES and step in ("[0]", "[*]") and path + step not in structure
        if wanted and all(part.startswith(step) for part in shown):
            items[path] = path + step
    return items


def _longest_listed(obj: str, listed: Container[str]) -> str:
    """The longest path in ``listed`` that ``obj`` is or extends ("" for none)."""
    for cut in range(len(obj), 0, -1):
        if (cut == len(obj) or obj[cut] in ".[") and obj[:cut] in listed:
            return obj[:cut]
    return ""


def _anchor_hidden(
    structure: Mapping[str, Mapping[str, Any]],
    hidden: Mapping[str, Mapping[str, Any]],
    items: Iterable[str] = (),
) -> dict[str, list[tuple[str, Mapping[str, Any]]]]:
    """Each hidden entry under the longest listed path (or item line) its object path extends (or is)."""
    listed = set(structure) | set(items)
    anchored: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for obj, entry in hidden.items():
        anchored.setdefault(_longest_listed(obj, listed), []).append((obj, entry))
    for entries in anchored.values():
        entries.sort(key=lambda item: "type" not in item[1])  # hidden containers, then other keys
    return anchored


def render_structure_text(
    result: Mapping[str, Any], *, program: str = "pflow-structure", layout: Layout = "tree"
) -> str:
    """The text the CLI prints for a ``registry_run`` result dict."""
    execution_id = result.get("execution_id", "")
    lines = ["✓ Node executed successfully", f"Execution ID: {execution_id}", ""]
    if result.get("page"):  # the API's paging (structure/paging.py), above what the filter chose
        lines[2:2] = [f"Page: {result['page']}"]
    structure: Mapping[str, Mapping[str, Any]] = result.get("structure", {})
    header = TREE_HEADER if layout == "tree" else FLAT_HEADER
    if not structure:  # every path left out by the budget is not a node without outputs
        lines.append(f"{header} {NONE_FIT if result.get('field_count') else NO_PATHS}")
    elif layout == "tree":
        lines.append(header)
        lines.extend(tree_lines(structure, result.get("hidden")))
    else:
        lines.append(header)
        lines.extend(f"  ✓ ${{{path}}} ({describe_entry(entry)})" for path, entry in structure.items())
        hidden: Mapping[str, Mapping[str, Any]] = result.get("hidden") or {}
        lines.extend(f"  · ${{{obj}}} ({describe_hidden(entry)})" for obj, entry in hidden.items() if obj)
    lines.append("")
    lines.append(f"Node type: {result.get('node_type', '?')}")
    field_count = result.get("field_count", 0)
    original = result.get("original_field_count", field_count)
    if result.get("filtered"):
        method, note = result.get("filter", "?"), result.get("filter_note", "")
        lines.append(f"Field count: {field_count} of {original} ({method} filter; {note})")
    else:
        lines.append(f"Field count: {field_count}, not filtered")
    omitted = result.get("omitted_paths", 0)
    if omitted:
        lines.append(
            f"Omitted paths: {omitted} deeper paths not listed; read a parent path with read-fields, "
            "or run again with --max-paths N (PFLOW_STRUCTURE_MAX_PATHS)"
        )
    for warning in result.get("warnings", []):
        lines.append(f"Warning: {warning}")
    wanted = [path for path in result.get("wanted") or () if path in structure][:WANTED_IN_HINT]
    if wanted:
        reads = dict.fromkeys(hint_path(path, structure[path]) for path in wanted)
        lines.append("Read the fields matching your words (best first):")
        lines.append(f"  {program} read-fields {execution_id} " + " ".join(shlex.quote(path) for path in reads))
    elif "wanted" in result and not result["wanted"]:  # matches the budget left out are still matches
        lines.append(f"No field name matches {_quoted_want(result.get('want'))}: the usual view is shown.")
    if structure and not wanted:
        example = _example_path(structure)
        read = hint_path(example, structure[example])
        lines.append(f"Read values: {program} read-fields {execution_id} {shlex.quote(read)}")
    return "\n".join(lines)


WANTED_IN_HINT = 6  # the read command of a view with ``want`` names at most this many paths


def hint_path(path: str, entry: Mapping[str, Any]) -> str:
    """The path a read hint suggests for a listed template path: ``[*]`` for every item
    (``result[*].title``), and the index of an item that holds the field when item 0 does not
    (``result.content[2].text``, from ``present_at``)."""
    from pflow_structure.paths import WILDCARD, format_path, parse_path

    segments = list(parse_path(path))
    first = (entry.get("present_at") or [0])[0]
    for position, segment in enumerate(segments):
        if segment == 0 and type(segment) is int:
            segments[position] = first if first else WILDCARD
            first = 0
    return format_path(segments)


def _quoted_want(want: Any) -> str:
    return json.dumps(" ".join(str(want or "").split())[:120], ensure_ascii=False)


def _extends(path: str, parent: str) -> bool:
    """``result[0].user.login`` extends ``result[0].user``; ``result[0].username`` does not."""
    return len(path) > len(parent) and path.startswith(parent) and path[len(parent)] in ".["


def _key_name(name: str) -> str:
    """A key as the reader would write it after a dot, quoted when it could not be."""
    if is_plain_key(name):
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate cannot be printed: escaped, as quote_key does
        return json.dumps(name)
    return json.dumps(name, ensure_ascii=False)


def _example_path(structure: Mapping[str, Mapping[str, Any]]) -> str:
    """A path worth reading in the hint: the first text field, else the first leaf, else the first."""
    for wanted in ({"str"}, {"int", "float", "bool", "str|null", "bytes"}):
        for path, entry in structure.items():
            if entry.get("type") in wanted and "json" not in entry:
                return path
    return next(iter(structure))


def _number(value: Any) -> str:
    """``3.0`` → ``3``, ``12.5`` → ``12.5``; never an exponent (``:g`` turns 1234567.5 into 1.23457e+06)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
