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

import bisect
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
    """The edited copy, the concrete paths that ``set`` replaced and the ones ``delete`` removed
    (paths in the value as it was before the deletes)."""

    value: Any
    replaced: list[ConcretePath]
    removed: list[ConcretePath]

    def carry(self, paths: Sequence[Sequence[str | int]]) -> list[ConcretePath]:
        """Where ``paths`` of the original value (recorded binary or text paths) are in the edited one.

        A path at or under a replaced or removed one is dropped (its value is not the recorded
        one any more); an index after removed items of the same list moves up with its item.

        >>> apply_edits({"a": ["x", "y", "z"]}, {}, ["a[0]"]).carry([["a", 1], ["a", 0], ["a"]])
        [('a', 0), ('a',)]
        """
        gone = {tuple(path) for path in (*self.replaced, *self.removed)}
        removed_items: dict[ConcretePath, list[int]] = {}
        for path in self.removed:
            if path and isinstance(path[-1], int):
                removed_items.setdefault(tuple(path[:-1]), []).append(path[-1])
        for indices in removed_items.values():
            indices.sort()
        carried: list[ConcretePath] = []
        for path in map(tuple, paths):
            if any(path[:length] in gone for length in range(len(path) + 1)):
                continue
            carried.append(
                tuple(
                    step - bisect.bisect_left(removed_items.get(path[:depth], ()), step)
                    if isinstance(step, int)
                    else step
                    for depth, step in enumerate(path)
                )
            )
        return carried


def apply_edits(root: Any, set_values: Mapping[str, Any], delete: Sequence[str] = ()) -> EditedValue:
    """``root`` with each ``path: value`` of ``set_values`` set, then each path of ``delete`` removed.

    Sets apply in order (a later one may set a key under an earlier one). Every delete path names
    a place in the value as the sets left it, so ``["items[0]", "items[1]"]`` removes the first
    two items, whatever the order, and a path given twice removes once.

    >>> apply_edits({"a": [{"b": 1}, {"b": 2}]}, {"a[*].b": 0, "c": True}).value
    {'a': [{'b': 0}, {'b': 0}], 'c': True}

    Raises :class:`PathSyntaxError` for a path that does not parse (or is JSONPath) and
    :class:`PathNotFoundError` for a missing parent, an index out of range, or a delete that
    finds nothing.
    """
    replaced: list[ConcretePath] = []
    for path, value in set_values.items():
        root = _Edit(path, _segments(path), replaced).set(root, 0, (), value)
    removed: list[ConcretePath] = []
    for path in delete:
        segments = _segments(path)
        found = len(removed)
        _Edit(path, segments, removed).find(root, 0, ())
        if len(removed) == found:
            raise PathNotFoundError(path, len(segments) - 1, "there is nothing to delete: no item has this path.")
    return EditedValue(_without(root, _tree(removed)) if removed else root, replaced, removed)


def _segments(path: str) -> tuple[Segment, ...]:
    if isinstance(path, str) and is_jsonpath(path):
        from pflow_structure.paths.jsonpath import singular_segments

        steps = singular_segments(path)  # $.a['b'][0] names one node: it edits as a.b[0] does
        if steps is None:
            raise PathSyntaxError(
                path, 0, "a JSONPath edits only a singular query ($.a['b'][0]); write a path such as a.b[*].c"
            )
        return steps
    return parse_path(path)


def _tree(paths: Sequence[ConcretePath]) -> dict[str | int, Any]:
    """The removed paths as a tree of steps; ``True`` marks a removed value (what is under it goes too)."""
    tree: dict[str | int, Any] = {}
    for path in paths:
        node = tree
        for step in path[:-1]:
            child = node.setdefault(step, {})
            if child is True:
                break  # under a value removed already
            node = child
        else:
            node[path[-1]] = True
    return tree


def _without(node: Any, tree: dict[str | int, Any]) -> Any:
    """A copy of ``node`` without the values ``tree`` marks; only the containers on the way are copied."""
    if isinstance(node, str):  # a string that holds JSON, read through as the paths were
        return format_json(_without(parse_json_text(node), tree), compact=True)
    if isinstance(node, list):
        return [
            _without(item, tree[i]) if i in tree else item for i, item in enumerate(node) if tree.get(i) is not True
        ]
    return {
        key: _without(item, tree[key]) if key in tree else item
        for key, item in node.items()
        if tree.get(key) is not True
    }


class _Edit:
    def __init__(self, path: str, segments: Sequence[Segment], changed: list[ConcretePath]) -> None:
        self.path = path
        self.segments = segments
        self.changed = changed
        self.under_wildcard = any(segment is WILDCARD for segment in segments)

    def set(self, node: Any, index: int, where: ConcretePath, value: Any) -> Any:
        if index == len(self.segments):
            self.changed.append(where)
            return value
        return self.step(node, index, where, lambda child, i, at: self.set(child, i, at, value))

    def find(self, node: Any, index: int, where: ConcretePath) -> None:
        """Add the concrete paths this delete path names to ``changed``; nothing is removed yet."""
        if isinstance(node, str) and (parsed := parse_json_text(node)) is not None:
            node = parsed
        segment = self.segments[index]
        last = index == len(self.segments) - 1
        if segment is WILDCARD:
            if not isinstance(node, (list, dict)):
                raise self.fail(index, f"{describe_value(node)} has no items for [*].")
            steps: list[str | int] = list(range(len(node))) if isinstance(node, list) else list(node)
        elif isinstance(segment, int):
            steps = [self.position(node, segment, index)]
        else:
            assert isinstance(segment, str)
            if not isinstance(node, dict):
                raise self.fail(index, f"no key {segment!r}: found {describe_value(node)}.")
            if segment not in node and not last:
                raise self.missing_parent(node, index, False)
            if segment not in node and not self.under_wildcard:
                raise self.nothing_to_delete(node, index)
            steps = [segment] if segment in node else []  # an item of a [*] without the key is skipped
        for step in steps:
            if last:
                self.changed.append((*where, step))
            else:
                self.find(node[step], index + 1, (*where, step))

    def step(self, node: Any, index: int, where: ConcretePath, inner: Any) -> Any:
        """Copy ``node`` with the child at segment ``index`` replaced by ``inner(child, index + 1, at)``."""
        if isinstance(node, str) and (parsed := parse_json_text(node)) is not None:
            return format_json(self.step(parsed, index, where, inner), compact=True)
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
        if segment not in node and not last:
            raise self.missing_parent(node, index, True)
        copy = dict(node)
        copy[segment] = inner(node.get(segment), index + 1, (*where, segment))
        return copy

    def nothing_to_delete(self, node: dict[str, Any], index: int) -> PathNotFoundError:
        segment = self.segments[index]
        assert isinstance(segment, str)
        close = difflib.get_close_matches(segment, [key for key in node if isinstance(key, str)], n=3, cutoff=0.6)
        suggestions = [format_path([*self.segments[:index], key]) for key in close]
        return PathNotFoundError(self.path, index, f"no key {segment!r} here: nothing to delete.", suggestions)

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
