"""Which list items hold a field that not every item has: ``in 1 of 4`` says ``[2]``.

A structure entry of a field under a list (``result[0].text``) with ``present`` < ``of`` gains
``present_at``: the indices of the first few items that hold it, so that a hint or a reader can
name an item that has the field rather than item 0, which may not (a list of mixed blocks, issue
35). Only for a field under one list (the first ``[0]`` of its path; the rest are keys): below a
second list the count is over the inner items and an index of the outer one would not say which.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from pflow_structure.paths import parse_path

FIRST_ITEMS = 3  # the indices listed per field


def _holds(value: Any, keys: tuple[Any, ...]) -> bool:
    for key in keys:
        if not isinstance(value, dict) or not isinstance(key, str) or key not in value:
            return False
        value = value[key]
    return True


def _item_indices(root: Any, segments: tuple[Any, ...], limit: int) -> list[int] | None:
    cut = next((i for i, segment in enumerate(segments) if segment == 0 and type(segment) is int), -1)
    if cut < 0 or any(segment == 0 and type(segment) is int for segment in segments[cut + 1 :]):
        return None
    items: Any = root
    for key in segments[:cut]:
        items = items.get(key) if isinstance(items, dict) and isinstance(key, str) else None
    if not isinstance(items, list):
        return None
    found: list[int] = []
    for index, item in enumerate(items):
        if _holds(item, segments[cut + 1 :]):
            found.append(index)
            if len(found) == limit:
                break
    return found


def add_present_at(structure: Mapping[str, MutableMapping[str, Any]], value: Any, limit: int = FIRST_ITEMS) -> None:
    """Add ``present_at`` (the first ``limit`` item indices) to each entry of ``structure`` that only
    some items of its list hold; ``value`` is the value the structure was inferred from."""
    for path, entry in structure.items():
        if "present" not in entry or "[0]" not in path:
            continue
        indices = _item_indices(value, tuple(parse_path(path)), limit)
        if indices:
            entry["present_at"] = indices


def add_present_at_items(
    structure: Mapping[str, MutableMapping[str, Any]], items: Iterable[Any], limit: int = FIRST_ITEMS
) -> None:
    """:func:`add_present_at` for ``{"result": list(items)}``, in one pass over the items as they come
    (stopping once every field has its ``limit`` indices), so the list is never held whole."""
    wanted: dict[str, tuple[Any, ...]] = {}
    for path, entry in structure.items():
        if "present" not in entry or "[0]" not in path:
            continue
        segments = tuple(parse_path(path))
        later = segments[2:]
        if segments[:2] == ("result", 0) and not any(segment == 0 and type(segment) is int for segment in later):
            wanted[path] = later  # a field of the items themselves (below a second list: none, as above)
    found: dict[str, list[int]] = {path: [] for path in wanted}
    if not wanted:
        return
    for index, item in enumerate(items):
        for path, keys in wanted.items():
            if len(found[path]) < limit and _holds(item, keys):
                found[path].append(index)
        if all(len(indices) == limit for indices in found.values()):
            break
    for path, indices in found.items():
        if indices:
            structure[path]["present_at"] = indices
