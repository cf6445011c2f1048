"""The paths of a structure as a tree the filter walks: each path's parent, keys and list owner.

A structure lists parents before children, so one pass gives every path its ancestry. Shared by
the heuristic's ranking (:mod:`pflow_structure.filtering.heuristic`), the per-field features
(:mod:`pflow_structure.filtering.features`) and the fit in ``benchmarks/filter_learn.py``.

The tree, as those modules use it:

- :func:`path_nodes` (structure → ``list[PathNode]``): every listed path with its ancestry, in
  the structure's order; a :class:`PathNode` refers to its parent and list owner by index.
- :func:`field_indices` (structure, nodes → indices): the nodes that count as fields;
  :func:`fields_of` gives their paths.
- :func:`is_inside` (nodes, index, ancestor): whether one node lies below another.
- :func:`key_segments` (path → dict keys), :func:`suffix_keys` (path → normalised keys) and
  :func:`normalise` (``createdAt`` → ``created_at``): the names a path is made of.
- :func:`kinds_of` (``str|null`` → ``{str}``): the types a field had besides null.

Example::

    >>> structure = {"result": {"type": "list"}, "result[0].user.login": {"type": "str"}}
    >>> nodes = path_nodes(structure)
    >>> [(node.path, node.parent, node.keys) for node in nodes]
    [('result', -1, ('result',)), ('result[0].user.login', 0, ('result', 'user', 'login'))]
    >>> [nodes[i].path for i in field_indices(structure, nodes)]
    ['result[0].user.login']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from pflow_structure.errors import PathSyntaxError
from pflow_structure.filtering import vocabulary
from pflow_structure.paths import parse_path

_CONTAINERS = frozenset({"dict", "list"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=8192)
def normalise(name: str) -> str:
    """``createdAt`` → ``created_at``; ``display-name`` → ``display_name``."""
    return _CAMEL.sub("_", name).replace("-", "_").lower()


_PLAIN_PARTS = re.compile(r"[.\[\]]+")


def key_segments(path: str) -> list[str]:
    """The dict keys along a path (list indices and ``*`` left out)."""
    if '"' not in path and "'" not in path:  # the common case, without the full parser
        return [part for part in _PLAIN_PARTS.split(path) if part and part != "*" and not part.lstrip("-").isdigit()]
    try:
        segments = parse_path(path)
    except PathSyntaxError:
        return [part for part in _PLAIN_PARTS.split(path) if part and not part.isdigit()]
    return [segment for segment in segments if isinstance(segment, str) and segment != "*"]


class PathNode(NamedTuple):
    """One listed path: its parent (index, -1 at the top), the keys from the root, whether a key
    above it is metadata, the nearest list above it, and whether it stands inside a group."""

    path: str
    parent: int
    keys: tuple[str, ...]
    noisy_above: bool
    list_owner: int
    grouped: bool


def path_nodes(structure: Mapping[str, Mapping[str, Any]]) -> list[PathNode]:
    """Every path with its ancestry, in one pass: a structure lists parents before children."""
    nodes: list[PathNode] = []
    stack: list[int] = []
    for path in structure:
        while stack:
            above_path = nodes[stack[-1]].path
            if path.startswith(above_path) and path[len(above_path) : len(above_path) + 1] in (".", "["):
                break
            stack.pop()
        parent = stack[-1] if stack else -1
        if parent < 0:
            keys = suffix_keys(path)
            noisy, owner, grouped = False, -1, False
        else:
            above = nodes[parent]
            suffix = path[len(above.path) :]
            quoted = '"' in suffix or "'" in suffix
            keys = suffix_keys(path) if quoted else above.keys + suffix_keys(suffix)
            noisy = above.noisy_above or (bool(above.keys) and _is_noise_segment(above.keys[-1]))
            parent_entry = structure[above.path]
            owner = parent if "list" in str(parent_entry.get("type", "")) else above.list_owner
            grouped = above.grouped or "same_as" in parent_entry
        nodes.append(PathNode(path, parent, keys, noisy, owner, grouped))
        stack.append(len(nodes) - 1)
    return nodes


@lru_cache(maxsize=8192)
def suffix_keys(suffix: str) -> tuple[str, ...]:
    """The normalised keys of a path or a path's suffix (``[0].user.login`` → user, login)."""
    return tuple(normalise(key) for key in key_segments(suffix))


@lru_cache(maxsize=1024)
def kinds_of(type_name: str) -> frozenset[str]:
    """``str|null`` → {str}: the types a field had besides null."""
    return frozenset(type_name.split("|")) - {"null"}


@lru_cache(maxsize=8192)
def _is_noise_segment(key: str) -> bool:
    return key.replace("_", "") in vocabulary.NOISE_SEGMENTS_SQUASHED


def field_indices(structure: Mapping[str, Mapping[str, Any]], nodes: list[PathNode]) -> list[int]:
    """The indices in ``nodes`` of the paths that count as fields (see :func:`fields_of`)."""
    has_children = {node.parent for node in nodes}
    found = []
    for index, node in enumerate(nodes):
        if node.grouped:
            continue
        entry = structure[node.path]
        if "same_as" in entry:
            found.append(index)
            continue
        types = set(str(entry.get("type", "")).split("|")) - {"null"}
        if index not in has_children or not types & _CONTAINERS:
            found.append(index)
    return found


def fields_of(structure: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The paths that count as fields: leaves, lists of scalars, ``same_as`` and dynamic-key entries
    (each stands for one field); paths below a dynamic-key dict or a ``same_as`` are part of it."""
    nodes = path_nodes(structure)
    return [nodes[index].path for index in field_indices(structure, nodes)]


def is_inside(nodes: list[PathNode], index: int, ancestor: int) -> bool:
    """Whether node ``index`` lies below node ``ancestor`` (``-1``, the top, holds every node)."""
    while index >= 0:
        index = nodes[index].parent
        if index == ancestor:
            return True
    return False
