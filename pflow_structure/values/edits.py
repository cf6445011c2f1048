"""Set and delete values at paths, on a copy: what ``edit_fields`` does to a cached value.

Paths are our grammar (:func:`pflow_structure.paths.parse_path`): ``[*]`` reaches every item
of a list (every value of a dict), an index may be negative, a string that holds JSON is read
through and written back as compact JSON (as ``read_fields`` reads through it). Setting a key
that does not exist adds it; a path through a missing parent is an error naming that parent.
JSONPath is for reading only.

The input is never changed: every container along an edited path is copied, the rest is
shared, so an edit of one field in a large value costs the length of the path, not the value.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pflow_structure.errors import PathNotFoundError, PathSyntaxError
from pflow_structure.paths import (
    WILDCARD,
    ConcretePath,
    Segment,
    describe_value,
    format_path,
    is_jsonpath,
    parse_json_text,
    parse_path,
)
from pflow_structure.render.output_text import format_json

__all__ = ["EditedValue", "apply_edits"]


class EditedValue(NamedTuple):
    """The edited copy, and the concrete paths whose contents changed (for bookkeeping such
    as which recorded binary paths still hold)."""

    value: Any
    changed: list[ConcretePath]


def apply_edits(root: Any, set_values: Mapping[str, Any], delete: Sequence[str] = ()) -> EditedValue:
    """``root`` with each ``path: value`` of ``set_values`` set, then each path of ``delete`` removed.

    >>> apply_edits({"a": [{"b": 1}, {"b": 2}]}, {"a[*].b": 0, "c": True}).value
    {'a': [{'b': 0}, {'b': 0}], 'c': True}

    Raises :class:`PathSyntaxError` for a path that does not parse (or is JSONPath) and
    :class:`PathNotFoundError` for a missing parent, an index out of range, or a delete that
    finds nothing.
    """
    changed: list[ConcretePath] = []
    for path, value in set_values.items():
        segments = _segments(path)
        root = _Edit(path, segments, changed).set(root, 0, (), value)
    for path in delete:
        segments = _segments(path)
        edit = _Edit(path, segments, changed)
        root = edit.delete(root, 0, ())
        if not edit.removed:
            raise PathNotFoundError(path, len(segments) - 1, "there is nothing to delete: no item has this path.")
    return EditedValue(root, changed)


def _segments(path: str) -> tuple[Segment, ...]:
    if isinstance(path, str) and is_jsonpath(path):
        raise PathSyntaxError(path, 0, "JSONPath reads values but cannot edit them; write a path such as a.b[0].c")
    return parse_path(path)


class _Edit:
    def __init__(self, path: str, segments: Sequence[Segment], changed: list[ConcretePath]) -> None:
        self.path = path
        self.segments = segments
        self.changed = changed
        self.removed = 0
        self.under_wildcard = any(segment is WILDCARD for segment in segments)

    def set(self, node: Any, index: int, where: ConcretePath, value: Any) -> Any:
        if index == len(self.segments):
            self.changed.append(where)
            return value
        return self.step(node, index, where, lambda child, i, at: self.set(child, i, at, value), create=True)

    def delete(self, node: Any, index: int, where: ConcretePath) -> Any:
        if index == len(self.segments) - 1:
            return self.remove(node, index, where)
        return self.step(node, index, where, self.delete, create=False)

    def step(self, node: Any, index: int, where: ConcretePath, inner: Any, *, create: bool) -> Any:
        """Copy ``node`` with the child at segment ``index`` replaced by ``inner(child, index + 1, at)``."""
        if isinstance(node, str) and (parsed := parse_json_text(node)) is not None:
            return format_json(self.step(parsed, index, where, inner, create=create), compact=True)
        segment = self.segments[index]
        last = index == len(self.segments) - 1
        if segment is WILDCARD:
            if isinstance(node, list):
                return [inner(item, index + 1, (*where, i)) for i, item in enumerate(node)]
            if isinstance(node, dict):
                return {key: inner(item, index + 1, (*where, key)) for key, item in node.items()}
            raise self.fail(index, f"{describe_value(node)} has no items for [*].")
        if isinstance(segment, int):
            position = self.position(node, segment, index)
            items = list(node)
            items[position] = inner(node[position], index + 1, (*where, position))
            return items
        assert isinstance(segment, str)
        if not isinstance(node, dict):
            raise self.fail(index, f"no key {segment!r}: found {describe_value(node)}.")
        if segment not in node and not (create and last):
            raise self.missing_parent(node, index, create)
        copy = dict(node)
        copy[segment] = inner(node.get(segment), index + 1, (*where, segment))
        return copy

    def remove(self, node: Any, index: int, where: ConcretePath) -> Any:
        if isinstance(node, str) and (parsed := parse_json_text(node)) is not None:
            return format_json(self.remove(parsed, index, where), compact=True)
        segment = self.segments[index]
        if segment is WILDCARD:
            if not isinstance(node, (list, dict)):
                raise self.fail(index, f"{describe_value(node)} has no items for [*].")
            self.removed += len(node)
            self.changed.append(where)
            return [] if isinstance(node, list) else {}
        if isinstance(segment, int):
            position = self.position(node, segment, index)
            self.removed += 1
            self.changed.append(where)  # later items move up: everything under the list changed
            return node[:position] + node[position + 1 :]
        assert isinstance(segment, str)
        if not isinstance(node, dict):
            raise self.fail(index, f"no key {segment!r}: found {describe_value(node)}.")
        if segment not in node and not self.under_wildcard:
            close = difflib.get_close_matches(segment, [key for key in node if isinstance(key, str)], n=3, cutoff=0.6)
            suggestions = [format_path([*self.segments[:index], key]) for key in close]
            raise PathNotFoundError(self.path, index, f"no key {segment!r} here: nothing to delete.", suggestions)
        if segment not in node:
            return node  # an item of a [*] without the key; a delete that removes nothing at all fails
        self.removed += 1
        self.changed.append((*where, segment))
        return {key: value for key, value in node.items() if key != segment}

    def position(self, node: Any, segment: int, index: int) -> int:
        if not isinstance(node, list):
            raise self.fail(index, f"[{segment}] needs a list but found {describe_value(node)}.")
        if not -len(node) <= segment < len(node):
            raise self.fail(index, f"index {segment} is out of range: the list has {len(node)} items.")
        return segment % len(node)

    def missing_parent(self, node: dict[str, Any], index: int, setting: bool) -> PathNotFoundError:
        segment = self.segments[index]
        assert isinstance(segment, str)
        parent = format_path(self.segments[: index + 1])
        keys = [key for key in node if isinstance(key, str)]
        close = difflib.get_close_matches(segment, keys, n=3, cutoff=0.6)
        suggestions = [format_path([*self.segments[:index], key, *self.segments[index + 1 :]]) for key in close]
        reason = f"the parent {parent} does not exist (no key {segment!r} here)."
        if setting:
            reason += f" Set {parent} first, e.g. to {{}}."
        return PathNotFoundError(self.path, index, reason, suggestions)

    def fail(self, index: int, reason: str) -> PathNotFoundError:
        return PathNotFoundError(self.path, index, reason)
