"""Infer the flattened structure of a value: template paths with types and statistics.

Like GenSON's schema strategies, every item of a list is fed into one shared child, so
the statistics cover all items, not item 0: a key that only some items have is listed
with ``present``, mixed types show as a union (``str|null``), lists get their lengths.
Strings that hold a JSON object or array are parsed and their structure is listed below
the string's path (marked ``"json": "dict"`` or ``"json": "list"``). Dicts whose keys are
data (versions, ids, file names) are summarised once under ``[*]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from pflow_structure.paths import WILDCARD, Segment, format_path, is_plain_key
from pflow_structure.structure import hints
from pflow_structure.structure.field_stats import Collector, FieldSignals, FieldStats, classify

DEFAULT_MAX_PATHS = 500
DEFAULT_MAX_DEPTH = 64
# A dict is "dynamic" (keys are data) when it has at least this many keys ...
DYNAMIC_MIN_KEYS = 8
# ... its values are of one kind, and its keys look like data or its values are containers,
DYNAMIC_MIN_CONTAINER_KEYS = 20
# ... or it has more keys than a record has fields (npm's "users": 930 names → true).
DYNAMIC_MANY_KEYS = 100
# A dict of at least this many dicts that share most of their keys is keyed by name too
# (JSON Schema "properties", API "methods", Notion "properties"): one [*] for all of them.
RECORDS_BY_NAME_MIN_KEYS = 3
# How many key names a dynamic-key dict lists, and at most how many characters in all.
KEY_NAMES_SHOWN = 8
KEY_NAMES_CHARS = 120

_NUMBERED_SUFFIX = re.compile(r"_\d+\Z")
_TYPE_ORDER = {"dict": 0, "list": 1, "str": 2, "int": 3, "float": 4, "bool": 5, "bytes": 6, "null": 9}


class InferredStructure(NamedTuple):
    """A structure: template path → statistics, plus counts."""

    structure: dict[str, dict[str, Any]]
    field_count: int
    total_paths: int
    # Per listed scalar path: statistics for the filter, never shown (see field_stats).
    signals: dict[str, FieldSignals] | None = None

    @property
    def omitted_paths(self) -> int:
        return self.total_paths - len(self.structure)


def infer_structure(
    value: Any,
    *,
    binary_paths: Sequence[Sequence[str | int]] = (),
    max_paths: int = DEFAULT_MAX_PATHS,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> InferredStructure:
    """Infer the structure of a JSON-safe value (usually a node's outputs dict).

    ``signals`` holds, per scalar path, statistics the filter scores with (never shown).

    >>> infer_structure({"result": [{"title": "a"}, {"title": "bc"}]}).structure
    {'result': {'type': 'list', 'length': 2}, 'result[0].title': {'type': 'str', 'avg_length': 2}}
    """
    collector = Collector(max_depth, binary_paths)
    root = FieldStats()
    collector.observe(root, value, 0, collector.binary or None)
    return _inferred(root, isinstance(value, dict), max_paths)


def infer_result_items(
    items: Iterable[Any], *, max_paths: int = DEFAULT_MAX_PATHS, max_depth: int = DEFAULT_MAX_DEPTH
) -> InferredStructure:
    """``infer_structure({"result": list(items)})``, observing the items one at a time as they come, so
    that the list is never held whole (a large tool result parsed item by item)."""
    collector = Collector(max_depth, ())
    root = FieldStats()
    root.count, root.types["dict"], root.dict_count = 1, 1, 1  # what observe() notes of {"result": ...}
    result = root.children["result"] = FieldStats()
    collector.observe_items(result, items, 1)
    return _inferred(root, True, max_paths)


def _inferred(root: FieldStats, outputs_dict: bool, max_paths: int) -> InferredStructure:
    """The structure of what ``root`` observed (a dict of outputs, else a bare value listed as "result")."""
    records: list[_Record] = []
    shapes = _Shapes()
    if outputs_dict:
        for key, child in root.children.items():
            _collect(child, (key,), root.dict_count, records, shapes)
    else:
        # A bare value (not a dict of outputs) is listed under the path "result".
        _collect(root, ("result",), root.count, records, shapes)
    records = _list_reference_targets(records, shapes)
    field_count = sum(record.leaves for record in records)
    kept = _cap(records, max_paths)
    structure: dict[str, dict[str, Any]] = {}
    signals: dict[str, FieldSignals] = {}
    for record in kept:
        path = format_path(record.segments)
        structure[path] = _entry(record)
        if record.node.scalars and not record.node.children and record.node.items is None:
            signals[path] = record.node.signals()
    return InferredStructure(structure, field_count, len(records), signals)


class _Record:
    """One path to list; its entry dict is built only if the path survives the cap."""

    __slots__ = ("dynamic_keys", "key_names", "leaves", "node", "parents", "same_as", "segments")

    def __init__(
        self,
        segments: tuple[Segment, ...],
        node: FieldStats,
        parents: int,
        dynamic_keys: int,
        leaves: int,  # leaf paths this record stands for: 1 for a leaf, all below for a "same keys as"
        same_as: tuple[Segment, ...] | None = None,
    ) -> None:
        self.segments = segments
        self.node = node
        self.parents = parents
        self.dynamic_keys = dynamic_keys
        self.leaves = leaves
        self.same_as = same_as
        self.key_names: list[str] = []


# A dict whose keys and types repeat one listed before (GitHub's user object under user,
# assignee, assignees[0], milestone.creator) is listed once; later ones say "same keys as".
SAME_SHAPE_MIN_FIELDS = 3


class _Shapes:
    """Remembers the first path of each dict shape; shapes are memoised per stats node."""

    def __init__(self) -> None:
        self.first: dict[tuple[Any, ...], _Record] = {}
        # Keyed by id() but holding the node too: merged nodes of dynamic-key dicts are
        # temporary, and a freed node's id can be reused by the next one.
        self.memo: dict[int, tuple[FieldStats, tuple[Any, ...] | None]] = {}

    def shape(self, node: FieldStats) -> tuple[Any, ...] | None:
        """Keys, types and nested shapes below ``node``; None when not comparable (dynamic keys)."""
        known = self.memo.get(id(node))
        if known is None or known[0] is not node:
            known = self.memo[id(node)] = (node, self._compute(node))
        return known[1]

    def _compute(self, node: FieldStats) -> tuple[Any, ...] | None:
        if node.depth_cut or (node.children and _is_dynamic(node)):
            return None
        # JSON held in a string is read differently from a dict: never "the same" as one.
        parts: list[Any] = [("json text", bool(node.json_kinds))]
        for name, child in sorted(node.children.items()):
            child_shape = self.shape(child)
            if child_shape is None:
                return None
            parts.append((name, _type_name(child), child.count < node.dict_count, child_shape))
        if node.items is not None:
            item_shape = self.shape(node.items)
            if item_shape is None:
                return None
            parts.append((0, _type_name(node.items), item_shape))
        return tuple(parts)


def _count_leaves(node: FieldStats, segments: tuple[Segment, ...], parents: int) -> int:
    scratch: list[_Record] = []
    _collect(node, segments, parents, scratch, _Shapes())
    return sum(record.leaves for record in scratch)


def _collect(
    node: FieldStats, segments: tuple[Segment, ...], parents: int, out: list[_Record], shapes: _Shapes
) -> None:
    children: list[tuple[tuple[Segment, ...], FieldStats, int]] = []
    dynamic_keys = 0
    if node.children:
        if _is_dynamic(node):
            merged = FieldStats()
            for child in node.children.values():
                merged.merge(child)
            dynamic_keys = len(node.children)
            children.append(((*segments, WILDCARD), merged, merged.count))
        else:
            children.extend(((*segments, k), c, node.dict_count) for k, c in node.children.items())
    if node.items is not None:
        children.append(((*segments, 0), node.items, node.items.count))
    # A list item or dict value that is a plain dict adds nothing its children do not say.
    redundant = (
        children
        and not isinstance(segments[-1], str)
        and not dynamic_keys
        and len(node.types) == 1
        and "dict" in node.types
        and node.count >= parents
        and not node.depth_cut
    )
    if node.children and not dynamic_keys:
        shape = shapes.shape(node)
        if shape is not None and len(shape) > SAME_SHAPE_MIN_FIELDS:  # the json-text marker + fields
            first = shapes.first.setdefault(shape, _Record(segments, node, parents, 0, 0))
            if first.segments != segments:
                leaves = _count_leaves(node, segments, parents)
                out.append(_Record(segments, node, parents, 0, leaves, same_as=first.segments))
                return
    if not redundant:
        record = _Record(segments, node, parents, dynamic_keys, 0 if children else 1)
        if dynamic_keys:
            record.key_names = _key_names(node.children)
        out.append(record)
    for child_segments, child, child_parents in children:
        _collect(child, child_segments, child_parents, out, shapes)


def _entry(record: _Record) -> dict[str, Any]:
    node = record.node
    entry: dict[str, Any] = {"type": _type_name(node)}
    if node.list_count:
        if node.list_min == node.list_max:
            entry["length"] = node.list_min
        else:
            entry["length"] = round(node.list_total / node.list_count, 1)
            entry["min_length"] = node.list_min
            entry["max_length"] = node.list_max
    if node.str_count:
        entry["avg_length"] = round(node.str_total / node.str_count)
    if node.json_kinds:
        entry["json"] = "|".join(sorted(node.json_kinds, key=lambda kind: _TYPE_ORDER.get(kind, 8)))
    if node.count < record.parents:
        entry["present"] = node.count
        entry["of"] = record.parents
    if node.depth_cut:
        entry["truncated"] = "depth"
    if record.dynamic_keys:
        entry["keys"] = record.dynamic_keys
        entry["dynamic_keys"] = True
        entry["key_names"] = record.key_names
    if record.same_as is not None:
        entry["same_as"] = format_path(record.same_as)
    if node.scalars and not node.children and node.items is None:
        key = next((s for s in reversed(record.segments) if isinstance(s, str)), "")  # [*] is no str
        hint = hints.value_hint(node, key, hints.SHOWN)
        if hint:
            entry["hint"] = hint
    return entry


def _type_name(node: FieldStats) -> str:
    names = sorted(node.types, key=lambda name: (name == "null", -node.types[name], _TYPE_ORDER.get(name, 8), name))
    return "|".join(names) if names else "null"


def _key_names(children: dict[str, FieldStats]) -> list[str]:
    """The first few keys of a dynamic-key dict, so a reader can name one in a path."""
    names: list[str] = []
    used = 0
    for key in children:
        if len(names) == KEY_NAMES_SHOWN or used + len(key) > KEY_NAMES_CHARS:
            break  # a first key over the limit leaves none: the text then says "N dynamic keys"
        names.append(key)
        used += len(key)
    return names


def _is_dynamic(node: FieldStats) -> bool:
    keys = node.children
    if len(keys) < DYNAMIC_MIN_KEYS:
        return len(keys) >= RECORDS_BY_NAME_MIN_KEYS and _records_by_name(keys)
    kinds: dict[str, int] = {}
    for child in keys.values():
        kind = child.kind()
        kinds[kind] = kinds.get(kind, 0) + 1
    dominant, dominant_count = max(kinds.items(), key=lambda item: item[1])
    if dominant_count < 0.9 * len(keys):
        return False
    if len(keys) >= DYNAMIC_MANY_KEYS:
        return True
    data_like = sum(1 for key in keys if _looks_like_data(key))
    if data_like >= 0.5 * len(keys):
        return True
    if len(keys) >= DYNAMIC_MIN_CONTAINER_KEYS and dominant in ("dict", "list"):
        return True
    return _records_by_name(keys)


def _records_by_name(keys: dict[str, FieldStats]) -> bool:
    """Every value is a dict, and each has at least half of all the keys they have between them."""
    union: set[str] = set()
    for child in keys.values():
        if len(child.types) != 1 or "dict" not in child.types or not child.children or child.depth_cut:
            return False
        union.update(child.children)
    if len(union) >= SAME_SHAPE_MIN_FIELDS and all(len(child.children) == len(union) for child in keys.values()):
        return False  # fields of one shape (user, assignee, closed_by): listed once, then "same keys as"
    return all(2 * len(child.children) >= len(union) for child in keys.values())


def _looks_like_data(key: str) -> bool:
    """Keys such as versions, ids, dates and file names, rather than field names.

    A numbered field name (``image_24``, ``address_line_2``) is a field name: only digits
    before a trailing ``_<digits>`` make a plain key look like data (``v2``, ``U0G9QF9C6``).
    """
    if not is_plain_key(key) or len(key) >= 24:
        return True
    return any(c.isdigit() for c in _NUMBERED_SUFFIX.sub("", key))


def _list_reference_targets(records: list[_Record], shapes: _Shapes) -> list[_Record]:
    """Make sure every ``same_as`` target is itself listed.

    A plain dict list item (``r[0]``) is normally not listed, its fields say enough; when
    another path refers to it, it is listed just before its first field.
    """
    listed = {record.segments for record in records}
    targets = {record.same_as for record in records if record.same_as is not None} - listed
    if not targets:
        return records
    missing = {first.segments: first for first in shapes.first.values() if first.segments in targets}
    out: list[_Record] = []
    for record in records:
        for length in range(1, len(record.segments)):
            target = missing.pop(record.segments[:length], None)
            if target is not None:
                out.append(target)
        out.append(record)
    return out


def _cap(records: list[_Record], max_paths: int) -> list[_Record]:
    """Keep at most ``max_paths`` records, shallowest first, in their original order.

    A ``same_as`` whose target lost all its fields to the cap is dropped: it would point
    at nothing listed.
    """
    if len(records) <= max_paths:
        return records
    order = sorted(range(len(records)), key=lambda i: (len(records[i].segments), i))
    kept = [records[i] for i in sorted(order[: max(max_paths, 0)])]
    parents_with_fields = {record.segments[:-1] for record in kept}
    for record in kept:
        if record.same_as is not None and record.same_as not in parents_with_fields:
            record.same_as = None
    return kept


__all__ = ["FieldSignals", "FieldStats", "InferredStructure", "classify", "infer_result_items", "infer_structure"]
