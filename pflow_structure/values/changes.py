"""Which paths of a value changed since an earlier version of it, and their new values.

A tool called again with the same arguments (an agent polling a build, a deployment, a queue) mostly
answers what it answered before. :func:`changed_paths` walks both values together and lists each
place that differs, as deep as the two still have the same shape: a changed scalar, a key added or
removed, a list item added or removed (lists are compared item by item, so an item inserted at the
front changes every later index: the caller then shows the whole structure instead). Values are
compared as JSON: ``1``, ``1.0`` and ``true`` differ.

>>> changed_paths({"state": "open", "n": 1}, {"state": "closed", "n": 1})
[Change(path='result.state', value='closed', removed=False)]
"""

from __future__ import annotations

from pflow_structure.records import NamedTuple
from pflow_structure.render.shared import reference_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Change(NamedTuple):
    """One difference: the path, the new value there (None when ``removed``), and whether it went away."""

    path: str
    value: Any
    removed: bool


class _TooMany(Exception):
    """More changes than the caller wants listed."""


def changed_paths(old: Any, new: Any, root: str = "result", *, limit: int | None = None) -> list[Change] | None:
    """The changes from ``old`` to ``new`` (paths written from ``root``), in document order; None when
    there are more than ``limit`` (most of the value changed: a list of changes is then no shorter)."""
    changes: list[Change] = []
    try:
        _walk(old, new, (), changes, limit)
    except _TooMany:
        return None
    return [Change(reference_path(root, segments), value, removed) for segments, value, removed in changes]


def _walk(old: Any, new: Any, segments: tuple[str | int, ...], changes: list[Any], limit: int | None) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in new.items():
            if key in old:
                _walk(old[key], value, (*segments, key), changes, limit)
            else:
                _add(changes, ((*segments, key), value, False), limit)
        for key in old:
            if key not in new:
                _add(changes, ((*segments, key), None, True), limit)
    elif isinstance(old, list) and isinstance(new, list):
        for index, value in enumerate(new):
            if index < len(old):
                _walk(old[index], value, (*segments, index), changes, limit)
            else:
                _add(changes, ((*segments, index), value, False), limit)
        for index in range(len(new), len(old)):
            _add(changes, ((*segments, index), None, True), limit)
    elif not _same_json(old, new):
        _add(changes, (segments, new, False), limit)


def _add(changes: list[Any], change: Any, limit: int | None) -> None:
    changes.append(change)
    if limit is not None and len(changes) > limit:
        raise _TooMany


def _same_json(old: Any, new: Any) -> bool:
    """Equal as JSON: same type (bool is not int, int is not float) and equal value."""
    return type(old) is type(new) and old == new
