"""The one import site of PocketFlow for our nodes, the registry and the service."""

from __future__ import annotations

from typing import Any

from pocketflow import AsyncNode, BaseNode, Node

__all__ = ["AsyncNode", "BaseNode", "Node", "require_param"]


def require_param(node: Any, name: str, node_type: str, example: str) -> Any:
    """The parameter ``name`` of ``node`` or a ParameterError that shows how to pass it."""
    from pflow_structure.errors import ParameterError

    params = getattr(node, "params", None) or {}
    if name not in params or params[name] in (None, ""):
        raise ParameterError(
            f"Node {node_type!r} needs the parameter {name!r}: pflow-structure run {node_type} {example}"
        )
    return params[name]
