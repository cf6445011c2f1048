"""The one import site of PocketFlow for our nodes, the registry and the service."""

from __future__ import annotations

from typing import Any

from pocketflow import AsyncNode, BaseNode, Node

__all__ = ["AsyncNode", "BaseNode", "Node", "positive_seconds", "require_param"]


def require_param(node: Any, name: str, node_type: str, example: str) -> Any:
    """The parameter ``name`` of ``node`` or a ParameterError that shows how to pass it."""
    from pflow_structure.errors import ParameterError

    params = getattr(node, "params", None) or {}
    if name not in params or params[name] in (None, ""):
        raise ParameterError(f"missing parameter {name!r}; pass it as: pflow-structure run {node_type} {example}")
    return params[name]


def positive_seconds(node: Any, name: str, default: float) -> float:
    """A timeout parameter as seconds, or a ParameterError that says what was given."""
    from pflow_structure.errors import ParameterError

    value = (getattr(node, "params", None) or {}).get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ParameterError(f"{name} must be a positive number of seconds, e.g. {name}={default:g}; got {value!r}")
    return float(value)
