"""What the filter hid, by name: nothing disappears without a trace.

A filtered structure lists the fields worth showing; this says, for every object that is
shown, the names of its keys that are not, and for every hidden container directly inside a
top-level object (``result``, ``result[0]``), one entry with its own key names. Keyed by
*object path* (the path whose keys the names are: ``result[0]`` for the items of the list
``result``), so ``OBJECT.NAME`` is a path that reads back::

    {"result": {"names": ["kind", "apiVersion"]},
     "result.metadata": {"type": "dict", "names": ["name", "namespace", "labels"], "more": 8}}

An entry with ``type`` is a hidden container (the CLI shows it as one line,
``.metadata dict: name, namespace, labels, +8 more``); one without is a shown object's other
keys. Names come best first (by the filter's score); names scored as noise that share a suffix
are counted as a pattern (``"patterns": {"*_url": 12}``), and ``more`` counts the names left out
when a line would be too long (generous for the top two levels, short below).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pflow_structure.errors import PathSyntaxError
from pflow_structure.paths import format_path, parse_path

# At most this many characters of names per entry: generous near the top, short below.
TOP_NAMES_CHARS = 1000
FIRST_NAMES_CHARS = 400
DEEP_NAMES_CHARS = 80
GROUP_MIN = 3  # noise names sharing a suffix are counted as one pattern from this many on
MAX_PATTERNS = 3
SUMMARY_DEPTH = 1  # hidden containers in objects this deep get a line of their own (result.metadata)
TOP_DEPTH = 2  # objects with at most this many keys in their path (result, result[0].user)


def split_last(path: str) -> tuple[str, str] | None:
    """``result[0].user.login`` → (``result[0].user``, ``login``); None when the path ends in an index."""
    if path.endswith("]"):
        if not path.endswith(('"]', "']")):
            return None
        try:
            segments = parse_path(path)
        except PathSyntaxError:
            return None
        last = segments[-1]
        return (format_path(segments[:-1]) if len(segments) > 1 else "", last) if isinstance(last, str) else None
    dot = path.rfind(".")
    if dot > path.rfind("]"):
        return path[:dot], path[dot + 1 :]
    return "", path


def _depth(obj: str) -> int:
    return 0 if not obj else obj.count(".") + obj.count('["') + obj.count("['") + 1


def hidden_keys(
    structure: Mapping[str, Mapping[str, Any]],
    nodes: Sequence[tuple[str, int]],
    chosen: set[int],
    scores: Mapping[int, float],
) -> dict[str, dict[str, Any]]:
    """See the module doc. ``nodes``: (path, parent index) for each path of ``structure`` in order;
    ``chosen``: the indices shown; ``scores``: the filter's score per field index."""
    index_of = {path: index for index, (path, _) in enumerate(nodes)}
    best: dict[int, float] = {}
    for index, score in scores.items():
        while index >= 0 and best.get(index, float("-inf")) < score:
            best[index] = score
            index = nodes[index][1]
    children: dict[str, list[tuple[int, str]]] = {}
    holder: dict[str, int] = {}
    held_by: dict[int, list[str]] = {}
    for index, (path, _) in enumerate(nodes):
        split = split_last(path)
        if split is None:
            continue
        obj, name = split
        if obj not in children:
            children[obj] = []
            owner = _holder(obj, index_of)
            holder[obj] = owner
            if owner >= 0:
                held_by.setdefault(owner, []).append(obj)
        children[obj].append((index, name))
    out: dict[str, dict[str, Any]] = {}
    for obj, members in children.items():
        owner = holder[obj]
        if owner != -1 and owner not in chosen:
            continue
        names: list[tuple[int, str]] = []
        near_top = _depth(obj) <= SUMMARY_DEPTH
        for index, name in members:
            if index in chosen:
                continue
            # A hidden container near the top gets its own line of names; deeper, just its name.
            summarised = held_by.get(index, []) if near_top else []
            for inner in summarised:
                entry_type = structure[nodes[index][0]].get("type", "dict") if inner == nodes[index][0] else "dict"
                out[inner] = {"type": str(entry_type), **_names(children[inner], best, inner)}
            if not summarised:
                names.append((index, name))
        if names:
            out[obj] = _names(names, best, obj)
    return out


def _holder(obj: str, index_of: Mapping[str, int]) -> int:
    """The listed path an object's keys hang from: itself, or the list (or ``[*]`` dict) of its items;
    -1 for the top (the outputs' own keys), -2 when none is listed."""
    if not obj:
        return -1
    while obj not in index_of:
        if obj.endswith(("[0]", "[*]")):
            obj = obj[:-3]
        else:
            return -2
    return index_of[obj]


def _names(members: Sequence[tuple[int, str]], best: Mapping[int, float], obj: str) -> dict[str, Any]:
    """The names best first, up to a length; names the filter scored as noise that share a suffix
    (``html_url``, ``events_url``, ...) are counted as one pattern (``*_url``) instead."""
    ranked = sorted(range(len(members)), key=lambda i: (-best.get(members[i][0], -100.0), i))
    suffixes: dict[str, int] = {}
    for i in ranked:
        name = members[i][1]
        if best.get(members[i][0], -100.0) <= 0 and "_" in name[1:]:
            suffix = "_" + name.rpartition("_")[2]
            suffixes[suffix] = suffixes.get(suffix, 0) + 1
    grouped = {suffix for suffix, count in suffixes.items() if count >= GROUP_MIN}
    depth = _depth(obj)
    limit = TOP_NAMES_CHARS if depth <= 1 else FIRST_NAMES_CHARS if depth <= TOP_DEPTH else DEEP_NAMES_CHARS
    names: list[str] = []
    patterns: dict[str, int] = {}
    used = 0
    left = 0
    for i in ranked:
        name = members[i][1]
        if best.get(members[i][0], -100.0) <= 0 and "_" in name[1:] and "_" + name.rpartition("_")[2] in grouped:
            suffix = "_" + name.rpartition("_")[2]
            patterns["*" + suffix] = patterns.get("*" + suffix, 0) + 1
        elif (names or not limit) and used + len(name) > limit:
            left += 1
        else:
            names.append(name)
            used += len(name) + 2
    if len(patterns) > MAX_PATTERNS:
        for pattern in sorted(patterns, key=lambda p: -patterns[p])[MAX_PATTERNS:]:
            left += patterns.pop(pattern)
    entry: dict[str, Any] = {"names": names}
    if patterns:
        entry["patterns"] = patterns
    if left:
        entry["more"] = left
    return entry
