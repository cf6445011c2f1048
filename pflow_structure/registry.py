"""Node lookup: built-in nodes and the ``pflow_structure.nodes`` entry-point group.

A third-party package registers a node with, in its pyproject.toml::

    [project.entry-points."pflow_structure.nodes"]
    github-list-issues = "my_package.nodes:ListIssuesNode"
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any

from pflow_structure.errors import NodeNotFoundError
from pflow_structure.nodes import BUILTIN_NODES

ENTRY_POINT_GROUP = "pflow_structure.nodes"


@dataclass(frozen=True)
class NodeSpec:
    """Where a node comes from: its name, ``module:Class`` target and source."""

    name: str
    target: str
    source: str  # "builtin" or the distribution that registered it

    def load(self) -> type[Any]:
        module_name, _, attribute = self.target.partition(":")
        module = importlib.import_module(module_name)
        node_class: type[Any] = getattr(module, attribute)
        return node_class

    def description(self) -> str:
        """The first line of the node's docstring."""
        try:
            doc = self.load().__doc__ or ""
        except Exception as exc:  # a broken plugin is listed, not fatal
            return f"(cannot be loaded: {type(exc).__name__}: {exc})"
        first = doc.strip().splitlines()[0] if doc.strip() else ""
        return first.strip()


def available_nodes() -> dict[str, NodeSpec]:
    """Every node by name, built-ins first; a plugin cannot shadow a built-in."""
    from importlib import metadata

    specs = {name: NodeSpec(name, target, "builtin") for name, target in BUILTIN_NODES.items()}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in specs:
            continue
        source = entry.dist.name if entry.dist is not None else "entry point"
        specs[entry.name] = NodeSpec(entry.name, entry.value, source)
    return dict(sorted(specs.items()))


def find_node(node_type: str) -> NodeSpec:
    """The spec for ``node_type`` or :class:`NodeNotFoundError` with close matches."""
    if node_type in BUILTIN_NODES:
        # Built-ins cannot be shadowed, so they need no entry-point scan (about 80 ms).
        return NodeSpec(node_type, BUILTIN_NODES[node_type], "builtin")
    specs = available_nodes()
    if node_type in specs:
        return specs[node_type]
    close = difflib.get_close_matches(str(node_type), list(specs), n=3, cutoff=0.5)
    raise NodeNotFoundError(str(node_type), close)
