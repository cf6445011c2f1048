"""The paths of a structure as a tree the filter walks: each path's parent, keys and list owner.

A structure lists parents before children, so one pass gives every path its ancestry.
:class:`FieldTree` is that pass done once per filter call and handed to every step of the
pipeline (:mod:`pflow_structure.filtering.pipeline`), with what the steps share worked out on
first use: each path's index, each line's estimated cost, and where the fields stand
(:class:`Places`: the main list of records, the dict their fields are in, the envelope).
The features (:mod:`pflow_structure.filtering.features`) and the fit in
``benchmarks/filter_learn.py`` use the same nodes.

The tree, as those modules use it:

- :class:`FieldTree` (``FieldTree.build(structure, signals)``): the nodes, the field indices,
  ``index_of``, ``field_paths``, ``line_cost``, ``view_cost`` and ``places``; :func:`tree_of`
  takes a structure or a tree, so a function may accept either.
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
from collections.abc import Mapping, Sequence
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from pflow_structure.errors import PathSyntaxError
from pflow_structure.filtering import vocabulary
from pflow_structure.paths import parse_path

if TYPE_CHECKING:
    from pflow_structure.structure.field_stats import FieldSignals

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


def field_indices(structure: Mapping[str, Mapping[str, Any]], nodes: Sequence[PathNode]) -> list[int]:
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


def is_inside(nodes: Sequence[PathNode], index: int, ancestor: int) -> bool:
    """Whether node ``index`` lies below node ``ancestor`` (``-1``, the top, holds every node)."""
    while index >= 0:
        index = nodes[index].parent
        if index == ancestor:
            return True
    return False


NAMED = 6.0  # a vocabulary score from here on names the object (title, name, text, ...)


class Places:
    """Where fields stand, worked out once per structure: the main list of records (the deepest
    list holding at least half of the fields), the dict each record keeps its fields in, the
    object around the records, siblings per object, and which objects have a name field."""

    def __init__(self, nodes: Sequence[PathNode], indices: Sequence[int]) -> None:
        self.nodes = nodes
        inside: dict[int, int] = {}
        siblings: dict[int, list[int]] = {}
        named: set[int] = set()
        for index in indices:
            node = nodes[index]
            siblings.setdefault(node.parent, []).append(index)
            if node.keys and vocabulary.BUSINESS.get(node.keys[-1], 0) >= NAMED:
                named.add(node.parent)
            owner = node.list_owner
            while owner >= 0:
                inside[owner] = inside.get(owner, 0) + 1
                owner = nodes[owner].list_owner
        half = len(indices) / 2
        self.records = max(
            (owner for owner, count in inside.items() if count >= half),
            key=lambda owner: len(nodes[owner].keys) + nodes[owner].path.count("["),
            default=-1,
        )
        self.body = record_body(indices, nodes, self.records) if self.records >= 0 else -1
        self.envelope = nodes[self.records].parent if self.records >= 0 else -2
        self.position = {index: (rank, len(group)) for group in siblings.values() for rank, index in enumerate(group)}
        self.named = named

    def inside_records(self, index: int) -> bool:
        step = self.nodes[index].parent
        while step >= 0:
            if step == self.records:
                return True
            step = self.nodes[step].parent
        return False


def record_body(indices: Sequence[int], nodes: Sequence[PathNode], records: int) -> int:
    """The dict inside each record that holds at least half of the record's fields, or -1."""
    per_parent: dict[int, int] = {}
    total = 0
    for index in indices:
        if nodes[index].list_owner == records:
            total += 1
            parent = nodes[index].parent
            if parent != records:
                per_parent[parent] = per_parent.get(parent, 0) + 1
    best = max(per_parent.items(), key=lambda item: item[1], default=(-1, 0))
    return best[0] if best[1] * 2 >= total and best[1] >= 2 else -1


class FieldTree:
    """A structure's paths as a tree, built once per filter call and handed from step to step
    (:mod:`pflow_structure.filtering.pipeline`): the entries, the inference's signals, every
    node (:class:`PathNode`), which of them are fields, and, worked out on first use and then
    shared, each path's index, each node's line cost, and where the fields stand (:class:`Places`).

    >>> tree = FieldTree.build({"result": {"type": "list"}, "result[0].title": {"type": "str"}})
    >>> tree.field_paths, tree.index_of["result[0].title"]
    (('result[0].title',), 1)
    """

    structure: Mapping[str, Mapping[str, Any]]
    signals: Mapping[str, FieldSignals]
    nodes: tuple[PathNode, ...]
    fields: tuple[int, ...]  # the indices of the nodes that count as fields (see :func:`fields_of`)

    def __init__(
        self,
        structure: Mapping[str, Mapping[str, Any]],
        signals: Mapping[str, FieldSignals],
        nodes: tuple[PathNode, ...],
        fields: tuple[int, ...],
    ) -> None:
        # Not a dataclass: importing dataclasses (inspect, ast) would cost a cold run milliseconds.
        for name, value in (("structure", structure), ("signals", signals), ("nodes", nodes), ("fields", fields)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_costs", {})  # line costs by node index, filled on first use

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a FieldTree does not change: build another for {name!r}")

    @classmethod
    def build(
        cls, structure: Mapping[str, Mapping[str, Any]], signals: Mapping[str, FieldSignals] | None = None
    ) -> FieldTree:
        """The tree of ``structure`` (one pass over its paths); ``signals``: the inference's, by path."""
        nodes = path_nodes(structure)
        return cls(structure, signals or {}, tuple(nodes), tuple(field_indices(structure, nodes)))

    @cached_property
    def field_paths(self) -> tuple[str, ...]:
        return tuple(self.nodes[index].path for index in self.fields)

    @cached_property
    def index_of(self) -> dict[str, int]:
        return {node.path: index for index, node in enumerate(self.nodes)}

    @cached_property
    def places(self) -> Places:
        return Places(self.nodes, self.fields)

    def entry(self, index: int) -> Mapping[str, Any]:
        return self.structure[self.nodes[index].path]

    def line_cost(self, index: int) -> float:
        """Estimated o200k tokens of the node's tree line: 2.2 + characters / 3.2 (fitted by least
        squares on the tree lines of the 28 corpus files, 20,615 tokens, mean error 1.3 tokens a line)."""
        costs: dict[int, float] = self.__dict__["_costs"]
        cost = costs.get(index)
        if cost is None:
            from pflow_structure.render.structure_text import describe_entry

            node = self.nodes[index]
            own = len(node.path) - (len(self.nodes[node.parent].path) if node.parent >= 0 else 0)
            cost = costs[index] = 2.2 + (own + len(describe_entry(self.entry(index), short=True))) / 3.2
        return cost

    def view_cost(self) -> float:
        """Estimated o200k tokens of the tree lines of the whole structure."""
        return sum(self.line_cost(index) for index in range(len(self.nodes)))


StructureOrTree = Mapping[str, Mapping[str, Any]] | FieldTree


def tree_of(structure: StructureOrTree, signals: Mapping[str, FieldSignals] | None = None) -> FieldTree:
    """``structure``'s tree: the one given, or built (for callers that hold only the mapping)."""
    return structure if isinstance(structure, FieldTree) else FieldTree.build(structure, signals)
