"""Last step, hidden keys: the view's lines, and what the filter hid, by name: nothing disappears without a trace.

:func:`step` adds the containers above each kept field to the view (``Choice.shown``) and names
what is not shown (``Choice.hidden``, :func:`hidden_keys`) in the tokens the shown lines leave.

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
from typing import TYPE_CHECKING, Any

from pflow_structure.errors import PathSyntaxError
from pflow_structure.paths import format_path, parse_path

if TYPE_CHECKING:
    from pflow_structure.filtering.choice import Choice, Request
    from pflow_structure.filtering.tree import FieldTree

# At most this many characters of names per entry: generous near the top, short below.
TOP_NAMES_CHARS = 1000
FIRST_NAMES_CHARS = 400
DEEP_NAMES_CHARS = 80
GROUP_MIN = 3  # noise names sharing a suffix are counted as one pattern from this many on
MAX_PATTERNS = 3
SUMMARY_DEPTH = 1  # hidden containers in objects this deep get a line of their own (result.metadata)
TOP_DEPTH = 2  # objects with at most this many keys in their path (result, result[0].user)
NEAR_SCORE = 0.0  # inside a hidden container, a field is named when it scored at least this (0: shown)
NEAR_NAMES = 4  # and at most this many of them per object inside a hidden container
FIRST_LEVEL_BONUS = 2.0  # first-level objects' names come before deeper ones of the same score
FLOOR_NAMES = 3  # names an entry keeps beyond the room when its object holds a field worth showing


def step(tree: FieldTree, choice: Choice, request: Request) -> Choice:
    """The kept fields with the containers above them (``shown``), and the names of the rest (``hidden``)
    within what ``request.tuning.view`` leaves after the shown lines."""
    chosen: set[int] = set()
    for index in choice.kept:
        while index >= 0 and index not in chosen:
            chosen.add(index)
            index = tree.nodes[index].parent
    nodes = tree.nodes
    shown = {node.path: dict(tree.structure[node.path]) for position, node in enumerate(nodes) if position in chosen}
    room = request.tuning.view - sum(tree.line_cost(index) for index in chosen)
    pairs = [(node.path, node.parent) for node in tree.nodes]
    return choice._replace(shown=shown, hidden=hidden_keys(tree.structure, pairs, chosen, choice.scores, room))


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
    room: float | None = None,
) -> dict[str, dict[str, Any]]:
    """See the module doc. ``nodes``: (path, parent index) for each path of ``structure`` in order;
    ``chosen``: the indices shown; ``scores``: the filter's score per field index; ``room``: the
    estimated tokens the lines of names may take (see :func:`fit`), None for no limit."""
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
            entry = _names(names, best, obj)
            if entry["names"] or "patterns" in entry or _depth(obj) <= TOP_DEPTH:
                out[obj] = entry  # deep down, a bare "+N more" is left to the footer's count
    _near_misses(structure, nodes, children, holder, chosen, scores, out)
    _named_once(out)
    return out if room is None else fit(out, best, index_of, room)


def _named_once(out: dict[str, dict[str, Any]]) -> None:
    """A container with a line of its own is not named again among its object's other keys."""
    for obj, entry in out.items():
        if "type" not in entry:
            continue
        container = obj
        while container.endswith(("[0]", "[*]")):
            container = container[:-3]
        split = split_last(container)
        if split is None or "type" in out.get(split[0], {"type": None}):
            continue
        other = out[split[0]]
        other["names"] = [name for name in other["names"] if name != split[1]]
    for obj in [obj for obj, entry in out.items() if "type" not in entry]:
        if not (out[obj]["names"] or out[obj].get("patterns") or out[obj].get("more")):
            del out[obj]  # its only name has a line of its own


def entry_cost(obj: str, entry: Mapping[str, Any]) -> float:
    """Estimated o200k tokens of an entry's line (as the heuristic's line cost: 2.2 + characters / 3.2)."""
    names = sum(len(str(name)) + 2 for name in entry.get("names", ()))
    return 5 + (len(obj) + names + 12 * len(entry.get("patterns") or ())) / 3.2


def fit(
    out: dict[str, dict[str, Any]], best: Mapping[int, float], index_of: Mapping[str, int], room: float
) -> dict[str, dict[str, Any]]:
    """The entries within ``room`` tokens: the outputs' own keys and their objects' always (an agent
    must find any top-level or first-level name), then the others best first (by the best score
    below them); an entry that does not fit keeps the names that do and counts the rest."""

    def priority(obj: str) -> float:
        depth = _depth(obj)
        if depth <= SUMMARY_DEPTH:
            return float("inf")
        return best.get(_holder(obj, index_of), -100.0) + (FIRST_LEVEL_BONUS if depth == SUMMARY_DEPTH + 1 else 0)

    fitted: dict[str, dict[str, Any]] = {}
    for obj in sorted(out, key=lambda obj: -priority(obj)):
        entry = out[obj]
        cost = entry_cost(obj, entry)
        if cost <= room or priority(obj) == float("inf"):
            fitted[obj] = entry
            room -= cost
            continue
        names = list(entry["names"])
        floor = FLOOR_NAMES if priority(obj) >= 0 else 0  # an object with a wanted field keeps a few names
        while len(names) > floor and entry_cost(obj, {"names": names}) > room:
            names.pop()
        if names or ("type" in entry and _depth(obj) <= SUMMARY_DEPTH + 1):  # .metadata dict: +8 more
            left = len(entry["names"]) - len(names) + sum((entry.get("patterns") or {}).values())
            fitted[obj] = {key: value for key, value in entry.items() if key not in ("names", "patterns", "more")}
            fitted[obj]["names"] = names
            if entry.get("more", 0) + left:
                fitted[obj]["more"] = entry.get("more", 0) + left
            room -= entry_cost(obj, fitted[obj])
    return {obj: fitted[obj] for obj in out if obj in fitted}


def _near_misses(
    structure: Mapping[str, Mapping[str, Any]],
    nodes: Sequence[tuple[str, int]],
    children: Mapping[str, list[tuple[int, str]]],
    holder: Mapping[str, int],
    chosen: set[int],
    scores: Mapping[int, float],
    out: dict[str, dict[str, Any]],
) -> None:
    """Inside a hidden container, however deep, the fields the filter nearly showed are named
    under their own object (``.nodes.jvm.mem dict: heap_used_in_bytes, +4 more``): findable
    by name, at the cost of one line where it is likely to be wanted."""
    for obj, members in children.items():
        if obj in out or holder[obj] < 0 or holder[obj] in chosen:
            continue  # a shown object's hidden keys have their line already
        near = [(index, name) for index, name in members if scores.get(index, -100.0) >= NEAR_SCORE]
        if not near:
            continue
        near.sort(key=lambda member: -scores[member[0]])
        kept = near[:NEAR_NAMES]
        entry: dict[str, Any] = {"type": str(structure[nodes[holder[obj]][0]].get("type", "dict"))}
        entry["names"] = [name for _, name in kept]
        if len(members) > len(kept):
            entry["more"] = len(members) - len(kept)
        out[obj] = entry


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
    depth = _depth(obj)
    suffixes: dict[str, int] = {}
    for i in ranked:
        name = members[i][1]
        if best.get(members[i][0], -100.0) <= 0 and "_" in name[1:]:
            suffix = "_" + name.rpartition("_")[2]
            suffixes[suffix] = suffixes.get(suffix, 0) + 1
    grouped = {suffix for suffix, count in suffixes.items() if count >= GROUP_MIN}
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
