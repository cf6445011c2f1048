"""Read structure texts back into the dicts they were written from, strictly (a line that does not
parse fails the test): the indented tree both the CLI and the proxy write
(render/structure_text.py ``tree_lines``), the proxy's cached answer and its ``edit_fields``
answer (mcp/answer_text.py). Tests compare what comes back with the store's dict exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pflow_structure.render.structure_text import NO_PATHS, TREE_HEADER

_QUOTED = r'\["(?:[^"\\]|\\.)*"\]'
_SHOWN = rf"(?:[^\s.\[\]\"]+|{_QUOTED})?(?:\.[^\s.\[\]\"]+|\[(?:\d+|\*)\]|{_QUOTED})*"
_TREE_LINE = re.compile(rf"(?P<indent>(?:  )+)(?P<shown>{_SHOWN}) (?P<details>.+)")
_KEY_NAMES = re.compile(r", (?P<keys>\d+) keys?: (?P<names>.*)\Z")
# ``same keys as PATH``, before ``deeper levels not shown`` when both are there (describe_entry's order).
_SAME_AS = re.compile(r", same keys as (?P<path>.+?)(?=, deeper levels not shown\Z|\Z)", re.DOTALL)
# ``.metadata dict: name, uid, +8 more`` (a hidden container) and ``[0] other keys: url, *_url (3)``.
_OTHER_KEYS_LINE = re.compile(rf"(?P<indent>(?:  )+)(?:(?P<shown>{_SHOWN}) )?(?P<type>other keys): (?P<names>.*)")
_HIDDEN_LINE = re.compile(rf"(?P<indent>(?:  )+)(?P<shown>{_SHOWN}) (?P<type>[^\s,:]+): (?P<names>.*)")
_ITEM = re.compile(r"; each (?P<step>\[0\]|\[\*\]):\Z")  # the lines below extend this item
_HIDDEN_NAME = re.compile(r'"(?:[^"\\]|\\.)*"|\*\S* \(\d+\)|\+\d+ more|[^,\s]+')


def parse_details(details: str) -> dict[str, Any]:
    """``list, 2-5 items, avg 3.5, in 4 of 9`` → the structure entry it was written from."""
    names = _KEY_NAMES.search(details)
    if names:  # last, and the names may hold anything: taken off before the rest is split
        details = details[: names.start()]
    same = _SAME_AS.search(details)  # a path, which may hold ", " and any character: taken off too
    if same:
        details = details[: same.start()] + details[same.end() :]
    parts = details.split(", ")
    first = re.fullmatch(r"(?P<type>\S+)(?: ~(?P<length>\d+))?(?: (?P<hint>.+))?", parts.pop(0))
    assert first, details
    entry: dict[str, Any] = {"type": first["type"]}
    if first["length"]:
        entry["avg_length"] = int(first["length"])
    if first["hint"]:  # a value hint (structure/hints.py): ``int epoch s 2012..2017``
        entry["hint"] = first["hint"]
    while parts:
        part = parts.pop(0)
        if m := re.fullmatch(r"(\d+) items?", part):  # "1 item"
            entry["length"] = int(m[1])
        elif m := re.fullmatch(r"(\d+)-(\d+) items", part):
            average = re.fullmatch(r"avg (\d+(?:\.\d+)?)", parts.pop(0))
            assert average, details
            entry["length"] = float(average[1])
            entry["min_length"], entry["max_length"] = int(m[1]), int(m[2])
        elif m := re.fullmatch(r"~(\d+) (?:chars|bytes)", part):
            entry["avg_length"] = int(m[1])
        elif m := re.fullmatch(r"JSON (\S+)", part):
            entry["json"] = m[1]
        elif m := re.fullmatch(r"(\d+) dynamic keys?", part):
            entry["keys"], entry["dynamic_keys"] = int(m[1]), True
        elif m := re.fullmatch(r"in (\d+) of (\d+)(?:: ((?:\[\d+\] ?)+)…?)?", part):
            entry["present"], entry["of"] = int(m[1]), int(m[2])
            if m[3]:
                entry["present_at"] = [int(index) for index in re.findall(r"\d+", m[3])]
        elif part == "deeper levels not shown":
            entry["truncated"] = "depth"
        else:
            raise AssertionError(f"unparsed detail {part!r} in {details!r}")
    if same:
        entry["same_as"] = same["path"]
    if names:
        entry["keys"], entry["dynamic_keys"] = int(names["keys"]), True
        listed = re.findall(r'"(?:[^"\\]|\\.)*"|[^,\s…]+', names["names"])
        entry["key_names"] = [json.loads(name) if name.startswith('"') else name for name in listed]
    return entry


def _hidden_names(text: str) -> dict[str, Any]:
    """``a, "b c", *_url (3), +2 more`` → ``{"names": ["a", "b c"], "patterns": {"*_url": 3}, "more": 2}``."""
    entry: dict[str, Any] = {"names": []}
    for token in _HIDDEN_NAME.findall(text):
        if m := re.fullmatch(r"\+(\d+) more", token):
            entry["more"] = int(m[1])
        elif m := re.fullmatch(r"(\*\S*) \((\d+)\)", token):
            entry.setdefault("patterns", {})[m[1]] = int(m[2])
        else:
            entry["names"].append(json.loads(token) if token.startswith('"') else token)
    return entry


def parse_tree(lines: Iterable[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``tree_lines``' output → ``(structure, hidden)``: each line's path is the path of the line
    it is indented under plus what it shows; hidden names belong to the object they follow."""
    structure: dict[str, Any] = {}
    hidden: dict[str, Any] = {}
    chain: list[str] = []  # the path of the line above at each depth
    for line in lines:
        found = _OTHER_KEYS_LINE.fullmatch(line) or _HIDDEN_LINE.fullmatch(line)
        if found:  # names of what the filter hid, under the object they belong to
            depth = len(found["indent"]) // 2
            anchor = chain[depth - 2] if depth >= 2 else ""
            entry = _hidden_names(found["names"])
            if found["type"] != "other keys":
                entry["type"] = found["type"]
            hidden[anchor + (found["shown"] or "")] = entry
            continue
        match = _TREE_LINE.fullmatch(line)
        assert match, f"not a path line: {line!r}"
        depth = len(match["indent"]) // 2
        assert depth <= len(chain) + 1, f"indented past its parent: {line!r}"
        del chain[depth - 1 :]
        path = (chain[-1] if chain else "") + match["shown"]
        details = match["details"]
        item = _ITEM.search(details)  # an item line: ``.items list, 3 items; each [0]:``
        if item:
            details = details[: item.start()]
        chain.append(path + (item["step"] if item else ""))
        structure[path] = parse_details(details)
    return structure, hidden


# -- the proxy's answers ------------------------------------------------------------------------

_ID = r"exec-\d+-[0-9a-f]{8}"
CACHED_HEAD = re.compile(rf"Too large to show \((?P<tokens>[\d,]+) tokens\), cached as (?P<id>{_ID})\. ")
_FIELDS = re.compile(r"Fields: (?P<shown>\d+)(?: of (?P<all>\d+) shown \(the others are named and read back too\))?")
_HINT = re.compile(
    r"(?P<lead>Read values|Fields matching your want, best first): "
    r"(?P<tool>\w+)\(execution_id=\"(?P<id>[^\"]+)\", field_paths=\[(?P<example>.+)\]\); "
    r"\[\*\] reads every item, limit/offset page\. "
    r'Pass values on unread: "\$\{execution_id:path\}" in any argument\.'
)
_EDIT_HEAD = re.compile(
    rf"Edited into (?P<id>{_ID}); every path not listed here is as before\. "
    r"(?P<changed>Changed paths:|No path changed its type or statistics\.)"
)


def only_text(result: dict[str, Any]) -> str:
    """The one text block of a proxy answer that has nothing else (no structuredContent)."""
    assert set(result) <= {"content", "isError", "_meta", "resultType"}, sorted(result)
    assert result["isError"] is False
    [block] = result["content"]
    assert block["type"] == "text"
    text: str = block["text"]
    return text


def cached(result: dict[str, Any]) -> dict[str, Any]:
    """The proxy's cached answer read back: ``page`` (when the API pages), ``execution_id``, ``tokens``,
    ``structure``, ``hidden`` (when any), ``field_count``, ``original_field_count`` (when filtered), ``omitted_paths``,
    ``warnings``, ``read_tool``, ``example`` and ``note`` (when there are any)."""
    lines = only_text(result).split("\n")
    page = lines.pop(0).removeprefix("Page: ") if lines[0].startswith("Page: ") else None
    head = CACHED_HEAD.match(lines[0])
    assert head and lines[0][head.end() :] == TREE_HEADER, lines[0]
    answer: dict[str, Any] = {"execution_id": head["id"], "tokens": int(head["tokens"].replace(",", ""))}
    if page is not None:
        answer["page"] = page
    rest = iter(lines[1:])
    tree = []
    for line in rest:
        if not line.startswith("  "):
            break
        tree.append(line)
    if tree == [f"  {NO_PATHS}"]:
        answer["structure"] = {}
    else:
        answer["structure"], hidden = parse_tree(tree)
        if hidden:
            answer["hidden"] = hidden
    fields = _FIELDS.fullmatch(line)
    assert fields, f"not the field count: {line!r}"
    answer["field_count"] = int(fields["shown"])
    if fields["all"]:
        answer["original_field_count"] = int(fields["all"])
    for line in rest:
        if m := re.fullmatch(r"Omitted paths: (\d+) deeper paths not listed; read a parent path", line):
            answer["omitted_paths"] = int(m[1])
        elif line.startswith("Warning: "):
            answer.setdefault("warnings", []).append(line.removeprefix("Warning: "))
        else:
            hint = _HINT.fullmatch(line)
            assert hint and hint["id"] == answer["execution_id"], f"not the hint: {line!r}"
            answer["read_tool"] = hint["tool"]
            paths = json.loads(f"[{hint['example']}]")
            if hint["lead"] == "Read values":
                [answer["example"]] = paths
            else:
                answer["wanted"] = paths
            break
    note = "\n".join(rest)
    if note:
        assert note.startswith("The server's note: "), note
        answer["note"] = note.removeprefix("The server's note: ")
    return answer


def cached_id(result: dict[str, Any]) -> str:
    execution_id: str = cached(result)["execution_id"]
    return execution_id


def edited(result: dict[str, Any]) -> dict[str, Any]:
    """The proxy's ``edit_fields`` answer read back: ``execution_id``, ``structure`` (what changed),
    ``removed_paths`` and ``warnings`` (when there are any)."""
    lines = only_text(result).split("\n")
    head = _EDIT_HEAD.fullmatch(lines[0])
    assert head, lines[0]
    tree = [line for line in lines[1:] if line.startswith("  ")]
    structure, hidden = parse_tree(tree)
    assert not hidden and bool(structure) == (head["changed"] == "Changed paths:")
    answer: dict[str, Any] = {"execution_id": head["id"], "structure": structure}
    for line in lines[1 + len(tree) :]:
        if line.startswith("Removed paths: "):
            answer["removed_paths"] = json.loads(line.removeprefix("Removed paths: "))
        else:
            assert line.startswith("Warning: "), f"unparsed line {line!r}"
            answer.setdefault("warnings", []).append(line.removeprefix("Warning: "))
    return answer
